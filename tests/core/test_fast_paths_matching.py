"""Matching's fast paths against their slow truths: Hopcroft-Karp against scipy (also for a
large semantic example), exact hits marked by the C helper and by the sort in numpy, and
exact-match counts from keys against the brute force."""

from __future__ import annotations

import numpy as np
import pytest
import reference_impl as ref
from conftest import IMPLEMENTATIONS, approx_nested
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from opinion_metrics._native import VARIABLE as IMPLEMENTATION
from opinion_metrics._native import helper
from opinion_metrics.core import documents, matching, relations
from opinion_metrics.core.cutoffs import prediction_cutoffs
from opinion_metrics.core.matching import hopcroft_karp
from opinion_metrics.core.preparation import prepare_corpus
from opinion_metrics.core.validation import check_top_k

bipartite = st.integers(1, 9).flatmap(
    lambda n_right: st.lists(st.lists(st.integers(0, n_right - 1), max_size=n_right, unique=True), max_size=10)
)


def scipy_matching_size(neighbors) -> int:
    n_right = 1 + max((j for adjacent in neighbors for j in adjacent), default=0)
    rows = [i for i, adjacent in enumerate(neighbors) for _ in adjacent]
    cols = [j for adjacent in neighbors for j in adjacent]
    graph = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(neighbors), n_right))
    return int((maximum_bipartite_matching(graph, perm_type="column") >= 0).sum())


@settings(max_examples=500, deadline=None)
@given(bipartite)
def test_hopcroft_karp_equals_scipy(neighbors):
    assert hopcroft_karp(neighbors) == scipy_matching_size(neighbors)


def test_hopcroft_karp_on_a_large_sparse_graph_equals_scipy():
    rng = np.random.default_rng(0)
    neighbors = [rng.choice(3000, size=int(rng.integers(0, 4)), replace=False).tolist() for _ in range(3000)]
    neighbors += [[0]] + [[i - 1, i] for i in range(1, 2000)]  # long augmenting paths, no recursion
    assert hopcroft_karp(neighbors) == scipy_matching_size(neighbors)


class TopicEncoder:
    """Embeds "tA tB ..." as the normalized sum of topic unit vectors: cosines 1, 0.707, 0.5 or 0."""

    def encode(self, texts, **options):
        vectors = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in text.split():
                vectors[row, int(token[1:])] = 1.0
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_semantic_one_to_one_matching_on_a_large_example_equals_scipy():
    from opinion_metrics.families.semantic_keyword_prf import semantic_keyword_prf

    rng = np.random.default_rng(2)

    def keywords(n):
        chosen = (rng.choice(64, size=int(rng.integers(1, 3)), replace=False) for _ in range(n))
        return list(dict.fromkeys(" ".join(f"t{t}" for t in sorted(topics)) for topics in chosen))

    predictions, references = keywords(400), keywords(300)
    embed = TopicEncoder().encode
    similarity = embed(predictions).astype(np.float64) @ embed(references).astype(np.float64).T
    neighbors = [np.flatnonzero(row >= 0.6).tolist() for row in similarity]  # cosines 0.5 / 0.707 are far from 0.6
    expected = scipy_matching_size(neighbors)
    assert hopcroft_karp(neighbors) == expected
    result = semantic_keyword_prf([predictions], [references], model=TopicEncoder(), threshold=0.6, one_to_one=True)
    assert result["semantic_precision"] == pytest.approx(expected / len(predictions))
    assert result["semantic_recall"] == pytest.approx(expected / len(references))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.lists(st.sampled_from("abcdefg"), max_size=6), st.integers(0, 2)), min_size=1, max_size=8),
    st.lists(st.lists(st.sampled_from("abcdefgh"), max_size=6), min_size=3, max_size=3),
    st.sampled_from([None, "M", 1, 2, "O"]),
)
def test_exact_hits_marked_in_c_and_by_the_sort_in_numpy_as_defined(examples, gold_lists, top_k):
    predictions = [predicted for predicted, _ in examples]
    references = [gold_lists[which] for _, which in examples]  # shared list objects: grouped rows
    corpus = prepare_corpus(predictions, references)
    cutoffs = prediction_cutoffs(corpus, check_top_k(top_k))
    expected = []
    for predicted, gold in zip(predictions, references):
        kept = list(dict.fromkeys(predicted))  # single letters: normalized as given
        cut = {None: len(kept), "M": len(kept), "O": len(set(gold))}.get(top_k, top_k)
        expected.append(len(set(kept[:cut]) & set(gold)))
    for implementation in IMPLEMENTATIONS:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(IMPLEMENTATION, implementation)
            assert matching.exact_match_counts(corpus, cutoffs).tolist() == expected


@pytest.mark.parametrize("in_c", [True, False])
@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("top_k", [None, 2, "O"])
def test_exact_match_counts_from_keys_equal_spec(in_c, shared, top_k, monkeypatch):
    """`exact_match_counts`, with the C helper (ids marked) or its twin (with a gold list per
    example, one sort of both sides' keys; with one gold list shared, a search in its keys),
    with cut-offs, against the brute force."""
    if in_c and helper() is None:
        pytest.skip("the C helper is not built here (no compiler)")
    if not in_c:
        monkeypatch.setenv(IMPLEMENTATION, "python")
    from opinion_metrics import keyword_prf

    rng = np.random.default_rng(3)
    phrases = ["Star Wars", "star wars!", "jedi", "the force", "Yoda", "", "sith lord", "Empire", "wars"]

    def draw(size):
        return [phrases[i] for i in rng.integers(len(phrases), size=size)]

    n = 300
    shared_gold = draw(6)
    references = [shared_gold] * n if shared else [[*draw(int(rng.integers(0, 7))), f"doc {i}"] for i in range(n)]
    predictions = [draw(int(rng.integers(0, 5))) for _ in range(n)]
    calls = []
    counts = matching.exact_match_counts
    monkeypatch.setattr(documents, "documents_cheaper", lambda references: False)  # through the prepared corpus
    monkeypatch.setattr(
        matching,
        "exact_match_counts",
        lambda corpus, cutoffs=None: calls.append(corpus.references.flat[2] is not None) or counts(corpus, cutoffs),
    )
    relations.clear_lexical_caches()
    actual = keyword_prf(predictions, references, match="exact", top_k=top_k, return_per_example=True)
    expected = ref.keyword_prf(predictions, references, match="exact", top_k=top_k)
    assert calls == [shared]  # the path named by the parameter ran
    assert actual["per_example"] == approx_nested(expected["per_example"])
    assert {key: actual[key] for key in ("precision", "recall", "f1")} == pytest.approx(
        {key: expected[key] for key in ("precision", "recall", "f1")}
    )
