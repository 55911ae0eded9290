"""Parity with trec_eval (issue 11, SPEC "Other tools' conventions"), through pytrec_eval.

With match="exact", normalize="none" and binary relevance, a prediction list is a run
ranked in prediction order and a gold list is the qrels of one query. Runs get descending
scores by rank; where scores tie, the prediction order is trec_eval's own tie order
(decreasing document id, checked below).

trec_eval skips a query that has no judgment or no retrieved document, and gives 0 to every
measure of a query with judgments but no relevant document. The library gives P@k = 0
(hits / k), R-precision `zero_division` (denominator |G| = 0), and leaves such examples out
of nDCG and MAP (None per example, SPEC section 4); an empty prediction list scores 0
everywhere, as trec_eval -c counts a query missing from the run.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytrec_eval = pytest.importorskip("pytrec_eval")

from opinion_metrics import keyword_prf, map_at_k, ndcg_at_k, weighted_keyword_prf  # noqa: E402

CUTS = (1, 5, 10)
EXACT = {"match": "exact", "normalize": "none"}
TOLERANCE = 1e-12


def trec_order(scored: dict[str, float]) -> list[str]:
    """trec_eval's ranking: score decreasing, ties by document id decreasing."""
    return sorted(scored, key=lambda doc: (-scored[doc], tuple(-ord(c) for c in doc) + (1,)))


def random_queries(seed: int, n_queries: int = 300) -> tuple[list[list[str]], list[list[str]], dict, dict]:
    """Ranked lists and gold lists covering |P| < |G|, |P| > k, empty gold, empty runs and
    score ties; with the matching pytrec_eval run and qrels (query ids "q<i>")."""
    rng = np.random.default_rng(seed)
    predictions, references, run, qrels = [], [], {}, {}
    for q in range(n_queries):
        pool = [f"d{i}" for i in rng.permutation(40)[: int(rng.integers(1, 31))]]
        n_gold = int(rng.choice([0, 0, 1, 2, 3, 5, 8, 12]))
        gold = [f"d{i}" for i in rng.permutation(40)[:n_gold]]
        n_predicted = int(rng.choice([0, 1, 2, 4, 6, 11, 15, 25, len(pool)]))
        retrieved = pool[:n_predicted]
        if rng.random() < 0.3:  # ties: few distinct scores, order decided by trec_eval's rule
            scored = {doc: float(rng.integers(0, 3)) for doc in retrieved}
            retrieved = trec_order(scored)
        else:
            scored = {doc: float(len(retrieved) - rank) for rank, doc in enumerate(retrieved)}
        predictions.append(retrieved)
        references.append(gold)
        query = f"q{q}"
        # A non-relevant judgment keeps a query without relevant documents in trec_eval.
        qrels[query] = {**{doc: 1 for doc in gold}, "judged-nonrelevant": 0}
        if scored:
            run[query] = scored
    return predictions, references, run, qrels


@pytest.fixture(scope="module")
def corpus():
    predictions, references, run, qrels = random_queries(2026)
    measures = {f"P_{k}" for k in CUTS} | {f"map_cut_{k}" for k in CUTS} | {f"ndcg_cut_{k}" for k in CUTS}
    measures |= {"Rprec", "map"}
    trec = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    assert len(trec) == len(run)
    shapes = [(len(p), len(g)) for p, g in zip(predictions, references)]
    assert any(0 < p < g for p, g in shapes) and any(p > 10 for p, _ in shapes)
    assert any(g == 0 and p > 0 for p, g in shapes) and any(p == 0 and g > 0 for p, g in shapes)
    return predictions, references, trec


def trec_values(trec: dict, measure: str, n: int) -> list[float | None]:
    """Per query, trec_eval's value, or None for a query it skipped (empty run)."""
    return [trec[f"q{q}"][measure] if f"q{q}" in trec else None for q in range(n)]


def assert_parity(ours: list, theirs: list, references: list, measure: str, without_gold) -> None:
    for q, (a, b, gold) in enumerate(zip(ours, theirs, references)):
        if b is None:  # empty run: trec_eval -c counts 0
            expected = None if not gold and without_gold is None else 0.0 if gold else without_gold
        elif not gold:
            expected = without_gold
        else:
            expected = b
        assert (a is None and expected is None) or abs(a - expected) <= TOLERANCE, (measure, q, a, b, expected)


def test_trec_eval_ties_break_by_decreasing_document_id():
    qrels = {"q": {"d10": 1}}
    for run in ({"q": {"d10": 1.0, "d9": 1.0}}, {"q": {"d9": 1.0, "d10": 1.0}}):
        assert pytrec_eval.RelevanceEvaluator(qrels, {"P_1"}).evaluate(run)["q"]["P_1"] == 0.0
    assert trec_order({"d10": 1.0, "d9": 1.0, "d2": 2.0, "a": 1.0}) == ["d2", "d9", "d10", "a"]


@pytest.mark.parametrize("k", CUTS)
@pytest.mark.parametrize("zero_division", (0.0, 1.0))
def test_precision_at_k_is_trec_eval_p_k(corpus, k, zero_division):
    predictions, references, trec = corpus
    result = keyword_prf(
        predictions, references, top_k=k, zero_division=zero_division, return_per_example=True, **EXACT
    )
    ours = result["per_example"]["precision"]
    assert_parity(ours, trec_values(trec, f"P_{k}", len(predictions)), references, f"P_{k}", 0.0)
    assert abs(result["precision"] - math.fsum(ours) / len(ours)) <= TOLERANCE


@pytest.mark.parametrize("zero_division", (0.0, 1.0))
def test_precision_at_o_is_trec_eval_rprec(corpus, zero_division):
    predictions, references, trec = corpus
    result = keyword_prf(
        predictions, references, top_k="O", zero_division=zero_division, return_per_example=True, **EXACT
    )
    theirs = trec_values(trec, "Rprec", len(predictions))
    assert_parity(result["per_example"]["precision"], theirs, references, "Rprec", zero_division)


@pytest.mark.parametrize("k", CUTS)
def test_map_and_ndcg_at_k_are_trec_eval_map_cut_and_ndcg_cut(corpus, k):
    predictions, references, trec = corpus
    scores = [[1.0 - rank / (len(p) + 1) for rank in range(len(p))] for p in predictions]
    result = weighted_keyword_prf(
        predictions, scores, references, k=k, relevance="binary", return_per_example=True, **EXACT
    )
    n = len(predictions)
    for ours, measure in ((f"map@{k}", f"map_cut_{k}"), (f"ndcg@{k}", f"ndcg_cut_{k}")):
        theirs = trec_values(trec, measure, n)
        assert_parity(result["per_example"][ours], theirs, references, measure, None)
        # Corpus means: over the queries with relevant documents (the others are left out).
        with_gold = [v if v is not None else 0.0 for v, gold in zip(theirs, references) if gold]
        expected = math.fsum(with_gold) / len(with_gold)
        assert abs(result[ours] - expected) <= TOLERANCE, (measure, result[ours], expected)
    assert abs(map_at_k(predictions, references, k=k, **EXACT) - result[f"map@{k}"]) <= TOLERANCE
    ndcg = ndcg_at_k(predictions, references, k=k, relevance="binary", **EXACT)
    assert abs(ndcg - result[f"ndcg@{k}"]) <= TOLERANCE


def test_map_at_k_beyond_the_run_is_trec_eval_map(corpus):
    predictions, references, trec = corpus
    theirs = trec_values(trec, "map", len(predictions))
    longest = max(map(len, predictions))
    for q, (predicted, gold) in enumerate(zip(predictions, references)):
        if gold:
            ours = map_at_k([predicted], [gold], k=longest, **EXACT)
            expected = theirs[q] if theirs[q] is not None else 0.0
            assert abs(ours - expected) <= TOLERANCE, (q, ours, expected)
    with_gold = [v if v is not None else 0.0 for v, gold in zip(theirs, references) if gold]
    ours = map_at_k(predictions, references, k=longest, **EXACT)
    assert abs(ours - math.fsum(with_gold) / len(with_gold)) <= TOLERANCE
