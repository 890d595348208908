#!/usr/bin/env bash
# Superseded in session 43, never run: its work is benchmarks/queue/10-h200-out-tune.sh.
# Prepared in session 39, not run (the session's device time was spent). Run from the repository
# root of a device call that carries .gl and .whl: bash benchmarks/results/h200_s39/next_call.sh
# On an H200, the two attention_bwd_dq_split_out tune shapes that call 4's timeout cut (about
# 120 s; the H200 has _out records at the other three); afterwards, here: wgslgen db merge
# R/results.jsonl, copy R/selection.json to tuning/. On any other GPU it exits 3 (those shapes
# have H100 records from session 38).
set -uo pipefail
cd "$(dirname "$0")/../../.."
R=/tmp/r5; mkdir -p "$R"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$R/gpu.txt"
grep -q H200 "$R/gpu.txt" || { cp "$R/gpu.txt" "$OUT/"; exit 3; }
# shellcheck disable=SC1091
source benchmarks/gpu_env.sh install > /dev/null
cp tuning/results.jsonl tuning/selection.json "$R/"
t=$SECONDS; timeout 200 python3 -m wgslgen tune --kernel attention_bwd_dq_split_out \
    --set wg=256 --set hd=256 --shape head_dim=256,n_heads=8,n_kv_heads=4,history_len=4096 \
    --time 45s --adapter gpu --db "$R/results.jsonl" --selection "$R/selection.json" > "$R/tune_hd256.log" 2>&1
echo "tune hd256 rc=$? $((SECONDS-t)) s"; tail -n 6 "$R/tune_hd256.log"
t=$SECONDS; timeout 200 python3 -m wgslgen tune --kernel attention_bwd_dq_split_out --set hd=128 \
    --shape head_dim=128,n_heads=8,n_kv_heads=4,history_len=1024 --time 75s --adapter gpu \
    --db "$R/results.jsonl" --selection "$R/selection.json" > "$R/tune_hd128.log" 2>&1
echo "tune hd128 rc=$? $((SECONDS-t)) s"; tail -n 6 "$R/tune_hd128.log"
tar czf "$OUT/r.tgz" -C /tmp "$(basename "$R")"
