"""The significance report (issue 30 item 3): Holm's correction, the smallest attainable p-value,
the pairs, and the p-values and intervals checked against independent computations (exact
enumeration of every swap, scipy's permutation test and bootstrap)."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
import reference_impl as ref

from opinion_metrics import compare_systems, keyword_prf, weighted_keyword_prf
from opinion_metrics.analysis.compare import compare_systems_with_pairs
from opinion_metrics.stats.significance import MIN_PAIRS, Pairs, holm, significance, smallest_p_value
from opinion_metrics.view.significance import format_p, format_significance, method_note, report_notes, signed

stats = pytest.importorskip("scipy.stats")


def step_down_rejections(p_values, alpha):
    """Holm's procedure as published: sort, reject while p_(i) <= alpha / (m - i + 1), stop at the first failure."""
    order = np.argsort(p_values, kind="stable")
    rejected = np.zeros(len(p_values), dtype=bool)
    for rank, index in enumerate(order):
        if p_values[index] > alpha / (len(p_values) - rank):
            break
        rejected[index] = True
    return rejected


def test_holm_adjusted_p_values_reject_exactly_what_the_step_down_procedure_rejects():
    rng = np.random.default_rng(5)
    for _ in range(300):
        p_values = rng.choice([rng.uniform(0, 0.1), rng.uniform(0, 1)], size=rng.integers(1, 7)).tolist()
        adjusted = holm(p_values)
        assert all(a >= p for a, p in zip(adjusted, p_values)) and max(adjusted) <= 1
        for alpha in np.linspace(0.001, 0.2, 60):
            assert (np.array(adjusted) <= alpha).tolist() == step_down_rejections(p_values, alpha).tolist()
    # By hand: 0.01 x 3 = 0.03; 0.03 x 2 = 0.06; 0.04 x 1, raised to 0.06 (monotone).
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.2]) == [0.2]


def exact_permutation_p(a, b):
    """Every one of the 2^n swaps of the per-example values, counted (the exact test)."""
    observed = abs(np.mean(b) - np.mean(a))
    extreme = 0
    for swaps in itertools.product([False, True], repeat=len(a)):
        x = np.array(swaps)
        extreme += abs(np.mean(np.where(x, a, b)) - np.mean(np.where(x, b, a))) >= observed - 1e-12
    return extreme / 2 ** len(a)


@pytest.mark.parametrize("differing", [1, 2, 4, 6, 9])
def test_the_smallest_attainable_p_value_is_that_of_a_system_better_on_every_differing_pair(differing):
    # b finds the gold keyword where a finds nothing, on `differing` examples; 3 more are answered alike.
    gold = [[f"g{i}"] for i in range(differing + 3)]
    a = [["x"]] * differing + gold[differing:]
    b = gold
    exact = exact_permutation_p(keyword_prf(a, gold, return_per_example=True)["per_example"]["precision"],
                                keyword_prf(b, gold, return_per_example=True)["per_example"]["precision"])  # fmt: skip
    assert exact == pytest.approx(2.0 ** (1 - differing))  # the identity and the full swap only
    assert compare_systems_with_pairs("keyword_prf", a, b, gold)[1] == Pairs(differing + 3, differing + 3, differing)
    assert smallest_p_value("permutation", 20_000, differing) == pytest.approx(exact)
    p = compare_systems("keyword_prf", a, b, gold, n_resamples=20_000, random_state=3)["precision"]["p_value"]
    error = np.sqrt(exact * (1 - exact) / 20_000)
    assert abs(p - exact) <= 5 * error + 1 / 20_001
    # With 1,000 resamples, approximate randomization cannot go below 1 / 1,001.
    assert smallest_p_value("permutation", 1000, 40) == 1 / 1001
    assert smallest_p_value("permutation", 1000, 0) == smallest_p_value("bootstrap", 1000, 0) == 1.0
    assert smallest_p_value("bootstrap", 1000, differing) == 0.0


def test_the_permutation_p_value_agrees_with_scipys_exact_paired_permutation_test():
    rng = np.random.default_rng(11)
    vocabulary = [f"w{i}" for i in range(6)]
    gold = [list(rng.choice(vocabulary, 2, replace=False)) for _ in range(10)]
    a = [list(rng.choice(vocabulary, 3, replace=False)) for _ in range(10)]
    b = [list(rng.choice(vocabulary, 2, replace=False)) for _ in range(10)]
    per_a = np.array(keyword_prf(a, gold, return_per_example=True)["per_example"]["precision"])
    per_b = np.array(keyword_prf(b, gold, return_per_example=True)["per_example"]["precision"])
    exact = stats.permutation_test(
        (per_a, per_b),
        lambda x, y: np.mean(y - x),
        permutation_type="samples",
        n_resamples=np.inf,
        alternative="two-sided",
    ).pvalue
    assert exact == pytest.approx(exact_permutation_p(per_a, per_b))
    p = compare_systems("keyword_prf", a, b, gold, n_resamples=20_000, random_state=1)["precision"]["p_value"]
    assert abs(p - exact) <= 5 * np.sqrt(exact * (1 - exact) / 20_000) + 1e-4


def test_the_bootstrap_p_value_and_interval_come_from_the_same_resamples_and_match_scipys_interval():
    rng = np.random.default_rng(2)
    n = 60
    gold = [[f"g{i}", f"h{i}"] for i in range(n)]
    a = [[f"g{i}"] if rng.random() < 0.4 else ["x"] for i in range(n)]
    b = [[f"g{i}"] if rng.random() < 0.6 else ["y"] for i in range(n)]
    result = compare_systems(
        "keyword_prf", a, b, gold, method="bootstrap", n_resamples=4000, random_state=0, confidence_level=0.9
    )["precision"]
    per_a = np.array(keyword_prf(a, gold, return_per_example=True)["per_example"]["precision"])
    per_b = np.array(keyword_prf(b, gold, return_per_example=True)["per_example"]["precision"])
    scipy_interval = stats.bootstrap(
        (per_a, per_b),
        lambda x, y: np.mean(y - x),
        paired=True,
        vectorized=False,
        n_resamples=4000,
        confidence_level=0.9,
        method="percentile",
        random_state=np.random.default_rng(1),
    ).confidence_interval
    spread = np.std(per_b - per_a) / np.sqrt(n)  # the standard error; differences are multiples of 1 / n
    assert result["difference_ci_low"] == pytest.approx(scipy_interval.low, abs=1 / n + 0.1 * spread)
    assert result["difference_ci_high"] == pytest.approx(scipy_interval.high, abs=1 / n + 0.1 * spread)
    # One resampling: the 90% interval excludes 0 exactly when p < 0.1, over many datasets.
    for seed in range(40):
        rng = np.random.default_rng(seed)
        a = [[f"g{i}"] if rng.random() < 0.5 else ["x"] for i in range(25)]
        b = [[f"g{i}"] if rng.random() < 0.5 + seed / 100 else ["y"] for i in range(25)]
        row = compare_systems(
            "keyword_prf", a, b, gold[:25], method="bootstrap", confidence_level=0.9, random_state=seed
        )["precision"]
        excludes = row["difference_ci_low"] > 0 or row["difference_ci_high"] < 0
        assert excludes == (row["p_value"] < 0.1), (seed, row)


def _row(p_value, low=-0.1, high=0.1):
    return {
        "a": 0.5,
        "b": 0.6,
        "difference": 0.1,
        "difference_ci_low": low,
        "difference_ci_high": high,
        "p_value": p_value,
    }


def test_the_report_adjusts_over_the_systems_per_metric_and_says_what_gave_what():
    comparisons = {
        "keybert": {"f1": _row(0.01, 0.02, 0.2)},
        "yake": {"f1": _row(0.07, -0.01, 0.2), "precision": _row(0.3)},
    }
    pairs = {"yake": Pairs(6, 6, 5), "keybert": Pairs(40, 40, 40)}
    report = significance(comparisons, method="permutation", n_resamples=1000, pairs=pairs)
    assert report["keybert"]["f1"].holm_p_value == pytest.approx(0.02)  # 0.01 x 2 systems
    assert report["yake"]["f1"].holm_p_value == pytest.approx(0.07)  # 0.07 x 1, not below 0.02
    assert report["yake"]["precision"].holm_p_value == pytest.approx(0.3)  # the only system with precision
    assert report["yake"]["f1"].smallest_p_value == 2.0**-4
    notes = report_notes(report, baseline="tfidf", method="permutation", level=0.95, n_resamples=1000)
    text = "\n".join(notes)
    assert "Holm's correction for the 2 systems compared with tfidf" in text
    assert "yake vs tfidf: 6 pairs, 5 scored differently; p cannot go below 0.062" in text
    assert f"only 6 pairs, too few for a reliable comparison ({MIN_PAIRS} or more advised)" in text
    assert "keybert vs tfidf: 40 pairs" in text and "keybert vs tfidf has only" not in text
    # keybert's f1 interval excludes 0 and p = 0.01: they agree; yake's include 0, p 0.07 and 0.3: agree too
    assert "‡" not in text
    note = method_note("permutation", 0.95, 1000)
    assert "paired permutation test" in note and "paired bootstrap" in note
    comparisons["yake"]["precision"] = _row(0.3, 0.01, 0.2)  # excludes 0, yet p = 0.3
    report = significance(comparisons, method="bootstrap", n_resamples=1000, pairs=pairs)
    text = "\n".join(report_notes(report, baseline="tfidf", method="bootstrap", level=0.95, n_resamples=1000))
    assert "‡ precision (yake): the interval and the p-value disagree" in text
    assert "the same 1,000 paired bootstrap resamples" in method_note("bootstrap", 0.95, 1000)
    assert "p below 0.001 shows as <0.001" in text


def test_an_interval_that_excludes_0_without_the_mark_is_explained_on_its_row():
    # The cold pass: [-0.0947, -0.0093] with p 0.030 but 0.060 after Holm's correction over 2 systems.
    comparisons = {"yake": {"f1": _row(0.030, -0.0947, -0.0093)}, "keybert": {"f1": _row(0.5)}}
    pairs = {"yake": Pairs(100, 100, 99), "keybert": Pairs(100, 100, 99)}
    report = significance(comparisons, method="permutation", n_resamples=1000, pairs=pairs)
    row = report["yake"]["f1"]
    assert row.holm_p_value == pytest.approx(0.06) and not row.significant(0.05)
    assert row.disagreement(0.05) == "holm" and report["keybert"]["f1"].disagreement(0.05) is None
    text = "\n".join(report_notes(report, baseline="tfidf", method="permutation", level=0.95, n_resamples=1000))
    assert (
        "‡ f1 (yake): the interval excludes 0, but the Holm-adjusted p-value is not below 0.05: the interval is "
        in text
    )
    assert "not adjusted for the several systems compared, and † follows the adjusted p-value" in text


def test_pairs_count_what_the_metric_sees():
    gold = [["a", "b"], ["c"], ["d"], ["e"]]
    base = [["a", "x"], ["c"], ["y"], ["e", "z"]]
    reordered = [["x", "a"], ["c"], ["y"], ["z", "e"]]  # the same keywords in another order
    other = [["a"], ["c"], ["d"], ["e", "z"]]  # two examples scored differently
    assert compare_systems_with_pairs("keyword_prf", base, reordered, gold)[1] == Pairs(4, 4, 0)
    assert compare_systems_with_pairs("keyword_prf", base, other, gold)[1] == Pairs(4, 4, 2)
    # the order counts for the ranking metrics: the weighted family sees the reordering
    scores = [[0.9, 0.5], [0.9], [0.9], [0.9, 0.5]]
    _, pairs = compare_systems_with_pairs(
        "weighted_keyword_prf", base, reordered, gold, scores_a=scores, scores_b=scores
    )
    expected = weighted_keyword_prf(base, scores, gold, return_per_example=True)["per_example"]["ndcg@5"]
    moved = weighted_keyword_prf(reordered, scores, gold, return_per_example=True)["per_example"]["ndcg@5"]
    assert pairs.differing == sum(x != y for x, y in zip(expected, moved)) == 2
    # presence: the examples without a gold keyword in the review are left out of the pairs
    texts = ["a b here", "nothing", "d is here", "nothing"]
    _, pairs = compare_systems_with_pairs("keyword_prf", base, other, gold, texts=texts, presence="present")
    per_base = keyword_prf(base, gold, texts=texts, presence="present", return_per_example=True)["per_example"]
    per_other = keyword_prf(other, gold, texts=texts, presence="present", return_per_example=True)["per_example"]
    counted = [i for i, value in enumerate(per_base["f1"]) if value is not None]
    differing = [i for i in counted if any(per_base[k][i] != per_other[k][i] for k in per_base)]
    assert pairs == Pairs(4, len(counted), len(differing)) == Pairs(4, 2, 1)
    assert pairs.left_out == 2


def test_differences_that_round_to_zero_print_without_a_minus():
    assert signed(-0.00001) == "+0.0000" and signed(-0.0) == "+0.0000" and signed(-0.00005) == "-0.0001"
    assert signed(0.1234) == "+0.1234"


def test_p_values_print_with_their_resolution():
    assert format_p(0.04567, 1000) == "0.046"
    assert format_p(1 / 1001, 1000) == "0.001"
    assert format_p(1 / 20001, 20000) == "5e-05"
    assert format_p(0.0, 1000) == "<0.001"


def brute_force_permutation_p(a, b, gold, key, **options):
    """The exact paired permutation test written from its definition, independent of the library:
    every one of the 2^n ways to swap the two systems' predictions example by example
    (itertools.product over the signs), each scored by the brute force of `reference_impl`."""
    observed = abs(ref.keyword_prf(b, gold, **options)[key] - ref.keyword_prf(a, gold, **options)[key])
    extreme = 0
    for signs in itertools.product([False, True], repeat=len(a)):
        swapped_a = [y if s else x for x, y, s in zip(a, b, signs)]
        swapped_b = [x if s else y for x, y, s in zip(a, b, signs)]
        delta = ref.keyword_prf(swapped_b, gold, **options)[key] - ref.keyword_prf(swapped_a, gold, **options)[key]
        extreme += abs(delta) >= observed - 1e-10
    return extreme / 2 ** len(a)


@pytest.mark.parametrize("seed", range(6))
def test_few_differing_pairs_give_the_exact_permutation_test(seed):
    """With m pairs whose statistics differ and 2^m <= n_resamples, every swap is enumerated:
    the p-value is the exact test's, for macro and micro averages alike."""
    rng = np.random.default_rng(seed)
    vocabulary = ["war", "star", "star wars", "jedi", "force", "empire"]
    n = int(rng.integers(4, 9))
    gold = [list(rng.choice(vocabulary, 2, replace=False)) for _ in range(n)]
    a = [list(rng.choice(vocabulary, int(rng.integers(1, 4)), replace=False)) for _ in range(n)]
    b = [list(rng.choice(vocabulary, int(rng.integers(1, 4)), replace=False)) for _ in range(n)]
    for options in ({"average": "macro"}, {"average": "micro", "one_to_one": False}):
        result = compare_systems("keyword_prf", a, b, gold, n_resamples=1000, random_state=seed, **options)
        for key in ("precision", "recall", "f1"):
            expected = brute_force_permutation_p(a, b, gold, key, **options)
            assert result[key]["p_value"] == pytest.approx(expected, rel=1e-12, abs=1e-12), (options, key)


def test_the_report_never_prints_a_p_value_below_its_floor():
    """Issue 37: 5 pairs scored differently, all in b's favour. The exact test gives 2 / 2^5 =
    0.0625, the floor the report states, and not the 0.046 random swaps happened to give: no
    mark at 0.05. Where the test is a Monte Carlo one (2^m > n_resamples), it says so and its
    p-value is never shown below the floor."""
    gold = [[f"g{i}"] for i in range(8)]
    a = [["x"]] * 5 + gold[5:]
    b = gold
    assert brute_force_permutation_p(a, b, gold, "precision") == 2 / 2**5
    compared, pairs = compare_systems_with_pairs("keyword_prf", a, b, gold, n_resamples=1000)
    assert compared["precision"]["p_value"] == 2 / 2**5
    report = significance({"b": compared}, method="permutation", n_resamples=1000, pairs={"b": pairs})
    row = report["b"]["precision"]
    assert row.exact and row.p_value == row.smallest_p_value == 2 / 2**5 and not row.significant(0.05)
    text = format_significance(
        {"b": {"keyword_prf": report["b"]}}, baseline="a", label="system", method="permutation", level=0.95,
        n_resamples=1000,
    )  # fmt: skip
    assert "p cannot go below 0.062 (exact test: every swap counted)" in text
    assert not re.search(r"\d†", text)  # no value marked significant
    printed = [float(p) for p in re.findall(r"\s(0\.\d{3})[†‡]?\s*$", text, flags=re.MULTILINE)]
    assert len(printed) == 3 and min(printed) >= 0.062
    # a Monte Carlo test: 2^5 swaps > 20 resamples; a p-value of 0.01 would contradict the floor
    monte_carlo = significance(
        {"b": {"precision": _row(0.01, 0.02, 0.2)}}, method="permutation", n_resamples=20, pairs={"b": pairs}
    )["b"]["precision"]
    assert not monte_carlo.exact and monte_carlo.p_value == monte_carlo.smallest_p_value == 2 / 2**5
    notes = "\n".join(report_notes({"b": {"precision": monte_carlo}}, baseline="a", method="permutation",
                                   level=0.95, n_resamples=20))  # fmt: skip
    assert "p cannot go below 0.062 (a Monte Carlo test of 20 random swaps: its p-value is never shown below" in notes
    # the interval excludes 0 but the p-value cannot reach 0.05: the report says why (‡)
    assert monte_carlo.disagreement(0.05) == "test"
