"""Family 2 (SPEC section 4): the worked nDCG example, trec_eval, hand cases, real data."""

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_impl import f1, ndcg_ap, prepare, ratio, weighted_counts

from opinion_metrics import map_at_k, ndcg_at_k, weighted_keyword_prf

GOLD = ["fraud", "poverty", "scam"]
WORKED = ["scam", "family", "poverty", "cinematography", "fraud"]
IDEAL = ["fraud", "poverty", "scam", "family", "cinematography"]


def test_seed_001_worked_example():
    # DCG = 0.5/1 + 0.6309/2 + 1/log2(6) = 1.2023; IDCG = 1 + 0.6309/1.585 + 0.5/2 = 1.6481.
    dcg = 0.5 / math.log2(2) + (1 / math.log2(3)) / math.log2(4) + 1.0 / math.log2(6)
    idcg = 1.0 + (1 / math.log2(3)) / math.log2(3) + 0.5 / math.log2(4)
    assert round(dcg, 4) == 1.2023 and round(idcg, 4) == 1.6481
    assert round(ndcg_at_k([WORKED], [GOLD]), 4) == 0.7295
    assert ndcg_at_k([WORKED], [GOLD]) == pytest.approx(dcg / idcg, abs=1e-15)
    assert ndcg_at_k([IDEAL], [GOLD]) == 1.0
    result = weighted_keyword_prf([WORKED, IDEAL], [[0.5] * 5] * 2, [GOLD, GOLD], return_per_example=True)
    assert round(result["per_example"]["ndcg@5"][0], 4) == 0.7295
    assert result["per_example"]["ndcg@5"][1] == 1.0


def test_binary_relevance_and_k():
    # Binary gains: DCG = 1 + 1/2 + 1/log2(6); IDCG = 1 + 1/log2(3) + 1/2.
    expected = (1 + 0.5 + 1 / math.log2(6)) / (1 + 1 / math.log2(3) + 0.5)
    assert ndcg_at_k([WORKED], [GOLD], relevance="binary") == pytest.approx(expected)
    # k = 1: only "scam" (gold position 2, relevance 0.5) counts against an ideal 1.0.
    assert ndcg_at_k([WORKED], [GOLD], k=1) == pytest.approx(0.5)


def test_each_gold_keyword_is_claimed_once():
    # "star wars" and "wars" both match gold "star wars"; only the first gains.
    assert ndcg_at_k([["star wars", "wars"]], [["star wars"]]) == 1.0
    # "war" matches both gold keywords; it claims the earliest (position 0); "wars" then claims position 1.
    dcg = 1.0 + (1 / math.log2(3)) / math.log2(3)
    assert ndcg_at_k([["war", "wars"]], [["star wars", "wars"]]) == pytest.approx(dcg / dcg)


def test_examples_without_gold_are_left_out_of_ndcg_and_map():
    result = weighted_keyword_prf([WORKED, ["a"]], [[0.5] * 5, [1.0]], [GOLD, []], return_per_example=True)
    assert result["ndcg@5"] == pytest.approx(result["per_example"]["ndcg@5"][0])
    assert result["per_example"]["ndcg@5"][1] is None and result["per_example"]["map@5"][1] is None
    assert weighted_keyword_prf([["a"]], [[1.0]], [[]], zero_division=1.0)["ndcg@5"] == 1.0


def test_map_at_k():
    # Hits at ranks 1, 3 and 5: AP@5 = (1/1 + 2/3 + 3/5) / 3.
    assert map_at_k([WORKED], [GOLD]) == pytest.approx((1 + 2 / 3 + 3 / 5) / 3)
    # k = 2 cuts to one hit, divided by |G| = 3 (trec_eval's map_cut_2).
    assert map_at_k([WORKED], [GOLD], k=2) == pytest.approx(1 / 3)


def test_weighted_precision_recall_f1():
    result = weighted_keyword_prf([WORKED], [[0.9, 0.8, 0.7, 0.6, 0.5]], [GOLD])
    assert result["weighted_precision"] == pytest.approx(2.1 / 3.5)
    assert result["weighted_recall"] == pytest.approx(2.1 / 3)
    assert result["weighted_f1"] == pytest.approx(f1(2.1 / 3.5, 0.7))


def test_one_to_one_keeps_the_heaviest_matching():
    # "war" (0.2) and "star wars" (0.9) both match only gold "star wars": one-to-one keeps 0.9.
    predictions, scores, references = [["war", "star wars", "x"]], [[0.2, 0.9, 0.4]], [["star wars"]]
    strict = weighted_keyword_prf(predictions, scores, references)
    loose = weighted_keyword_prf(predictions, scores, references, one_to_one=False)
    assert strict["weighted_precision"] == pytest.approx(0.9 / 1.5)
    assert loose["weighted_precision"] == pytest.approx(1.1 / 1.5)
    # Without one-to-one, several predictions can credit one gold keyword: recall above 1.
    assert loose["weighted_recall"] == pytest.approx(1.1)
    assert strict["weighted_recall"] == pytest.approx(0.9)


def test_micro_and_top_k():
    predictions = [["a", "x"], ["b"]]
    scores = [[0.5, 0.5], [0.25]]
    references = [["a", "c"], ["b"]]
    micro = weighted_keyword_prf(predictions, scores, references, average="micro")
    assert micro["weighted_precision"] == pytest.approx(0.75 / 1.25)
    assert micro["weighted_recall"] == pytest.approx(0.75 / 3)
    top1 = weighted_keyword_prf(predictions, scores, references, top_k=1)
    assert top1["weighted_precision"] == pytest.approx(1.0)  # (0.5/0.5 + 0.25/0.25) / 2
    assert top1["ndcg@5"] == weighted_keyword_prf(predictions, scores, references)["ndcg@5"]  # k, not top_k


def test_zero_total_score_takes_zero_division():
    result = weighted_keyword_prf([["a"]], [[0.0]], [["a"]], zero_division=1.0)
    assert result["weighted_precision"] == 1.0 and result["weighted_recall"] == 0.0


def test_bad_ranking_options():
    with pytest.raises(ValueError, match="relevance must be one of"):
        ndcg_at_k([["a"]], [["a"]], relevance="exponential")
    with pytest.raises(ValueError, match="k must be a positive integer"):
        map_at_k([["a"]], [["a"]], k=0)
    with pytest.raises(ValueError, match="scores must be given"):
        weighted_keyword_prf([["a"]], None, [["a"]])


def test_binary_exact_ndcg_equals_trec_eval():
    pytrec_eval = pytest.importorskip("pytrec_eval")  # (the release wheels' tests run without it)
    rng = random.Random(7)
    vocabulary = [f"kw{i}" for i in range(30)]
    predictions, references = [], []
    for _ in range(200):
        predictions.append(rng.sample(vocabulary, rng.randint(1, 12)))
        references.append(rng.sample(vocabulary, rng.randint(1, 10)))
    qrels = {f"q{i}": {kw: 1 for kw in gold} for i, gold in enumerate(references)}
    run = {f"q{i}": {kw: float(len(p) - r) for r, kw in enumerate(p)} for i, p in enumerate(predictions)}
    for k in (1, 3, 5, 10):
        measures = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut_{k}"}).evaluate(run)
        ours = weighted_keyword_prf(
            predictions,
            [[1.0] * len(p) for p in predictions],
            references,
            match="exact",
            relevance="binary",
            k=k,
            return_per_example=True,
        )["per_example"][f"ndcg@{k}"]
        expected = [measures[f"q{i}"][f"ndcg_cut_{k}"] for i in range(len(predictions))]
        assert ours == pytest.approx(expected, abs=1e-12)


words = st.sampled_from(["war", "star wars", "wars", "jedi", "peace", "art", "party", "empire"])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(words, max_size=7), min_size=1, max_size=4),
    st.data(),
    st.sampled_from(["exact", "substring", "token"]),
    st.booleans(),
    st.sampled_from(["graded", "binary"]),
    st.integers(1, 8),
)
def test_values_in_range_and_ndcg_at_most_one(predictions, data, match, one_to_one, relevance, k):
    scores = [data.draw(st.lists(st.floats(0, 1), min_size=len(p), max_size=len(p))) for p in predictions]
    references = data.draw(st.lists(st.lists(words, max_size=7), min_size=len(predictions), max_size=len(predictions)))
    result = weighted_keyword_prf(
        predictions,
        scores,
        references,
        match=match,
        one_to_one=one_to_one,
        relevance=relevance,
        k=k,
        return_per_example=True,
    )
    for name, values in result["per_example"].items():
        upper = 1.0 if one_to_one or name == "weighted_precision" or "@" in name else 2.0 * max(map(len, predictions))
        assert 0.0 <= result[name] <= upper + 1e-12
        assert all(v is None or 0.0 <= v <= upper + 1e-12 for v in values)


@pytest.mark.parametrize("one_to_one", [True, False])
def test_real_movie_reviews_equal_a_straightforward_implementation(movie_reviews, one_to_one):
    sample = movie_reviews[::11]
    models = ("base", "reranker", "metadata")  # reranker scores go negative: clipped
    predictions = [review[f"keywords_{m}"] or [] for m in models for review in sample]
    scores = [review[f"scores_{m}"] or [] for m in models for review in sample]
    references = [review["gold"] for _ in models for review in sample]
    gold_cache = {}
    rows = []
    for predicted, example_scores, gold in zip(predictions, scores, references):
        if id(gold) not in gold_cache:
            gold_cache[id(gold)] = prepare(gold)[0]
        kept_gold = gold_cache[id(gold)]
        clipped = [min(max(s, 0.0), 1.0) for s in example_scores]
        kept, kept_scores = prepare(predicted, clipped)
        matched = weighted_counts(kept, kept_scores, kept_gold, one_to_one=one_to_one)
        p, r = ratio(matched, sum(kept_scores)), ratio(matched, len(kept_gold))
        rows.append((p, r, f1(p, r), *ndcg_ap(kept, kept_gold)))
    expected = [sum(column) / len(rows) for column in zip(*rows)]
    result = weighted_keyword_prf(predictions, scores, references, one_to_one=one_to_one, clip_scores=True)
    assert list(result.values()) == pytest.approx(expected, abs=1e-9)
    assert result["ndcg@5"] > 0.01


def test_pandas_series_are_read_by_position_for_keywords_and_scores():
    # Issue 10 item 2: keywords were read by position and scores by label.
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(
        {"p": [["a", "x"], ["b", "y"], ["c"]], "s": [[0.9, 0.1], [0.2, 0.8], [1.0]], "r": [["a"], ["y"], ["z"]]}
    ).sort_values("r", ascending=False)
    as_lists = weighted_keyword_prf(frame["p"].tolist(), frame["s"].tolist(), frame["r"].tolist())
    assert weighted_keyword_prf(frame["p"], frame["s"], frame["r"]) == as_lists
    assert as_lists["weighted_precision"] == pytest.approx((0.9 + 0.8 + 0.0) / 3)
    filtered = frame[frame.index > 0]  # labels 1 and 2 only: no label 0
    assert weighted_keyword_prf(filtered["p"], filtered["s"], filtered["r"])["weighted_precision"] == pytest.approx(0.4)


def test_inner_white_space_on_the_lookup_strategy_weighted():
    # Issue 10 item 1, weighted family: "a  b" (0.9) and "a b" (0.1) both token-match "x a b y".
    fillers = [f"f{i}" for i in range(100)]
    result = weighted_keyword_prf(
        [["a  b", "a b", *fillers]], [[0.9, 0.1] + [0.0] * 100], [["x a b y"]], match="token", normalize="ascii"
    )
    assert (result["weighted_precision"], result["ndcg@5"]) == (pytest.approx(0.9), pytest.approx(1.0))


@pytest.mark.parametrize("k", [2.5, True, 0, "5"])
def test_k_must_be_a_positive_integer(k):
    with pytest.raises(ValueError, match="k must be a positive integer"):
        weighted_keyword_prf([["a"]], [[1.0]], [["a"]], k=k)


def test_cost_does_not_depend_on_k():
    # Issue 10 item 11: k = 10**9 once built a list of k discounts.
    result = weighted_keyword_prf([["a", "b"]], [[0.5, 0.5]], [["a", "c", "d"]], k=10**9, relevance="binary")
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert result[f"ndcg@{10**9}"] == pytest.approx(1 / ideal)
    assert result[f"map@{10**9}"] == pytest.approx(1 / 3)
