#!/usr/bin/env bash
# Ran in session 42 on an H100 (results/h100_s42/call1): the tune exited 3; experiments/no_clamp
# now lies in results/h100_s42/no_clamp/, so this script no longer runs as it stands.
# Prepared in session 41, not run: the session's device time was spent. First, here:
#   VARIANTS="wg256_ch64_g2_u2_sf16_hd256 wg256_ch32_g1_u4_sf16_hd256" \
#       benchmarks/experiments/run.sh prepare no_clamp bwd_dq_out
# Then run from the repository root of a device call that carries .gl, .whl and .spv:
#   bash benchmarks/results/h100_s41/next_call.sh
# On an H200 it first runs session 39's tune (results/h200_s39/next_call.sh, about 120 s); on any
# GPU it then times experiments/no_clamp beside the library (about 110 s on an H100).
# Afterwards, here:
# - the tune: wgslgen db merge on its results.jsonl (r.tgz), then copy selection.json to tuning/;
# - the experiment: move experiments/no_clamp and x.tgz's no_clamp/ into results/<gpu>_sNN/.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash benchmarks/results/h200_s39/next_call.sh; echo "h200 tune rc=$? (3: not an H200)"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
# shellcheck disable=SC1091
source benchmarks/gpu_env.sh install > /dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export VARIANTS="wg256_ch64_g2_u2_sf16_hd256 wg256_ch32_g1_u4_sf16_hd256"
export SHAPES="256,8,4,4096 256,8,4,1024 256,8,1,4096"
mkdir -p /tmp/x
t=$SECONDS; timeout 200 bash benchmarks/experiments/run.sh gpu no_clamp bwd_dq_out /tmp/x/no_clamp > /tmp/x/no_clamp.log 2>&1
echo "no_clamp rc=$? $((SECONDS-t)) s"; tail -n 30 /tmp/x/no_clamp.log
tar czf "$OUT/x.tgz" -C /tmp x
