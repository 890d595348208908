#!/usr/bin/env bash
# An experiment ready for a GPU, not yet in the library: `attention_bwd_dq_split` early = 4 with
# each K/V vector held as stored (vec4<f16>: half the registers of its vec4<f32>) from its
# load to its use, plus mlp = 8 (all the V vectors of a lane's keys, and all the K rows of a
# thread at head_dim 256 f16, chunk 64, in flight at once). change.diff is the template change;
# it passes `wgslgen test` on lavapipe (215 of 215 applicable cases of the 48 early = 4
# variants with it applied, session 11). Why: session 11's code_vs_time.py found that the
# changes that made split kernels slower added registers, not code.
#
#   benchmarks/experiments/raw_kv/run.sh prepare      # here (naga): .spv/raw_kv/
#   benchmarks/experiments/raw_kv/run.sh gpu OUTDIR   # there, carrying .spv (after
#                                                     # `source benchmarks/gpu_env.sh install`)
#
# prepare: the changed templates (.spv/raw_kv/templates/) and SPIR-V of the wg256 early = 4
#   variants with and without the change (.spv/raw_kv/{library,changed}/).
# gpu: registers and code size of both (pipeline_stats.py), then pass_breakdown.py (checked
#   against the reference first, then each pass timed warm and cold) of the library's best
#   early = 4 variants from the library and from a copy of this checkout with the changed
#   templates, alternately, at the four fair shapes; then the mlp = 8 variants. Keep the change
#   (rebuild generated/, re-run gpu_fair.sh) if the changed side is faster at the same names.
set -uo pipefail
cd "$(dirname "$0")/../../.."
HERE=benchmarks/experiments/raw_kv
SPV=.spv/raw_kv
KERNEL=attention_bwd_dq_split
BEST=(wg256_ch64_g2_u2_e4_sf16 wg256_ch128_g1_u4_e4_sf16 wg256_ch64_g1_u2_e4_sf16
      wg256_ch128_g2_u4_e4_sf16 wg256_ch64_g2_u2_e4_sf32)
MLP8=(wg256_ch64_g2_u8_e4_sf16 wg256_ch64_g1_u8_e4_sf16 wg256_ch128_g1_u8_e4_sf16)
# ADAPTER (gpu) and SHAPES (the four fair shapes, space-separated d,H,KV,N) may be changed, e.g.
# for a quick run on lavapipe: ADAPTER=cpu SHAPES=64,4,2,256.
SHAPES=(${SHAPES:-256,8,4,4096 256,8,4,1024 256,8,1,4096 128,32,8,4096})

prepare() {
    local wgslgen=.venv/bin/wgslgen tmp
    rm -rf "$SPV" && mkdir -p "$SPV" || return 1
    tmp=$(mktemp -d) && cp -r templates "$tmp/" &&
        (cd "$tmp" && patch -s -p1 < "$OLDPWD/$HERE/change.diff") &&
        mv "$tmp/templates" "$SPV/templates" && rm -rf "$tmp" || return 1
    for side in library changed; do
        local from=templates; [ $side = changed ] && from=$SPV/templates
        "$wgslgen" transpile --templates "$from" --kernel $KERNEL --set wg=256 --set e=4 \
            --to spv --out "$SPV/$side" | tail -1 || return 1
    done
}

breakdown() {  # ROOT VARIANT JSON: one variant at every shape, from ROOT's templates
    python3 "$1/benchmarks/pass_breakdown.py" --kernel $KERNEL --variant "$2" \
        "${SHAPES[@]/#/--shape=}" --adapter "${ADAPTER:-gpu}" --json "$3" | grep -v '^adapter'
}

gpu() {
    local out=${1:?usage: run.sh gpu OUTDIR} copy v rc=0
    [ -d "$SPV/templates" ] || { echo "run.sh: no $SPV: run 'run.sh prepare' here and carry .spv"; return 1; }
    mkdir -p "$out" && out=$(cd "$out" && pwd)
    for side in library changed; do
        python3 benchmarks/pipeline_stats.py "$SPV/$side" --json "$out/stats_$side.json" \
            > "$out/stats_$side.txt" 2>&1 || rc=1
    done
    copy=$(mktemp -d) && cp -r benchmarks wgslgen pyproject.toml "$copy/" &&
        cp -r "$SPV/templates" "$copy/templates" || return 1
    for v in "${BEST[@]}"; do
        breakdown . "$v" "$out/library_$v.json" || rc=1
        breakdown "$copy" "$v" "$out/changed_$v.json" || rc=1
    done
    for v in "${MLP8[@]}"; do breakdown "$copy" "$v" "$out/changed_$v.json" || rc=1; done
    rm -rf "$copy"
    return $rc
}

case ${1:-} in
prepare) prepare ;;
gpu) gpu "${2:-}" ;;
*) echo "usage: $0 prepare | gpu OUTDIR" >&2; exit 2 ;;
esac
