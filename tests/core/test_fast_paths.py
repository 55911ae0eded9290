"""Issue 20's fast paths against their slow truths: the ASCII normalization path and the
batch normalization against the full per-string path, cached Porter stems against NLTK,
the rolling-hash containment against `in`, Hopcroft-Karp against scipy, the vectorized
preparation against the per-row one, the sort used by the joins against argsort, and each
function of the C helper and its Python twin against its definition.
(Whole corpora through every path: tests/core/test_differential.py.)"""

from __future__ import annotations

import operator
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import reference_impl as ref
from conftest import IMPLEMENTATIONS, approx_nested
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from opinion_metrics import _native
from opinion_metrics._native import VARIABLE as IMPLEMENTATION
from opinion_metrics._native import helper
from opinion_metrics.core import (
    containment,
    corpus_cache,
    documents,
    encoding,
    matching,
    normalization,
    preparation,
    relations,
)
from opinion_metrics.core.cutoffs import prediction_cutoffs
from opinion_metrics.core.encoding import sort_with_payload
from opinion_metrics.core.matching import hopcroft_karp
from opinion_metrics.core.normalization import make_normalizer
from opinion_metrics.core.preparation import prepare_corpus
from opinion_metrics.core.validation import check_top_k, lone_surrogate

# ASCII-heavy text with the characters each normalization treats specially: punctuation,
# symbols, every ASCII white space (\x1c-\x1f split in str but not in bytes), NUL (the batch
# separator), and non-ASCII look-alikes (NFKC, casefold, format characters, surrogates).
ASCII = "aZ09 _-!.,#$+<=>^`|~\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x00\x7f"
UNICODE = "ßİéＡﬁ\u00a0\u200b\ufeff\u3000ς\u0301\ud800"
ascii_text = st.text(alphabet=ASCII, max_size=12)
any_text = st.text(alphabet=ASCII + UNICODE, max_size=12) | st.text(max_size=8)
# Valid Unicode: a keyword holding a lone surrogate is refused on every path (tested below).
valid_text = st.text(alphabet=ASCII + UNICODE.replace("\ud800", ""), max_size=12) | st.text(
    st.characters(exclude_categories=("Cs",)), max_size=8
)


@settings(max_examples=500, deadline=None)
@given(ascii_text | any_text)
def test_ascii_path_of_default_normalization_equals_the_unicode_path(text):
    assert normalization._normalize_default(text) == normalization._normalize_unicode(text)


@pytest.mark.parametrize("mode", ["default", "ascii", "none"])
@pytest.mark.parametrize("stemmer", [None, "porter"])
@settings(max_examples=150, deadline=None)
@given(texts=st.lists(ascii_text | any_text, max_size=30))
def test_batch_normalization_equals_one_by_one(mode, stemmer, texts):
    normalizer = make_normalizer(mode, stemmer)
    texts = texts * 2  # past the batch threshold
    # None when a text holds a lone surrogate: the per-row path reports it
    expected = None if any(map(lone_surrogate, texts)) else [normalizer(text) for text in texts]
    assert normalizer.many(texts) == expected


def test_batch_normalization_runs_for_ascii_and_leaves_the_rest_to_the_full_path(monkeypatch):
    calls = []
    batch = normalization._BATCH_NORMALIZERS["default"]
    monkeypatch.setitem(normalization._BATCH_NORMALIZERS, "default", lambda texts: calls.append(texts) or batch(texts))
    texts = ["Star-Wars!", "  a\x1cb ", "Straße", "x\x00y", *[f"W{i}" for i in range(10)]]
    normalized = make_normalizer("default").many(texts)
    assert normalized == ["star wars", "a b", "strasse", "x\x00y", *[f"w{i}" for i in range(10)]]
    assert calls == ["\x00".join(["Star-Wars!", "  a\x1cb ", *[f"W{i}" for i in range(10)]])]  # no NUL, no non-ASCII


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="abcdeilnorstuyz", min_size=1, max_size=10), max_size=6))
def test_cached_porter_stems_equal_nltk(tokens):
    from nltk.stem.porter import PorterStemmer

    stem = PorterStemmer().stem
    text = " ".join(tokens)
    expected = " ".join(stem(token, to_lowercase=False) for token in tokens)
    normalizer = make_normalizer("none", "porter")
    assert normalizer(text) == expected
    assert normalizer(text) == expected  # the second time from the cache


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


def test_sort_with_payload_encoded_and_argsort_agree():
    rng = np.random.default_rng(1)
    for high in (50, 2**40, 2**62):  # the last overflows the encoding: argsort
        keys = rng.integers(0, high, size=500)
        payload = rng.permutation(500)
        sorted_keys, sorted_payload = sort_with_payload(keys, payload)
        order = np.lexsort((payload, keys))
        assert np.array_equal(sorted_keys, keys[order])
        assert np.array_equal(sorted_payload, payload[order])


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


class _Str(str):
    pass


def _encoded_by_definition(lists):
    """`encode_lists` as its docstring defines it, one keyword at a time."""
    if not all(type(row) in (list, tuple) for row in lists):
        return None
    if not all(type(keyword) is str for row in lists for keyword in row):
        return None
    table: dict[str, int] = {}
    codes = [table.setdefault(keyword, len(table)) for row in lists for keyword in row]
    return [len(row) for row in lists], codes, list(table)


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
    paths = [lambda: relations._corpus_edges(corpus, match)]  # the numpy twin, run below without the helper
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
    """The relation tested on each example's pairs (`pair_edges`), in C and in Python, equals
    the definitions' pairs: gold lists shared by several examples (each (prediction, list)
    tested once) or each its own; inner white space, tabs, NUL, multi-byte characters."""
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
    paths = [relations._pair_edges_in_python]
    if helper() is not None:
        paths.append(relations.pair_edges)
    for path in paths:
        edges = path(corpus, match)
        assert list(zip(*(column.tolist() for column in edges[:3]))) == expected, path.__name__


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


# Keywords for the per-document path: every ASCII character each built-in normalization
# treats specially, non-ASCII ones (normalized in Python, then related in C), and words of
# letters of either case between single spaces, past 8 bytes (read 8 bytes at a time).
document_text = (
    st.text(alphabet=ASCII + "ßİé\u00a0\u200b\u3000", max_size=8)
    | st.text(alphabet="aZbY  ", max_size=30)
    | st.sampled_from(
        ["War", "war", "star wars", "Star-Wars", "a b", "a  b", "a\tb", "x a b y", "ab", "b a", "café", "Straße"]
        + ["the empire strikes back", "The Empire Strikes Back", "the empire Strikes", "empire strikes", "a new hope"]
    )
)


@pytest.mark.parametrize("normalize", ["default", "ascii", "none"])
@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(document_text, max_size=6), st.lists(document_text, max_size=6)), min_size=1, max_size=6
    ),
    st.sampled_from(["exact", "substring", "token"]),
)
def test_document_edges_in_c_and_in_python_as_defined(normalize, examples, match):
    """Each document normalized and related on its own (`document_edges`), in C (ASCII text
    normalized there) and in Python: the kept keywords' counts and the definitions' pairs."""
    predictions = [predicted for predicted, _ in examples]
    references = [gold for _, gold in examples]
    kept = [
        (ref.prepare(predicted, normalize_mode=normalize)[0], ref.prepare(gold, normalize_mode=normalize)[0])
        for predicted, gold in examples
    ]
    expected = [
        (i, j, k)
        for i, (predicted, gold) in enumerate(kept)
        for j, p in enumerate(predicted)
        for k, g in enumerate(gold)
        if ref.related(p, g, match)
    ]
    paths = [documents._document_edges_in_python]
    if helper() is not None:
        paths.append(documents.document_edges)
    for path in paths:
        prediction_sizes, gold_sizes, edges = path(predictions, references, normalize, match)
        assert prediction_sizes.tolist() == [len(p) for p, _ in kept], path.__name__
        assert gold_sizes.tolist() == [len(g) for _, g in kept], path.__name__
        assert list(zip(*(column.tolist() for column in edges[:3]))) == expected, path.__name__
        assert edges.matching == (match == "exact")


@pytest.mark.parametrize("normalize", ["default", "ascii", "none"])
def test_document_normalization_in_c_of_every_ascii_character_equals_the_normalizers(normalize):
    """Each ASCII character, alone and between words, gives in C the form the normalizer gives:
    the keyword and its form are one keyword (an exact match), and it is dropped where the
    form is empty."""
    if helper() is None:
        pytest.skip("the C helper is not built here (no compiler)")
    normalizer = make_normalizer(normalize)
    keywords = [
        text
        for c in range(128)
        for text in (
            chr(c),
            f" W{chr(c)}x {chr(c)}Y\t",
            f"{chr(c)}{chr(c)}a b",
            f"the empire strikes{chr(c)}Back again",
        )
    ]
    forms = list(map(normalizer, keywords))
    prediction_sizes, gold_sizes, edges = documents.document_edges(
        [[k] for k in keywords], [[f] for f in forms], normalize, "exact"
    )
    assert prediction_sizes.tolist() == gold_sizes.tolist() == [int(bool(form)) for form in forms]
    assert edges.examples.tolist() == [i for i, form in enumerate(forms) if form]


def test_document_edges_in_c_leave_what_they_cannot_read_to_the_corpus_path():
    speedups = helper()
    if speedups is None:
        pytest.skip("the C helper is not built here (no compiler)")

    class Keyword(str):
        pass

    table, spaces, collapse = documents._DOCUMENT_TABLES["default"]
    for predictions, references in (
        ([["a\ud800"]], [["a"]]),  # a lone surrogate
        ([[Keyword("a")]], [["a"]]),
        ([["a", None]], [["a"]]),
        ([("a",)], ["a"]),  # a row that is not a list or tuple
        ([["a"]], [["a"], ["b"]]),  # not as many rows
        (iter([["a"]]), [["a"]]),
    ):
        assert speedups.document_edges(predictions, references, table, spaces, collapse, 1, {}) is None
        assert documents.document_edges(predictions, references, "default", "substring") is None
    # the keywords that are not ASCII (gold keywords first), for Python to normalize
    assert speedups.document_edges([["café", "x"]], [["Café", "é"]], table, spaces, collapse, 1, {}) == [
        "Café",
        "é",
        "café",
    ]
    with pytest.raises(ValueError, match="not ASCII"):
        speedups.document_edges([["a"]], [["a"]], b"\x80" * 128, spaces, collapse, 1, {})
    with pytest.raises(ValueError, match="one byte per ASCII character"):
        speedups.document_edges([["a"]], [["a"]], table[:5], spaces, collapse, 1, {})


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


def test_the_c_kernels_refuse_rows_that_do_not_fit():
    speedups = helper()
    if speedups is None:
        pytest.skip("the C helper is not built here (no compiler)")
    ids, offsets = np.array([0, 1, 5], dtype=np.int64), np.array([0, 1, 3], dtype=np.int64)
    with pytest.raises(ValueError, match="out of range"):
        speedups.first_occurrences(ids, offsets, 5)
    with pytest.raises(ValueError, match="do not cover"):
        speedups.first_occurrences(ids, offsets[:2], 6)
    with pytest.raises(ValueError, match="decrease"):
        speedups.first_occurrences(ids, np.array([0, 2, 1, 3], dtype=np.int64), 6)
    lists = np.array([0, 3], dtype=np.int64)
    with pytest.raises(ValueError, match="a list is out of range"):
        speedups.exact_hits(ids, offsets, ids, offsets, lists, None, 6)
    with pytest.raises(TypeError, match="native int64"):
        speedups.first_occurrences(ids.astype(np.int32), offsets, 6)
    with pytest.raises(TypeError, match="native int64"):  # float cutoffs are not read as integers
        speedups.exact_hits(ids, offsets, ids, offsets, np.zeros(2, np.int64), np.ones(2), 6)
    with pytest.raises(TypeError, match="native int64"):  # misaligned
        speedups.first_occurrences(np.frombuffer(b"\0" + ids.tobytes(), dtype=np.int64, offset=1), offsets, 6)
    with pytest.raises(ValueError, match="one relation row per id"):
        speedups.related_edges(ids, offsets, ids, offsets, lists[:1] * 0, np.arange(3), np.arange(2), 6, 0)
    with pytest.raises(TypeError):  # None only for the cut-offs
        speedups.first_occurrences(None, offsets, 6)


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


def test_a_corpus_evaluated_again_is_prepared_once_and_its_changes_are_seen(monkeypatch):
    from opinion_metrics import keyword_prf, weighted_keyword_prf

    predictions = [["Star Wars", "jedi"], ["sith", "empire"], ("yoda", "force")]
    scores = [[0.9, 0.1], [0.5, 0.4], (0.3, 0.2)]
    gold = ["star wars", "the force"]
    references = [gold, gold, ["yoda", "sith"]]
    prepared = []  # rows read again: prepared, or (scores) read for the ids prepared without them
    prepare_side, with_scores = preparation.prepare_side, preparation._with_scores
    monkeypatch.setattr(preparation, "prepare_side", lambda *a, **k: prepared.append(1) or prepare_side(*a, **k))
    monkeypatch.setattr(preparation, "_with_scores", lambda *a: prepared.append(1) or with_scores(*a))

    def check():
        for options in ({"match": "exact"}, {"match": "substring", "top_k": 1}, {"match": "token", "top_k": "O"}):
            actual = keyword_prf(predictions, references, return_per_example=True, **options)
            assert actual["per_example"] == approx_nested(
                ref.keyword_prf(predictions, references, **options)["per_example"]
            )
            actual = weighted_keyword_prf(predictions, scores, references, return_per_example=True, **options)
            expected = ref.weighted_keyword_prf(predictions, scores, references, **options)
            assert actual["per_example"] == approx_nested(expected["per_example"])

    relations.clear_lexical_caches()
    check()
    before = len(prepared)
    check()
    assert len(prepared) == before  # the same rows: prepared once per family
    for change in (
        lambda: predictions[0].__setitem__(1, "the force"),  # a list changed in place
        lambda: predictions.__setitem__(1, ["jedi", "sith"]),  # a row replaced
        lambda: scores[0].__setitem__(0, 0.05),  # a score changed
        lambda: gold.__setitem__(1, "empire"),  # the shared gold list changed in place
    ):
        change()
        before = len(prepared)
        check()
        assert len(prepared) > before


def test_sort_with_payload_orders_ties_by_payload_where_the_keys_do_not_fit():
    keys = np.array([2**61, 5, 2**61, 5, 2**61])
    payload = np.array([4, 9, 1, 3, 1])
    assert [a.tolist() for a in sort_with_payload(keys, payload)] == [[5, 5, 2**61, 2**61, 2**61], [3, 9, 1, 1, 4]]


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


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(["Jedi", "jedi", "", " sith!", "yoda", "a b"]), max_size=5), min_size=1, max_size=6
    ),
    st.data(),
)
def test_scores_read_for_rows_kept_prepared_without_them_equal_a_fresh_preparation(predictions, data):
    """The weighted family given rows the keyword family prepared: the kept ids with the
    scores read again equal the rows prepared with their scores (repeated and empty keywords
    dropped with their scores); scores the vectorized path refuses go the per-row way."""
    scores = [[data.draw(st.floats(0, 1)) for _ in row] for row in predictions]
    references = [["jedi", "the force"]] * len(predictions)
    corpus_cache.clear_prepared_corpora()
    plain = prepare_corpus(predictions, references)
    scored = prepare_corpus(predictions, references, scores=scores)
    corpus_cache.clear_prepared_corpora()
    fresh = prepare_corpus(predictions, references, scores=scores)
    assert scored.strings == fresh.strings
    assert scored.predictions.ids == fresh.predictions.ids and scored.references.ids == fresh.references.ids
    assert scored.predictions.scores == fresh.predictions.scores
    if helper() is not None:  # kept from the first call: derived, edges shared
        assert scored.memo is plain.memo
    if any(predictions):  # a score out of range: clipped or refused on the per-row path, as fresh
        scores[next(i for i, row in enumerate(predictions) if row)][0] = 1.5
        assert prepare_corpus(predictions, references, scores=scores, clip_scores=True).predictions.scores == (
            prepare_corpus(list(predictions), references, scores=scores, clip_scores=True).predictions.scores
        )
        with pytest.raises(ValueError, match="1.5"):
            prepare_corpus(predictions, references, scores=scores)


rows_of_words = st.lists(st.lists(st.sampled_from(["ab", "bc", "cd"]), max_size=3), max_size=5)


@settings(max_examples=300, deadline=None)
@given(rows_of_words, st.lists(st.integers(0, 4), max_size=8), st.integers(0, 4))
def test_snapshots_in_c_and_in_python_see_every_change(rows, picks, change):
    """Rows (some the same object, some repeated row after row) are unchanged until one of
    them changes in place, is replaced, or an item becomes an equal but distinct object."""
    for in_c in [False, True] if helper() is not None else [False]:
        with pytest.MonkeyPatch.context() as patch:
            if not in_c:
                patch.setenv(IMPLEMENTATION, "python")
            drawn = [list(row) for row in rows]  # fresh objects per pass
            current = [drawn[i % len(drawn)] for i in picks] if drawn else []
            snapshot = corpus_cache._Snapshot.of(current, None)
            assert (snapshot.unchanged is not None) is in_c
            assert snapshot.holds(current, None) and snapshot.holds(tuple(current), None)
            nonempty = [row for row in current if row]
            if change == 0 and nonempty:
                nonempty[-1][0] = "zz"
            elif change == 1 and nonempty:
                nonempty[0][0] = "".join(list(nonempty[0][0]))  # equal, another object
            elif change == 2 and current:
                current[0] = list(current[0])
            elif change == 3 and nonempty:
                nonempty[0].append("ab")
            else:
                continue
            assert not snapshot.holds(current, None)


def test_a_snapshot_in_c_stops_at_its_limit_and_takes_only_lists_and_tuples_of_str_and_float():
    speedups = helper()
    if speedups is None:
        pytest.skip("the C helper is not built or not used here")
    shared = ["a", "b"]
    rows = (shared, shared, ("c", 0.5), [], shared)
    items, sizes, starts = speedups.snapshot_rows(rows, 6)
    assert items == ("a", "b", "c", 0.5, "a", "b")  # a row right after itself: read once
    assert np.frombuffer(sizes, np.int64).tolist() == [2, 2, 2, 0, 2]
    assert np.frombuffer(starts, np.int64).tolist() == [0, 0, 2, 4, 4]
    frozen = preparation.FrozenRows(items, sizes, starts, rows, speedups)
    assert list(frozen) == [("a", "b"), ("a", "b"), ("c", 0.5), (), ("a", "b")] == frozen[:] and frozen[-1] == (
        "a",
        "b",
    )
    assert speedups.rows_unchanged(list(rows), rows, items, sizes)
    assert speedups.snapshot_rows((shared, ("c",)), 2) is False
    assert speedups.snapshot_rows((shared, "ab"), 10) is None and speedups.snapshot_rows([shared], 10) is None
    for item in (1, None, True, np.float64(0.5), type("Text", (str,), {})("a")):  # only exact str and float
        assert speedups.snapshot_rows((["a", item],), 10) is None
    assert not speedups.rows_unchanged(list(rows)[:4], rows, items, sizes)
    assert not speedups.rows_unchanged(list(rows), rows, items[:5], sizes)  # items fewer than the rows'
    assert not speedups.rows_unchanged(list(rows), rows, items + ("b",), sizes)  # or more
    assert not speedups.rows_unchanged(list(rows), rows, items, sizes[:32])
    assert not speedups.rows_unchanged([["a", "b"]], (shared,), ("a", "b"), sizes[:8])  # another row object
    assert not speedups.rows_unchanged([shared], (shared,), ("a",), np.int64([1]).tobytes())  # a size not the row's
    assert not speedups.rows_unchanged([shared], (shared,), (), np.int64([-1]).tobytes())
    other = object()  # a row that is neither list nor tuple (by hand: snapshot_rows never takes one)
    assert not speedups.rows_unchanged([other], (other,), (), np.int64([0]).tobytes())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=12), st.lists(st.sampled_from(["ab", "bc", 0.25]), max_size=4))
def test_frozen_rows_read_whole_in_c_equal_the_rows_read_one_by_one(picks, words):
    """Frozen rows (some the same object, some repeated row after row) give the sizes, codes
    and values of their rows, each read as a tuple."""
    speedups = helper()
    if speedups is None:
        pytest.skip("the C helper is not built or not used here")
    objects = [words[i:] for i in range(4)]
    rows = tuple(objects[i] for i in picks)
    frozen = preparation.FrozenRows(*speedups.snapshot_rows(rows, 100), rows, speedups)
    assert list(frozen) == [tuple(row) for row in rows] == [frozen[i] for i in range(len(rows))]
    for read, of_rows in ((preparation.encode_lists, _encoded_by_definition), (preparation.encode_floats, None)):
        whole, one_by_one = read(frozen), read(list(frozen))
        if of_rows is not None:
            assert (whole is None) == (of_rows(rows) is None)
        if whole is None or one_by_one is None:
            assert whole is None and one_by_one is None
            continue
        assert [part.tolist() if isinstance(part, np.ndarray) else part for part in whole] == [
            part.tolist() if isinstance(part, np.ndarray) else part for part in one_by_one
        ]


def test_no_collection_runs_while_snapshot_rows_copies_and_what_it_freezes_is_never_visited():
    """A collection could run Python code that changes a row while `snapshot_rows` copies it
    (up to 3.11 inside `PyTuple_New`): the collector is paused meanwhile, and left as found. The
    frozen tuple holds only str and float, so the collector never visits it."""
    import gc

    speedups = helper()
    if speedups is None:
        pytest.skip("the C helper is not built or not used here")
    original = tuple(f"k{i}" for i in range(1000))
    row = list(original)
    armed = [False]

    def cut(phase, info):
        if armed[0] and phase == "start":
            armed[0] = False
            del row[10:]

    threshold = gc.get_threshold()
    gc.callbacks.append(cut)
    try:
        for _ in range(30):
            row[:] = original
            gc.set_threshold(1)
            armed[0] = True
            items, sizes, _ = speedups.snapshot_rows((row, ["a", 0.5]), 10**9)
            gc.set_threshold(*threshold)
            assert items == (*original, "a", 0.5) and np.frombuffer(sizes, np.int64).tolist() == [1000, 2]
            assert not gc.is_tracked(items)
    finally:
        gc.callbacks.remove(cut)
        gc.set_threshold(*threshold)
    assert gc.isenabled()
    gc.disable()
    try:
        speedups.snapshot_rows((["a"],), 10)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_scores_that_can_change_in_place_are_read_again_at_every_call():
    """0-d arrays (or tensors: `list(tensor)`) are scores whose value changes under the same
    identity: a corpus with such scores is never kept."""
    from opinion_metrics import weighted_keyword_prf

    corpus_cache.clear_prepared_corpora()
    base = np.array([0.2, 0.9])
    scores = [[base[0:1].reshape(()), base[1:2].reshape(())]]
    predictions, references = [["scam", "cinema"]], [["scam"]]
    for first, second in ((0.2, 0.9), (0.9, 0.1), (0.5, 0.5), (1.0, 0.0)):
        base[:] = first, second
        assert weighted_keyword_prf(predictions, scores, references)["weighted_precision"] == pytest.approx(
            first / (first + second)
        )


def test_keywords_read_in_c_while_a_collection_grows_a_row_are_never_written_past_the_buffer():
    """A collection may run while the C helper reads the rows (`distinct_codes` creates its
    list), and its Python code may grow a row: the sizes are read after that, or the change
    is named, never written past the codes' buffer."""
    import gc

    speedups = helper()
    if speedups is None:
        pytest.skip("the C helper is not built or not used here")
    row = ["a", "b", "c"]
    armed = [False]

    def grow(phase, info):
        if armed[0] and phase == "start":
            armed[0] = False
            row.extend(f"k{i}" for i in range(1000))

    threshold = gc.get_threshold()
    gc.callbacks.append(grow)
    try:
        for _ in range(30):
            del row[3:]
            gc.set_threshold(1)
            armed[0] = True
            try:
                encoded = speedups.distinct_codes([row])
            except RuntimeError as error:
                assert "changed size" in str(error)
                continue
            finally:
                gc.set_threshold(*threshold)
            sizes, codes, distinct = encoded
            assert np.frombuffer(sizes, np.int64).tolist() == [len(row)] and distinct == row
    finally:
        gc.callbacks.remove(grow)
        gc.set_threshold(*threshold)


def test_a_kept_corpus_keeps_its_match_edges_only_while_they_are_few():
    """Edges are memoized with the corpus (kept across calls) up to 4 per keyword beyond
    `_KEPT_EDGES`: a corpus where every prediction matches every gold keyword holds none."""
    few = prepare_corpus([["w1", "w2"]] * 3, [["w1", "w3"]] * 3)
    matching.corpus_edges(few, "substring")
    assert ("edges", "substring") in few.memo
    nested = ["x" * k for k in range(1, 201)]  # each in all the longer ones
    dense = prepare_corpus([nested] * 10, [nested] * 10)
    edges = matching.corpus_edges(dense, "substring")
    assert len(edges.examples) == 10 * 200 * 200 > relations._KEPT_EDGES + 4 * (10 * 200 + 200)
    assert ("edges", "substring") not in dense.memo


def test_rows_converted_to_lists_are_not_kept():
    from opinion_metrics import keyword_prf

    corpus_cache.clear_prepared_corpora()
    predictions = np.array([["a", "b"], ["c", "d"]], dtype=object)  # converted to new lists at each call
    for _ in range(3):
        keyword_prf(predictions, [["a"], ["d"]])
    assert not corpus_cache._PREPARED


def test_threads_filling_and_clearing_the_kept_corpora_raise_nothing():
    """Concurrent calls (a Space's requests) add to, pop from and clear the bounded caches of
    kept corpora: each call still gets its own values."""
    from conftest import true_in_every_thread

    from opinion_metrics import keyword_prf

    def calls(seed: int) -> bool:
        for i in range(150):
            words = [f"w{seed}-{i}", f"w{i % 7}"]
            if seed == 0 and i % 5 == 0:
                corpus_cache.clear_prepared_corpora()
            result = keyword_prf([words], [words[1:]], match="exact")
            if result["recall"] != 1.0 or result["precision"] != 0.5:
                return False
        return True

    assert true_in_every_thread(calls)


def test_a_small_corpus_is_kept_from_its_first_call_with_the_c_helper(monkeypatch):
    from opinion_metrics import keyword_prf

    if helper() is None:
        pytest.skip("the C helper is not built or not used here")
    corpus_cache.clear_prepared_corpora()
    prepared = []
    prepare_side = preparation.prepare_side
    monkeypatch.setattr(preparation, "prepare_side", lambda *a, **k: prepared.append(1) or prepare_side(*a, **k))
    monkeypatch.setattr(documents, "documents_cheaper", lambda references: False)  # through the prepared corpus
    predictions, references = [["a", "b"]], [["a"]]
    keyword_prf(predictions, references)
    keyword_prf(predictions, references, match="exact")
    assert len(prepared) == 2  # both sides, once
    big = [["a", "b", "c", "d"] for _ in range(corpus_cache._FIRST_CALL_ITEMS // 8 + 1)]  # both sides: over it
    keyword_prf(big, big)
    keyword_prf(big, big)
    keyword_prf(big, big)
    assert len(prepared) == 2 + 4


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


def test_rows_changed_while_they_are_prepared_give_the_values_of_their_frozen_rows_then_of_the_new(monkeypatch):
    """Another thread changes a row after the call froze and read it: the call's values and
    the corpus it keeps are the frozen rows', and the next call sees the change."""
    from opinion_metrics import keyword_prf

    corpus_cache.clear_prepared_corpora()
    predictions, references = [["a", "b"]], [["a", "b"]]
    prepare_side = preparation.prepare_side
    changes = []

    def changing(rows, vocabulary, side, *args, **kwargs):
        prepared = prepare_side(rows, vocabulary, side, *args, **kwargs)
        if side == "references":  # another thread's change, after the rows were read
            changes.append(None)
            references[0][1] = f"c{len(changes)}"
        return prepared

    monkeypatch.setattr(preparation, "prepare_side", changing)
    monkeypatch.setattr(documents, "documents_cheaper", lambda references: False)  # through the prepared corpus
    recalls = [keyword_prf(predictions, references, match="exact")["recall"]]
    if helper() is not None:  # kept from the first call: what its frozen rows give
        ((snapshot, corpus),) = corpus_cache._PREPARED.values()
        assert list(snapshot.frozen[1]) == [("a", "b")] and corpus.strings == ["a", "b"]
    for _ in range(2):  # later calls (the Python twin's snapshot taken from the second)
        recalls.append(keyword_prf(predictions, references, match="exact")["recall"])
    monkeypatch.setattr(preparation, "prepare_side", prepare_side)
    assert len(changes) == 3  # each call saw the rows changed since the one before: none was given a kept corpus
    assert recalls == [1.0, 0.5, 0.5]  # a, b frozen by the first call; then a, c1 and a, c2
    assert keyword_prf(predictions, references, match="exact")["precision"] == 0.5  # a: yes, b: no


def test_the_weighted_family_takes_the_keyword_familys_snapshot_of_the_same_rows():
    """Rows the keyword family kept are compared once, not copied again: the weighted family's
    snapshot holds the same frozen predictions and references, and only its scores are new."""
    from opinion_metrics import keyword_prf, weighted_keyword_prf

    predictions, references = [["a", "b"], ["c"]], [["a"], ["c", "d"]]
    scores = [[0.5, 0.25], [1.0]]
    for implementation in IMPLEMENTATIONS:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(IMPLEMENTATION, implementation)
            patch.setattr(documents, "documents_cheaper", lambda references: False)  # through the prepared corpus
            corpus_cache.clear_prepared_corpora()
            for _ in range(2):  # the Python twin snapshots a corpus from its second call
                keyword_prf(predictions, references)
                weighted = weighted_keyword_prf(predictions, scores, references)
            (plain, plain_corpus), (scored, scored_corpus) = corpus_cache._PREPARED.values()
            assert all(map(operator.is_, scored.frozen, plain.frozen[:2]))
            assert scored_corpus.references is plain_corpus.references  # not prepared again
            assert scored.rows[2] == tuple(scores) and scored.held == plain.held + 3
            assert weighted_keyword_prf(predictions, scores, references) == weighted
            scores[1][0] = 0.5  # a change of the scores only, then of a prediction: both seen
            assert weighted_keyword_prf(predictions, scores, references) == weighted_keyword_prf(
                list(predictions), list(scores), references
            )
            predictions[0][1] = "d"
            assert weighted_keyword_prf(predictions, scores, references) == weighted_keyword_prf(
                list(predictions), list(scores), references
            )
            predictions[0][1], scores[1][0] = "b", 1.0
    corpus_cache.clear_prepared_corpora()


def test_a_weighted_snapshot_that_reads_the_rows_again_is_prepared_from_them(monkeypatch):
    """The keyword family's rows kept in C, then a weighted snapshot too large for C (gold
    lists repeated, not row after row) taken by Python from the live rows, after another thread
    changed a prediction: what is kept is prepared from that snapshot, not the plain corpus."""
    import copy

    from opinion_metrics import keyword_prf, weighted_keyword_prf

    if helper() is None:
        pytest.skip("the keyword family's rows are kept in C")
    corpus_cache.clear_prepared_corpora()
    monkeypatch.setattr(corpus_cache, "_PREPARED_ITEMS", 50)
    monkeypatch.setattr(corpus_cache, "_FIRST_CALL_ITEMS", 50)
    first, second = ["space opera", "jedi", "empire"], ["ford", "whip", "ark"]
    predictions = [["space opera", "ford"] for _ in range(10)]
    references = [first if i % 2 == 0 else second for i in range(10)]
    scores = [[0.9, 0.4] for _ in range(10)]
    keyword_prf(predictions, references)
    weighted_keyword_prf(predictions, scores, references)
    seen_before = corpus_cache._seen_before

    def another_thread_writes(key):  # between the plain corpus's check and the snapshot
        predictions[0][:] = ["jedi", "empire"]
        return seen_before(key)

    monkeypatch.setattr(corpus_cache, "_seen_before", another_thread_writes)
    weighted_keyword_prf(predictions, scores, references)
    monkeypatch.setattr(corpus_cache, "_seen_before", seen_before)
    fresh = weighted_keyword_prf(copy.deepcopy(predictions), copy.deepcopy(scores), copy.deepcopy(references))
    assert weighted_keyword_prf(predictions, scores, references) == fresh
    corpus_cache.clear_prepared_corpora()


def test_an_item_replaced_by_an_equal_one_of_another_type_is_checked_again():
    from opinion_metrics import weighted_keyword_prf

    corpus_cache.clear_prepared_corpora()
    predictions, scores, references = [["a", "b"]], [[1.0, 0.5]], [["a"]]
    for _ in range(3):  # the third call is given the corpus prepared by the second
        weighted_keyword_prf(predictions, scores, references)
    scores[0][0] = True  # == 1.0, but not a score
    with pytest.raises(ValueError, match="bool"):
        weighted_keyword_prf(predictions, scores, references)


def test_an_unhashable_stemmer_is_named_before_the_cache_is_looked_up():
    with pytest.raises(ValueError, match="stemmer"):
        prepare_corpus([["a"]], [["a"]], stemmer=["porter"])


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


class _ClearedByAnotherThread(dict):
    """A shared cache that another thread clears right after every update."""

    def update(self, *args, **kwargs):
        super().update(*args, **kwargs)
        self.clear()

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        self.clear()


def test_normalized_forms_and_stems_cleared_by_another_thread_meanwhile(monkeypatch):
    pytest.importorskip("nltk")
    from nltk.stem.porter import PorterStemmer

    texts = [f"Running Shoe{i}" for i in range(20)] + ["Café Noir", "running shoes"]
    normalizer = make_normalizer("default", "porter")
    expected = [normalizer(text) for text in texts]
    monkeypatch.setattr(normalization, "_STEMS", _ClearedByAnotherThread())
    monkeypatch.setattr(normalizer, "_cache", _ClearedByAnotherThread())
    assert normalizer.many(texts) == expected
    stem = PorterStemmer().stem
    assert expected[-1] == " ".join(stem(token, to_lowercase=False) for token in ["running", "shoes"])


def test_the_c_helper_is_loaded_where_it_is_required():
    """CI builds it (OPINION_METRICS_REQUIRE_C_HELPER=1): every test above then runs both paths."""
    if os.environ.get("OPINION_METRICS_REQUIRE_C_HELPER") != "1":
        pytest.skip("not required here (set OPINION_METRICS_REQUIRE_C_HELPER=1, as CI does)")
    assert helper() is not None and helper().VERSION == _native.VERSION
    assert IMPLEMENTATIONS == ("c", "python")


def _python(code: str, **environment: str) -> subprocess.CompletedProcess:
    """`code` run by a fresh interpreter, with warnings shown, in this environment changed by
    `environment` (an empty value removes the variable)."""
    changed = {**os.environ, **environment}
    changed = {name: value for name, value in changed.items() if value}
    command = [sys.executable, "-W", "default", "-c", code]
    return subprocess.run(command, capture_output=True, text=True, env=changed, timeout=120)


HELPER_AND_F1 = "import opinion_metrics as om; print(om._native.helper(), om.keyword_prf([['a']], [['A']])['f1'])"


def test_the_library_runs_without_the_c_helper_when_told_to():
    result = _python(HELPER_AND_F1, OPINION_METRICS_IMPLEMENTATION="python")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["None", "1.0"]
    assert result.stderr == ""


def test_the_switch_takes_effect_at_once(monkeypatch):
    monkeypatch.setenv(IMPLEMENTATION, "python")
    assert helper() is None
    monkeypatch.setenv(IMPLEMENTATION, "auto")
    assert helper() is _native._LOADED
    monkeypatch.setenv(IMPLEMENTATION, "C++")
    with pytest.raises(ValueError, match=r"OPINION_METRICS_IMPLEMENTATION must be one of auto, c, python, got 'C\+\+'"):
        helper()


def test_a_required_c_helper_that_is_not_built_is_an_error_at_import(tmp_path):
    package = Path(_native.__file__).parents[1]
    shutil.copytree(
        package, tmp_path / "opinion_metrics", ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__")
    )
    result = _python("import opinion_metrics", PYTHONPATH=str(tmp_path), OPINION_METRICS_IMPLEMENTATION="c")
    assert result.returncode != 0
    assert "OPINION_METRICS_IMPLEMENTATION=c, but the C helper is not built here" in result.stderr


def test_a_package_without_the_c_helper_imports_silently(tmp_path):
    """As installed where no compiler was: the package's files without the helper."""
    package = Path(_native.__file__).parents[1]
    shutil.copytree(
        package, tmp_path / "opinion_metrics", ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__")
    )
    result = _python(HELPER_AND_F1, PYTHONPATH=str(tmp_path), OPINION_METRICS_IMPLEMENTATION="")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["None", "1.0"]
    assert result.stderr == ""  # no warning: a missing helper is the pure-Python package, not a fault


def test_a_c_helper_built_from_another_version_is_left_out_with_a_warning(monkeypatch):
    if helper() is None:
        pytest.skip("the C helper is not built here (no compiler)")
    monkeypatch.setattr(_native, "VERSION", _native.VERSION + 1)
    with pytest.warns(UserWarning, match="the C helper is from another version; reinstall"):
        assert _native._load() is None
