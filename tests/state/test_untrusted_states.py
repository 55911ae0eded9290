"""MetricState bytes as untrusted input, and no example counted twice.

`from_bytes` against forgeries with a valid checksum (each case of issue 29, then a fuzz
that edits headers and payloads and recomputes the checksum: a few seconds); every valid
state of every family and option set still loads. The distinct-key sketch: `s + s`, copies
and states sharing keys are refused, exactly below 512 keys and by the estimate above;
random partitions, batches and merge trees of valid data never are, and the estimate's
false-alarm bound is the one documented.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import pickle
import struct

import numpy as np
import pytest
from state_cases import ASPECTS, FAMILY_OPTIONS, INTERVALS, CharacterEncoder, corpus, fit_corpus, forge, merged_state

from opinion_metrics import MetricState, keyword_prf
from opinion_metrics.families.registry import output_for
from opinion_metrics.state.layout import _layout
from opinion_metrics.stats import poisson


def header_of(data: bytes) -> dict:
    return json.loads(data[14 : 14 + struct.unpack_from("<HI", data, 8)[1]])


def payload_of(data: bytes) -> bytes:
    return data[14 + struct.unpack_from("<HI", data, 8)[1] : -32]


def objects_of(options: dict) -> dict:
    """The object options a state needs given back to load (functions, unnamed models)."""
    return {name: value for name, value in options.items() if callable(value) or hasattr(value, "encode")}


def state_of(family: str, options: dict, n: int = 12, seed: int = 0, **update) -> MetricState:
    columns = fit_corpus(family, options, corpus(family, n, seed=seed))
    return MetricState(family, **options).update(**columns, **update)


# --- Every valid state loads ------------------------------------------------------------------


@pytest.mark.parametrize(("family", "options"), FAMILY_OPTIONS)
@pytest.mark.parametrize("mode", ["values", "poisson", "multinomial"])
def test_every_valid_state_loads_and_computes_as_it_was(family, options, mode):
    options = {
        "values": dict(options),
        "poisson": {**options, **INTERVALS, "bootstrap": "poisson"},
        "multinomial": {**options, **INTERVALS},
    }[mode]
    state = state_of(family, options, n=40, seed=len(options))
    assert _layout(family, state.canonical_options).width == state.sums.shape[0]
    loaded = MetricState.from_bytes(state.to_bytes(), **objects_of(options))
    assert loaded == state and loaded.compute() == state.compute()


def test_statistics_of_the_real_movie_reviews_load(movie_reviews):
    """The layout's bounds hold on real data: the base model's keywords against IMDB gold keywords."""
    sample = movie_reviews[::8]
    predictions = [review["keywords_base"] for review in sample]
    references = [review["gold"] for review in sample]
    scores = [review["scores_base"] for review in sample]
    texts = [review["review"] for review in sample]
    for family, columns, options in [
        ("keyword_prf", {"references": references}, {"match": "token", "one_to_one": False}),
        ("keyword_prf", {"references": references, "texts": texts}, {"presence": "present", "top_k": "O"}),
        ("weighted_keyword_prf", {"scores": scores, "references": references}, {"one_to_one": False, "top_k": 3}),
        ("keyword_diversity", {}, {}),
    ]:
        state = MetricState(family, **options, **INTERVALS, bootstrap="poisson")
        state.update(predictions=predictions, **columns)
        assert MetricState.from_bytes(state.to_bytes()) == state


# --- The forgeries of issue 29 ------------------------------------------------------------------


def forged(state: MetricState, **changes) -> bytes:
    """`state`'s bytes with header fields changed and each array replaced (by name) as given,
    the shapes declared to fit; a valid checksum."""
    header = header_of(state.to_bytes())
    arrays = {"sketch": state.sketch.astype("<u8"), **{name: array for name, array in state.named_arrays()}}
    arrays.update(changes.pop("arrays", {}))
    header.update(changes)
    header["arrays"] = [{"name": name, "shape": list(np.shape(array))} for name, array in arrays.items()]
    payload = b"".join(
        np.asarray(array, "<u8" if name == "sketch" else "<f8").tobytes() for name, array in arrays.items()
    )
    return forge(header, payload)


def refused(data: bytes, match: str = "") -> str:
    with pytest.raises(ValueError, match="not a valid MetricState: .*" + match) as error:
        MetricState.from_bytes(data)
    return str(error.value)


def test_statistics_of_another_width_are_refused_before_compute():
    plain = state_of("keyword_prf", {})
    poisson_state = state_of("keyword_prf", {**INTERVALS, "bootstrap": "poisson"})
    for width in (0, 3, 20):  # IndexError at compute / 8 of 20 columns read silently, before
        refused(forged(plain, arrays={"sums": np.ones(width)}), rf"array sums has shape \[{width}\]")
    wider = {name: np.ones((*array.shape[:-1], 12)) for name, array in poisson_state.named_arrays()}
    refused(forged(poisson_state, arrays=wider), r"keyword_prf with these options has \[8\]")
    three = state_of("aspect_sentiment_score", {"aspects": ASPECTS}, n=5)
    header = header_of(three.to_bytes())
    lying = forged(three, options={**header["options"], "aspects": ["food"]})  # three aspects' columns as "food"
    refused(lying, r"array sums has shape \[12\]; aspect_sentiment_score with these options has \[4\]")
    refused(forged(plain, arrays={"sums": np.ones(())}), r"array sums has shape \[\]")


def test_sums_no_examples_could_give_are_refused():
    plain = state_of("keyword_prf", {"average": "micro"}, n=4)
    sums = plain.sums.copy()
    cases = {
        "negative": (sums * np.array([1, 1, 1, 1, -1, 1, 1, 1]), "out of its range"),  # precision -2.5 before
        "more matched than predicted": (sums + np.array([0, 0, 0, 0, 20, 0, 0, 0]), "out of its range"),  # 3.0
        "a ratio above 1": (sums + np.array([0, 9, 0, 0, 0, 0, 0, 0]), "out of its range"),
        "more examples than held": (sums * 3, "more examples than the 4"),
        "half a keyword": (sums + np.array([0, 0, 0, 0, 0.5, 0.5, 0, 0]), "not a whole number"),
    }
    for forged_sums, message in cases.values():
        refused(forged(plain, arrays={"sums": forged_sums}), message)
    aspects = state_of("aspect_sentiment_score", {"aspects": ASPECTS}, n=5)
    too_wrong = aspects.sums.copy()
    too_wrong[9:] = 5 * 16 + 1  # a squared error beyond (5 - 1)**2 per rated review
    refused(forged(aspects, arrays={"sums": too_wrong}), "out of its range")
    rows = state_of("keyword_prf", INTERVALS, n=4)
    two_examples_in_one = rows.rows[0].copy()
    two_examples_in_one[0, 0] = 2
    refused(forged(rows, arrays={"rows": two_examples_in_one}), "array rows .* more examples than the 1")
    keyed = state_of("keyword_prf", {**INTERVALS, "bootstrap": "poisson"}, n=4, keys=[1, 2, 3, 4])
    refused(forged(keyed, arrays={"swapped": keyed.swapped + keyed.sums}), "arrays sums and swapped disagree")
    refused(forged(keyed, arrays={"weighted": -keyed.weighted}), "array weighted .* out of its range")


def test_counts_resamples_and_options_that_could_run_forever_or_crash_are_refused():
    rows = state_of("keyword_prf", INTERVALS, n=4)
    header = header_of(rows.to_bytes())
    # 10**11 resamples of 4 rows: compute() ran forever before
    refused(forged(rows, options={**header["options"], "n_resamples": 10**11}), "n_resamples must be at most")
    refused(forged(rows, options={**header["options"], "n_resamples": 5.0}), "n_resamples must be a positive")
    refused(forged(rows, options={**header["options"], "average": {"object": "os.system"}}), "option average")
    refused(forged(rows, options={**header["options"], "normalize": {"object": 1}}), "option normalize")
    refused(forged(rows, options={**header["options"], "zero_division": [0]}), "zero_division")
    keyed = state_of("keyword_prf", {**INTERVALS, "bootstrap": "poisson"}, n=4, keys=[1, 2, 3, 4])
    keyed_options = header_of(keyed.to_bytes())["options"]
    refused(forged(keyed, options={**keyed_options, "random_state": None}), "random_state")
    refused(forged(keyed, options={**keyed_options, "random_state": {"object": "x"}}), "random_state")
    refused(forged(keyed, fingerprint=[5, 1]), "fingerprint")
    refused(forged(keyed, n_examples=5), "")
    plain = state_of("keyword_prf", {}, n=4)
    refused(forged(plain, positions=[[0, 4]]), "positions")
    poisson_positions = state_of("keyword_prf", {**INTERVALS, "bootstrap": "poisson"}, n=4)
    refused(forged(poisson_positions, positions=[[0, 9]]), "positions")
    refused(forged(plain, arrays={"sketch": plain.sketch[::-1]}), "sketch is not sorted")
    refused(forged(plain, arrays={"sketch": plain.sketch[:3]}), "4 examples have 3 distinct keys")


def test_headers_nested_deep_or_with_huge_integers_are_refused_as_values():
    plain = state_of("keyword_prf", {}, n=4)
    header = header_of(plain.to_bytes())
    payload = payload_of(plain.to_bytes())
    deep = json.dumps(header)[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}"  # RecursionError before
    for raw, message in [
        (deep, "nests more than"),
        (json.dumps(header).replace('"n_examples": 4', '"n_examples": ' + "9" * 5000), "5000 digits"),
        (json.dumps(header).replace('"n_examples": 4', '"n_examples": NaN'), "NaN"),
        (json.dumps({**header, "fingerprint": [[[[[[[[[[0]]]]]]]]]]}), "nests more than 8 levels"),
    ]:
        encoded = raw.encode()
        body = forge({}, b"")[:8] + struct.pack("<HI", 3, len(encoded)) + encoded + payload
        refused(body + hashlib.sha256(body).digest(), message)


# --- Fuzz ---------------------------------------------------------------------------------------

HOSTILE = [-1, 0, 1, 3, 8, 20, 10**6, 10**11, 2**64, -(2**63), 1.5, -0.0, 1e308, "", "x", "keyword_prf",
           "default", None, True, False, [], {}, [0], [[0, 1]], [[5, 2]], {"object": "x"}, ["food"],
           [{"name": "sums", "shape": [8]}]]  # fmt: skip
HOSTILE_FLOATS = [-1.0, -1e-300, 0.5, 1.0, 2.0, 1e300, 2.0**53 + 2, math.nan, math.inf, -math.inf, 7.0]


def paths(value, prefix=()):
    """Every path to a value inside a parsed JSON header."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, (*prefix, index))


def edited(header, rng):
    header = copy.deepcopy(header)
    path = list(paths(header))[int(rng.integers(1, len(list(paths(header)))))]
    parent = header
    for step in path[:-1]:
        parent = parent[step]
    if isinstance(parent, dict) and rng.random() < 0.15:
        del parent[path[-1]]
    else:
        parent[path[-1]] = copy.deepcopy(HOSTILE[int(rng.integers(len(HOSTILE)))])
    return header


def fuzz_seeds():
    return {
        "values": state_of("keyword_prf", {"average": "micro"}, n=6),
        "poisson": state_of("keyword_prf", {"confidence_level": 0.9, "n_resamples": 4, "bootstrap": "poisson"}, n=6),
        "multinomial": state_of("keyword_prf", {"confidence_level": 0.9, "n_resamples": 20}, n=6),
        "weighted": state_of("weighted_keyword_prf", {"one_to_one": False}, n=6),
        "aspects": state_of("aspect_sentiment_score", {"aspects": ASPECTS}, n=6),
        "diversity": state_of("keyword_diversity", {}, n=6),
        "sentiment": state_of("sentiment_appropriateness", {"sentiment": None, "mapping": "compound"}, n=6),
        "semantic": state_of("semantic_keyword_prf", {"model": CharacterEncoder(), "top_k": "O"}, n=6),
        "diversity with a model": state_of("keyword_diversity", {"model": CharacterEncoder()}, n=6),
        "empty": MetricState("keyword_prf", top_k=3),
    }


def in_declared_range(family: str, key: str, value: float, options: dict) -> bool:
    output = output_for(family, key.removesuffix("_ci_low").removesuffix("_ci_high"))
    if output is None or "exceed" in output.range:
        return True
    low, high = (-1.0, 1.0) if output.range.startswith("[-1") else (0.0, 1.0)
    return low - 1e-9 <= value <= high + 1e-9


def test_fuzzed_headers_and_payloads_with_a_valid_checksum_load_sanely_or_are_refused():
    """About 2,400 forgeries in a few seconds: each is refused with a ValueError naming it
    invalid, or loads a state that computes in-range values (or refuses to compute)."""
    rng = np.random.default_rng(29)
    outcomes = {"refused": 0, "loaded": 0}
    for name, state in fuzz_seeds().items():
        data = state.to_bytes()
        header, payload = header_of(data), payload_of(data)
        floats = np.frombuffer(payload, "<f8").copy() if payload else np.zeros(0)
        for trial in range(300):
            new_header, new_payload = header, payload
            how = trial % 3
            if how in (0, 2):
                new_header = edited(header, rng)
            if how in (1, 2) and len(floats):
                changed = floats.copy()
                at = rng.integers(len(changed), size=int(rng.integers(1, 4)))
                changed[at] = rng.choice(HOSTILE_FLOATS, size=len(at))
                new_payload = changed.astype("<f8").tobytes()
                if rng.random() < 0.2:
                    new_payload = new_payload[: 8 * int(rng.integers(len(changed) + 1))]
            try:
                loaded = MetricState.from_bytes(forge(new_header, new_payload))
            except ValueError as error:
                assert str(error).startswith("not a valid MetricState"), (name, str(error))
                outcomes["refused"] += 1
                continue
            outcomes["loaded"] += 1
            try:
                result = loaded.compute()
            except ValueError as error:
                assert "no examples" in str(error) or "object" in str(error), str(error)
                continue
            for key, value in result.items():
                assert isinstance(value, float) and math.isfinite(value), (name, key, value)
                assert in_declared_range(loaded.family, key, value, loaded.options), (name, key, value)
    assert outcomes["refused"] > 1600 and outcomes["loaded"] > 20, outcomes


# --- No example counted twice -------------------------------------------------------------------

MODES = {
    "values": {},
    "poisson": {"confidence_level": 0.9, "n_resamples": 30, "bootstrap": "poisson"},
    "multinomial": {"confidence_level": 0.9, "n_resamples": 30},
}


def test_keyed_states_sharing_keys_are_refused_naming_both_counts():
    """Issue 29: 6 examples for 5 keys merged into F1 0.667 instead of 0.600."""
    predictions = [["a"], ["b"], ["c"], ["d"], ["e"], ["f"]]
    references = [["a"], ["x"], ["c"], ["y"], ["e"], ["z"]]
    for options in MODES.values():
        first = MetricState("keyword_prf", **options).update(
            predictions=predictions[:3], references=references[:3], keys=[1, 2, 3]
        )
        second = MetricState("keyword_prf", **options).update(
            predictions=predictions[3:], references=references[3:], keys=[3, 4, 5]
        )
        with pytest.raises(ValueError, match="states of 3 and 3 examples: together they hold 5 distinct"):
            first + second
        with pytest.raises(ValueError, match="share keys with the 3 examples already"):
            MetricState.from_bytes(first.to_bytes()).update(
                predictions=predictions[3:], references=references[3:], keys=[3, 4, 5]
            )
        with pytest.raises(ValueError, match="examples 0 and 2 have the same key 'r'"):
            MetricState("keyword_prf", **options).update(
                predictions=predictions[:3], references=references[:3], keys=["r", "s", "r"]
            )
        with pytest.raises(ValueError, match="examples 0 and 2 have the same key 0"):  # the first repeat, by position
            MetricState("keyword_prf", **options).update(
                predictions=predictions[:4], references=references[:4], keys=(i % 2 for i in range(4))
            )  # a generator (a bare TypeError naming it, before)
        assert first.n_examples == 3


def update_arguments(data, keys):
    return {"predictions": data["predictions"], "references": data["references"], **keys}


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("n", [7, 511, 512, 3000])
def test_a_state_added_to_itself_or_a_copy_is_refused_below_and_above_the_exact_count(mode, n):
    data = corpus("keyword_prf", n, seed=n)
    for keys in ({}, {"keys": [f"review {i}" for i in range(n)]}, {"groups": [i % 5 for i in range(n)]}):
        if "groups" in keys and mode != "poisson":
            continue
        state = MetricState("keyword_prf", **MODES[mode]).update(**update_arguments(data, keys))
        copies = [
            state,
            MetricState.from_bytes(state.to_bytes()),
            pickle.loads(pickle.dumps(state)),
            copy.deepcopy(state),
        ]
        for twin in copies:
            with pytest.raises(ValueError, match=f"states of {n} and {n} examples|position"):
                state + twin
        assert sum([state]).n_examples == n  # sum() starts from an empty state


def test_a_copy_numbers_its_own_new_examples():
    """A state pickled to workers before any examples (an engine's template) is no twin."""
    data = corpus("keyword_prf", 600, seed=3)
    template = MetricState("keyword_prf")
    parts = [pickle.loads(pickle.dumps(template)) for _ in range(3)]
    for index, state in enumerate(parts):
        state.update(**update_arguments(corpus("keyword_prf", 600, seed=index), {}))
    assert sum(parts).n_examples == 1800
    assert (template.update(**update_arguments(data, {})) + parts[0]).n_examples == 1200


def test_random_partitions_batches_and_merge_trees_of_valid_data_never_trip_the_sketch():
    rng = np.random.default_rng(5)
    for n in (100, 600, 5000):
        data = corpus("keyword_prf", n, seed=n)
        expected = keyword_prf(data["predictions"], data["references"])
        for keyed in (True, False):
            cuts = np.sort(rng.choice(np.arange(1, n), size=24, replace=False))
            states = []
            for rows in np.split(np.arange(n), cuts):
                part = {name: [column[i] for i in rows] for name, column in data.items() if name != "texts"}
                state = MetricState("keyword_prf")
                for batch in np.array_split(np.arange(len(rows)), 3):  # several updates per state
                    given = {name: [column[i] for i in batch] for name, column in part.items()}
                    state.update(**given, **({"keys": (rows[batch] * 7919).tolist()} if keyed else {}))
                states.append(state)
            rng.shuffle(states)
            while len(states) > 1:
                i = int(rng.integers(len(states) - 1))
                states[i : i + 2] = [states[i] + states[i + 1]]
            assert states[0].n_examples == n
            assert states[0].compute() == pytest.approx(expected, abs=1e-12)


def test_the_estimate_stays_within_its_margin_and_the_documented_false_alarm_bound_holds():
    stats = pytest.importorskip("scipy.stats")
    size, margin = poisson.SKETCH_SIZE, poisson.SKETCH_MARGIN
    assert stats.gamma.sf((size - 1) / (1 - margin), size) < 1e-17  # the bound in docs/guide.md and poisson.py
    rng = np.random.default_rng(0)
    errors = []
    for _ in range(300):
        n = int(rng.integers(size, 200_000))
        words = poisson.key_words(rng.integers(0, 2**63, n, dtype=np.int64).view(np.uint64))
        halves = np.array_split(words, 2)
        sketch = poisson.merge_sketches(poisson.sketch_of(halves[0]), poisson.sketch_of(halves[1]))
        estimate, exact = poisson.distinct_count(sketch)
        assert not exact and not poisson.counted_twice(sketch, n)
        assert poisson.counted_twice(sketch, 2 * n)  # the same keys twice
        errors.append(estimate / n - 1)
    assert abs(np.mean(errors)) < 0.01 and np.std(errors) < 1.5 / math.sqrt(size)
    sequential = poisson.sketch_of(poisson.key_words(np.arange(10**6, dtype=np.uint64)))  # positions 0..n-1
    assert abs(poisson.distinct_count(sequential)[0] / 10**6 - 1) < 0.2


def test_poisson_states_with_random_state_none_say_why_they_do_not_merge():
    options = {"confidence_level": 0.9, "bootstrap": "poisson", "random_state": None}
    first = MetricState("keyword_prf", **options)
    second = MetricState("keyword_prf", **options)
    with pytest.raises(
        ValueError, match="random_state=None draws a new seed for each state: give every state the same"
    ):
        first + second


def test_families_declare_the_layout_of_their_statistics():
    """The width from the declaration equals the statistics' width for every option set."""
    for family, options in FAMILY_OPTIONS:
        state = state_of(family, options, n=5)
        assert _layout(family, state.canonical_options).width == state.sums.shape[0], family


# --- Rounding, and nothing more (issue 37) ------------------------------------------------------


def test_sums_beyond_their_rounding_are_refused_never_clipped():
    """A sum of precisions above its count by 1e-6 (relative) loaded and gave precision 1.000001;
    the slack allows the rounding of float64 sums of n examples (a few n machine epsilons), so
    that, and anything past some multiples of it, is refused: never clipped."""
    eps = float(np.finfo(np.float64).eps)
    for n in (4, 1000, 100_000):
        gold = [[f"g{i}"] for i in range(n)]
        state = MetricState("keyword_prf").update(predictions=gold, references=gold)
        assert state.compute()["precision"] == 1.0 and state.sums[1] == n  # every precision exactly 1
        for excess in (1e-6, 64 * (n + 1) * eps):
            sums = state.sums.copy()
            sums[1] = n * (1 + excess)  # the sum of precisions, past the n examples counted
            assert sums[1] > n
            refused(forged(state, arrays={"sums": sums}), "array sums .* out of its range")
    rows = state_of("keyword_prf", INTERVALS, n=4)  # rows of statistics: a precision above 1 by 1e-9
    forged_rows = rows.rows[0].copy()
    forged_rows[0, 1] = forged_rows[0, 0] * (1 + 1e-9)
    refused(forged(rows, arrays={"rows": forged_rows}), "array rows .* out of its range")
    keyed = state_of("keyword_prf", {**INTERVALS, "bootstrap": "poisson"}, n=40, keys=list(range(40)))
    weighted = keyed.weighted.copy()
    weighted[3, 1] = weighted[3, 0] * (1 + 1e-7) + 1e-7  # a resample's precisions above its examples
    refused(forged(keyed, arrays={"weighted": weighted}), "array weighted .* out of its range")


@pytest.mark.parametrize("mode", ["values", "poisson", "merged"])
def test_legitimate_float_sums_of_many_examples_load(mode):
    """Bounds met with equality up to float rounding, over 100,000 examples: every prediction a
    gold keyword with a float score (matched scores = all scores, nDCG = 1 but for rounding)."""
    n = 100_000
    rng = np.random.default_rng(4)
    references = [[f"g{i}", f"h{i}", f"k{i}"] for i in range(n)]
    scores = rng.uniform(0.01, 1.0, size=(n, 3)).tolist()
    columns = {"predictions": references, "scores": scores, "references": references}
    options = {"one_to_one": False} if mode == "values" else {**INTERVALS, "bootstrap": "poisson"}
    if mode == "merged":  # batches summed in another order
        state = merged_state("weighted_keyword_prf", columns, options, rng, parts=7)
    else:
        state = MetricState("weighted_keyword_prf", **options).update(**columns)
    computed = state.compute()
    assert computed["weighted_precision"] == pytest.approx(1.0, abs=1e-12)
    loaded = MetricState.from_bytes(state.to_bytes())
    assert loaded == state and loaded.compute() == computed
