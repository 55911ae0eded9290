"""sentiment_tuple_prf (docs/definitions.md section 13) against values worked out by hand and
against the brute force of tests/reference_tuples.py, which enumerates every assignment:
exact and overlap (ties), macro and micro, projections, token positions, implicit spans, label
maps, the field's counting; every fast path forced and compared with the same truth."""

from __future__ import annotations

import math

import pytest
from conftest import IMPLEMENTATIONS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_tuples import sentiment_tuple_prf as brute_force

from opinion_metrics import sentiment_tuple_prf
from opinion_metrics._native import VARIABLE
from opinion_metrics.core import assignment, tuple_matching, tuples

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Few words, so that spans share tokens and tuples repeat: the cases where the rules matter.
ASPECTS = ["pizza", "the pizza", "pizza crust", "staff", "the staff", "Staff!", "NULL", None, "thin crust pizza"]
OPINIONS = ["good", "very good", "good good", "cold", "over-cooked", "over cooked", "null", None]
CATEGORIES = ["food quality", "Food Quality ", "service general"]
SENTIMENTS = ["POS", "positive", "neg", "NEGATIVE", "neutral", "Neu"]
VALUES = {"aspect": ASPECTS, "opinion": OPINIONS, "category": CATEGORIES, "sentiment": SENTIMENTS}
ORDERS = {"aste": ("aspect", "opinion", "sentiment"), "tasd": ("aspect", "category", "sentiment"),
          "asqp": ("aspect", "category", "sentiment", "opinion"), "aope": ("aspect", "opinion")}  # fmt: skip


def close(actual: dict, expected: dict) -> None:
    assert actual.keys() == expected.keys()
    for key, value in expected.items():
        assert math.isclose(actual[key], value, rel_tol=1e-12, abs_tol=1e-12), (key, actual[key], value)


def corpus(elements: str, positions: bool = False, size: int = 4) -> st.SearchStrategy:
    """Examples of up to `size` tuples per side, as lists (or, at random, mappings)."""
    names = ORDERS[elements]

    def value(name):
        if positions and name in ("aspect", "opinion"):
            return st.one_of(st.none(), st.lists(st.integers(0, 4), min_size=1, max_size=3))
        return st.sampled_from([v for v in VALUES[name] if v is not None or name in ("aspect", "opinion")])

    item = st.tuples(*(value(name) for name in names))
    item = item | item.map(lambda values: dict(zip(names, values)))
    example = st.lists(item, max_size=size)
    return st.integers(1, 3).flatmap(lambda n: st.tuples(st.lists(example, min_size=n, max_size=n),
                                                         st.lists(example, min_size=n, max_size=n)))  # fmt: skip


OPTIONS = st.fixed_dictionaries(
    {},
    optional={
        "match": st.sampled_from(["exact", "overlap"]),
        "average": st.sampled_from(["micro", "macro"]),
        "zero_division": st.sampled_from([0.0, 1.0]),
    },
)


def test_the_worked_example_by_hand():
    gold = [[("pizza", "over cooked", "NEG"), ("staff", "friendly", "POS")], [("NULL", "pricey", "NEG")]]
    predicted = [
        [("Pizza", "over-cooked", "negative"), ("pizza", "over cooked", "NEG"), ("the staff", "very friendly", "POS")],
        [(None, "pricey", "negative"), ("wine", "pricey", "NEG")],
    ]
    result = sentiment_tuple_prf(predicted, gold)
    # |P| = 2 + 2 (the second pizza tuple repeats the first once prepared), |G| = 3, 2 matched.
    assert (result["precision"], result["recall"]) == (2 / 4, 2 / 3)
    assert result["f1"] == pytest.approx(2 * (1 / 2) * (2 / 3) / (1 / 2 + 2 / 3))
    assert (result["opinion_precision"], result["opinion_recall"]) == (2 / 3, 2 / 3)  # the two "pricey" are one
    overlap = sentiment_tuple_prf(predicted, gold, match="overlap")
    assert (overlap["precision"], overlap["recall"]) == ((1 + 0.5 + 1) / 4, 1.0)  # the staff: credits 1/2 and 1
    membership = sentiment_tuple_prf(predicted, gold, counting="membership")
    assert (membership["precision"], membership["recall"]) == (1 / 5, 1 / 3)  # strings as written


def test_a_tie_goes_to_the_larger_precision_credit():
    predicted = [[("thin crust", "food quality", "positive")]]
    gold = [[("crust", "food quality", "positive"), ("thin crust pizza slice", "food quality", "positive")]]
    # (1/2, 1) with "crust", (1, 1/2) with the 4-token aspect: the same sum, so the second.
    result = sentiment_tuple_prf(predicted, gold, elements="tasd", match="overlap", projections=[])
    assert result == {"precision": 1.0, "recall": 0.5 / 2, "f1": 2 * 0.25 / 1.25}


def test_repeats_are_dropped_on_both_sides_and_labels_mapped():
    pizza = ("pizza", "hot", "POS")
    result = sentiment_tuple_prf([[pizza, pizza, ("Pizza", "HOT", "positive")]], [[pizza, pizza]], projections=[])
    assert result == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    field = sentiment_tuple_prf([[pizza, pizza, pizza]], [[pizza, ("x", "y", "NEG")]], counting="membership")
    assert (field["precision"], field["recall"]) == (3 / 3, 3 / 2)  # each repeat a hit: recall above 1
    unmapped = sentiment_tuple_prf([[("pizza", "hot", "POS")]], [[("pizza", "hot", "positive")]], label_map={})
    assert unmapped["f1"] == 0.0 and unmapped["aspect_f1"] == 1.0
    mapped = sentiment_tuple_prf(
        [[("pizza", "hot", "good")]], [[("pizza", "hot", "positive")]], label_map="good=positive"
    )
    assert mapped["f1"] == 1.0


def test_implicit_spans_equal_only_each_other():
    gold = [[("NULL", "great", "POS")]]
    for implicit in (None, "null", " Null "):
        assert sentiment_tuple_prf([[(implicit, "great", "POS")]], gold)["f1"] == 1.0
    for match in ("exact", "overlap"):  # an explicit aspect never meets an implicit one, not even "null" as text
        assert sentiment_tuple_prf([[("place", "great", "POS")]], gold, match=match)["f1"] == 0.0
    # Every span implicit: compatible, credit 1 and 1.
    assert sentiment_tuple_prf([[(None, None, "POS")]], [[(None, "NULL", "POS")]], match="overlap")["f1"] == 1.0


def test_token_positions_are_sets():
    gold = [[([1], [3, 4], "POS")]]
    assert sentiment_tuple_prf([[([1], [4, 3, 3], "positive")]], gold)["f1"] == 1.0
    overlap = sentiment_tuple_prf([[([0, 1], [4], "POS")]], gold, match="overlap", projections=[])
    # aspect: 1 of 2 predicted, 1 of 1 gold; opinion: 1 of 1 predicted, 1 of 2 gold.
    assert overlap["precision"] == (1 / 2 + 1) / 2 and overlap["recall"] == (1 + 1 / 2) / 2


def test_projections_are_named_by_their_elements():
    result = sentiment_tuple_prf([[("pizza", "good", "POS")]], [[("pizza", "bad", "POS")]],
                                 projections=[["aspect", "sentiment"], "opinion"])  # fmt: skip
    assert list(result) == ["precision", "recall", "f1", "aspect_sentiment_precision", "aspect_sentiment_recall",
                            "aspect_sentiment_f1", "opinion_precision", "opinion_recall", "opinion_f1"]  # fmt: skip
    assert result["aspect_sentiment_f1"] == 1.0 and result["opinion_f1"] == 0.0 and result["f1"] == 0.0
    assert set(sentiment_tuple_prf([[]], [[("a", "c", "POS")]], elements="tasd")) == {
        "precision", "recall", "f1", "aspect_precision", "aspect_recall", "aspect_f1",
    }  # fmt: skip
    assert list(sentiment_tuple_prf([[]], [[]], projections="none")) == ["precision", "recall", "f1"]


@SETTINGS
@given(st.sampled_from(sorted(ORDERS)).flatmap(lambda e: st.tuples(st.just(e), corpus(e))), OPTIONS)
def test_text_tuples_as_the_brute_force(case, options):
    elements, (predicted, gold) = case
    expected = brute_force(predicted, gold, elements=elements, **options)
    for implementation in IMPLEMENTATIONS:  # the strings numbered and the exact counts in C, and their twins
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(VARIABLE, implementation)
            close(sentiment_tuple_prf(predicted, gold, elements=elements, **options), expected)


@SETTINGS
@given(corpus("aste", positions=True), OPTIONS)
def test_position_tuples_as_the_brute_force(data, options):
    predicted, gold = data
    close(sentiment_tuple_prf(predicted, gold, **options), brute_force(predicted, gold, **options))


PROJECTIONS = [None, [], [["category"], ["aspect", "sentiment"]], [["opinion", "aspect"]]]
LABEL_MAPS = [None, {}, {"food quality": "food", "NEGATIVE": "neg"}]


@SETTINGS
@given(corpus("asqp"), st.sampled_from(PROJECTIONS), st.sampled_from(LABEL_MAPS), st.sampled_from(["default", "none"]))
def test_projections_label_maps_and_normalization_as_the_brute_force(data, projections, label_map, normalize):
    predicted, gold = data
    options = {"elements": "asqp", "match": "overlap", "projections": projections, "label_map": label_map}
    options["normalize"] = normalize
    close(sentiment_tuple_prf(predicted, gold, **options), brute_force(predicted, gold, **options))


@SETTINGS
@given(corpus("tasd", size=6))
def test_the_fields_counting_in_c_and_in_python_as_the_brute_force(data):
    predicted, gold = data
    expected = brute_force(predicted, gold, elements="tasd", counting="membership")
    for implementation in IMPLEMENTATIONS:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(VARIABLE, implementation)
            close(sentiment_tuple_prf(predicted, gold, elements="tasd", counting="membership"), expected)


def test_the_c_counting_strips_as_python_does():
    spaces = [" ", "\t", "\x1c", "\x85", "\xa0", "\u1680", "\u2003", "\u2028", "\u202f", "\u205f", "\u3000", "\u200b"]
    words = ["pizza", "café", "ピザ"]
    predicted = [[(f"{a}{w}{b}", "x", "POS")] for w in words for a in spaces for b in spaces]
    gold = [[(w, "x", "POS")] for w in words for _ in spaces for _ in spaces]
    expected = [(a + w + b).strip() == w for w in words for a in spaces for b in spaces]
    for implementation in IMPLEMENTATIONS:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(VARIABLE, implementation)
            if implementation == "c":  # the C helper counts them all: its twin is never asked
                patch.setattr(tuple_matching, "_membership_in_python", None)
            found = sentiment_tuple_prf(predicted, gold, counting="membership", return_per_example=True)
        assert found["per_example"]["precision"] == [float(hit) for hit in expected]


@SETTINGS
@given(corpus("aste", size=7), st.sampled_from([{"PAIR_LIMIT": 1}, {"SMALL": 0}, {"SMALL": 0, "EXACT_FLOAT": 1}]),
       st.sampled_from(["exact", "overlap"]), st.sampled_from(IMPLEMENTATIONS))  # fmt: skip
def test_every_path_of_the_assignment_as_the_brute_force(data, limits, match, implementation):
    """Large examples hashed one by one (PAIR_LIMIT), long lists by scipy (SMALL) or, where its
    floats would not be exact (EXACT_FLOAT), by the Hungarian algorithm on integers."""
    predicted, gold = data
    expected = brute_force(predicted, gold, match=match)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(VARIABLE, implementation)
        for name, value in limits.items():
            patch.setattr(tuple_matching if name == "PAIR_LIMIT" else assignment, name, value)
        close(sentiment_tuple_prf(predicted, gold, match=match), expected)


class Text(str):
    pass


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.lists(st.sampled_from(["a", "b", "é", "", Text("a"), None, 1]), min_size=2, max_size=3)
                         | st.tuples(st.text(max_size=3), st.text(max_size=3)), max_size=3)
                | st.just("text") | st.just(None), max_size=5))  # fmt: skip
def test_tuple_strings_numbered_in_c_and_in_python_as_defined(rows):
    others = [[("a", "é"), ("b", "x")][: k % 3] for k in range(len(rows))]  # with others: each example's first
    expected = {None: None, "others": None}
    flat = [item for row in rows if type(row) in (list, tuple) for item in row]
    if all(type(row) in (list, tuple) for row in rows) and all(
        type(item) in (list, tuple) and len(item) == 2 and all(type(v) is str for v in item) for item in flat
    ):
        table: dict[str, int] = {}
        codes = [table.setdefault(value, len(table)) for item in flat for value in item]
        expected[None] = ([len(row) for row in rows], codes, list(table))
        table = {}
        order = [value for row, other in zip(rows, others) for item in [*other, *row] for value in item]
        [table.setdefault(value, len(table)) for value in order]
        both = [[table[value] for row in side for item in row for value in item] for side in (rows, others)]
        expected["others"] = ([len(row) for row in rows], both[0], [len(o) for o in others], both[1], list(table))
    for implementation in IMPLEMENTATIONS:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(VARIABLE, implementation)
            found = {None: tuples.tuple_codes(rows, 2), "others": tuples.tuple_codes(rows, 2, others)}
        for key, value in found.items():
            listed = None if value is None else tuple(v if isinstance(v, list) else v.ravel().tolist() for v in value)
            assert listed == expected[key], key


def test_many_distinct_tuple_strings_numbered_in_c_as_in_python():
    import random

    rng = random.Random(0)  # 20,000 distinct strings: the C table grows several times
    words = [f"w{rng.randrange(20_000)}{'é' * (i % 3)}" for i in range(60_000)]
    rows = [[(words[k], words[k + 1]) for k in range(i, i + rng.randrange(4))] for i in range(0, 59_990, 4)]
    found = []
    for implementation in IMPLEMENTATIONS:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(VARIABLE, implementation)
            found.append(tuples.tuple_codes(rows, 2))
            assert tuples.tuple_codes([*rows, [("\ud800", "x")]], 2) is None  # a lone surrogate: no UTF-8
    for sizes, codes, distinct in found:
        assert sizes.tolist() == [len(row) for row in rows]
        assert [distinct[code] for code in codes.ravel().tolist()] == [w for row in rows for item in row for w in item]
        assert distinct == list(dict.fromkeys(w for row in rows for item in row for w in item))


def test_the_hungarian_algorithm_finds_maximum_assignments():
    import itertools
    import random

    rng = random.Random(3)
    for _ in range(200):
        n = rng.randint(1, 6)
        weights = [[rng.choice([0, 0, rng.randint(1, 9)]) for _ in range(n)] for _ in range(n)]
        best = max(sum(weights[i][p[i]] for i in range(n)) for p in itertools.permutations(range(n)))
        columns = assignment._hungarian(weights)
        assert sorted(columns) == list(range(n)) and sum(weights[i][c] for i, c in enumerate(columns)) == best


def test_macro_averages_each_examples_values():
    predicted = [[("pizza", "good", "POS")], [("staff", "rude", "NEG"), ("wine", "ok", "NEU")], []]
    gold = [[("pizza", "good", "POS")], [("staff", "rude", "NEG")], [("view", "nice", "POS")]]
    result = sentiment_tuple_prf(predicted, gold, average="macro", projections=[], return_per_example=True)
    assert result["per_example"]["precision"] == [1.0, 0.5, 0.0] and result["per_example"]["recall"] == [1.0, 1.0, 0.0]
    assert result["precision"] == 0.5 and result["recall"] == 2 / 3
    assert result["f1"] == pytest.approx((1 + 2 * 0.5 / 1.5 + 0) / 3)
    empty = sentiment_tuple_prf([[]], [[]], zero_division=1.0)  # 0/0 everywhere
    assert len(empty) == 12 and set(empty.values()) == {1.0}


def test_intervals_and_per_example_values():
    predicted = [[("pizza", "good", "POS")], [("staff", "rude", "POS")], [("wine", "ok", "NEU")]] * 4
    gold = [[("pizza", "good", "POS")], [("staff", "rude", "NEG")], [("wine", "ok", "neutral")]] * 4
    result = sentiment_tuple_prf(predicted, gold, confidence_level=0.9, projections=[], n_resamples=200)
    assert result["f1"] == pytest.approx(2 / 3) and result["f1_ci_low"] <= 2 / 3 <= result["f1_ci_high"]
    assert set(result) == {f"{k}{s}" for k in ("precision", "recall", "f1") for s in ("", "_ci_low", "_ci_high")}
    poisson = sentiment_tuple_prf(predicted, gold, confidence_level=0.9, bootstrap="poisson", projections=[])
    assert poisson["f1"] == pytest.approx(2 / 3) and poisson["f1_ci_low"] < poisson["f1_ci_high"]
