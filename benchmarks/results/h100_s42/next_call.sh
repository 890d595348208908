#!/usr/bin/env bash
# Superseded in session 43, never run: its work is benchmarks/queue/30-k-mid.sh (and the H200 tune
# it starts is benchmarks/queue/10-h200-out-tune.sh); kept as the record of what session 42 planned.
# Session 42. First, here:
#   VARIANTS="wg256_ch64_g2_u2_sf16_hd256 wg128_ch128_g2_u2_sf16_hd128 wg256_ch128_g2_u2_sf16_hd128" \
#       benchmarks/experiments/run.sh prepare k_mid bwd_dq_out
# Then from the repository root of a device call that carries .gl, .whl and .spv:
#   bash benchmarks/results/h100_s42/next_call.sh
# On an H200 it first runs session 39's _out tune (results/h200_s39/next_call.sh, about 250 s);
# on any other GPU, or with SKIP_TUNE=1 (the second call on a warm H200), it times
# experiments/k_mid beside the library (about 150 s on an H100).
# Afterwards, here: the tune as next_call.sh of session 39 says; the experiment: move
# experiments/k_mid and x.tgz's k_mid/ into results/<gpu>_sNN/.
set -uo pipefail
cd "$(dirname "$0")/../../.."
if [ "${SKIP_TUNE:-0}" != 1 ]; then
    bash benchmarks/results/h200_s39/next_call.sh; rc=$?; echo "h200 tune rc=$rc (3: not an H200)"
    # the tune and the experiment do not fit one 600 s call: on an H200, call again with SKIP_TUNE=1
    [ $rc = 3 ] || exit $rc
fi
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
# shellcheck disable=SC1091
source benchmarks/gpu_env.sh install > /dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/x
t=$SECONDS
VARIANTS="wg256_ch64_g2_u2_sf16_hd256" SHAPES="256,8,4,4096 256,8,1,4096 256,8,4,1024" \
    timeout 150 bash benchmarks/experiments/run.sh gpu k_mid bwd_dq_out /tmp/x/k_mid > /tmp/x/k_mid.log 2>&1
echo "k_mid hd256 rc=$? $((SECONDS-t)) s"; tail -n 14 /tmp/x/k_mid.log
t=$SECONDS
VARIANTS="wg128_ch128_g2_u2_sf16_hd128 wg256_ch128_g2_u2_sf16_hd128" SHAPES="128,32,8,4096" \
    timeout 150 bash benchmarks/experiments/run.sh gpu k_mid bwd_dq_out /tmp/x/k_mid128 > /tmp/x/k_mid128.log 2>&1
echo "k_mid hd128 rc=$? $((SECONDS-t)) s"; tail -n 14 /tmp/x/k_mid128.log
tar czf "$OUT/x.tgz" -C /tmp x
