"""The shapes of scripts/benchmark.py, one module each; common.py holds the movie data, the
measurement helpers and the naive baselines several shapes share."""
