#!/usr/bin/env bash
# RECORD of session 12 (benchmarks/results/h200_s12_raw_kv/): run then as
# benchmarks/experiments/raw_kv/run.sh, before the held-as-stored half of change.diff went into
# the library (the diff no longer applies). Copy it for the next experiment.
# An experiment ready for a GPU, not yet in the library: the split kernels' best schedules
# (`attention_bwd_dq_split` early = 4, `attention_split` early = 3) with each K/V vector held as
# stored (vec4<f16>: half the registers of its vec4<f32>) from its load to its use, plus
# mlp = 8 (at head_dim 256 f16, chunk 64: every vector of a lane's keys and every row of a
# thread in flight at once; what the main loops leave in steps of 4 and 2 vectors, 8, 4 and 2
# keys). change.diff is the template change; with it applied, the 48 + 48
# variants of those schedules pass `wgslgen test` on lavapipe (session 11). Why: session 11's
# code_vs_time.py found that the changes that made split kernels slower added registers, not
# code.
#
#   benchmarks/experiments/raw_kv/run.sh prepare                 # here (naga): .spv/raw_kv/
#   benchmarks/experiments/raw_kv/run.sh gpu OUTDIR bwd_dq|forward
#       # there, carrying .spv, after `source benchmarks/gpu_env.sh install`
#
# prepare: the changed templates (.spv/raw_kv/templates/) and SPIR-V of the wg256 variants of
#   those schedules with and without the change (.spv/raw_kv/{library,changed}/).
# gpu: registers and code size of both sides (pipeline_stats.py), then pass_breakdown.py
#   (checked against the reference first, then each pass timed warm and cold) of the family's
#   best variants from the library and from a copy of this checkout with the changed
#   templates, alternately, at the four fair shapes; then the mlp = 8 ones; then both sides
#   side by side (benchmarks/experiments/compare.py, also OUTDIR/compare.json). Keep the change
#   (apply it, rebuild generated/, re-run gpu_fair.sh) where the changed side is faster.
# ADAPTER (gpu) and SHAPES (the four fair shapes, space-separated d,H,KV,N) may be changed, e.g.
# for a quick run on lavapipe: ADAPTER=cpu SHAPES=64,4,2,256; VARIANTS and MLP8_VARIANTS
# (space-separated names; MLP8_VARIANTS= skips them) replace the family's lists. A whole family
# took ~9 min on the H200 (session 12: ~35 s per variant and side at the four shapes).
set -uo pipefail
cd "$(dirname "$0")/../../.."
HERE=benchmarks/experiments/raw_kv
SPV=.spv/raw_kv
SHAPES=(${SHAPES:-256,8,4,4096 256,8,4,1024 256,8,1,4096 128,32,8,4096})

family() {  # FAMILY: sets KERNEL, EARLY, BEST (the session-10 tables' picks) and MLP8
    case $1 in
    bwd_dq) KERNEL=attention_bwd_dq_split EARLY=4
        BEST=(wg256_ch64_g2_u2_e4_sf16 wg256_ch128_g1_u4_e4_sf16 wg256_ch64_g1_u2_e4_sf16
              wg256_ch128_g2_u4_e4_sf16 wg256_ch64_g2_u2_e4_sf32)
        MLP8=(wg256_ch64_g2_u8_e4_sf16 wg256_ch64_g1_u8_e4_sf16 wg256_ch128_g1_u8_e4_sf16) ;;
    forward) KERNEL=attention_split EARLY=3
        BEST=(wg256_ch64_g2_u2_e3_sf16 wg256_ch32_g1_u4_e3_sf16 wg256_ch128_g2_u2_e3_sf16
              wg256_ch64_g2_u2_e3_sf32)
        MLP8=(wg256_ch64_g2_u8_e3_sf16 wg256_ch64_g1_u8_e3_sf16 wg256_ch128_g1_u8_e3_sf16) ;;
    *) echo "run.sh: family bwd_dq or forward, not '$1'" >&2; return 2 ;;
    esac
    BEST=(${VARIANTS:-${BEST[*]}})
    MLP8=(${MLP8_VARIANTS-${MLP8[*]}})
}

prepare() {
    local wgslgen=.venv/bin/wgslgen tmp side from f
    rm -rf "$SPV" && mkdir -p "$SPV" || return 1
    tmp=$(mktemp -d) && cp -r templates "$tmp/" &&
        (cd "$tmp" && git apply "$OLDPWD/$HERE/change.diff") &&
        mv "$tmp/templates" "$SPV/templates" && rm -rf "$tmp" || return 1
    for f in bwd_dq forward; do
        family $f
        for side in library changed; do
            from=templates; [ $side = changed ] && from=$SPV/templates
            "$wgslgen" transpile --templates "$from" --kernel $KERNEL --set wg=256 \
                --set e=$EARLY --to spv --out "$SPV/$side" | tail -1 || return 1
        done
    done
}

breakdown() {  # ROOT VARIANT JSON: one variant at every shape, from ROOT's templates
    python3 "$1/benchmarks/pass_breakdown.py" --kernel $KERNEL --variant "$2" \
        "${SHAPES[@]/#/--shape=}" --adapter "${ADAPTER:-gpu}" --json "$3" | grep -v '^adapter'
}

gpu() {
    local out=${1:?usage: run.sh gpu OUTDIR FAMILY} copy v side rc=0
    family "${2:-}" || return 2
    [ -d "$SPV/templates" ] || { echo "run.sh: no $SPV: run 'run.sh prepare' here, carry .spv"; return 1; }
    mkdir -p "$out" && out=$(cd "$out" && pwd)
    for side in library changed; do
        python3 benchmarks/pipeline_stats.py "$SPV/$side/$KERNEL" --json "$out/stats_$side.json" \
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
    python3 benchmarks/experiments/compare.py "$out" --json "$out/compare.json" || rc=1
    return $rc
}

case ${1:-} in
prepare) prepare ;;
gpu) gpu "${2:-}" "${3:-}" ;;
*) echo "usage: $0 prepare | gpu OUTDIR bwd_dq|forward" >&2; exit 2 ;;
esac
