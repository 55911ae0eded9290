"""Keywords, strings, scores and rows numbered and read by the C helper and by its Python twin,
against their definitions; the vectorized preparation against the per-row one; the sort used
by the joins against argsort."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import IMPLEMENTATIONS
from fast_path_cases import ASCII, UNICODE, _encoded_by_definition, any_text
from hypothesis import given, settings
from hypothesis import strategies as st

from opinion_metrics._native import VARIABLE as IMPLEMENTATION
from opinion_metrics._native import helper
from opinion_metrics.core import encoding, preparation, relations
from opinion_metrics.core.encoding import sort_with_payload
from opinion_metrics.core.preparation import prepare_corpus


def test_sort_with_payload_encoded_and_argsort_agree():
    rng = np.random.default_rng(1)
    for high in (50, 2**40, 2**62):  # the last overflows the encoding: argsort
        keys = rng.integers(0, high, size=500)
        payload = rng.permutation(500)
        sorted_keys, sorted_payload = sort_with_payload(keys, payload)
        order = np.lexsort((payload, keys))
        assert np.array_equal(sorted_keys, keys[order])
        assert np.array_equal(sorted_payload, payload[order])


def test_sort_with_payload_orders_ties_by_payload_where_the_keys_do_not_fit():
    keys = np.array([2**61, 5, 2**61, 5, 2**61])
    payload = np.array([4, 9, 1, 3, 1])
    assert [a.tolist() for a in sort_with_payload(keys, payload)] == [[5, 5, 2**61, 2**61, 2**61], [3, 9, 1, 1, 4]]


# Valid Unicode: a keyword holding a lone surrogate is refused on every path (tested below).
valid_text = st.text(alphabet=ASCII + UNICODE.replace("\ud800", ""), max_size=12) | st.text(
    st.characters(exclude_categories=("Cs",)), max_size=8
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(valid_text, max_size=5), min_size=1, max_size=6),
    st.lists(st.lists(valid_text, max_size=5), min_size=1, max_size=6),
    st.sampled_from(["default", "ascii", "none"]),
)
def test_vectorized_preparation_equals_per_row(predictions, references, normalize):
    n = min(len(predictions), len(references))
    predictions, references = predictions[:n], references[:n] * 1
    references = [references[0]] * (n // 2) + references[n // 2 :]  # some lists shared
    if n > 2:
        references[-1] = references[0]  # and one again, not right after itself

    def strings(corpus):
        return [
            [tuple(corpus.strings[i] for i in ids) for ids in side.ids]
            for side in (corpus.predictions, corpus.references)
        ]

    fast = prepare_corpus(predictions, references, normalize=normalize)
    relations.clear_lexical_caches()  # else the corpus prepared above is given back
    original = preparation._prepare_flat
    try:
        preparation._prepare_flat = lambda *args, **kwargs: None
        slow = prepare_corpus(predictions, references, normalize=normalize)
    finally:
        preparation._prepare_flat = original
    assert strings(fast) == strings(slow)
    assert fast.predictions.sizes.tolist() == slow.predictions.sizes.tolist()
    assert fast.references.sizes.tolist() == slow.references.sizes.tolist()
    assert len(fast.predictions) == len(fast.references) == n


@pytest.mark.parametrize("side", ["predictions", "references"])
def test_a_lone_surrogate_is_named_whichever_path_prepares_the_lists(side):
    rows = {"predictions": [["war", "peace"], ["jedi"]], "references": [["war"], ["empire", "sith"]]}
    rows[side][1] = [*rows[side][1], "happy \ud83d"]
    with pytest.raises(ValueError, match=rf"{side}: example 1, keyword \d str 'happy \\ud83d' holds a lone surrogate"):
        prepare_corpus(rows["predictions"], rows["references"])


def test_vectorized_preparation_drops_empty_and_repeated_keywords_and_keeps_scores():
    corpus = prepare_corpus(
        [["War", "war!", "", "Jedi", "WAR"], ["x"]],
        [["jedi"], ["x"]],
        scores=[[0.9, 0.8, 0.7, 0.6, 0.5], [0.25]],
    )
    assert [[corpus.strings[i] for i in ids] for ids in corpus.predictions.ids] == [["war", "jedi"], ["x"]]
    assert corpus.predictions.scores == [(0.9, 0.6), (0.25,)]


def test_invalid_rows_leave_the_vectorized_path_and_are_named():
    with pytest.raises(ValueError, match="example 1, keyword 0 must be a str"):
        prepare_corpus([["a"], [3]], [["a"], ["b"]])
    with pytest.raises(ValueError, match="example 1"):
        prepare_corpus([["a"], ["b"]], [["a"], ["b"]], scores=[[0.5], [1.5]])


class _Str(str):
    pass


keyword_or_not = any_text | st.sampled_from(["war", 1, None, b"war", 2.5, _Str("war"), ("war",)])
rows = st.lists(keyword_or_not, max_size=6).flatmap(lambda row: st.sampled_from([row, tuple(row)]))


@settings(max_examples=400, deadline=None)
@given(st.lists(rows | st.sampled_from(["war", None, {"war"}]), max_size=8) | st.lists(st.lists(any_text, max_size=4)))
def test_keywords_numbered_in_c_and_in_python_as_defined(lists):
    expected = _encoded_by_definition(lists)
    for implementation in IMPLEMENTATIONS:  # the C helper where it is built (CI: tests/project/test_packaging.py)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(IMPLEMENTATION, implementation)
            encoded = preparation.encode_lists(lists)
        if expected is None:
            assert encoded is None
            continue
        sizes, codes, distinct = encoded
        assert (sizes.tolist(), codes.tolist(), distinct) == expected


def test_many_distinct_keywords_numbered_in_c_as_in_python():
    import random

    rng = random.Random(0)  # 20,000 distinct strings: the C table grows several times
    words = [f"w{rng.randrange(20_000)}{'é' * (i % 3)}" for i in range(60_000)]
    lists = [words[i : i + rng.randrange(12)] for i in range(0, 60_000, 6)]
    expected = _encoded_by_definition(lists)
    for encoded in (preparation.encode_lists(lists), encoding._encode_lists_in_python(lists)):  # C, twin
        sizes, codes, distinct = encoded
        assert (sizes.tolist(), codes.tolist(), distinct) == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(any_text, max_size=12), st.lists(any_text, max_size=6))
def test_strings_numbered_in_c_and_in_python_as_defined(strings, known):
    from collections import defaultdict

    results = []
    for implementation in IMPLEMENTATIONS:
        table: defaultdict[str, int] = defaultdict()
        table.default_factory = table.__len__
        for string in known:  # a table holding strings from before
            table[string]
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(IMPLEMENTATION, implementation)
            numbers = preparation.number_strings(strings, table)
        assert numbers.dtype == np.int64
        results.append((numbers.tolist(), dict(table)))
    expected_table = dict.fromkeys([*known, *strings])
    assert (
        results[0]
        == results[-1]
        == ([list(expected_table).index(s) for s in strings], {s: i for i, s in enumerate(expected_table)})
    )


score_or_not = st.floats(allow_nan=True) | st.sampled_from([1, True, None, "0.5", np.float64(0.5), np.float32(0.5)])
score_rows = st.lists(score_or_not, max_size=6).flatmap(lambda row: st.sampled_from([row, tuple(row)]))


@settings(max_examples=400, deadline=None)
@given(st.lists(score_rows | st.sampled_from([0.5, None, np.array([0.5])]), max_size=8))
def test_scores_read_in_c_and_in_python_as_defined(lists):
    plain = all(type(row) in (list, tuple) for row in lists) and all(type(v) is float for row in lists for v in row)
    in_range = plain and all(0.0 <= v <= 1.0 for row in lists for v in row)
    sizes = np.array([len(row) if type(row) in (list, tuple) else 0 for row in lists], dtype=np.int64)
    for implementation in IMPLEMENTATIONS:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(IMPLEMENTATION, implementation)
            values = preparation._flat_scores(lists, sizes)
            assert (values is None) if not in_range else values.tolist() == [v for row in lists for v in row]
            if lists:  # a row of another length
                assert preparation._flat_scores(lists, sizes + 1) is None


class _EqualToWar:
    def __hash__(self):
        return hash("war")

    def __eq__(self, other):
        return other == "war"


def test_a_keyword_equal_to_a_str_is_not_one_on_either_path():
    for implementation in IMPLEMENTATIONS:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(IMPLEMENTATION, implementation)
            assert preparation.encode_lists([["war", _EqualToWar()]]) is None
            assert preparation.encode_lists([["war", _Str("war")]]) is None  # for the per-row path
            with pytest.raises(ValueError, match="predictions: example 0, keyword 1 must be a str"):
                prepare_corpus([["war", _EqualToWar()]], [["war"]])


def test_keywords_numbered_in_c_from_any_sequence_of_rows():
    if helper() is None:
        pytest.skip("the C helper is not built or not used here")
    war, peace = "war", "".join(["pea", "ce"])  # equal strings, distinct objects: numbered by value
    sizes, codes, distinct = preparation.encode_lists((["war", peace], (), ("peace", war, "jedi")))
    assert sizes.dtype == np.int64 and sizes.tolist() == [2, 0, 3]
    assert codes.dtype == np.uint32 and codes.tolist() == [0, 1, 1, 0, 2]
    assert distinct == ["war", "peace", "jedi"]


ragged_ids = st.lists(st.lists(st.integers(-1, 6), max_size=7), max_size=8)


def _flat(rows):
    offsets = np.cumsum([0] + [len(row) for row in rows]).astype(np.int64)
    return np.array([i for row in rows for i in row], dtype=np.int64), offsets


@settings(max_examples=400, deadline=None)
@given(ragged_ids)
def test_first_occurrences_marked_in_c_equal_the_sort_in_numpy(rows):
    ids, offsets = _flat(rows)
    expected = [i >= 0 and i not in row[:k] for row in rows for k, i in enumerate(row)]
    for implementation in IMPLEMENTATIONS:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(IMPLEMENTATION, implementation)
            keep, _ = preparation._first_nonempty_occurrences(ids, offsets, 7)
            assert (np.ones(len(ids), bool) if keep is None else keep).tolist() == expected


def test_row_groups_number_repeated_objects_and_copies_as_repeated_rows_does():
    rng = np.random.default_rng(5)
    distinct = [[f"k{i}", f"k{i % 3}"] for i in range(40)]
    lists = [distinct[i] for i in rng.integers(len(distinct), size=300)]  # objects repeated in any order
    lists += [list(lists[7]), list(lists[0])]  # and equal copies
    groups = preparation._row_groups(lists)
    assert groups.tolist() == preparation.repeated_rows(lists)[1]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=300), st.sampled_from([list, tuple]))
def test_row_objects_numbered_in_c_and_by_the_sort_in_numpy_as_defined(picks, kind):
    """Rows (objects repeated in any order, equal copies apart) numbered in order of first
    appearance, as a dict by identity numbers them (in C, also 5,041 objects among 10,000 rows)."""
    objects = [[f"k{i % 7}"] for i in range(41)]  # equal copies: other objects
    lists = kind(objects[i] for i in picks)
    number: dict[int, int] = {}
    expected = [number.setdefault(id(row), len(number)) for row in lists]
    first = [expected.index(k) for k in range(len(number))]
    for implementation in IMPLEMENTATIONS:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(IMPLEMENTATION, implementation)
            numbers, firsts = encoding.row_objects(lists)
        assert numbers.dtype == firsts.dtype == np.int64
        assert (numbers.tolist(), firsts.tolist()) == (expected, first)
    if helper() is not None:
        assert helper().row_objects(iter(lists)) is None  # only lists and tuples: the twin reads others
        many = [objects[i % 41] for i in range(5000)] + [[] for _ in range(5000)]  # 5,041 objects
        numbers, firsts = encoding.row_objects(many)
        assert numbers.tolist() == [i % 41 for i in range(5000)] + list(range(41, 5041))
        assert firsts.tolist() == [*range(41), *range(5000, 10000)]
