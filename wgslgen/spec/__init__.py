"""Stage 1: kernel folders and kernel.toml → KernelSpec, Variant, Case; interface; expressions.

- ``discover``, ``select``, ``load_kernel``: kernel folders (and plain .wgsl files) → specs.
- ``KernelSpec``, ``Variant``, ``Case``: a kernel, one point of its space, that point at a
  problem shape (``Variant.case`` checks the shape and preconditions once).
- ``parse_shape``, ``format_shape``: the one shape syntax; ``ShapeError``, ``PreconditionError``.
- ``Interface``: bindings and the uniform layout, declared once.
"""

from wgslgen._exports import lazy

__getattr__, __all__ = lazy(
    __name__,
    {
        "discover": "wgslgen.spec.loader",
        "select": "wgslgen.spec.loader",
        "load_kernel": "wgslgen.spec.loader",
        "KernelSpec": "wgslgen.spec.kernel",
        "Variant": "wgslgen.spec.kernel",
        "Case": "wgslgen.spec.kernel",
        "ShapeError": "wgslgen.spec.kernel",
        "PreconditionError": "wgslgen.spec.kernel",
        "parse_shape": "wgslgen.spec.kernel",
        "format_shape": "wgslgen.spec.kernel",
        "Interface": "wgslgen.spec.interface",
    },
)
