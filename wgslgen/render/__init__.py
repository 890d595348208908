"""Stage 2: Variant → RenderedVariant (WGSL text, source map, facts); the build and its manifest.

- ``render``, ``render_families``: one rendering per compiler family, or one "any" text.
- ``RenderedVariant``: text, sha256, source map, and the WGSL facts of every entry point.
- ``plan``, ``write_tree``: the build (in memory, then an atomic swap into the output folder).
"""

from wgslgen._exports import lazy

__getattr__, __all__ = lazy(
    __name__,
    {
        "render": "wgslgen.render.renderer",
        "render_families": "wgslgen.render.renderer",
        "RenderedVariant": "wgslgen.render.renderer",
        "FAMILIES": "wgslgen.render.renderer",
        "plan": "wgslgen.render.build",
        "write_tree": "wgslgen.render.build",
    },
)
