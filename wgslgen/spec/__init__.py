"""Stage 1: kernel folders and kernel.toml → KernelSpec, Variant, shapes; interface; expressions."""
