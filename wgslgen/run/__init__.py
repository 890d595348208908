"""Stage 4: a device in a worker process, numpy references, and the correctness harness."""
