"""wgslgen: one WGSL kernel template, a validated, tested and tuned family of kernels."""

__version__ = "0.1.0"
