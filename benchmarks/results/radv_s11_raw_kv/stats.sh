#!/usr/bin/env bash
# Session 11: registers, spills and code of experiments/raw_kv's two sides from Mesa's RADV
# compiler for an RDNA3 GPU (gfx1100) on a null device: no AMD GPU, no device time. Run from
# anywhere after `benchmarks/experiments/raw_kv/run.sh prepare` (~15 min on 2 cores).
cd "$(dirname "$0")/../../.." || exit 1
export RADV_FORCE_FAMILY=gfx1100 VK_DRIVER_FILES=/usr/share/vulkan/icd.d/radeon_icd.x86_64.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
OUT=benchmarks/results/radv_s11_raw_kv
DQ='wg256_(ch64_g2_u2|ch128_g1_u4|ch64_g1_u2|ch128_g2_u4|ch64_g2_u8|ch64_g1_u8|ch128_g1_u8)_e4_(sf16|spf16)$'
FW='wg256_(ch64_g2_u2|ch32_g1_u4|ch128_g2_u2|ch64_g2_u8|ch64_g1_u8|ch128_g1_u8)_e3_(sf16|spf16)$'
for side in library changed; do
    for kernel in attention_bwd_dq_split attention_split; do
        only=$DQ; [ $kernel = attention_split ] && only=$FW
        .venv/bin/python benchmarks/pipeline_stats.py ".spv/raw_kv/$side/$kernel" --only "$only" \
            --device RADV > "$OUT/${side}_$kernel.txt"
    done
done
