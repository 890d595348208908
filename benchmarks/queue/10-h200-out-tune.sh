#!/usr/bin/env bash
# seconds: 420
# needs: H200
# The two attention_bwd_dq_split_out tune shapes that have only H100 records (session 39 prepared
# them; sessions 40-43 got no H200). After `device_queue.sh collect FILES_AT DEST`, here:
# `wgslgen db merge DEST/10-h200-out-tune/results.jsonl`, copy its selection.json to tuning/,
# and run tests/test_shipped_selection.py.
set -uo pipefail
cp tuning/results.jsonl tuning/selection.json "$JOB_OUT/"
# (the job fails, and so stays queued, if either tune fails)
rc=0
tune() {  # LOG SECONDS ARGS...: one tune into the job's copy of the records
    local log=$1 limit=$2 t=$SECONDS status; shift 2
    timeout "$limit" python3 -m wgslgen tune --kernel attention_bwd_dq_split_out --adapter gpu \
        --db "$JOB_OUT/results.jsonl" --selection "$JOB_OUT/selection.json" "$@" \
        > "$JOB_OUT/$log" 2>&1
    status=$?
    echo "$log: rc=$status $((SECONDS - t)) s"; tail -n 6 "$JOB_OUT/$log"
    [ $status = 0 ] || rc=1
}
tune tune_hd256.log 200 --set wg=256 --set hd=256 --time 45s \
    --shape head_dim=256,n_heads=8,n_kv_heads=4,history_len=4096
tune tune_hd128.log 200 --set hd=128 --time 75s \
    --shape head_dim=128,n_heads=8,n_kv_heads=4,history_len=1024
exit $rc
