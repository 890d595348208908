#!/usr/bin/env bash
# Session 40, call 1: on an H200 the two _out tune shapes session 39 left (next_call.sh), then on
# any GPU two _out experiments beside the library: shared_d (D = d_out·out once a workgroup,
# not once a thread) and late_ds (d_scores stored after the last barrier).
set -uo pipefail
mkdir -p /tmp/x
bash benchmarks/results/h200_s39/next_call.sh; echo "next_call rc=$?"
# shellcheck disable=SC1091
source benchmarks/gpu_env.sh install > /dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export VARIANTS="wg256_ch64_g2_u2_sf16_hd256 wg256_ch32_g1_u4_sf16_hd256"
export SHAPES="256,8,4,4096 256,8,4,1024 256,8,1,4096"
for x in shared_d late_ds; do
    t=$SECONDS; timeout 200 bash benchmarks/experiments/run.sh gpu $x bwd_dq_out /tmp/x/$x > /tmp/x/$x.log 2>&1
    echo "$x rc=$? $((SECONDS-t)) s"; tail -n 30 /tmp/x/$x.log
done
tar czf "$OUT/x.tgz" -C /tmp x
