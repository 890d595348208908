"""Examples shown at the end of each command's --help (one place, so they stay consistent)."""

from __future__ import annotations

EXAMPLES = {
    "init": """\
  wgslgen init                    # wgslgen.toml (or [tool.wgslgen]) and kernels/rmsnorm/
  wgslgen init --pyproject        # add [tool.wgslgen] to ./pyproject.toml instead
""",
    "build": """\
  wgslgen build                   # every kernel of the project into its output folder
  wgslgen build --kernel scale --set wg=32 --set wg=64
  wgslgen build --check           # exit 1 when the output differs from a fresh render
  wgslgen build --no-validate --out /tmp/gen
""",
    "list": """\
  wgslgen list                    # kernels, where each comes from, axes, variant counts
  wgslgen list --json | jq '.kernels[].kernel'
  wgslgen list --templates ./my_kernels
""",
    "validate": """\
  wgslgen validate --kernel attention_bwd_dq
  wgslgen validate --engines naga --set storage=f16
  wgslgen validate --profile compat --require webgpu
""",
    "transpile": """\
  wgslgen transpile --kernel attention_bwd_dq --to spv,msl
  wgslgen transpile --set wg=64 --to hlsl --out /tmp/hlsl
""",
    "test": """\
  wgslgen test --kernel attention_bwd_dq --set wg=64 --set s=f32 --adapter cpu
  wgslgen test --shape head_dim=64,n_heads=4,n_kv_heads=4,history_len=10
  wgslgen test --templates my_rmsnorm.wgsl --reference rmsnorm  # judged by a kernel's reference
""",
    "tune": """\
  wgslgen tune --kernel attention_bwd_dq --time 2m
  wgslgen tune --kernel attention --strategy random --budget 20 --adapter gpu
  wgslgen tune --set wg=64 --set wg=128 --shape head_dim=128,n_heads=8,n_kv_heads=4,history_len=1024
""",
    "db": """\
  wgslgen db show --kernel attention_bwd_dq
  wgslgen db merge other-machine/results.jsonl
  wgslgen db prune --dry-run
""",
    "db show": """\
  wgslgen db show --kernel attention --status ok
  wgslgen db show --all --json
""",
    "db merge": """\
  wgslgen db merge h200/results.jsonl m2/results.jsonl
""",
    "db prune": """\
  wgslgen db prune --dry-run      # what would go
  wgslgen db prune --all          # also records of kernels no longer defined
""",
    "vendor": """\
  wgslgen vendor --out ../app/src/kernels --lang rust
  wgslgen vendor --check ../app/src/kernels     # exit 1 if it differs from a fresh vendor
""",
    "docs": """\
  wgslgen docs                    # the documents and their titles
  wgslgen docs kernel-format      # every kernel.toml key, the _lib macros, a worked example
  wgslgen docs json-output --json | jq -r .markdown
""",
    "completion": """\
  eval "$(wgslgen completion bash)"          # in ~/.bashrc
  wgslgen completion zsh > ~/.zfunc/_wgslgen
""",
}
