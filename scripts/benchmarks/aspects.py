"""aspect_sentiment_score against one pass over the arrays and scikit-learn per aspect."""

from __future__ import annotations

import math

from .common import best_time, same, traced_peak


def naive_aspect_score(predictions, references, aspects=6, min_rating=1, max_rating=5):
    """Per aspect: scikit-learn's f1_score on presence, plus a masked squared-error sum."""
    import numpy as np
    from sklearn.metrics import f1_score

    total = 0.0
    for j in range(aspects):
        predicted, gold = predictions[:, j], references[:, j]
        present_p, present_g = predicted != 0, gold != 0
        # Absent from both sides: 1.0 (the competition's rule; scikit-learn would give 0).
        f1 = f1_score(present_g, present_p, zero_division=0) if (present_p | present_g).any() else 1.0
        both = present_p & present_g
        rss = float(np.sum(np.where(both, (predicted - gold) ** 2, 0)))
        r2 = 1.0 - rss / (both.sum() * (max_rating - min_rating) ** 2) if both.any() else 1.0
        total += f1 * r2
    return total / aspects


def aspects(n: int, repeat: int) -> None:
    import numpy as np

    from opinion_metrics import aspect_sentiment_score

    rng = np.random.default_rng(0)
    references = np.where(rng.random((n, 6)) < 0.3, rng.integers(1, 6, (n, 6)), 0)
    predictions = np.where(rng.random((n, 6)) < 0.1, (references + rng.integers(0, 6, (n, 6))) % 6, references)
    ci = {"confidence_level": 0.95, "n_resamples": 1000}
    one_pass_time, _ = best_time(lambda: (predictions != 0).sum(), repeat)
    naive_time, naive_score = best_time(lambda: naive_aspect_score(predictions, references), 1)
    library_time, result = best_time(lambda: aspect_sentiment_score(predictions, references), repeat)
    ci_time, with_ci = best_time(lambda: aspect_sentiment_score(predictions, references, **ci), repeat)
    assert math.isclose(naive_score, result["score"], abs_tol=1e-9), (naive_score, result["score"])
    assert same(result, {key: with_ci[key] for key in result})
    plain_peak = traced_peak(lambda: aspect_sentiment_score(predictions, references))
    ci_peak = traced_peak(lambda: aspect_sentiment_score(predictions, references, **ci))
    print(f"{'aspect_sentiment_score':<34}{'examples':>10}{'seconds':>9}{'/one pass':>11}{'peak MiB':>10}")
    rows = (
        ("one pass: (predictions != 0).sum()", one_pass_time, None),
        ("naive (scikit-learn per aspect)", naive_time, None),
        ("library", library_time, plain_peak),
        ("library, 1,000-resample CI", ci_time, ci_peak),
    )
    for label, seconds, peak in rows:
        peak_cell = f"{peak:>10.0f}" if peak is not None else f"{'':>10}"
        print(f"{label:<34}{n:>10,}{seconds:>9.4f}{seconds / one_pass_time:>10.1f}x{peak_cell}")
    print(
        f"({n:,} x 6) int64 arrays ({predictions.nbytes / 2**20:.0f} MiB each). Target: library <= 5x one pass; "
        "peak: tracemalloc, allocations beyond the inputs (a dense 1,000 x n count matrix would take "
        f"{1000 * n * 8 / 2**30:.0f} GiB); naive: same score (asserted).\n"
    )
