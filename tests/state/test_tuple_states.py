"""MetricState of sentiment_tuple_prf (docs/definitions.md sections 12 and 13): states fed in
random batches and merged in random orders equal the family function (values, Poisson and
multinomial intervals), survive their bytes, refuse statistics no examples could give (the
family's own layout: a recall above 1 only under the field's counting, partial credit only
under overlap, unreadable segments among the predictions), and compare as the inputs do."""

from __future__ import annotations

import json
import struct
import zlib

import numpy as np
import pytest
from state_cases import INTERVALS, assert_same, forge, merged_state, part, random_cuts

from opinion_metrics import MetricState, compare_systems, sentiment_tuple_prf

ASPECTS = ["pizza", "the pizza", "staff", "the staff", "NULL", "wine list"]
OPINIONS = ["good", "very good", "cold", "over cooked", "NULL"]
CATEGORIES = ["food quality", "service general"]
SENTIMENTS = ["POS", "NEG", "neutral", "positive"]
WORDS = {"POS": "great", "positive": "great", "NEG": "bad", "neutral": "ok"}


def tuples(rng, low, high):
    count = int(rng.integers(low, high + 1))
    return [[str(rng.choice(values)) for values in (ASPECTS, CATEGORIES, SENTIMENTS, OPINIONS)] for _ in range(count)]


def paraphrase(items):
    return " [SSEP] ".join(f"{c} is {WORDS[s]} because {'it' if a == 'NULL' else a} is {o}" for a, c, s, o in items)


def corpus(n, seed, generated=False):
    """n examples of quads (aspect, category, sentiment, opinion); some repeats, some empty."""
    rng = np.random.default_rng(seed)
    gold = [tuples(rng, 0, 3) for _ in range(n)]
    predicted = [g[: int(rng.integers(0, len(g) + 1))] + tuples(rng, 0, 2) for g in gold]
    predicted = [p + p[:1] if rng.random() < 0.2 else p for p in predicted]
    if generated:
        predicted = [paraphrase(p) + (" [SSEP] garbled" if rng.random() < 0.2 else "") for p in predicted]
    return {"predictions": predicted, "references": gold}


OPTIONS = [
    {"elements": "asqp"},
    {"elements": "asqp", "match": "overlap", "average": "macro"},
    {"elements": "asqp", "counting": "membership", "projections": [["aspect", "sentiment"]]},
    {"elements": "asqp", "label_map": {"POS": "positive", "neg": "negative"}, "projections": "aspect_category"},
    {"elements": ["aspect", "category", "sentiment", "opinion"], "match": "overlap", "projections": []},
    {"elements": "asqp", "format": "paraphrase", "match": "overlap"},
]
IDS = [str(number) for number in range(len(OPTIONS))]


@pytest.mark.parametrize("options", OPTIONS, ids=IDS)
@pytest.mark.parametrize("mode", ["values", "poisson", "multinomial"])
def test_states_in_random_batches_and_merge_orders_equal_the_family_function(options, mode):
    rng = np.random.default_rng(zlib.crc32(f"{mode} {options}".encode()))
    columns = corpus(50, seed=int(rng.integers(2**31)), generated="format" in options)
    options = {"values": dict(options), "poisson": {**options, **INTERVALS, "bootstrap": "poisson"},
               "multinomial": {**options, **INTERVALS}}[mode]  # fmt: skip
    expected = sentiment_tuple_prf(**columns, **options)
    for parts in (1, 4, 13):
        state = merged_state("sentiment_tuple_prf", columns, options, rng, parts, keep_order=mode == "multinomial")
        assert_same(state.compute(), expected)
        loaded = MetricState.from_bytes(state.to_bytes())
        assert loaded == state and loaded.compute() == state.compute()


def test_poisson_intervals_do_not_depend_on_the_partitions():
    columns = corpus(80, seed=3)
    options = {"elements": "asqp", "match": "overlap", **INTERVALS, "bootstrap": "poisson"}
    rng = np.random.default_rng(1)
    ids = [f"review {i}" for i in range(80)]
    results = []
    for parts in (1, 3, 16):
        batches = random_cuts(80, parts, rng)
        states = [MetricState("sentiment_tuple_prf", **options) for _ in batches]
        states = [
            state.update(**part(columns, rows), keys=[ids[i] for i in rows]) for state, rows in zip(states, batches)
        ]
        results.append(sum(states).compute())
    assert results[0] == results[1] == results[2]
    assert results[0]["f1_ci_low"] < results[0]["f1"] < results[0]["f1_ci_high"]


def test_paired_comparison_from_states_is_the_comparison_of_the_inputs():
    gold = corpus(60, seed=5)["references"]
    systems = [corpus(60, seed=seed)["predictions"] for seed in (6, 7)]
    options = {"elements": "asqp", "confidence_level": 0.9, "n_resamples": 300, "random_state": 2}
    states = [MetricState("sentiment_tuple_prf", **options, bootstrap="poisson").update(predictions=p, references=gold)
              for p in systems]  # fmt: skip
    from_states = compare_systems(*states)
    from_inputs = compare_systems("sentiment_tuple_prf", *systems, gold, bootstrap="poisson", **options)
    assert from_states == from_inputs
    direct = [sentiment_tuple_prf(p, gold, elements="asqp")["f1"] for p in systems]
    assert from_inputs["f1"]["difference"] == pytest.approx(direct[1] - direct[0])


def test_options_that_differ_refuse_to_merge():
    columns = corpus(6, seed=0)
    first = MetricState("sentiment_tuple_prf", elements="asqp").update(**columns)
    for other in ({"elements": "asqp", "match": "overlap"}, {"elements": "asqp", "projections": []},
                  {"elements": "asqp", "label_map": {"POS": "positive"}}):  # fmt: skip
        second = MetricState("sentiment_tuple_prf", **other).update(**columns, start=6)
        with pytest.raises(ValueError, match="cannot merge sentiment_tuple_prf states with different options"):
            first + second


def forged(options: dict, change) -> bytes:
    """A valid state of `options` whose sums `change` edits, with a valid checksum."""
    state = MetricState("sentiment_tuple_prf", **options).update(**corpus(8, seed=1, generated="format" in options))
    data = state.to_bytes()
    header = json.loads(data[14 : 14 + struct.unpack_from("<HI", data, 8)[1]])
    sums = state.sums.copy()
    change(sums)
    return forge(header, state.sketch.astype("<u8").tobytes() + sums.astype("<f8").tobytes())


@pytest.mark.parametrize(
    ("options", "change", "refused"),
    [
        ({"elements": "asqp"}, lambda s: s.__setitem__(6, s[7] + 1), True),  # more gold matched than gold
        ({"elements": "asqp", "counting": "membership"}, lambda s: s.__setitem__(6, s[7] + 1), False),  # the field's
        ({"elements": "asqp"}, lambda s: s.__setitem__(4, s[4] - 0.5), True),  # a half match, counted exactly
        ({"elements": "asqp", "match": "overlap"}, lambda s: s.__setitem__(4, s[4] - 0.5), False),  # partial credit
        ({"elements": "asqp", "format": "paraphrase"}, lambda s: s.__setitem__(-1, s[5] + 1), True),  # unparsed
        ({"elements": "asqp", "projections": []}, lambda s: s.__setitem__(1, s[0] + 1), True),  # P above 1
    ],
)
def test_statistics_no_examples_could_give_are_refused(options, change, refused):
    data = forged(options, change)
    if refused:
        with pytest.raises(ValueError, match="not a valid MetricState: array sums cannot hold sentiment_tuple_prf"):
            MetricState.from_bytes(data)
    else:
        MetricState.from_bytes(data).compute()


def test_the_layout_is_the_statistics_width_for_every_option_set():
    from opinion_metrics.state.layout import _layout

    for options in OPTIONS:
        state = MetricState("sentiment_tuple_prf", **options).update(**corpus(5, seed=2, generated="format" in options))
        assert _layout("sentiment_tuple_prf", state.canonical_options).width == state.sums.shape[0], options
