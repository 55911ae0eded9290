"""The shared checks that every surface calls (one message per mistake)."""

import pytest

from opinion_metrics.core.validation import check_top_k, parse_top_k, rating_problem


@pytest.mark.parametrize(
    ("text", "expected"), [("", None), ("M", None), ("m", None), ("O", "O"), ("o", "O"), (" 5 ", 5)]
)
def test_parse_top_k_reads_what_a_text_box_or_flag_holds(text, expected):
    assert parse_top_k(text) == expected
    assert check_top_k(expected) == expected


@pytest.mark.parametrize("text", ["0", "2.5", "-1", "five", "1e3", "²", "1²", "5\u2075"])
def test_parse_top_k_refuses_what_check_top_k_refuses(text):
    with pytest.raises(ValueError, match="top_k must be"):
        parse_top_k(text)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (4, None),
        (4.0, None),
        (0, None),
        (True, "rating must be an integer, got bool True"),
        (4.5, "rating must be an integer, got float 4.5"),
        (float("nan"), "rating must be an integer, got float nan"),
        ("3", "rating must be an integer, got str '3'"),
        (7, "rating 7 is outside {0} ∪ [1, 5] (0 means the aspect is absent)"),
        (10**20, "rating 100000000000000000000 is outside {0} ∪ [1, 5] (0 means the aspect is absent)"),
    ],
)
def test_rating_problem(value, problem):
    assert rating_problem(value, 1, 5) == problem
