"""Stage 2: Variant → RenderedVariant (WGSL text, source map, facts); the build and its manifest."""
