"""Stage 5: the timing method, search strategies, the results database and selection."""
