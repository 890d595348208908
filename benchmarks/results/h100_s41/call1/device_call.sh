#!/usr/bin/env bash
# Session 41, call 1: on an H200 the two _out tune shapes session 39 left (next_call.sh), then on
# any GPU two _out experiments beside the library: pin_all (every phase-3 K row and the probs
# loaded before V's and folded into a workgroup word before the first barrier, so the driver
# cannot sink them past it) and pin_pre (the same pin on the library's early rows only).
set -uo pipefail
mkdir -p /tmp/x
bash benchmarks/results/h200_s39/next_call.sh; echo "next_call rc=$?"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
# shellcheck disable=SC1091
source benchmarks/gpu_env.sh install > /dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export VARIANTS="wg256_ch64_g2_u2_sf16_hd256 wg256_ch32_g1_u4_sf16_hd256 wg128_ch128_g2_u2_sf16_hd128"
for x in pin_all pin_pre; do
    t=$SECONDS; timeout 230 bash benchmarks/experiments/run.sh gpu $x bwd_dq_out /tmp/x/$x > /tmp/x/$x.log 2>&1
    echo "$x rc=$? $((SECONDS-t)) s"; tail -n 40 /tmp/x/$x.log
done
cp /tmp/r5.tgz "$OUT/" 2>/dev/null
tar czf "$OUT/x.tgz" -C /tmp x
