"""SPIR-V of subgroup variants for the driver's register counts (session 35, sg_sums).

naga-wasm writes every module with a SPIR-V 1.0 header, and `wgslgen transpile` refuses the
subgroup variants (their operations need 1.3). For `pipeline_stats.py` alone, this runs the
transpile with that refusal and the spirv-val check off, then sets each header to 1.3 (the
modules then pass `spirv-val --target-env vulkan1.1`). Arguments are `wgslgen transpile`'s;
`--out` is required:

    .venv/bin/python spv13.py --templates .spv/sg_sums2/templates \
        --kernel attention_bwd_dq_split_out --set sg=1 --to spv --out /tmp/spv13
"""

import sys
from pathlib import Path

import wgslgen.check.transpile as transpile
from wgslgen.cli import main

transpile._spirv_lacks = lambda rendered, words: None
transpile.check_spirv = lambda exe, words, timeout=60.0: None
SPIRV_1_3 = (0x00010300).to_bytes(4, "little")

out = Path(sys.argv[sys.argv.index("--out") + 1])
try:
    rc = main(["transpile", *sys.argv[1:]])
except SystemExit as stop:
    rc = stop.code or 0
for module in out.rglob("*.spv"):
    words = bytearray(module.read_bytes())
    words[4:8] = SPIRV_1_3
    module.write_bytes(bytes(words))
sys.exit(rc)
