"""Stage 3: WGSL facts, limit profiles, the compilers (engines), validation and transpilation.

- ``analyze``, ``WgslFacts``: what a rendering needs (workgroup size and memory, bindings,
  enables), read without a compiler; the renderer calls it once per entry point.
- ``load_profile``, ``LimitProfile``, ``check_passes``: named WebGPU limit profiles and the
  static check of facts against one.
- ``validate``, ``ValidationReport``: every rendering through naga, wgpu and Dawn (or Tint's
  static rules) and the profiles; verdicts per implementation, separate from the limits.
- ``get_engine``, ``ShaderInput``, ``Verdict``: one compiler behind the Engine protocol.
- ``transpile``: naga's SPIR-V/MSL/HLSL/GLSL, SPIR-V checked by spirv-val.
"""

from wgslgen._exports import lazy

__getattr__, __all__ = lazy(
    __name__,
    {
        "analyze": "wgslgen.check.wgsl",
        "WgslFacts": "wgslgen.check.wgsl",
        "load_profile": "wgslgen.check.limits",
        "LimitProfile": "wgslgen.check.limits",
        "check_passes": "wgslgen.check.limits",
        "BUILTIN_PROFILES": "wgslgen.check.limits",
        "validate": "wgslgen.check.validate",
        "ValidationReport": "wgslgen.check.report",
        "get_engine": "wgslgen.check.engines",
        "ShaderInput": "wgslgen.check.engines.base",
        "Verdict": "wgslgen.check.engines.base",
        "transpile": "wgslgen.check.transpile",
    },
)
