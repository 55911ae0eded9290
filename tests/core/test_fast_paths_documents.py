"""The per-document path (`document_edges`): each document normalized and related on its own,
in C (ASCII text normalized there) and in Python, against the definitions; what C cannot
read left to the corpus path."""

from __future__ import annotations

import pytest
import reference_impl as ref
from differential_cases import ALWAYS, NEVER
from fast_path_cases import ASCII
from hypothesis import given, settings
from hypothesis import strategies as st

from opinion_metrics._native import helper
from opinion_metrics.core import documents, example_edges
from opinion_metrics.core.normalization import make_normalizer

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
    normalized there) and in Python, its pairs tested or its strings searched: the kept
    keywords' counts and the definitions' pairs."""
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
    for costs in (NEVER, ALWAYS):  # each pair tested, or each document searched
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(example_edges, "SEARCH_COSTS", {"documents": costs, "examples": costs})
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
