"""Confidence intervals and compare_systems against plain calls and scipy.stats.bootstrap."""

from __future__ import annotations

import functools
import time

from .common import Corpus, best_time, same


def scipy_bootstrap_seconds(metric, columns: tuple, key: str, n_resamples: int, calls: int) -> float:
    """Seconds scipy.stats.bootstrap would take for `n_resamples`, calling `metric` once per
    resample on the resampled lists (as evaluate's Evaluator does): `calls` resamples timed,
    scaled by the time per call."""
    import numpy as np
    from scipy.stats import bootstrap

    counted = []

    def statistic(drawn):
        counted.append(1)
        return metric(*([column[i] for i in drawn] for column in columns))[key]

    start = time.perf_counter()
    bootstrap(
        (np.arange(len(columns[0])),),
        statistic,
        n_resamples=calls,
        vectorized=False,
        method="percentile",
        rng=np.random.default_rng(0),
    )
    return (time.perf_counter() - start) / len(counted) * n_resamples


def intervals(corpus: Corpus, repeat: int, baseline_calls: int) -> None:
    from opinion_metrics import compare_systems, keyword_prf, weighted_keyword_prf

    predictions, scores, references = corpus.predictions, corpus.scores, corpus.references
    ci = {"confidence_level": 0.95, "n_resamples": 1000}
    print(
        f"{'intervals (1,000 resamples)':<34}{'plain s':>9}{'with CI s':>11}{'CI/plain':>10}"
        f"{'scipy s':>10}{'scipy/CI':>10}"
    )
    for name, metric, columns, key in (
        ("keyword_prf", keyword_prf, (predictions, references), "f1"),
        ("weighted_keyword_prf", weighted_keyword_prf, (predictions, scores, references), "weighted_f1"),
    ):
        plain_time, plain = best_time(functools.partial(metric, *columns), repeat)
        ci_time, with_ci = best_time(functools.partial(metric, *columns, **ci), repeat)
        assert same(plain, {name: with_ci[name] for name in plain})
        assert all(with_ci[f"{k}_ci_low"] <= with_ci[k] <= with_ci[f"{k}_ci_high"] for k in plain)
        scipy_time = scipy_bootstrap_seconds(metric, columns, key, ci["n_resamples"], baseline_calls)
        print(
            f"{name:<34}{plain_time:>9.2f}{ci_time:>11.2f}{ci_time / plain_time:>9.2f}x"
            f"{scipy_time:>10.0f}{scipy_time / ci_time:>9.0f}x"
        )
    base = corpus.where(lambda movie, model: model == "base")
    other = corpus.where(lambda movie, model: model == "sentiment")
    two_plain, _ = best_time(
        lambda: (keyword_prf(base.predictions, base.references), keyword_prf(other.predictions, base.references)),
        repeat,
    )
    for method in ("permutation", "bootstrap"):
        compare = functools.partial(
            compare_systems, "keyword_prf", base.predictions, other.predictions, base.references, method=method
        )
        compare_time, result = best_time(compare, repeat)
        label = f"compare_systems ({method})"
        print(f"{label:<34}{two_plain:>9.2f}{compare_time:>11.2f}{compare_time / two_plain:>9.2f}x", end="")
        print(f"    f1 {result['f1']['a']:.4f} -> {result['f1']['b']:.4f}, p = {result['f1']['p_value']:.4f}")
    print(
        f"with CI: confidence_level=0.95, n_resamples=1000 over {len(predictions):,} examples (target <= 3x plain); "
        f"scipy: scipy.stats.bootstrap calling the metric once per resample, {baseline_calls} resamples timed and "
        "scaled to 1,000 (target scipy/CI >= 100x). compare_systems: keyword_prf, 'base' vs 'sentiment' on the "
        f"same {len(base.predictions):,} reviews, 1,000 resamples; its plain column is two plain calls (one per "
        "system).\n"
    )
