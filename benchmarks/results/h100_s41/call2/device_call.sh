#!/usr/bin/env bash
# Session 41, call 2 (the device time left allowed no tune): on any GPU two _out experiments beside the library: fin_mem (the finalize's sums in a workgroup
# array of its own, 1 KB, not the partials pass's 10 KB s_part) and wg_pad (4864 B more
# workgroup memory in the partials pass), as one diff (zero_init): the pass breakdown tells them
# apart. What zeroing workgroup memory costs each workgroup.
set -uo pipefail
mkdir -p /tmp/x
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
# shellcheck disable=SC1091
source benchmarks/gpu_env.sh install > /dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
# Does wgpu zero workgroup memory here? (On lavapipe it does not: a read-only pass sees the last pass's 7s.)
VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json python3 benchmarks/results/h100_s41/call2/zero_init_check.py 2>&1 | grep -v XDG
export VARIANTS="wg256_ch64_g2_u2_sf16_hd256 wg256_ch32_g1_u4_sf16_hd256"
export SHAPES="256,8,4,4096 256,8,4,1024"
for x in zero_init; do
    t=$SECONDS; timeout 150 bash benchmarks/experiments/run.sh gpu $x bwd_dq_out /tmp/x/$x > /tmp/x/$x.log 2>&1
    echo "$x rc=$? $((SECONDS-t)) s"; tail -n 40 /tmp/x/$x.log
done
tar czf "$OUT/x.tgz" -C /tmp x
