#!/usr/bin/env bash
# Issue 12's figures in one H200 session, in device calls of under 10 minutes each:
#   benchmarks/h200_targets.sh dq          # bwd_dq fair run (~250 s)
#   benchmarks/h200_targets.sh fw_dkv      # forward and bwd_dkv fair runs (270 s each on an H200 in
#                                          # session 39, largest-shape checks included: two calls)
#   benchmarks/h200_targets.sh fw          # (or dkv) one of the two, for a call with less time
#   benchmarks/h200_targets.sh dq_out      # seven bwd_dq schedules beside the same of bwd_dq_out
#                                          # (the forward's output given) and its H200 winners in
#                                          # tuning/selection.json, each family with its
#                                          # PyTorch graphs (376 s on an H200, session 39;
#                                          # 331–379 s on an H100, sessions 37–38)
#   benchmarks/h200_targets.sh modes       # the tuning canary against a new worker per variant
#   STEPS="ours test" benchmarks/h200_targets.sh dq_out   # any part, our side alone (no PyTorch)
#   OTHER_GPU='python3 -m wgslgen tune ... --db $R/results.jsonl' benchmarks/h200_targets.sh dkv
#                                          # on another GPU, run that command (its output in
#                                          # $R/other.log, $R in r.tgz; exit: its own) instead
# Run from the repository root of a device call that carries .gl and .whl (gpu_env.sh); it
# exits 3 at once on any GPU but an H200 (the targets are the H200's; ANY_GPU=1 runs the part
# there anyway, for figures to compare within the call, gpu.txt naming the GPU), and leaves
# $OUT/r.tgz: the gpu_fair.sh folders (tables.md, targets.md), logs and gpu.txt. Afterwards,
# here: python3 benchmarks/targets.py DQ FW DKV --bandwidth 4.3e12 over the unpacked folders.
set -uo pipefail
cd "$(dirname "$0")/.."
part=${1:?usage: h200_targets.sh dq|dq_out|fw_dkv|fw|dkv|modes}
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
R=${H200_TARGETS_DIR:-/tmp/r}; mkdir -p "$R"
# gpu.txt gathers every part run here (a warm machine keeps /tmp/r between calls)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu_now.txt
cat $R/gpu_now.txt >> $R/gpu.txt
on_h200=0; grep -q H200 $R/gpu_now.txt && on_h200=1
if [ $on_h200 = 0 ] && [ -z "${OTHER_GPU:-}" ] && [ "${ANY_GPU:-0}" != 1 ]; then
    cp $R/gpu_now.txt "$OUT/gpu.txt"; exit 3
fi
# shellcheck disable=SC1091
source benchmarks/gpu_env.sh install > /dev/null
if [ $on_h200 = 0 ] && [ -n "${OTHER_GPU:-}" ]; then
    # A call lent another GPU still does work that needs no H200 (a tune, an experiment)
    echo "not an H200: OTHER_GPU runs instead of $part" | tee -a $R/gpu.txt
    export R; bash -c "$OTHER_GPU" > $R/other.log 2>&1; rc=$?
    echo "other rc=$rc" | tee -a $R/gpu.txt; tail -20 $R/other.log
    tar czf "$OUT/r.tgz" -C "$(dirname "$R")" "$(basename "$R")"; exit $rc
fi
[ $on_h200 = 1 ] || echo "not an H200: these figures compare the two sides on this GPU, not" \
    "the issue's targets" | tee -a $R/gpu.txt
# STEPS from the caller runs less (STEPS="ours test": our side and its check, no PyTorch)
export BANDWIDTH=4.3e12 REPS=100 STEPS=${STEPS:-torch ours table test targets}
t=$SECONDS
dkv() { ONLY='wg(64|128)_v4_s(f32|f16)(_hf1)?$' benchmarks/gpu_fair.sh $R/dkv bwd_dkv; }
DQ='split__wg256_((ch64_g2_u2|ch64_g1_u2|ch32_g1_u4)_e4_sf16_hd256|(ch128_g2_u4|ch64_g2_u2)_e4_sf16_hd128|(ch64_g2_u2|ch128_g1_u2|ch32_g1_u4)_e4_sf32_hd256|ch64_g2_u2_e4_sf32_hd128)$'
# dq_out: the same seven schedules of both kernels (the best at each shape on the H200 in
# session 23, and bwd_dq_out's own on the H100 in session 31: ch32_g2_u4, ch128_g2_u2 at hd128)
SCHEDULES='(ch64_g2_u2|ch32_g1_u4|ch32_g2_u4)_Ef16_hd256|ch128_g2_u(2|4)_Ef16_hd128|ch64_g2_u2_Ef32_hd(128|256)'
# and bwd_dq_out's own at head_dim 128 (bwd_dq has none): 128 threads (session 32), 128 keys
# of four heads (session 33)
DQ_PAIRS="split__wg256_(${SCHEDULES//_E/_e4_s})\$|split_out__wg256_(${SCHEDULES//_E/_s})\$"
DQ_PAIRS+='|split_out__wg128_(ch64_g2_u2_sf32|ch128_g2_u2_sf16)_hd128$'
DQ_PAIRS+='|split_out__wg256_ch128_g4_u4_s(f32|f16)_hd128$'
# and its subgroup schedules at head_dim 128 (session 35: the H100's tune picks ch128_g2;
# session 36: rows of 16 invocations, sg2, 0.5 µs faster there)
DQ_PAIRS+='|split_out__wg256_ch128_g(2|4)_u4_s(f32|f16)_hd128_sg1$'
DQ_PAIRS+='|split_out__wg256_ch128_g2_u4_s(f32|f16)_hd128_sg2$'
# and whatever the H200's tuning selection picks for bwd_dq_out (a tune after session 39 may
# pick a schedule the list above lacks); none where tuning/selection.json is missing or unreadable
TUNED=$(python3 - tuning/selection.json <<'PY' 2> /dev/null
import json, sys
entries = json.load(open(sys.argv[1]))["entries"]
kernel = "attention_bwd_dq_split_out"
print("|".join(sorted({e["winner"]["variant"].split("__", 1)[1] for e in entries
    if e["kernel"] == kernel and "H200" in e.get("device_label", "")})))
PY
)
[ -z "$TUNED" ] || DQ_PAIRS+="|split_out__($TUNED)\$"
case $part in
dq) ONLY=$DQ benchmarks/gpu_fair.sh $R/dq bwd_dq; rc=$?;;
dq_out) ONLY=$DQ_PAIRS benchmarks/gpu_fair.sh $R/dq_out bwd_dq bwd_dq_out; rc=$?;;
fw|fw_dkv) ONLY='split__wg256_((ch64_g2_u2|ch32_g2_u4)_e3_sf16_hd256|(ch64_g1_u4|ch32_g1_u4)_e3_spf16_hd256|(ch64_g2_u2|ch32_g1_u4)_e3_sf32_hd256|(ch128_g2_u4|ch128_g2_u2)_e3_sf16_hd128(_nh32_kvh8)?|ch128_g2_u2_e3_sf32|ch64_g2_u2_e3_sf32_hd128)$' \
        benchmarks/gpu_fair.sh $R/fw forward; rc=$?
    if [ "$part" = fw_dkv ]; then
        echo "fw rc=$rc $((SECONDS - t)) s" | tee -a $R/gpu.txt; t=$SECONDS
        dkv; rc=$?
    fi;;
dkv) dkv; rc=$?;;
modes) for args in "--kernel attention_split --set wg=256 --set e=3 --set hd=256 --set s=f16" \
                   "--kernel attention_bwd_dq_split --set wg=256 --set e=4 --set s=f16"; do
        name=modes_$(echo "$args" | cut -d' ' -f2)
        # shellcheck disable=SC2086
        timeout 280 python3 benchmarks/worker_modes.py run $R/$name --modes always,auto -- \
            $args --adapter gpu > $R/$name.log 2>&1
        rc=$?; echo "$name rc=$rc" | tee -a $R/gpu.txt; tail -20 $R/$name.log
    done;;
*) echo "h200_targets.sh: unknown part $part (dq, dq_out, fw_dkv, fw, dkv or modes)" >&2; exit 2;;
esac
echo "$part rc=$rc $((SECONDS - t)) s" | tee -a $R/gpu.txt
tar czf "$OUT/r.tgz" -C "$(dirname "$R")" "$(basename "$R")"
