"""The relations between keywords by every path against their definitions: edges found by the
C helper and by the joins in numpy, each example's pairs tested in C and in Python, the
containment found by automata, by windows, by rolling hashes and in Python; relations,
forms and list signatures kept across calls and threads."""

from __future__ import annotations

import numpy as np
import pytest
import reference_impl as ref
from conftest import IMPLEMENTATIONS
from hypothesis import given, settings
from hypothesis import strategies as st

from opinion_metrics._native import VARIABLE as IMPLEMENTATION
from opinion_metrics._native import helper
from opinion_metrics.core import containment, example_edges, relations
from opinion_metrics.core.preparation import prepare_corpus


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(st.sampled_from(["a", "ab", "b c", "abc", "c", "x", "b"]), max_size=6), st.integers(0, 2)),
        min_size=1,
        max_size=8,
    ),
    st.lists(st.lists(st.sampled_from(["a", "ab", "b", "b c d", "abcd", "x y"]), max_size=6), min_size=3, max_size=3),
    st.sampled_from(["exact", "substring", "token"]),
)
def test_edges_found_in_c_and_by_the_joins_in_numpy_as_defined(examples, gold_lists, match):
    predictions = [predicted for predicted, _ in examples]
    references = [gold_lists[which] for _, which in examples]  # shared list objects: grouped rows
    corpus = prepare_corpus(predictions, references)
    related = {
        "exact": str.__eq__,
        "substring": lambda p, g: p in g or g in p,
        "token": lambda p, g: f" {p} " in f" {g} " or f" {g} " in f" {p} ",
    }[match]
    expected = [
        (i, j, k)
        for i, (predicted, gold) in enumerate(zip(predictions, references))
        for j, p in enumerate(dict.fromkeys(predicted))  # single spaces, lower case: normalized as given
        for k, g in enumerate(dict.fromkeys(gold))
        if related(p, g)
    ]
    paths = [lambda: relations.relation_edges(corpus, match)]  # the numpy twin, run below without the helper
    if helper() is not None:
        paths += [lambda by=by: relations._corpus_edges_in_c(corpus, match, by) for by in ("cost", "relation", "list")]
    for number, path in enumerate(paths):
        with pytest.MonkeyPatch.context() as patch:
            if number == 0:
                patch.setenv(IMPLEMENTATION, "python")
            edges = path()
        assert list(zip(*(column.tolist() for column in edges[:3]))) == expected


pair_text = st.text(alphabet="ab  \tç🎬\x00", max_size=6)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.lists(pair_text, max_size=5), st.integers(0, 2)), min_size=1, max_size=8),
    st.lists(st.lists(pair_text, max_size=5), min_size=3, max_size=3),
    st.sampled_from(["substring", "token"]),
    st.booleans(),
)
def test_pair_edges_in_c_and_in_python_as_defined(examples, gold_lists, match, shared):
    """Each example's relation tested on its pairs (`pair_edges`) or found by a search over its
    own strings (`search_edges`), in C and in Python, for all examples or some, equals the
    definitions' pairs: gold lists shared by several examples (each (prediction, list) tested
    once) or each its own; inner white space, tabs, NUL, multi-byte characters."""
    predictions = [predicted for predicted, _ in examples]
    references = [gold_lists[which] if shared else list(gold_lists[which]) for _, which in examples]
    corpus = prepare_corpus(predictions, references, normalize="none")
    expected = [
        (i, j, k)
        for i, (predicted, gold) in enumerate(zip(predictions, references))
        for j, p in enumerate(ref.prepare(predicted, normalize_mode="none")[0])
        for k, g in enumerate(ref.prepare(gold, normalize_mode="none")[0])
        if ref.related(p, g, match)
    ]
    some = np.arange(0, len(examples), 2)  # every other example
    paths = [example_edges._pair_edges_in_python]
    if helper() is not None:
        paths.append(example_edges.pair_edges)
    for implementation in IMPLEMENTATIONS:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(IMPLEMENTATION, implementation)
            for path in (*paths, example_edges.search_edges, relations.relation_edges):
                edges = path(corpus, match)
                assert list(zip(*(column.tolist() for column in edges[:3]))) == expected, path.__name__
                edges = path(corpus, match, some)
                found = list(zip(*(column.tolist() for column in edges[:3])))
                assert found == [edge for edge in expected if edge[0] % 2 == 0], path.__name__


def test_pair_edges_in_c_leave_what_they_cannot_read_to_python():
    speedups = helper()
    if speedups is None:
        pytest.skip("the C helper is not built here (no compiler)")
    ids, offsets = np.array([0, 1], dtype=np.int64), np.array([0, 1, 2], dtype=np.int64)
    lists = np.array([0, 1], dtype=np.int64)

    class Keyword(str):
        pass

    assert speedups.pair_edges(["a\ud800", "a"], ids, offsets, ids[::-1].copy(), offsets, lists, None, 1) is None
    assert speedups.pair_edges([Keyword("a"), "ab"], ids, offsets, ids[::-1].copy(), offsets, lists, None, 1) is None
    found = speedups.pair_edges(["a", "ab"], ids, offsets, ids[::-1].copy(), offsets, lists, None, 1)
    assert [np.frombuffer(column, np.int64).tolist() for column in found] == [[0, 1], [0, 0], [0, 0]]
    with pytest.raises(ValueError, match="an id is out of range"):
        speedups.pair_edges(["a"], ids, offsets, ids, offsets, lists, None, 1)
    with pytest.raises(ValueError, match="a list is out of range"):
        speedups.pair_edges(["a", "b"], ids, offsets, ids, offsets, lists, np.array([0, 2], dtype=np.int64), 1)
    with pytest.raises(ValueError, match="one list"):
        speedups.pair_edges(["a", "b"], ids, offsets, ids, offsets, lists[:1], None, 1)


needles = st.lists(st.text(alphabet="ab c\x00é\ud800", min_size=1, max_size=5), max_size=10, unique=True)
haystacks = st.lists(st.text(alphabet="ab c\x00é\ud800", max_size=14), max_size=8)


@settings(max_examples=400, deadline=None)
@given(needles, haystacks)
def test_rolling_hash_containment_equals_in(needles, haystacks):
    expected = {(i, j) for i, n in enumerate(needles) for j, h in enumerate(haystacks) if n in h}
    assert containment._containment_by_hash(needles, haystacks) == expected


def test_rolling_hash_collisions_are_confirmed(monkeypatch):
    # With a base of 1 every anagram collides: the pairs must still be exact.
    monkeypatch.setattr(containment, "_HASH_BASE", np.uint64(1))
    monkeypatch.setattr(containment, "_HASH_BASE_INVERSE", np.uint64(1))
    pairs = containment._containment_by_hash(["ab", "ba", "abc"], ["xba", "cab", "bca"])
    # "ab" is in "cab"; "ba" is in "xba"; "abc" (an anagram of "cab" and "bca") is in neither.
    assert pairs == {(0, 1), (1, 0)}


containment_text = st.text(alphabet="ab é🎬\x00", max_size=5)


@settings(max_examples=400, deadline=None)
@given(st.lists(containment_text, max_size=8), st.lists(st.text(alphabet="ab é🎬\x00c", max_size=12), max_size=6))
def test_containment_found_in_c_by_automata_and_by_windows_and_in_python_as_defined(needles, haystacks):
    """Every (needle, haystack) pair with the needle in the haystack: equal and empty needles,
    multi-byte characters, needles whose byte pairs no haystack has, automata over blocks of a
    few bytes (several automata per call), and the Python strategies."""
    expected = {(i, j) for i, n in enumerate(needles) for j, h in enumerate(haystacks) if n in h}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(IMPLEMENTATION, "python")
        assert containment.containment_pairs(needles, haystacks) == expected
    if helper() is None:
        return
    for by, block in (("cost", containment._NEEDLE_BLOCK), ("automata", containment._NEEDLE_BLOCK), ("automata", 3),
                      ("automata", 0), ("windows", containment._NEEDLE_BLOCK)):  # fmt: skip
        needle, haystack = containment._contained_in_c(needles, haystacks, by, block)
        assert set(zip(needle.tolist(), haystack.tolist())) == expected, (by, block)
        assert len(needle) == len(expected)  # each pair once


def test_containment_in_c_leaves_what_it_cannot_read_to_python():
    speedups = helper()
    if speedups is None:
        pytest.skip("the C helper is not built here (no compiler)")

    class Keyword(str):
        pass

    assert speedups.contained_pairs(["a\ud800"], ["a\ud800b"]) is None  # a lone surrogate has no UTF-8
    assert speedups.contained_pairs([Keyword("a")], ["ab"]) is None
    assert speedups.contained_pairs(("a",), iter(["ab"])) is None
    assert speedups.contained_pairs(["a" * (1 << 23)], ["aa"], 1 << 24, 1) is None  # past its node numbers
    assert containment.containment_pairs(["a\ud800", Keyword("b")], ["a\ud800b"]) == {(0, 0), (1, 0)}


@pytest.mark.parametrize("by", ["cost", "automata", "windows"])
def test_nested_needles_each_found_once_per_haystack(by):
    """Needles inside one another ("a", "aa", ...: each one's end a chain of the others)."""
    if helper() is None:
        pytest.skip("the C helper is not built or not used here")
    needles, haystacks = ["a" * k for k in range(1, 60)] + ["b"], ["a" * 100, "a" * 30 + "b", "ab" * 40]
    expected = {(i, j) for i, n in enumerate(needles) for j, h in enumerate(haystacks) if n in h}
    needle, haystack = containment._contained_in_c(needles, haystacks, by, 64)
    assert sorted(zip(needle.tolist(), haystack.tolist())) == sorted(expected)


@pytest.mark.parametrize("match", ["substring", "token"])
def test_relations_and_forms_kept_across_calls_give_the_values_of_a_fresh_call(match):
    from opinion_metrics import keyword_prf, weighted_keyword_prf

    gold = ["Star Wars", "the empire", "wars", "jedi knight", "café"]
    first = [["star", "war"], ["empire strikes", "knight"], ["cafe\u0301"]]
    second = [["star", "wars x"], ["Jedi", "the"], ["pire", "star wars", "war"]]  # partly new strings
    scores = [[0.9, 0.5], [0.9, 0.5], [0.9, 0.5, 0.1]]
    options = {"match": match, "stemmer": "porter", "return_per_example": True}
    relations.clear_lexical_caches()
    other = "token" if match == "substring" else "substring"
    keyword_prf(second, [gold] * 3, **{**options, "match": other})  # the other relation, same strings
    keyword_prf(first, [gold] * 3, **options)  # fills the caches for this gold list
    warm = keyword_prf(second, [gold] * 3, **options)
    warm_weighted = weighted_keyword_prf(second, scores, [gold] * 3, **options)
    relations.clear_lexical_caches()
    assert keyword_prf(second, [gold] * 3, **options) == warm
    relations.clear_lexical_caches()
    assert weighted_keyword_prf(second, scores, [gold] * 3, **options) == warm_weighted
    # By hand (Porter: "wars" -> "war", "knight" stays): example 1, "jedi" ~ "jedi knight"; "the" ~ "the empir".
    assert warm["per_example"]["precision"][1] == 1.0


@pytest.mark.parametrize("match", ["substring", "token"])
def test_related_gold_equals_the_relation_pairs(match):
    relations.clear_lexical_caches()
    predicted = ["a b", "b", "x", "a b c", "c a"]
    gold = ["a", "a b c", "zz", "b"]
    relations.related_gold(predicted[:2], gold[:2], match)  # part of the relation met before
    pairs = containment.relation_pairs(predicted, gold, match)
    expected = [tuple(sorted(j for i, j in pairs if i == k)) for k in range(len(predicted))]
    assert relations.related_gold(predicted, gold, match) == expected


def test_list_signatures_never_rule_out_a_member():
    rng = np.random.default_rng(4)
    sizes = rng.integers(0, 6, size=200)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    ids = rng.integers(0, 1000, size=int(offsets[-1]))
    signatures = relations.list_signatures(ids, offsets)
    lists = np.repeat(np.arange(len(sizes)), sizes)
    assert relations.signature_holds(signatures, lists, ids).all()  # every member passes
    others = rng.integers(0, 1000, size=len(lists))
    members = [set(ids[a:b].tolist()) for a, b in zip(offsets[:-1], offsets[1:])]
    expected = [j % 64 in {i % 64 for i in members[row]} for row, j in zip(lists.tolist(), others.tolist())]
    assert relations.signature_holds(signatures, lists, others).tolist() == expected


def test_a_call_between_anothers_update_and_its_reading_of_the_relation_changes_nothing(monkeypatch):
    """Another thread's call run right after this one leaves the relation's lock (the
    interleaving forced) grows the neighbours this call has just taken."""
    relations.clear_lexical_caches()
    lock = relations._KNOWN_LOCK
    relations.related_gold(["battery"], ["battery life"], "substring")
    between = []

    class Interleaved:
        def __enter__(self):
            lock.acquire()

        def __exit__(self, *exception):
            lock.release()
            if not between:
                between.append(None)
                between[0] = relations.related_gold(["battery"], ["battery pack", "big battery"], "substring")

    monkeypatch.setattr(relations, "_KNOWN_LOCK", Interleaved())
    assert relations.related_gold(["battery", "screen"], ["battery life", "screen"], "substring") == [(0,), (1,)]
    assert between == [[(0, 1)]]
