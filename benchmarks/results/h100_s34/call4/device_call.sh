#!/usr/bin/env bash
# Session 34, call 4 (338 device seconds left): experiments pre8 and preall, K rows of phase 3
# loaded before V's (8 / all instead of 4), on whichever GPU comes (carrying .gl .whl .spv)
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
source benchmarks/gpu_env.sh install > /dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
mkdir -p /tmp/r
export VARIANTS="wg128_ch128_g2_u2_sf16_hd128 wg256_ch128_g2_u2_sf16_hd128" SHAPES=128,32,8,4096
for e in pre8 preall; do
    timeout 100 benchmarks/experiments/run.sh gpu $e bwd_dq_out /tmp/r/$e > /tmp/r/$e.log 2>&1
    echo "$e rc=$?"; tail -8 /tmp/r/$e.log
done
tar czf "$OUT/r.tgz" -C /tmp r
