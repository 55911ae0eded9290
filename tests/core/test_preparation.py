"""SPEC section 1: normalization, empty and duplicate keywords, types and scores."""

import math
import re

import pytest

from opinion_metrics import keyword_prf, make_normalizer, normalize_keyword, weighted_keyword_prf
from opinion_metrics.core.preparation import prepare_corpus


def seed_normalize_kw(kw):  # verbatim from seeds 000 / 001
    kw = kw.lower()
    kw = re.sub(r"[^a-zA-Z0-9\s]", "", kw)
    return kw.strip()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  Social   Satire! ", "social satire"),
        ("Café", "café"),  # non-ASCII letters kept
        ("PHỞ bò", "phở bò"),
        ("Cafe\u0301", "café"),  # decomposed accent: NFKC composes it
        ("ﬁlm", "film"),  # compatibility ligature
        ("STRASSE", "strasse"),
        ("Straße", "strasse"),  # casefold, not lower
        ("sci-fi", "sci fi"),  # dashes, connectors and "/" separate words
        ("coming-of-age_story", "coming of age story"),
        ("and/or", "and or"),
        ("em—dash–en‒figure", "em dash en figure"),  # Pd characters (U+2014, U+2013, U+2012)
        ("low\u2040tie\u203fundertie", "low tie undertie"),  # Pc characters besides "_"
        ("don't u.s.", "dont us"),  # other punctuation removed, not replaced
        ("5 ★★★★★ movie", "5 movie"),  # symbols removed, white space collapsed
        ("tab\tand\nnewline", "tab and newline"),
        ("!!!", ""),
    ],
)
def test_default_normalization(raw, expected):
    assert normalize_keyword(raw) == expected


@pytest.mark.parametrize("raw", ["Social  Satire!", "Café", "sci-fi", "  a\tb  ", "ÀÉÎ", "!!!", "x_y"])
def test_ascii_normalization_is_the_seeds_normalize_kw(raw):
    assert normalize_keyword(raw, "ascii") == seed_normalize_kw(raw)


def test_none_normalization_only_strips():
    assert normalize_keyword("  Sci-Fi  ", "none") == "Sci-Fi"


def test_callable_normalization():
    assert normalize_keyword("Star Wars", str.upper) == "STAR WARS"
    normalizer = make_normalizer(lambda text: text[::-1])
    assert normalizer("abc") == "cba"


def test_porter_stemmer_stems_each_token_after_normalization():
    assert normalize_keyword("Running Battles!", stemmer="porter") == "run battl"


def test_bad_options():
    with pytest.raises(ValueError, match="normalize must be one of"):
        make_normalizer("lower")
    with pytest.raises(ValueError, match="stemmer must be None or one of"):
        make_normalizer("default", "snowball")


def test_callable_must_return_a_string():
    with pytest.raises(ValueError, match="normalize returned int"):
        keyword_prf([["a"]], [["a"]], normalize=len)


@pytest.mark.parametrize("match", ["exact", "substring"])
def test_a_callable_may_return_a_str_subclass(match):
    import numpy as np

    lower = lambda s: np.str_(s.lower())  # noqa: E731
    expected = {"precision": 0.5, "recall": 1.0, "f1": 2 / 3}  # "a" matches "A"; "b" nothing
    assert keyword_prf([["a", "b"]], [["A"]], normalize=lower, match=match) == pytest.approx(expected)
    rows = [np.array(["a", "b"])]  # read row by row
    assert keyword_prf(rows, [["A"]], normalize=lower, match=match) == pytest.approx(expected)


def test_empty_keywords_are_dropped_from_both_sides():
    # The seeds count "" as a substring of everything: "!!!" would match every gold keyword.
    result = keyword_prf([["!!!", "war"]], [["war", "  ", "peace"]], return_per_example=True)
    assert result["precision"] == 1.0  # one prediction left, matched
    assert result["recall"] == 0.5  # two gold keywords left


def test_duplicates_keep_the_first_occurrence_rank_and_score():
    corpus = prepare_corpus([["War", "peace", "war!", "WAR"]], [["b"]], scores=[[0.2, 0.5, 0.9, 0.1]])
    assert [corpus.strings[i] for i in corpus.predictions.ids[0]] == ["war", "peace"]
    assert corpus.predictions.scores[0] == (0.2, 0.5)
    result = weighted_keyword_prf([["War", "peace", "war!"]], [[0.2, 0.5, 0.9]], [["war"]])
    assert result["weighted_precision"] == pytest.approx(0.2 / 0.7)


def test_the_same_list_given_for_many_examples_is_prepared_once_but_correctly():
    gold = ["a", "b"]
    corpus = prepare_corpus([["a"], ["b"], ["c"]], [gold, gold, list(gold)])
    assert corpus.references.ids[0] is corpus.references.ids[1] is corpus.references.ids[2]


@pytest.mark.parametrize(
    ("predictions", "references", "message"),
    [
        ([["a", 3]], [["a"]], r"predictions: example 0, keyword 1 must be a str, got int 3"),
        ([["a"], [None]], [["a"], ["b"]], r"predictions: example 1, keyword 0 must be a str, got NoneType None"),
        ([["a"], ["b"]], [["a"], ["b", 2.5]], r"references: example 1, keyword 1 must be a str, got float 2.5"),
        ([["a"], "abc"], [["a"], ["b"]], r"predictions: example 1 must be a list of keywords \(str\), got str 'abc'"),
        ([["a"], None], [["a"], ["b"]], r"predictions: example 1 must be a list of keywords \(str\), got NoneType"),
        ([["a"], [["b"]]], [["a"], ["b"]], r"predictions: example 1, keyword 0 must be a str, got list \['b'\]"),
        ([["a"]], [["a"], ["b"]], r"one entry per example, but predictions has 1, references has 2"),
        ([], [], r"empty corpus"),
        ("abc", [["a"]], r"predictions must be a list with one entry per example, got str"),
    ],
)
def test_bad_keywords_name_the_example_and_value(predictions, references, message):
    with pytest.raises(ValueError, match=message):
        keyword_prf(predictions, references)


@pytest.mark.parametrize(
    ("scores", "message"),
    [
        ([[0.5, math.nan]], r"example 0, keyword 1 \('b'\): score must be finite, got nan"),
        ([[0.5, math.inf]], r"score must be finite, got inf"),
        ([[0.5, 1.5]], r"score 1.5 is outside \[0, 1\]; pass clip_scores=True"),
        ([[-0.34, 0.5]], r"keyword 0 \('a'\): score -0.34 is outside \[0, 1\]; pass clip_scores=True"),
        ([[0.5, "0.5"]], r"score must be a number in \[0, 1\], got str '0.5'"),
        ([[0.5, True]], r"score must be a number in \[0, 1\], got bool True"),
        ([[0.5]], r"predictions: example 0 has 2 keywords but 1 scores"),
        ([0.5], r"scores: expected a list of score lists per example.*got a flat list of scores starting with 0.5"),
    ],
)
def test_bad_scores(scores, message):
    with pytest.raises(ValueError, match=message):
        weighted_keyword_prf([["a", "b"]], scores, [["a"]])


def test_clip_scores_clips_finite_scores_but_never_nan():
    clipped = weighted_keyword_prf([["a", "b"]], [[-0.34, 1.5]], [["b"]], clip_scores=True)
    assert clipped["weighted_precision"] == 1.0  # 0 + 1 of a total of 1
    with pytest.raises(ValueError, match="finite"):
        weighted_keyword_prf([["a", "b"]], [[math.nan, 0.5]], [["b"]], clip_scores=True)


def test_numpy_inputs_are_accepted():
    np = pytest.importorskip("numpy")
    result = weighted_keyword_prf([np.array(["a", "b"])], [np.array([0.25, 0.75])], [["b"]])
    assert result["weighted_precision"] == 0.75


def test_repeated_rows_groups_the_same_object_and_equal_copies():
    from opinion_metrics.io.rows import repeated_rows

    gold = ["war", "jedi"]
    rows = [gold, ["x"], gold, list(gold), ("war", "jedi"), [["unhashable"]], [["unhashable"]]]
    first, group = repeated_rows(rows)
    # The tuple equals the lists' content; unhashable rows are only grouped by identity.
    assert (first, group) == ([0, 1, 5, 6], [0, 1, 0, 0, 0, 2, 3])
    assert repeated_rows(rows, key=lambda row: None) == ([0, 1, 3, 4, 5, 6], [0, 1, 0, 2, 3, 4, 5])
    assert repeated_rows([1, 2, 1], key=lambda value: value, by_identity=False) == ([0, 1], [0, 1, 0])


def test_a_repeated_bad_gold_list_is_named_at_its_first_example():
    bad = ["war", 3]
    with pytest.raises(ValueError, match=r"references: example 1, keyword 1 must be a str, got int 3"):
        keyword_prf([["a"], ["b"], ["c"]], [["a"], bad, bad])
