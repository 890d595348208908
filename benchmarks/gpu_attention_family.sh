#!/usr/bin/env bash
# Tune the attention family on a GPU at the issue's shapes (head_dim 256, 8 heads, 4 KV heads,
# history 1024 and 4096, f32 inputs). Results land in $RESULTS (default: benchmarks/results/).
# The comparison with PyTorch is benchmarks/gpu_fair.sh (CUDA graphs, warm and cold, floor).
#   benchmarks/gpu_attention_family.sh [KERNEL...]
set -uo pipefail
cd "$(dirname "$0")/.."
RESULTS=${RESULTS:-benchmarks/results}
mkdir -p "$RESULTS"
kernels=("$@")
[ ${#kernels[@]} -gt 0 ] || kernels=(attention_bwd_dq attention_bwd_dkv attention attention_probs)
PY=${PYTHON:-python3}
for k in "${kernels[@]}"; do
    shapes=(--shape head_dim=256,n_heads=8,n_kv_heads=4,history_len=1024
            --shape head_dim=256,n_heads=8,n_kv_heads=4,history_len=4096)
    case $k in attention|attention_probs|attention_split)
        shapes=(--shape head_dim=256,n_heads=8,n_kv_heads=4,history_len=1024,pos=1023,window=0
                --shape head_dim=256,n_heads=8,n_kv_heads=4,history_len=4096,pos=4095,window=0);;
    esac
    $PY -m wgslgen tune --kernel "$k" --adapter gpu "${shapes[@]}" \
        --db "$RESULTS/results.jsonl" --selection "$RESULTS/selection.json" \
        --json > "$RESULTS/tune_$k.json" 2> "$RESULTS/tune_$k.err"
    echo "$k: exit $?"; tail -3 "$RESULTS/tune_$k.err"
done
