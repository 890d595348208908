#!/usr/bin/env bash
# A template experiment timed against the library on one GPU, side by side: the experiment is
# a folder holding change.diff (a patch of templates/, not applied to the library): NAME is
# its path, or its name under benchmarks/experiments/ (kept, once run, as a record in
# benchmarks/results/, where it can be run again while its diff applies). Both sides' SPIR-V are sized by the driver (pipeline_stats.py), and each
# variant is timed from the library's templates and from the changed ones alternately
# (pass_breakdown.py: checked against the reference first, all passes and each alone, warm and
# cold, a fresh worker per variant and shape); compare.py prints both sides.
#
#   benchmarks/gpu_env.sh fetch && benchmarks/experiments/run.sh prepare NAME FAMILY   # here
#   source benchmarks/gpu_env.sh install                             # there, carrying .gl .whl .spv
#   benchmarks/experiments/run.sh gpu NAME FAMILY OUTDIR
#   benchmarks/experiments/run.sh step NAME FAMILY OUTDIR SECONDS   # gpu, cut at SECONDS, logged
#                                                                   # to OUTDIR.log (queue jobs)
#
# FAMILY: bwd_dq, bwd_dq_out or forward (its kernel, `early` value and default variants below).
# Environment: SPV_ROOT (where prepare writes, .spv), VARIANTS (variant names without the kernel, space-separated, a change's new ones too: instead of the
# family's defaults; the same for prepare and gpu, since prepare keeps only their SPIR-V), SHAPES (d,H,KV,N ..., the four fair shapes), ADAPTER (gpu), PYTHON.
# About 35 s per variant and side at the four shapes on an H200: wrap it in `timeout`, and tar
# OUTDIR (a device call returns at most 8 files).
set -uo pipefail
cd "$(dirname "$0")/../.."
SHAPES=(${SHAPES:-256,8,4,4096 256,8,4,1024 256,8,1,4096 128,32,8,4096})
# The project's venv where there is one (here), else the python3 that gpu_env.sh installed into
PYTHON=${PYTHON:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}

family() {  # FAMILY: sets KERNEL, EARLY and VARIANTS (the fair tables' best schedules; a
            # fixed_head_dim variant is timed at the shapes of its head_dim only)
    local best
    case $1 in
    bwd_dq) KERNEL=attention_bwd_dq_split EARLY=4
        best="wg256_ch64_g2_u2_e4_sf16_hd256 wg256_ch32_g1_u4_e4_sf16_hd256 wg256_ch128_g2_u4_e4_sf16_hd128 wg256_ch128_g1_u2_e4_sf32_hd256" ;;
    bwd_dq_out) KERNEL=attention_bwd_dq_split_out EARLY=""   # always early = 4: no `e` axis
        best="wg256_ch64_g2_u2_sf16_hd256 wg256_ch32_g2_u4_sf16_hd256 wg256_ch128_g2_u2_sf16_hd128 wg256_ch64_g2_u2_sf32_hd256" ;;
    forward) KERNEL=attention_split EARLY=3
        best="wg256_ch64_g2_u2_e3_sf16_hd256 wg256_ch32_g2_u4_e3_sf16_hd256 wg256_ch128_g2_u4_e3_sf16_hd128 wg256_ch64_g2_u2_e3_sf32_hd256" ;;
    *) echo "run.sh: family bwd_dq, bwd_dq_out or forward, not '$1'" >&2; return 2 ;;
    esac
    read -r -a VARIANTS <<< "${VARIANTS:-$best}"
}

experiment() {  # NAME: sets DIFF and SPV (the prepared templates and SPIR-V)
    local dir=${1:?no experiment}
    [ -d "$dir" ] || dir=benchmarks/experiments/$1    # a folder, or a name under experiments/
    [ -f "$dir/change.diff" ] || { echo "run.sh: no $dir/change.diff" >&2; return 2; }
    DIFF=$(cd "$dir" && pwd)/change.diff SPV=${SPV_ROOT:-.spv}/$(basename "$dir")
}

prepare() {  # NAME FAMILY: the changed templates and both sides' SPIR-V, under .spv/NAME
    local wgslgen=.venv/bin/wgslgen tmp side from wgs spv
    experiment "$1" && family "${2:-}" || return 2
    # Replace only what an earlier prepare wrote (its mark), never another folder of that name.
    if [ -e "$SPV" ] && [ ! -f "$SPV/.prepared" ]; then
        echo "run.sh: not replacing $SPV: run.sh prepare did not write it" >&2; return 1
    fi
    # One experiment may be prepared for both families: only this family's SPIR-V is replaced.
    mkdir -p "$SPV" && touch "$SPV/.prepared" &&
        rm -rf "$SPV/templates" "$SPV/library/$KERNEL" "$SPV/changed/$KERNEL" || return 1
    tmp=$(mktemp -d) && cp -r templates "$tmp/" &&
        (cd "$tmp" && git apply "$DIFF") &&
        mv "$tmp/templates" "$SPV/templates" && rm -rf "$tmp" || return 1
    # The workgroup sizes the timed variants name (wg128 ones too), not every size
    wgs=$(printf '%s\n' "${VARIANTS[@]}" | sed -n 's/^wg\([0-9]*\)_.*/--set wg=\1/p' | sort -u)
    for side in library changed; do
        from=templates; [ $side = changed ] && from=$SPV/templates
        "$wgslgen" transpile --templates "$from" --kernel $KERNEL $wgs \
            ${EARLY:+--set e=$EARLY} --to spv --out "$SPV/$side" | tail -1 || return 1
        # Only the timed variants' SPIR-V travels: a whole kernel's is 3-5 MB a side, and a
        # device call carries 64 MiB in all, the repository's tracked files included.
        for spv in "$SPV/$side/$KERNEL"/*.spv; do
            timed "$(basename "$spv" .spv)" || rm -f "$spv"
        done
    done
    # A name neither side built (a typo, or another family's variant) would otherwise leave
    # gpu nothing to size or time for it.
    for v in "${VARIANTS[@]}"; do
        [ -f "$SPV/library/$KERNEL/${KERNEL}__$v.spv" ] || [ -f "$SPV/changed/$KERNEL/${KERNEL}__$v.spv" ] ||
            { echo "run.sh: VARIANTS names $v, which neither side of $KERNEL builds" >&2; return 1; }
    done
}

timed() {  # MODULE (KERNEL__variant): is its variant one of VARIANTS?
    local v
    for v in "${VARIANTS[@]}"; do [ "$1" = "${KERNEL}__$v" ] && return 0; done
    return 1
}

breakdown() {  # ROOT VARIANT JSON: one variant at every shape, from ROOT's templates
    "$PYTHON" "$1/benchmarks/pass_breakdown.py" --kernel $KERNEL --variant "$2" \
        "${SHAPES[@]/#/--shape=}" --adapter "${ADAPTER:-gpu}" --json "$3" | grep -v '^adapter'
}

gpu() {  # NAME FAMILY OUTDIR
    local out=${3:?usage: run.sh gpu NAME FAMILY OUTDIR} copy v side only rc=0
    experiment "$1" && family "$2" || return 2
    [ -d "$SPV/templates" ] || { echo "run.sh: no $SPV: run 'run.sh prepare $1 $2' here, carry .spv" >&2; return 1; }
    mkdir -p "$out" && out=$(cd "$out" && pwd)
    # Only the timed variants: the whole kernel (108 modules) took over 2 minutes a side.
    only="__($(IFS='|'; echo "${VARIANTS[*]}"))\$"
    # --unzeroed: as wgpu-native builds the timed pipelines, without naga's zeroing of workgroup
    # memory (benchmarks/results/h100_s41/zero_init: it was most of the finalize's binary)
    for side in library changed; do
        "$PYTHON" benchmarks/pipeline_stats.py "$SPV/$side/$KERNEL" --only "$only" --unzeroed \
            --json "$out/stats_$side.json" \
            > "$out/stats_$side.txt" 2>&1 || rc=1
    done
    copy=$(mktemp -d) && cp -r benchmarks wgslgen pyproject.toml "$copy/" &&
        cp -r "$SPV/templates" "$copy/templates" || return 1
    for v in "${VARIANTS[@]}"; do
        # A variant the change adds (generated/ is the library's; one whose naga and Tint
        # texts differ is built as .naga.wgsl and .tint.wgsl): the changed side alone, which
        # compare.py sets beside the fastest library variant at each shape
        lib=generated/$KERNEL/${KERNEL}__$v
        if [ -f "$lib.wgsl" ] || [ -f "$lib.naga.wgsl" ]; then
            breakdown . "$v" "$out/library_$v.json" || rc=1
        else
            echo "run.sh: $v: not in the library, timed with the change only"
        fi
        breakdown "$copy" "$v" "$out/changed_$v.json" || rc=1
    done
    rm -rf "$copy"
    "$PYTHON" benchmarks/experiments/compare.py "$out" --json "$out/compare.json" || rc=1
    return $rc
}

step() {  # NAME FAMILY OUTDIR SECONDS: gpu under `timeout SECONDS` (a device-queue job's step),
          # its output in OUTDIR.log; prints its exit status, seconds and the log's end
    local out=${3:?usage: run.sh step NAME FAMILY OUTDIR SECONDS} limit=${4:?no SECONDS} t=$SECONDS rc
    mkdir -p "$(dirname "$out")" || return 1
    timeout "$limit" bash benchmarks/experiments/run.sh gpu "$1" "$2" "$out" > "$out.log" 2>&1
    rc=$?
    echo "$(basename "$out"): rc=$rc in $((SECONDS - t)) s"
    tail -n 14 "$out.log"
    return $rc
}

case ${1:-} in
prepare) prepare "${2:-}" "${3:-}" ;;
gpu) gpu "${2:-}" "${3:-}" "${4:-}" ;;
step) step "${2:-}" "${3:-}" "${4:-}" "${5:-}" ;;
*) echo "usage: $0 prepare NAME FAMILY | gpu NAME FAMILY OUTDIR | step NAME FAMILY OUTDIR SECONDS (FAMILY: bwd_dq, bwd_dq_out or forward)" >&2; exit 2 ;;
esac
