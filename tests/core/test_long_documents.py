"""Issue 37: a long document (many more pairs than keywords) among short ones. Each example's
relation is found the way that costs least for it: its pairs tested, its own strings searched,
or the relation between distinct strings; every way gives the definitions' pairs. (Speed is
the benchmark's business: `scripts/benchmarks/long_documents.py`.)"""

from __future__ import annotations

import numpy as np
import pytest
import reference_impl as ref
from conftest import IMPLEMENTATIONS, approx_nested
from differential_cases import ALWAYS, NEVER

from opinion_metrics import keyword_prf
from opinion_metrics._native import VARIABLE as IMPLEMENTATION
from opinion_metrics.core import documents, example_edges, relations
from opinion_metrics.core.preparation import prepare_corpus


def long_document(n: int, start: int = 0) -> tuple[list[str], list[str]]:
    """The issue's shape: `kw{i} x{r}` predictions against `kw{j}` gold keywords."""
    return [f"kw{i} x{i % 7}" for i in range(start, start + n)], [f"kw{j}" for j in range(start, start + n // 7)]


def short_documents(n: int) -> tuple[list[list[str]], list[list[str]]]:
    """Documents of their own phrases: a few predictions and gold keywords each."""
    predictions = [[f"p{i} q", f"r{i}", f"g{i} s"] for i in range(n)]
    references = [[f"g{i}", f"g{i} t", f"u{i} v", "w"] for i in range(n)]
    return predictions, references


def brute_force_edges(predictions: list, references: list, match: str) -> list[tuple[int, int, int]]:
    kept = [(ref.prepare(p)[0], ref.prepare(g)[0]) for p, g in zip(predictions, references)]
    return [
        (i, j, k)
        for i, (predicted, gold) in enumerate(kept)
        for j, p in enumerate(predicted)
        for k, g in enumerate(gold)
        if ref.related(p, g, match)
    ]


def edge_list(edges: relations.Edges) -> list[tuple[int, int, int]]:
    return list(zip(*(column.tolist() for column in edges[:3])))


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_mixed_corpus_routes_each_document_by_its_own_cost(implementation, monkeypatch):
    """Short documents of their own phrases are tested pair by pair, the long ones searched on
    their own; the edges are the definitions' pairs."""
    monkeypatch.setenv(IMPLEMENTATION, implementation)
    predictions, references = short_documents(300)
    for at, start in ((5, 10_000), (150, 20_000), (300, 30_000)):
        predicted, gold = long_document(1400, start)
        predictions.insert(at, predicted)
        references.insert(at, gold)
    corpus = prepare_corpus(predictions, references)
    routes = relations.edge_routes(corpus)
    assert np.flatnonzero(routes == relations.SEARCH).tolist() == [5, 150, 300]
    assert (routes[routes != relations.SEARCH] == relations.PAIRS).all()
    searched, tested = [], []

    def spy(found: list, route):
        return lambda corpus, match, examples: found.append(examples) or route(corpus, match, examples)

    monkeypatch.setattr(relations, "search_edges", spy(searched, example_edges.search_edges))
    monkeypatch.setattr(relations, "pair_edges", spy(tested, example_edges.pair_edges))
    for match in ("substring", "token"):
        relations.clear_lexical_caches()
        expected = brute_force_edges(predictions, references, match)
        assert edge_list(relations._corpus_edges(corpus, match)) == expected
    assert [e.tolist() for e in searched] == [[5, 150, 300]] * 2
    assert len(tested) == 2 and len(tested[0]) == 300


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_long_documents_sharing_their_strings_take_the_relation_between_distinct_strings(implementation, monkeypatch):
    """Long documents with one gold list and the same predictions: the relation between their
    distinct strings, computed once; a long document of its own phrases among reviews of one
    movie (one list, few strings in many pairs): searched, the reviews by the relation."""
    monkeypatch.setenv(IMPLEMENTATION, implementation)
    predicted, gold = long_document(1400)
    corpus = prepare_corpus([predicted] * 4, [gold] * 4)
    assert relations.edge_routes(corpus).tolist() == [relations.RELATION] * 4
    movie = [f"k{j} of the movie" for j in range(300)]
    reviews = [[f"k{(7 * i + k) % 300}" for k in range(4)] for i in range(2000)]
    predicted, gold = long_document(1400, 10_000)
    corpus = prepare_corpus([*reviews, predicted], [*[movie] * 2000, gold])
    assert relations.edge_routes(corpus).tolist() == [relations.RELATION] * 2000 + [relations.SEARCH]
    for match in ("substring", "token"):
        relations.clear_lexical_caches()
        expected = brute_force_edges([*reviews, predicted], [*[movie] * 2000, gold], match)
        assert edge_list(relations._corpus_edges(corpus, match)) == expected


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("match", ["substring", "token"])
def test_a_long_document_is_searched_on_its_own_and_gives_its_pairs(implementation, match, monkeypatch):
    """The per-document path searches the long document (the cost model says so) and keeps
    testing the pairs of the short one; searched or tested, the same edges and values."""
    monkeypatch.setenv(IMPLEMENTATION, implementation)
    predicted, gold = long_document(1400)
    predictions, references = [predicted, ["kw1", "kw12 x5"]], [gold, ["kw1 x1", "kw12"]]
    pairs, size = len(predicted) * len(gold), sum(map(len, predicted + gold))
    assert example_edges.searched(pairs, size, "documents")
    assert not example_edges.searched(4, 20, "documents")
    expected = brute_force_edges(predictions, references, match)
    found = []
    for costs in (None, ALWAYS, NEVER):
        with monkeypatch.context() as patch:
            if costs is not None:
                patch.setattr(example_edges, "SEARCH_COSTS", {"documents": costs, "examples": costs})
            edges = documents.document_edges(predictions, references, "default", match)[2]
            assert edge_list(edges) == expected, costs
            found.append(keyword_prf(predictions, references, match=match, return_per_example=True))
    assert found[0] == found[1] == found[2]
    assert found[0] == approx_nested(ref.keyword_prf(predictions, references, match=match), rel=1e-12)
