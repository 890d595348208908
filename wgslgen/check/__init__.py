"""Stage 3: WGSL facts, limit profiles, the compilers (engines), validation and transpilation."""
