#!/usr/bin/env bash
# The fair comparison on a GPU machine with CUDA (PyTorch) and Vulkan (wgpu): PyTorch in CUDA
# graphs, every variant of the timed kernels (checked against the reference, then timed warm
# and cold), the launch floor, the tables, and every timed variant checked at the largest shape.
#   benchmarks/gpu_fair.sh OUTDIR [FAMILY...]          (families: bwd_dq bwd_dkv forward probs)
# On a bare GPU machine (no Vulkan loader, no wgpu), first: source benchmarks/gpu_env.sh install
# Environment: PYTHON (python3), WGSLGEN_PATH (a wgslgen checkout to import; default: this
# repository), BANDWIDTH (bytes/s for the floor; 4.3e12), STEPS (default "torch ours table
# test targets"; targets: issue 12's targets met or not, benchmarks/targets.py), ONLY (a regex: time only the variants it matches, and the baselines), REPS (torch
# replays per figure, 200), WARMUP_S (seconds each of our variants runs before its samples;
# 0.025). The test step checks every variant of OUTDIR/ours.json at the largest shape
# (benchmarks/largest_shapes.py; before session 10 it ran `wgslgen test` with TEST_SET options).
# STEPS may also hold `stream` (not a default, ~2 s per byte count and `loads` variant): the
# measured two-pass floor at the families' byte counts (benchmarks/stream_floor.py; for bwd_dkv
# the one-pass write floor at the bytes of d_k and d_v, about 70 s at the four shapes); the table
# step then also writes stream_tables.md, that floor beside the best variants and the target.
set -uo pipefail
cd "$(dirname "$0")/.."
STEPS=${STEPS:-"torch ours table test targets"}
# A misspelt step would otherwise be skipped in silence, a device call spent on less. A new
# step goes in KNOWN_STEPS and in the run loop's case below.
KNOWN_STEPS="torch ours table test targets stream"
for step in $STEPS; do
    [[ " $KNOWN_STEPS " == *" $step "* ]] ||
        { echo "gpu_fair.sh: unknown step '$step' in STEPS (one of: $KNOWN_STEPS)" >&2; exit 2; }
done
OUT=${1:?usage: gpu_fair.sh OUTDIR [FAMILY...]}; shift
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
PY=${PYTHON:-python3}
ROOT=$PWD
export PYTHONPATH=${WGSLGEN_PATH:-$ROOT}${PYTHONPATH:+:$PYTHONPATH}
fam=("$@"); [ ${#fam[@]} -gt 0 ] || fam=(bwd_dq bwd_dkv forward probs)
rc=0
for step in $STEPS; do
    case $step in
    torch) $PY benchmarks/fair_attention.py torch --families "${fam[@]}" --reps "${REPS:-200}" --json "$OUT/torch.json" \
               > "$OUT/torch.log" 2>&1 || { echo "torch: failed"; rc=1; }; tail -2 "$OUT/torch.log";;
    ours) # From the wgslgen checkout: its worker runs `python -m wgslgen.run.worker` there.
          (cd "${WGSLGEN_PATH:-$ROOT}" && $PY "$ROOT/benchmarks/fair_attention.py" ours \
              --families "${fam[@]}" ${ONLY:+--only "$ONLY"} ${WARMUP_S:+--warmup-s "$WARMUP_S"} --json "$OUT/ours.json") \
              > "$OUT/ours.log" 2>&1 || { echo "ours: FAILED (mismatch or error)"; rc=1; }
          tail -3 "$OUT/ours.log";;
    test) # Correctness at the largest shape (head_dim 256, history 32768, or a variant's own
          # max_history where smaller) of every variant the ours step timed: lavapipe, and so
          # CI, cannot run it.
          if [ -f "$OUT/ours.json" ]; then
              (cd "${WGSLGEN_PATH:-$ROOT}" && $PY "$ROOT/benchmarks/largest_shapes.py" "$OUT/ours.json" \
                  --json "$OUT/largest.json") > "$OUT/largest.log" 2>&1 || { echo "test: FAILED"; rc=1; }
              tail -1 "$OUT/largest.log"
          else echo "test: no $OUT/ours.json to take the variants from (run the ours step first)"; rc=1; fi;;
    targets) # exit 1 only says some target is not met: not a failure of the run
          $PY benchmarks/targets.py "$OUT" --bandwidth "${BANDWIDTH:-4.3e12}" > "$OUT/targets.md"
          [ $? -le 1 ] || rc=1; sed -n "/^$/q;p" "$OUT/targets.md";;
    stream) (cd "${WGSLGEN_PATH:-$ROOT}" && $PY "$ROOT/benchmarks/stream_floor.py" measure \
                --families "${fam[@]}" --json "$OUT/stream.json") > "$OUT/stream.log" 2>&1 ||
                { echo "stream: FAILED (mismatch or error)"; rc=1; }; tail -1 "$OUT/stream.log";;
    table) $PY benchmarks/fair_attention.py table "$OUT/torch.json" "$OUT/ours.json" \
               --bandwidth "${BANDWIDTH:-4.3e12}" > "$OUT/tables.md" || rc=1; cat "$OUT/tables.md"
           if [ -f "$OUT/stream.json" ]; then
               $PY benchmarks/stream_floor.py table "$OUT/stream.json" "$OUT/ours.json" "$OUT/torch.json" \
                   > "$OUT/stream_tables.md" || rc=1; cat "$OUT/stream_tables.md"
           fi;;
    esac
done
exit $rc
