#!/usr/bin/env bash
# The fair comparison on a GPU machine with CUDA (PyTorch) and Vulkan (wgpu): PyTorch in CUDA
# graphs, every variant of the timed kernels (checked against the reference, then timed warm
# and cold), the launch floor, `wgslgen test` at the largest shapes, and the tables.
#   benchmarks/gpu_fair.sh OUTDIR [FAMILY...]          (families: bwd_dq bwd_dkv forward probs)
# Environment: PYTHON (python3), WGSLGEN_PATH (a wgslgen checkout to import; default: this
# repository), BANDWIDTH (bytes/s for the floor; 4.3e12), STEPS (default "torch ours table
# test"), ONLY (a regex: time only the variants it matches, and the baselines), REPS (torch
# replays per figure, 200), WARMUP_S (seconds each of our variants runs before its samples;
# 0.025), TEST_SET (--set options of the largest-shape test; default --set wg=256),
# TEST_SET_SPLIT (more --set options there for the *_split kernels), TEST_KERNELS (the
# kernels of that test; default all six).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: gpu_fair.sh OUTDIR [FAMILY...]}; shift
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
PY=${PYTHON:-python3}
ROOT=$PWD
export PYTHONPATH=${WGSLGEN_PATH:-$ROOT}${PYTHONPATH:+:$PYTHONPATH}
fam=("$@"); [ ${#fam[@]} -gt 0 ] || fam=(bwd_dq bwd_dkv forward probs)
STEPS=${STEPS:-"torch ours table test"}
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
    test) # Correctness at the largest shapes: history 32768 (the global-memory variants of the
          # single-pass kernels and every split variant), head_dim 256.
          for k in ${TEST_KERNELS:-attention_bwd_dq_split attention_split attention_bwd_dkv \
                   attention_bwd_dq attention attention_probs}; do
              shape=head_dim=256,n_heads=8,n_kv_heads=4,history_len=32768
              case $k in attention|attention_split|attention_probs) shape=$shape,pos=32767,window=0;; esac
              sets=(${TEST_SET:---set wg=256})
              case $k in attention|attention_bwd_dq|attention_probs) sets+=(--set max_history=0);;
                         *_split) sets+=(${TEST_SET_SPLIT:-});; esac
              (cd "${WGSLGEN_PATH:-$ROOT}" && $PY -m wgslgen test --templates "$ROOT/templates" --kernel $k \
                  "${sets[@]}" --shape $shape --adapter gpu --timeout 120) > "$OUT/test_$k.log" 2>&1 \
                  || { echo "test $k: FAILED"; rc=1; }
              tail -1 "$OUT/test_$k.log"
          done;;
    table) $PY benchmarks/fair_attention.py table "$OUT/torch.json" "$OUT/ours.json" \
               --bandwidth "${BANDWIDTH:-4.3e12}" > "$OUT/tables.md" || rc=1; cat "$OUT/tables.md";;
    esac
done
exit $rc
