"""Differential test of white space inside and as keywords (issue 10 item 1): "a b" and
"a  b", two spaces anywhere in a keyword of letters, a keyword of white space alone, whichever
strategy runs, against the brute force of `reference_impl`."""

from __future__ import annotations

import itertools
import math

import pytest
import reference_impl as ref
from differential_cases import MATCHES, STRATEGIES, check, differences, strategy

from opinion_metrics import keyword_prf, weighted_keyword_prf


def test_inner_white_space_with_lookup_issue_10(monkeypatch):
    """Issue 10 item 1: "a b" and "a  b" are distinct keywords under "ascii" / "none", and
    both token-match "a b c" (SPEC section 2), whichever strategy runs."""
    fillers = [[f"filler{i}"] for i in range(3000)]
    for normalize in ("ascii", "none"):
        for name in STRATEGIES:
            with strategy(name, monkeypatch):
                result = keyword_prf(
                    [["a b"], ["a  b"], *fillers],
                    [["a b c"]] * 3002,
                    match="token",
                    normalize=normalize,
                    return_per_example=True,
                )
            assert result["per_example"]["precision"][:3] == [1.0, 1.0, 0.0], (normalize, name)
            assert result["precision"] == 2 / 3002, (normalize, name)


def test_inner_white_space_weighted_issue_10(monkeypatch):
    """Issue 10 item 1, weighted: "a  b" (0.9) claims "x a b y" first: precision 0.9 / (0.9 + 0.1),
    nDCG@5 = 1 (one gold keyword, found at rank 1)."""
    predictions = [["a  b", "a b"], *[[f"filler{i}"] for i in range(100)]]
    scores = [[0.9, 0.1], *[[0.5]] * 100]
    for normalize in ("ascii", "none"):
        for name in STRATEGIES:
            with strategy(name, monkeypatch):
                references = [["x a b y"]] * 101
                result = weighted_keyword_prf(
                    predictions, scores, references, match="token", normalize=normalize, return_per_example=True
                )
            per_example = result["per_example"]
            assert math.isclose(per_example["weighted_precision"][0], 0.9), (normalize, name)
            assert per_example["ndcg@5"][0] == 1.0, (normalize, name)
            assert per_example["map@5"][0] == 1.0, (normalize, name)


def test_two_spaces_anywhere_in_a_keyword_of_letters_equal_spec(monkeypatch):
    """Keywords of ASCII letters and spaces are read 8 bytes at a time by the per-document path
    in C: two spaces in a row are found wherever they fall, across a word boundary too."""
    keywords = [("abcdefghijklmnopqrst"[:start] + "  " + "uvwxyz")[: start + 8] for start in range(1, 18)]
    keywords += [keyword.upper() for keyword in keywords]
    predictions = [[keyword] for keyword in keywords]
    references = [[" ".join(keyword.split()), f"x {keyword.lower()} y"] for keyword in keywords]
    problems = []
    for normalize, match in itertools.product(("default", "ascii", "none"), MATCHES):
        expected = ref.keyword_prf(predictions, references, match=match, normalize=normalize)
        for name in ("auto", "documents", "documents_in_python", "pairs"):
            used: dict[str, int] = {}
            with strategy(name, monkeypatch, used):
                actual = keyword_prf(predictions, references, match=match, normalize=normalize, return_per_example=True)
            where = f"keyword_prf(match={match!r}, normalize={normalize!r}; strategy {name})"
            problems += differences(actual, expected, (predictions, references), where)
            if name == "documents":
                assert used.get("documents"), (normalize, match, used)
    check(problems)


def test_a_keyword_of_white_space_alone_token_matches_every_gold_keyword(monkeypatch):
    """Under a normalization that keeps white space, "  " has no tokens: an empty sequence of
    tokens occurs in every gold keyword (SPEC's containment), whichever strategy runs."""
    predictions, references = [["  ", "good film"], ["\t"]], [["good film here", "x"], ["y"]]
    expected = ref.keyword_prf(predictions, references, match="token", normalize=lambda s: s)
    problems = []
    for name in STRATEGIES:
        with strategy(name, monkeypatch):
            actual = keyword_prf(predictions, references, match="token", normalize=lambda s: s, return_per_example=True)
        problems += differences(actual, expected, (predictions, references), f"strategy {name}")
    check(problems)


@pytest.mark.parametrize("presence", ["present", "absent"])
def test_a_keyword_of_white_space_alone_is_present_in_every_text(presence):
    """Its empty sequence of tokens occurs in every text: present, in short lists and in a long
    gold list shared by many examples (looked up by first token)."""
    identity = lambda s: s  # noqa: E731 (keeps white space)
    long_gold = ["  ", *(f"w{i}" for i in range(3000))]
    for predictions, references, texts in (
        ([["  ", "good film"]], [["  ", "great"]], ["a good film"]),
        ([["  ", "w1"]] * 50, [long_gold] * 50, ["w1 x"] * 50),
    ):
        common = {"texts": texts, "presence": presence, "normalize": identity, "match": "token"}
        expected = ref.keyword_prf(predictions, references, **common)
        actual = keyword_prf(predictions, references, return_per_example=True, **common)
        check(differences(actual, expected, (predictions, references), f"presence={presence}"))
