"""SPEC section 2 relations and the one-to-one matchings, against brute force and scipy."""

from contextlib import contextmanager
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_impl import related
from scipy.optimize import linear_sum_assignment
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from opinion_metrics.core import containment
from opinion_metrics.core.containment import containment_pairs, relation_pairs
from opinion_metrics.core.matching import maximum_matching


@pytest.mark.parametrize(
    ("a", "b", "exact", "substring", "token"),
    [
        ("satire", "satire", True, True, True),
        ("social satire", "satire", False, True, True),
        ("satire", "social satire", False, True, True),
        ("art", "party", False, True, False),
        ("star wars", "wars", False, True, True),
        ("star wars", "war", False, True, False),
        ("a b c", "b c", False, True, True),
        ("a b c", "a c", False, False, False),
        ("fraud", "scam", False, False, False),
    ],
)
def test_relations(a, b, exact, substring, token):
    for match, expected in (("exact", exact), ("substring", substring), ("token", token)):
        assert (relation_pairs([a], [b], match) == {(0, 0)}) is expected, match


def brute_force(predicted, gold, match):
    return {(i, j) for i, a in enumerate(predicted) for j, b in enumerate(gold) if related(a, b, match)}


keyword = st.text(alphabet="ab c\x00", min_size=1, max_size=7).map(lambda s: " ".join(s.split())).filter(bool)
keywords = st.lists(keyword, max_size=8, unique=True)


@settings(max_examples=300, deadline=None)
@given(keywords, keywords, st.sampled_from(["exact", "substring", "token"]))
def test_relations_equal_brute_force(predicted, gold, match):
    assert relation_pairs(predicted, gold, match) == brute_force(predicted, gold, match)


@contextmanager
def forced(strategy):
    """Make `containment_pairs` run `strategy` ("lookup" or "find") by patching its cost model
    (the C helper's search left out)."""
    lookup, find = (0, 1) if strategy == "lookup" else (1, 0)
    with (
        mock.patch.object(containment, "_contained_in_c", lambda *_: None),
        mock.patch.object(containment, "lookup_cost", lambda *_: lookup),
        mock.patch.object(containment, "find_cost", lambda *_: find),
        mock.patch.object(containment, f"_containment_by_{'find' if strategy == 'lookup' else 'lookup'}", None),
    ):
        yield


repeated_needles = st.lists(st.text(alphabet="ab c\x00", min_size=1, max_size=7), max_size=8)


@settings(max_examples=300, deadline=None)
@given(repeated_needles, keywords, st.sampled_from(["lookup", "find"]))
def test_both_containment_strategies_agree(needles, haystacks, strategy):
    # Needles may repeat (token forms of keywords differing only in white space): each copy gets the pairs.
    expected = {(i, j) for i, n in enumerate(needles) for j, h in enumerate(haystacks) if n in h}
    with forced(strategy):
        assert containment_pairs(needles, haystacks) == expected


@pytest.mark.parametrize("strategy", ["lookup", "find"])
def test_token_match_of_keywords_differing_in_inner_white_space(strategy):
    # Issue 10 item 1: "a b" and "a  b" share one token form; the lookup strategy kept only one.
    with forced(strategy):
        pairs = relation_pairs(["a b", "a  b", "a\tb"], ["a b c"], "token")
    assert pairs == {(0, 0), (1, 0), (2, 0)}


graphs = st.integers(1, 7).flatmap(
    lambda n_right: st.lists(st.lists(st.integers(0, n_right - 1), max_size=n_right, unique=True), max_size=8)
)


def to_csr(neighbors, n_right):
    rows = [i for i, adjacent in enumerate(neighbors) for _ in adjacent]
    cols = [j for adjacent in neighbors for j in adjacent]
    return csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(neighbors), n_right))


@settings(max_examples=300, deadline=None)
@given(graphs)
def test_maximum_matching_size_equals_scipy(neighbors):
    n_right = 1 + max((j for adjacent in neighbors for j in adjacent), default=0)
    expected = int((maximum_bipartite_matching(to_csr(neighbors, n_right), perm_type="column") >= 0).sum())
    covered = maximum_matching(neighbors)
    assert sum(covered) == expected
    assert all(neighbors[i] for i, c in enumerate(covered) if c)


@settings(max_examples=300, deadline=None)
@given(graphs, st.data())
def test_greedy_by_weight_gives_a_maximum_weight_matching(neighbors, data):
    weights = data.draw(st.lists(st.integers(0, 10), min_size=len(neighbors), max_size=len(neighbors)))
    order = sorted(range(len(neighbors)), key=lambda i: -weights[i])
    covered = maximum_matching(neighbors, order)
    n_right = 1 + max((j for adjacent in neighbors for j in adjacent), default=0)
    profit = np.zeros((len(neighbors), n_right))
    for i, adjacent in enumerate(neighbors):
        profit[i, list(adjacent)] = weights[i]
    rows, cols = linear_sum_assignment(profit, maximize=True) if neighbors else ([], [])
    assert sum(w for w, c in zip(weights, covered) if c) == profit[rows, cols].sum()


def test_maximum_matching_beats_greedy_in_sorted_order():
    # Seed 001 matches greedily: "war" takes "star wars" and "wars" is left without a partner.
    neighbors = [[0, 1], [0]]
    assert maximum_matching(neighbors) == [True, True]


def test_long_augmenting_paths_do_not_recurse():
    # Left i >= 1 first takes right i - 1; left 0, inserted last, needs a path through all n.
    n = 5000
    neighbors = [[0]] + [[i - 1, i] for i in range(1, n)]
    assert sum(maximum_matching(neighbors, [*range(1, n), 0])) == n
