"""MetricState and the Poisson bootstrap (SPEC section 12): states fed in random batches and
merged in random orders equal the family functions; Poisson intervals and paired tests do not
depend on the partitioning; the counter-based weights against a pure-Python generator; the
declared byte layout and its refusals; merging refusals; Hugging Face datasets."""

from __future__ import annotations

import hashlib
import json
import math
import os
import pickle
import struct
import subprocess
import sys
import zlib

import numpy as np
import pyarrow as pa
import pytest

from opinion_metrics import (
    MetricState,
    aspect_sentiment_score,
    compare_systems,
    keyword_diversity,
    keyword_prf,
    semantic_keyword_prf,
    sentiment_appropriateness,
    weighted_keyword_prf,
)
from opinion_metrics.embeddings.encoder import PrecomputedEncoder
from opinion_metrics.families.registry import FAMILIES, Reducer
from opinion_metrics.state.metric_state import statistics
from opinion_metrics.state.wire import MAGIC
from opinion_metrics.stats import poisson

WORDS = ("war", "peace", "jedi", "droid", "empire", "satire", "comedy", "family", "pizza", "space", "opera", "dark")
ASPECTS = ("food", "room", "staff")


class CharacterEncoder:
    """A deterministic toy sentence encoder: letter counts plus a constant dimension."""

    def encode(self, texts, **_):
        vectors = np.zeros((len(texts), 27), dtype=np.float32)
        for row, text in enumerate(texts):
            vectors[row, 26] = 1.0
            for character in text:
                if "a" <= character <= "z":
                    vectors[row, ord(character) - 97] += 1.0
        return vectors


def toy_sentiment(text):
    return (sum(map(ord, text)) % 101) / 100


def keywords(rng, low, high):
    count = int(rng.integers(low, high + 1))
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 3)))) for _ in range(count)]


def corpus(family, n, seed):
    """Random inputs of `family` for n examples (some empty lists, some texts without keywords)."""
    rng = np.random.default_rng(seed)
    if family == "aspect_sentiment_score":
        return {
            "predictions": rng.integers(0, 6, size=(n, len(ASPECTS))),
            "references": rng.integers(0, 6, size=(n, len(ASPECTS))),
        }
    predictions = [keywords(rng, 0, 5) for _ in range(n)]
    columns = {"predictions": predictions}
    if family != "keyword_diversity":
        columns["references"] = [keywords(rng, 0, 4) for _ in range(n)]
    if family in ("keyword_prf", "weighted_keyword_prf", "semantic_keyword_prf", "sentiment_appropriateness"):
        missing = None if family == "sentiment_appropriateness" else ""  # SAS: a missing text; others: an empty one
        columns["texts"] = [" ".join(rng.choice(WORDS, size=8)) if rng.random() < 0.9 else missing for _ in range(n)]
    if family == "weighted_keyword_prf":
        columns["scores"] = [rng.random(len(p)).round(3).tolist() for p in predictions]
    return columns


def call(family, columns, **options):
    """The family function on the whole corpus."""
    function = FAMILIES[family].function
    if family == "weighted_keyword_prf":
        rest = {k: v for k, v in columns.items() if k not in ("predictions", "scores", "references")}
        return function(columns["predictions"], columns["scores"], columns["references"], **rest, **options)
    return function(**columns, **options)


def part(columns, rows):
    return {
        name: (value[rows] if isinstance(value, np.ndarray) else [value[i] for i in rows])
        for name, value in columns.items()
    }


def random_cuts(n, parts, rng):
    cuts = sorted(rng.choice(np.arange(1, n), size=parts - 1, replace=False).tolist()) if parts > 1 else []
    return [np.arange(a, b) for a, b in zip([0, *cuts], [*cuts, n])]


def merged_state(family, columns, options, rng, parts, *, keep_order=False, key=lambda i: i):
    """States of random contiguous batches (keys from `key`), merged in a random order
    (a random order-preserving tree when `keep_order`)."""
    n = len(columns["predictions"])
    states = [
        MetricState(family, **options).update(**part(columns, rows), keys=[key(int(i)) for i in rows])
        for rows in random_cuts(n, parts, rng)
    ]
    if not keep_order:
        rng.shuffle(states)
    while len(states) > 1:
        i = int(rng.integers(0, len(states) - 1))
        states[i : i + 2] = [states[i] + states[i + 1]]
    return states[0]


def assert_same(result, expected, tolerance=1e-12):
    assert list(result) == list(expected)
    for key, value in expected.items():
        assert isinstance(result[key], float)
        assert math.isclose(result[key], value, rel_tol=0, abs_tol=tolerance), (key, result[key], value)


FAMILY_OPTIONS = [
    ("keyword_prf", {}),
    ("keyword_prf", {"average": "micro", "match": "exact"}),
    ("keyword_prf", {"match": "token", "one_to_one": False, "top_k": 2, "zero_division": 1.0}),
    ("keyword_prf", {"top_k": "O", "presence": "present"}),
    ("keyword_prf", {"presence": "absent", "average": "micro", "stemmer": "porter"}),
    ("weighted_keyword_prf", {}),
    ("weighted_keyword_prf", {"k": 3, "relevance": "binary", "average": "micro", "top_k": 2}),
    ("weighted_keyword_prf", {"presence": "present", "one_to_one": False}),
    ("semantic_keyword_prf", {"model": CharacterEncoder(), "threshold": 0.8}),
    ("semantic_keyword_prf", {"model": CharacterEncoder(), "one_to_one": True, "average": "micro", "top_k": 3}),
    ("sentiment_appropriateness", {"sentiment": toy_sentiment}),
    ("sentiment_appropriateness", {"sentiment": toy_sentiment, "normalize": "ascii"}),
    ("aspect_sentiment_score", {"aspects": ASPECTS}),
    ("aspect_sentiment_score", {"aspects": ASPECTS, "zero_division": 0.0, "min_rating": 2, "max_rating": 5}),
    ("keyword_diversity", {}),
    ("keyword_diversity", {"model": CharacterEncoder(), "zero_division": 1.0}),
]
INTERVALS = {"confidence_level": 0.9, "n_resamples": 200, "random_state": 7}


def fit_corpus(family, options, columns):
    if family == "aspect_sentiment_score" and options.get("min_rating") == 2:
        columns = {name: np.where(table == 1, 2, table) for name, table in columns.items()}
    return columns


@pytest.mark.parametrize(("family", "options"), FAMILY_OPTIONS)
@pytest.mark.parametrize("mode", ["values", "poisson", "multinomial"])
def test_states_in_random_batches_and_merge_orders_equal_the_family_function(family, options, mode):
    rng = np.random.default_rng(zlib.crc32(f"{family} {mode} {sorted(options)}".encode()))
    columns = fit_corpus(family, options, corpus(family, 60, seed=int(rng.integers(2**31))))
    options = {
        "values": dict(options),
        "poisson": {**options, **INTERVALS, "bootstrap": "poisson"},
        "multinomial": {**options, **INTERVALS},
    }[mode]
    expected = call(family, columns, **options)
    if mode != "values":
        assert any(key.endswith("_ci_low") for key in expected)
    for parts in (1, 4, 13):
        state = merged_state(family, columns, options, rng, parts, keep_order=mode == "multinomial")
        assert state.n_examples == 60
        assert_same(state.compute(), expected)


def test_a_state_updated_in_order_without_keys_equals_position_and_arrow_keys():
    columns = corpus("keyword_prf", 40, seed=3)
    options = {**INTERVALS, "bootstrap": "poisson"}
    by_position = MetricState("keyword_prf", **options)
    for rows in random_cuts(40, 5, np.random.default_rng(0)):
        by_position.update(**part(columns, rows))
    explicit = MetricState("keyword_prf", **options).update(**columns, keys=list(range(40)))
    table = pa.table({"p": columns["predictions"], "g": columns["references"], "id": pa.array(range(40), pa.int32())})
    arrow = MetricState("keyword_prf", **options).update_arrow(table, predictions="p", references="g", key="id")
    assert explicit == arrow and by_position.fingerprint == explicit.fingerprint
    assert_same(by_position.compute(), explicit.compute())
    assert_same(arrow.compute(), keyword_prf(columns["predictions"], columns["references"], **options), 0)
    assert by_position.positions == [(0, 40)] and explicit.positions == []


def test_states_without_keys_merge_only_over_disjoint_positions_given_by_start():
    columns = corpus("keyword_prf", 60, seed=8)
    options = {**INTERVALS, "bootstrap": "poisson"}
    expected = keyword_prf(columns["predictions"], columns["references"], **options)
    cuts = random_cuts(60, 4, np.random.default_rng(2))
    apart = [MetricState("keyword_prf", **options).update(**part(columns, rows), start=rows[0]) for rows in cuts]
    merged = sum(apart[::-1])
    assert merged.positions == [(0, 60)]
    assert_same(merged.compute(), expected)
    assert_same(MetricState.from_bytes(merged.to_bytes()).compute(), expected)
    # Each shard numbered from 0: the intervals would depend on the split, so the merge is refused.
    shards = [MetricState("keyword_prf", **options).update(**part(columns, rows)) for rows in cuts]
    with pytest.raises(ValueError, match="both numbered examples by position 0.*keys=.*start="):
        shards[0] + shards[1]
    with pytest.raises(ValueError, match="position"):
        MetricState.from_bytes(apart[1].to_bytes()) + apart[1]
    with pytest.raises(ValueError, match="positions 5..9 were already used"):
        MetricState("keyword_prf", **options).update(**part(columns, range(10))).update(
            **part(columns, range(5)), start=5
        )
    with pytest.raises(ValueError, match="start must be a non-negative int"):
        MetricState("keyword_prf", **options).update(**columns, start=-1)
    with pytest.raises(ValueError, match="give start, or keys"):
        MetricState("keyword_prf", **options).update(**columns, keys=range(60), start=0)
    # Keyed shards and states without intervals merge as before.
    keyed = [MetricState("keyword_prf", **options).update(**part(columns, rows), keys=list(rows)) for rows in cuts]
    assert_same(sum(keyed).compute(), expected)
    plain = [MetricState("keyword_prf").update(**part(columns, rows)) for rows in cuts]
    assert_same(sum(plain).compute(), keyword_prf(columns["predictions"], columns["references"]))


def test_semantic_states_with_the_packaged_minilm_and_precomputed_embeddings():
    columns = corpus("semantic_keyword_prf", 24, seed=5)
    options = {**INTERVALS, "bootstrap": "poisson", "threshold": 0.6}
    expected = semantic_keyword_prf(**columns, **options)
    state = merged_state("semantic_keyword_prf", columns, options, np.random.default_rng(1), 5)
    assert_same(state.compute(), expected)
    # Two-stage pipeline: embed the distinct normalized keywords once, then look them up.
    from opinion_metrics.core.normalization import make_normalizer
    from opinion_metrics.embeddings.encoder import DEFAULT_MODEL, KeywordEncoder

    normalize = make_normalizer("default")
    distinct = sorted(
        {normalize(k) for side in ("predictions", "references") for ks in columns[side] for k in ks} - {""}
    )
    vectors = dict(zip(distinct, KeywordEncoder(DEFAULT_MODEL).encode(distinct)))
    lookup = {**options, "model": PrecomputedEncoder(vectors, name=DEFAULT_MODEL)}
    precomputed = merged_state("semantic_keyword_prf", columns, lookup, np.random.default_rng(2), 3)
    assert_same(precomputed.compute(), expected, 1e-6)  # float32 vectors, identical up to rounding
    assert (precomputed + MetricState("semantic_keyword_prf", **options)).n_examples == 24  # same model name
    with pytest.raises(ValueError, match="no precomputed embedding for the keyword"):
        MetricState("semantic_keyword_prf", model=PrecomputedEncoder({}, name="x")).update(
            predictions=[["unseen"]], references=[["unseen too"]]
        )


def test_sentiment_states_with_vader():
    pytest.importorskip("vaderSentiment")
    columns = corpus("sentiment_appropriateness", 30, seed=8)
    options = {**INTERVALS, "bootstrap": "poisson", "mapping": "compound"}
    state = merged_state("sentiment_appropriateness", columns, options, np.random.default_rng(3), 6)
    assert_same(state.compute(), sentiment_appropriateness(**columns, **options))


# --- Poisson bootstrap: partitions, coverage, weights ----------------------------------------


def string_key(i):
    return f"review-{i:05d}"


@pytest.mark.parametrize("family", ["keyword_prf", "weighted_keyword_prf", "aspect_sentiment_score"])
def test_poisson_intervals_and_p_values_are_identical_across_1_3_and_16_partitions(family):
    options = {"confidence_level": 0.95, "n_resamples": 300, "random_state": 11, "bootstrap": "poisson"}
    if family == "aspect_sentiment_score":
        options["aspects"] = ASPECTS
    system_a, system_b = corpus(family, 200, seed=21), corpus(family, 200, seed=22)
    for name in ("references", "texts"):
        if name in system_a:
            system_b[name] = system_a[name]
    rng = np.random.default_rng(5)
    results = []
    for parts in (1, 3, 16):
        a = merged_state(family, system_a, options, rng, parts, key=string_key)
        b = merged_state(family, system_b, options, rng, parts, key=string_key)
        results.append(
            (
                a.compute(),
                compare_systems(a, b),
                compare_systems(family, a, b, method="bootstrap", confidence_level=0.95),
            )
        )
    for result in results[1:]:
        assert_same(result[0], results[0][0])
        for comparison, first in zip(result[1:], results[0][1:]):
            assert list(comparison) == list(first)
            for key in first:
                assert_same(comparison[key], first[key])
    assert results[0][1], "no key compared"


def test_compare_systems_with_poisson_equals_comparing_states_and_a_brute_force_loop():
    columns_a, columns_b = corpus("keyword_prf", 50, seed=31), corpus("keyword_prf", 50, seed=32)
    references = columns_a["references"]
    options = {"n_resamples": 120, "random_state": 4}
    direct = compare_systems(
        "keyword_prf", columns_a["predictions"], columns_b["predictions"], references, bootstrap="poisson", **options
    )
    states = [
        MetricState("keyword_prf", **options, confidence_level=0.95, bootstrap="poisson").update(
            predictions=c["predictions"], references=references
        )
        for c in (columns_a, columns_b)
    ]
    assert compare_systems(*states) == direct
    # Brute force from SPEC 12: per resample, the weights and swap signs of each position.
    weights, signs = poisson.poisson_weights(range(50), 120, 4)
    matrix_a = statistics("keyword_prf", {}, predictions=columns_a["predictions"], references=references)[0]
    matrix_b = statistics("keyword_prf", {}, predictions=columns_b["predictions"], references=references)[0]
    values = FAMILIES["keyword_prf"].reducer({})
    observed = direct["f1"]["difference"]
    differences, extreme = [], 0
    for r in range(120):
        differences.append(float(values(weights[r] @ matrix_b)["f1"] - values(weights[r] @ matrix_a)["f1"]))
        swapped_a = np.where(signs[r][:, None] == 1, matrix_b, matrix_a).sum(axis=0)
        swapped_b = np.where(signs[r][:, None] == 1, matrix_a, matrix_b).sum(axis=0)
        extreme += abs(float(values(swapped_b)["f1"] - values(swapped_a)["f1"])) >= abs(observed) - 1e-10
    low, high = np.quantile(differences, [0.025, 0.975])
    assert math.isclose(direct["f1"]["difference_ci_low"], low, abs_tol=1e-12)
    assert math.isclose(direct["f1"]["difference_ci_high"], high, abs_tol=1e-12)
    assert direct["f1"]["p_value"] == (1 + extreme) / 121


def test_poisson_intervals_of_a_bernoulli_mean_cover_95_percent_of_the_time():
    rng = np.random.default_rng(2025)
    repetitions, n, truth, covered = 500, 200, 0.4, 0
    for repetition in range(repetitions):
        hits = rng.random(n) < truth  # per example: precision 1 (hit) or 0
        references = [["a"] if hit else ["b"] for hit in hits]
        state = MetricState(
            "keyword_prf",
            match="exact",
            confidence_level=0.95,
            n_resamples=500,
            random_state=repetition,
            bootstrap="poisson",
        ).update(predictions=[["a"]] * n, references=references)
        result = state.compute()
        assert result["precision"] == hits.mean()
        covered += result["precision_ci_low"] <= truth <= result["precision_ci_high"]
    assert abs(covered / repetitions - 0.95) <= 0.03, covered / repetitions


def test_poisson_weights_have_mean_and_variance_one_and_fair_swap_signs():
    weights, signs = poisson.poisson_weights([f"id{i}" for i in range(2000)], 500, 0)
    assert abs(weights.mean() - 1) < 0.01 and abs(weights.var() - 1) < 0.01
    assert abs((weights == 0).mean() - math.exp(-1)) < 0.005  # P(W = 0) = 1/e
    assert abs(signs.mean() - 0.5) < 0.005
    assert abs(np.corrcoef(weights.ravel(), signs.ravel())[0, 1]) < 0.01
    assert abs(np.corrcoef(weights[:, :-1].ravel(), weights[:, 1:].ravel())[0, 1]) < 0.01  # neighbouring keys


def _mix(x):
    mask = 2**64 - 1
    z = (x + 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return z ^ (z >> 31)


def _python_string_hash(text):
    data = text.encode("utf-8")
    total = sum((byte + 1) * _mix(position ^ poisson._POSITION_SALT) for position, byte in enumerate(data)) % 2**64
    return _mix(total ^ _mix(len(data) ^ poisson._LENGTH_SALT))


def _python_draw(seed, r, key_hash):
    """w(r, key) and s(r, key) of SPEC 12, one at a time in plain Python integers."""
    seed_mix = _mix(_mix(seed))
    key_word = _mix(key_hash ^ seed_mix ^ poisson._KEY_SALT)
    resample_word = _mix((r + _mix(seed_mix ^ poisson._RESAMPLE_SALT)) % 2**64)
    word = _mix(resample_word ^ key_word)
    uniform = (word >> 11) / 2**53
    cumulative, weight, term = math.exp(-1), 0, math.exp(-1)
    while uniform >= cumulative:
        weight += 1
        term /= weight
        cumulative += term
    return weight, word & 1


def test_vectorized_weights_equal_a_pure_python_generator():
    keys = ["", "a", "review-1", "é ü 字", "x" * 100, 0, 1, 2**40, -3]
    hashes = [_python_string_hash(k) if isinstance(k, str) else k % 2**64 for k in keys]
    assert poisson.key_hashes(keys[:5]).tolist() == hashes[:5]
    assert poisson.key_hashes(keys[5:]).tolist() == hashes[5:]
    for seed in (0, 12345):
        weights_s, signs_s = poisson.poisson_weights(keys[:5], 40, seed)
        weights_i, signs_i = poisson.poisson_weights(keys[5:], 40, seed)
        weights, signs = np.hstack([weights_s, weights_i]), np.hstack([signs_s, signs_i])
        for r in range(40):
            for i, key_hash in enumerate(hashes):
                assert (weights[r, i], signs[r, i]) == _python_draw(seed, r, key_hash)


def test_string_keys_hash_the_same_in_another_process_and_from_arrow():
    keys = ["review-1", "review-2", "Ünïcode", ""]
    code = f"from opinion_metrics.stats.poisson import key_hashes; print(key_hashes({keys!r}).tolist())"
    environment = {**os.environ, "PYTHONHASHSEED": "12345"}
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, check=True)
    assert json.loads(output.stdout) == poisson.key_hashes(keys).tolist()
    sliced = pa.array(["zzz", *keys], pa.string()).slice(1)
    assert poisson.key_hashes(sliced).tolist() == poisson.key_hashes(keys).tolist()
    assert poisson.key_hashes(pa.chunked_array([keys[:2], keys[2:]])).tolist() == poisson.key_hashes(keys).tolist()


def test_weights_do_not_depend_on_the_partitioning_or_order_of_keys():
    keys = [f"k{i}" for i in range(300)]
    whole, whole_signs = poisson.poisson_weights(keys, 64, 9)
    order = np.random.default_rng(0).permutation(300)
    part_weights, part_signs = poisson.poisson_weights([keys[i] for i in order[:77]], 64, 9)
    assert np.array_equal(part_weights, whole[:, order[:77]]) and np.array_equal(part_signs, whole_signs[:, order[:77]])
    other_seed, _ = poisson.poisson_weights(keys, 64, 10)
    assert not np.array_equal(other_seed, whole)


def test_groups_share_their_weights():
    columns = corpus("keyword_prf", 60, seed=41)
    groups = [f"movie-{i % 7}" for i in range(60)]
    options = {**INTERVALS, "bootstrap": "poisson"}
    rng = np.random.default_rng(4)
    states = [
        MetricState("keyword_prf", **options).update(**part(columns, rows), groups=[groups[i] for i in rows])
        for rows in random_cuts(60, 5, rng)
    ]
    result = sum(states[::-1], start=MetricState("keyword_prf", **options)).compute()
    # Brute force: each example weighs its group's draw.
    distinct = sorted(set(groups))
    weights, _ = poisson.poisson_weights(distinct, 200, 7)
    per_example = weights[:, [distinct.index(g) for g in groups]].astype(float)
    matrix = statistics("keyword_prf", {}, **columns)[0]
    resampled = FAMILIES["keyword_prf"].reducer({})(per_example @ matrix)
    for key in ("precision", "recall", "f1"):
        low, high = np.quantile(resampled[key], [0.05, 0.95])
        assert math.isclose(result[f"{key}_ci_low"], low, abs_tol=1e-12)
        assert math.isclose(result[f"{key}_ci_high"], high, abs_tol=1e-12)
    with pytest.raises(ValueError, match="keys or groups, not both"):
        MetricState("keyword_prf", **options).update(**columns, keys=range(60), groups=groups)
    # The multinomial bootstrap cannot resample by group: refused rather than ignored.
    with pytest.raises(ValueError, match='groups resample .* only with bootstrap="poisson"'):
        MetricState("keyword_prf", **INTERVALS).update(**columns, groups=groups)
    unresampled = MetricState("keyword_prf").update(**columns, groups=groups).compute()
    assert_same(unresampled, keyword_prf(columns["predictions"], columns["references"]))


def test_poisson_state_memory_is_constant_in_the_number_of_examples():
    options = {"confidence_level": 0.95, "n_resamples": 1000, "bootstrap": "poisson"}
    sizes = []
    for n in (10, 3000):
        columns = corpus("keyword_prf", n, seed=n)
        state = MetricState("keyword_prf", **options).update(**columns)
        sizes.append(sum(array.nbytes for _, array in state.named_arrays()))
    assert sizes[0] == sizes[1] == 8 * 8 * (1 + 2 * 1000)  # sums, weighted and swapped sums of 8 columns
    plain = MetricState("keyword_prf").update(**corpus("keyword_prf", 3000, seed=1))
    assert [name for name, _ in plain.named_arrays()] == ["sums"] and plain.sums.shape == (8,)


def test_keys_from_numpy_pandas_and_lists_agree_and_bad_keys_are_named():
    pandas = pytest.importorskip("pandas")
    ints = [0, 5, -3, 2**40]
    expected = poisson.key_hashes(ints).tolist()
    assert poisson.key_hashes(np.array(ints)).tolist() == expected
    assert poisson.key_hashes(pandas.Series(ints)).tolist() == expected
    assert poisson.key_hashes(pa.array(ints, pa.int64())).tolist() == expected
    assert poisson.key_hashes(pandas.Series(["a", "b"])).tolist() == poisson.key_hashes(["a", "b"]).tolist()
    cases = [([1, "a"], "example 1 .* str 'a'"), ([1.5], "example 0 .* float 1.5"), ([True], "bool"), ([None], "None")]
    for keys, message in cases:
        with pytest.raises(ValueError, match=message):
            poisson.key_hashes(keys)
    with pytest.raises(ValueError, match="64 bits"):
        poisson.key_hashes([2**64])
    with pytest.raises(ValueError, match="example 1 has no key"):
        poisson.key_hashes(pa.array(["a", None]))
    state = MetricState("keyword_prf", confidence_level=0.9, bootstrap="poisson", n_resamples=10)
    with pytest.raises(ValueError, match="keys has 2 entries but there are 1 examples"):
        state.update(predictions=[["a"]], references=[["a"]], keys=[1, 2])
    frame = pandas.DataFrame({"p": [["a"], ["b", "c"]], "g": [["a"], ["c"]], "id": ["x", "y"]})
    from_frame = MetricState("keyword_prf", confidence_level=0.9, bootstrap="poisson", n_resamples=10)
    from_frame.update(frame, predictions="p", references="g", keys="id")
    direct = MetricState("keyword_prf", confidence_level=0.9, bootstrap="poisson", n_resamples=10)
    direct.update(predictions=frame["p"], references=frame["g"], keys=frame["id"])
    assert from_frame == direct
    with pytest.raises(ValueError, match="predictions='q': no such column"):
        MetricState("keyword_prf").update(frame, predictions="q", references="g")
    twice = pa.table([pa.array([["a"]]), pa.array([["a"]]), pa.array([["b"]])], names=["p", "g", "p"])
    with pytest.raises(
        ValueError, match="^predictions='p': the table has 2 columns of that name; give each its own name$"
    ):
        MetricState("keyword_prf").update(twice, predictions="p", references="g")


def dictionary_encodings(names, path):
    """`names` dictionary-encoded as Parquet read with read_dictionary, polars' Categorical and
    pandas' category in Arrow give them: one dictionary, two chunks of their own, int8 indices."""
    import pyarrow.parquet as pq

    plain = pa.array(names)
    pq.write_table(pa.table({"id": names}), path)
    read = pq.read_table(path, read_dictionary=["id"]).column("id")
    halves = pa.chunked_array([plain[:25].dictionary_encode(), plain[25:].dictionary_encode()])  # two dictionaries
    encoded = [
        plain.dictionary_encode(),
        read,
        halves,
        plain.dictionary_encode().cast(pa.dictionary(pa.int8(), pa.large_string())),
    ]
    assert all(pa.types.is_dictionary(keys.type) for keys in encoded)
    return encoded


def test_dictionary_encoded_keys_and_groups_give_the_intervals_of_their_plain_strings(tmp_path):
    # "must be integers or strings, got an Arrow column of dictionary<...>" before
    columns = corpus("keyword_prf", 40, seed=7)
    options = {"confidence_level": 0.9, "bootstrap": "poisson", "n_resamples": 50}
    for role, names in (
        ("keys", [f"review {i} ☕" for i in range(40)]),
        ("groups", [f"movie {i % 13} ☕" for i in range(40)]),
    ):
        encoded = dictionary_encodings(names, tmp_path / f"{role}.parquet")
        for keys in encoded:
            assert poisson.key_hashes(keys).tolist() == poisson.key_hashes(names).tolist()
        expected = MetricState("keyword_prf", **options).update(**columns, **{role: pa.array(names)}).compute()
        for keys in encoded:
            assert MetricState("keyword_prf", **options).update(**columns, **{role: keys}).compute() == expected
        table = pa.table({"p": columns["predictions"], "g": columns["references"], "id": encoded[0]})
        found = MetricState("keyword_prf", **options).update(table, predictions="p", references="g", **{role: "id"})
        assert found.compute() == expected
    with pytest.raises(ValueError, match="example 1 has no key"):
        poisson.key_hashes(pa.array(["a", None]).dictionary_encode())


# --- Bytes --------------------------------------------------------------------------------------


def small_states():
    columns = corpus("keyword_prf", 12, seed=2)
    return {
        "values": MetricState("keyword_prf", average="micro").update(**columns),
        "poisson": MetricState("keyword_prf", confidence_level=0.9, n_resamples=5, bootstrap="poisson").update(
            **columns, keys=[f"r{i}" for i in range(12)]
        ),
        "multinomial": MetricState("keyword_prf", confidence_level=0.9, n_resamples=5).update(**columns),
        "empty": MetricState("keyword_prf", top_k=3),
        "aspects": MetricState("aspect_sentiment_score", aspects=ASPECTS).update(
            **corpus("aspect_sentiment_score", 5, seed=1)
        ),
    }


@pytest.mark.parametrize("name", ["values", "poisson", "multinomial", "empty", "aspects"])
def test_bytes_round_trip_exactly_and_refuse_every_flipped_byte_and_truncation(name):
    state = small_states()[name]
    data = state.to_bytes()
    loaded = MetricState.from_bytes(data)
    assert loaded == state and loaded.to_bytes() == data
    if state.n_examples:
        assert loaded.compute() == state.compute()
    assert pickle.loads(pickle.dumps(state)) == state
    for position in range(len(data)):
        flipped = bytearray(data)
        flipped[position] ^= 0x10
        with pytest.raises(ValueError):
            MetricState.from_bytes(bytes(flipped))
    for length in range(len(data)):
        with pytest.raises(ValueError):
            MetricState.from_bytes(data[:length])


def forge(header, payload=b"", version=3):
    """Bytes in the declared layout with a valid checksum (a careful forger, or a buggy writer)."""
    encoded = json.dumps(header).encode()
    body = MAGIC + struct.pack("<HI", version, len(encoded)) + encoded + payload
    return body + hashlib.sha256(body).digest()


def test_foreign_wrong_version_and_lying_headers_are_refused():
    state = small_states()["poisson"]
    header = json.loads(state.to_bytes()[14 : 14 + struct.unpack_from("<HI", state.to_bytes(), 8)[1]])
    payload = state.sketch.astype("<u8").tobytes() + b"".join(
        array.astype("<f8").tobytes() for _, array in state.named_arrays()
    )
    assert MetricState.from_bytes(forge(header, payload)) == state  # the forger's layout is the real one
    sketch = header["arrays"][0]
    cases = {
        "magic": b"NOTSTATE" + state.to_bytes()[8:],
        "version": forge(header, payload, version=2),
        "pickle": pickle.dumps(state),
        "empty": b"",
        "noise": np.random.default_rng(0).bytes(5000),
        "json": json.dumps(header).encode(),
        "more resamples": forge(
            {
                **header,
                "arrays": [
                    sketch,
                    {"name": "sums", "shape": [8]},
                    {"name": "weighted", "shape": [6, 8]},
                    {"name": "swapped", "shape": [4, 8]},
                ],
            },
            payload,
        ),
        "huge shape": forge(
            {
                **header,
                "arrays": [
                    sketch,
                    {"name": "sums", "shape": [8]},
                    {"name": "weighted", "shape": [10**15, 8]},
                    {"name": "swapped", "shape": [5, 8]},
                ],
            },
            payload,
        ),
        "other width": forge(
            {
                **header,
                "arrays": [
                    sketch,
                    {"name": "sums", "shape": [4]},
                    {"name": "weighted", "shape": [5, 4]},
                    {"name": "swapped", "shape": [5, 4]},
                ],
            },
            payload,
        ),
        "short payload": forge(header, payload[:-8]),
        "no arrays": forge({**header, "arrays": []}, b""),
        "negative count": forge({**header, "n_examples": -1}, payload),
        "bad option": forge({**header, "options": {**header["options"], "average": "weighted"}}, payload),
        "unknown option": forge({**header, "options": {**header["options"], "colour": 1}}, payload),
        "unknown family": forge({**header, "family": "bleu"}, payload),
        "extra key": forge({**header, "code": "import os"}, payload),
        "not an object": forge([1, 2, 3], payload),
        "nan": forge(header, payload[:-8] + struct.pack("<d", math.nan)),
    }
    rows_state = small_states()["multinomial"]
    rows_header = json.loads(rows_state.to_bytes()[14 : 14 + struct.unpack_from("<HI", rows_state.to_bytes(), 8)[1]])
    rows = rows_state.sketch.astype("<u8").tobytes() + rows_state.named_arrays()[0][1].astype("<f8").tobytes()
    cases["huge rows"] = forge(
        {
            **rows_header,
            "n_examples": 10**15,
            "arrays": [rows_header["arrays"][0], {"name": "rows", "shape": [10**15, 8]}],
        },
        rows,
    )
    messages = {
        "magic": "magic header",
        "huge rows": "declares 64000000000000096 bytes",
        "version": "version 2",
        "huge shape": "shape",
        "unknown family": "bleu",
    }
    for case, data in cases.items():
        with pytest.raises(ValueError, match=messages.get(case)) as error:
            MetricState.from_bytes(data)
        assert "MetricState" in str(error.value) or case in ("bad option", "unknown family"), case


def test_object_options_travel_by_name_and_can_be_given_back():
    state = MetricState("sentiment_appropriateness", sentiment=toy_sentiment, bootstrap="poisson", confidence_level=0.9)
    state.update(**corpus("sentiment_appropriateness", 10, seed=3))
    loaded = MetricState.from_bytes(state.to_bytes())
    assert loaded.compute() == state.compute()
    with pytest.raises(ValueError, match="sentiment holds different objects"):
        state + loaded
    given_back = MetricState.from_bytes(state.to_bytes(), sentiment=toy_sentiment)
    later = MetricState.empty_like(state).update(**corpus("sentiment_appropriateness", 10, seed=4), start=10)
    assert (given_back + later).n_examples == 20
    with pytest.raises(ValueError, match="object option"):
        loaded.update(predictions=[["good"]], references=[["bad"]])
    restored = MetricState.from_bytes(state.to_bytes(), sentiment=toy_sentiment)
    restored.update(predictions=[["good"]], references=[["bad"]], keys=[99])
    assert restored.n_examples == 11
    with pytest.raises(ValueError, match="sentiment"):
        MetricState.from_bytes(state.to_bytes(), sentiment=len)


# --- Merging, options, reducers ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second", "named"),
    [
        ({"average": "macro"}, {"average": "micro"}, "average"),
        ({"match": "exact"}, {}, "match"),
        ({"n_resamples": 10, "confidence_level": 0.9}, {"n_resamples": 20, "confidence_level": 0.9}, "n_resamples"),
        (
            {"random_state": 1, "bootstrap": "poisson", "confidence_level": 0.9},
            {"bootstrap": "poisson", "confidence_level": 0.9},
            "random_state",
        ),
        ({"bootstrap": "poisson"}, {}, "bootstrap"),
        ({"normalize": str.lower}, {}, "normalize"),
    ],
)
def test_merging_states_of_other_options_is_refused_naming_the_option(first, second, named):
    columns = corpus("keyword_prf", 5, seed=0)
    a = MetricState("keyword_prf", **first).update(**columns)
    b = MetricState("keyword_prf", **second).update(**columns)
    with pytest.raises(ValueError, match=rf"different options: {named} "):
        a.merge(b)
    with pytest.raises(ValueError, match=named):
        MetricState.from_bytes(b.to_bytes()) + a


def test_empty_batches_add_nothing_and_mismatched_ones_are_refused():
    state = MetricState("keyword_prf", confidence_level=0.9, bootstrap="poisson", n_resamples=20)
    state.update(predictions=[], references=[], keys=[])
    empty = pa.table({"p": pa.array([], pa.list_(pa.string())), "g": pa.array([], pa.list_(pa.string()))})
    state.update(empty, predictions="p", references="g")
    ratings = MetricState("aspect_sentiment_score", aspects=ASPECTS).update(
        predictions=np.zeros((0, 3), int), references=np.zeros((0, 3), int)
    )
    assert state.n_examples == ratings.n_examples == 0 and state.sums is None
    with pytest.raises(ValueError, match="predictions has 0, references has 1"):
        state.update(predictions=[], references=[["a"]])


def test_unnamed_object_options_merge_only_when_they_are_the_same_object():
    columns = corpus("sentiment_appropriateness", 6, seed=5)
    a = MetricState("sentiment_appropriateness", sentiment=lambda text: 0.0).update(**columns)
    b = MetricState("sentiment_appropriateness", sentiment=lambda text: 1.0).update(**columns)
    with pytest.raises(ValueError, match="option sentiment holds different objects .*<lambda>"):
        a + b
    shared = MetricState("sentiment_appropriateness", sentiment=a.options["sentiment"]).update(**columns)
    assert (a + shared).n_examples == 12
    # Named models merge by name; encoders of other vectors need other names.
    war, peace = {"war": [1.0, 0.0], "peace": [0.0, 1.0]}, {"war": [1.0, 0.0], "peace": [1.0, 0.0]}
    with pytest.raises(TypeError, match="name"):
        PrecomputedEncoder(war)
    states = [
        MetricState("semantic_keyword_prf", model=PrecomputedEncoder(vectors, name=name)).update(
            predictions=[["war"]], references=[["peace"]]
        )
        for vectors, name in ((war, "model-1"), (peace, "model-2"), (war, "model-1"))
    ]
    with pytest.raises(ValueError, match="different options: model .'model-1' vs 'model-2'"):
        states[0] + states[1]
    assert (states[0] + states[2]).compute()["soft_f1"] == 0.0
    data = states[0].to_bytes()
    assert json.loads(data[14 : 14 + struct.unpack_from("<HI", data, 8)[1]])["options"]["model"] == "model-1"


def test_merging_other_families_or_objects_is_refused_and_resources_do_not_matter():
    with pytest.raises(ValueError, match="cannot merge a keyword_prf state with a keyword_diversity state"):
        MetricState("keyword_prf") + MetricState("keyword_diversity")
    with pytest.raises(TypeError, match="merges with another MetricState"):
        MetricState("keyword_prf") + {"precision": 1.0}
    model = CharacterEncoder()
    a = MetricState("semantic_keyword_prf", model=model, batch_size=8, device="cpu")
    b = MetricState("semantic_keyword_prf", model=model, batch_size=64)
    assert (a + b).n_examples == 0
    with pytest.raises(ValueError, match="has no option 'averge'; did you mean 'average'"):
        MetricState("keyword_prf", averge="micro")
    with pytest.raises(ValueError, match="bootstrap must be one of"):
        MetricState("keyword_prf", bootstrap="jackknife")
    with pytest.raises(ValueError, match="return_per_example"):
        MetricState("keyword_prf", return_per_example=True)
    with pytest.raises(ValueError, match="no examples"):
        MetricState("keyword_prf").compute()


def test_comparing_states_needs_poisson_states_over_the_same_keys():
    columns = corpus("keyword_prf", 20, seed=6)
    options = {"confidence_level": 0.9, "bootstrap": "poisson", "n_resamples": 50}
    a = MetricState("keyword_prf", **options).update(**columns)
    shifted = MetricState("keyword_prf", **options).update(**columns, keys=range(1, 21))
    with pytest.raises(ValueError, match="different keys"):
        compare_systems(a, shifted)
    plain = MetricState("keyword_prf", confidence_level=0.9).update(**columns)
    with pytest.raises(ValueError, match='bootstrap="poisson"'):
        compare_systems(plain, plain)
    with pytest.raises(ValueError, match="leave out references"):
        compare_systems("keyword_prf", a, a, columns["references"])
    with pytest.raises(ValueError, match="n_resamples=7 differs"):
        compare_systems(a, a, n_resamples=7)
    # The states' settings are used; explicit ones must match them (even when they equal the list defaults).
    seeded = {"confidence_level": 0.5, "bootstrap": "poisson", "n_resamples": 40, "random_state": 7}
    other = corpus("keyword_prf", 20, seed=9)
    a, b = (MetricState("keyword_prf", **seeded).update(**given) for given in (columns, {**columns, **other}))
    for wrong, message in [
        ({"random_state": 0}, "random_state=0 differs from the states' 7"),
        ({"n_resamples": 1000}, "n_resamples=1000 differs"),
        ({"confidence_level": 0.95}, "confidence_level=0.95 differs from the states' 0.5"),
        ({"random_state": None}, "fresh draws"),
    ]:
        with pytest.raises(ValueError, match=message):
            compare_systems(a, b, **wrong)
    result = compare_systems(a, b, method="bootstrap", confidence_level=0.5, random_state=7, n_resamples=40)["f1"]
    reducer = FAMILIES["keyword_prf"].reducer({})
    differences = reducer(b.weighted)["f1"] - reducer(a.weighted)["f1"]
    low, high = np.quantile(differences[np.isfinite(differences)], [0.25, 0.75])
    assert math.isclose(result["difference_ci_low"], low, abs_tol=1e-12)
    assert math.isclose(result["difference_ci_high"], high, abs_tol=1e-12)
    assert compare_systems(a, b, method="bootstrap")["f1"] == result  # the states' level, not 0.95
    assert all(row["p_value"] == 1.0 for row in compare_systems(a, a).values())


def test_reducers_are_built_from_the_declaration_alone_and_pickle():
    for family, options in FAMILY_OPTIONS:
        columns = fit_corpus(family, options, corpus(family, 15, seed=9))
        state = MetricState(family, **options).update(**columns)
        reducer = pickle.loads(pickle.dumps(state.reducer))
        assert isinstance(reducer, Reducer)
        expected = call(family, columns, **options)
        values = {key: float(value) for key, value in reducer(state.sums).items() if np.isfinite(value)}
        assert_same(values, {key: value for key, value in expected.items()})


def test_statistics_are_the_family_statistics_with_a_mask_of_counted_examples():
    from opinion_metrics.families.keyword_prf import keyword_prf_statistics

    columns = corpus("keyword_prf", 30, seed=12)
    matrix, included = statistics("keyword_prf", {"presence": "present", "confidence_level": 0.9}, **columns)
    expected, _, mask = keyword_prf_statistics(**columns, presence="present")
    assert np.array_equal(matrix, expected) and np.array_equal(included, mask) and not included.all()
    sas = corpus("sentiment_appropriateness", 30, seed=12)
    sas["predictions"][3], sas["texts"][4], sas["predictions"][4] = [], None, ["good"]
    sas["references"][4] = []
    matrix, included = statistics("sentiment_appropriateness", {"sentiment": toy_sentiment}, **sas)
    has_sas = [bool(p) and (bool(r) or bool(t)) for p, r, t in zip(sas["predictions"], sas["references"], sas["texts"])]
    assert included.tolist() == has_sas and not has_sas[3] and not has_sas[4] and any(has_sas)
    with pytest.raises(ValueError, match="takes no input 'scores'"):
        statistics("keyword_prf", {}, scores=[[1.0]], **columns)


def test_family_functions_take_bootstrap_poisson_and_it_differs_from_multinomial_by_monte_carlo_only():
    columns = corpus("weighted_keyword_prf", 200, seed=13)
    options = {"confidence_level": 0.95, "n_resamples": 2000}
    poisson_result = call("weighted_keyword_prf", columns, **options, bootstrap="poisson")
    multinomial_result = call("weighted_keyword_prf", columns, **options)
    assert poisson_result.keys() == multinomial_result.keys() and poisson_result != multinomial_result
    for key, value in poisson_result.items():
        assert abs(value - multinomial_result[key]) < 0.02, key
    for function, args in [
        (keyword_prf, ([["a"]], [["a"]])),
        (keyword_diversity, ([["a"]],)),
        (aspect_sentiment_score, ([[1]], [[1]])),
        (weighted_keyword_prf, ([["a"]], [[1.0]], [["a"]])),
    ]:
        with pytest.raises(ValueError, match="bootstrap must be one of"):
            function(*args, **({"aspects": ["x"]} if function is aspect_sentiment_score else {}), bootstrap="x")


# --- Hugging Face datasets ------------------------------------------------------------------------


@pytest.mark.parametrize("bootstrap", ["poisson", "multinomial"])
def test_from_dataset_with_processes_equals_the_family_function(bootstrap):
    datasets = pytest.importorskip("datasets")
    datasets.disable_progress_bars()
    columns = corpus("keyword_prf", 120, seed=14)
    data = datasets.Dataset.from_dict(
        {"pred": columns["predictions"], "gold": columns["references"], "review": columns["texts"]}
    )
    options = {**INTERVALS, "bootstrap": bootstrap, "presence": "present"}
    state = MetricState.from_dataset(
        data, "keyword_prf", predictions="pred", references="gold", texts="review", num_proc=2, batch_size=17, **options
    )
    assert state.n_examples == 120
    assert_same(state.compute(), keyword_prf(**columns, **options))


def test_from_dataset_with_a_key_column_equals_states_with_those_keys():
    datasets = pytest.importorskip("datasets")
    datasets.disable_progress_bars()
    columns = corpus("aspect_sentiment_score", 50, seed=15)
    ids = [f"hotel-{i}" for i in range(50)]
    data = datasets.Dataset.from_dict(
        {"predictions": columns["predictions"].tolist(), "references": columns["references"].tolist(), "id": ids}
    )
    options = {**INTERVALS, "bootstrap": "poisson", "aspects": ASPECTS}
    state = MetricState.from_dataset(data, "aspect_sentiment_score", key="id", batch_size=9, **options)
    direct = MetricState("aspect_sentiment_score", **options).update(**columns, keys=ids)
    assert_same(state.compute(), direct.compute())
    assert state.fingerprint == direct.fingerprint


def test_from_dataset_with_a_group_column_equals_states_with_those_groups():
    datasets = pytest.importorskip("datasets")
    datasets.disable_progress_bars()
    columns = corpus("keyword_prf", 30, seed=16)
    movies = [f"movie-{i % 4}" for i in range(30)]
    data = datasets.Dataset.from_dict(
        {"predictions": columns["predictions"], "references": columns["references"], "g": movies}
    )
    options = {**INTERVALS, "bootstrap": "poisson"}
    state = MetricState.from_dataset(data, "keyword_prf", groups="g", batch_size=7, **options)
    direct = MetricState("keyword_prf", **options)
    direct.update(predictions=columns["predictions"], references=columns["references"], groups=movies)
    assert_same(state.compute(), direct.compute())
    assert state.fingerprint == direct.fingerprint and state.positions == []


def test_movie_reviews_split_by_movie_equal_the_family_function_and_compare_systems(movie_reviews):
    sample = movie_reviews[::4]
    gold = [review["gold"] for review in sample]
    systems = {name: [review[f"keywords_{name}"] or [] for review in sample] for name in ("base", "sentiment")}
    options = {"confidence_level": 0.95, "n_resamples": 500, "bootstrap": "poisson", "average": "micro"}
    by_movie = {}
    for index, review in enumerate(sample):
        by_movie.setdefault(review["movie"], []).append(index)
    states = {}
    for name, predictions in systems.items():
        parts = [
            MetricState("keyword_prf", **options).update(
                predictions=[predictions[i] for i in rows], references=[gold[i] for i in rows], keys=rows
            )
            for rows in by_movie.values()
        ]
        states[name] = sum(reversed(parts), start=MetricState("keyword_prf", **options))
        assert_same(states[name].compute(), keyword_prf(predictions, gold, **options))
    direct = compare_systems(
        "keyword_prf",
        systems["base"],
        systems["sentiment"],
        gold,
        n_resamples=500,
        bootstrap="poisson",
        average="micro",
    )
    from_states = compare_systems(states["base"], states["sentiment"])
    for key in direct:
        assert_same(from_states[key], direct[key])
    assert len(by_movie) > 3 and from_states["f1"]["difference_ci_low"] < from_states["f1"]["difference_ci_high"]


def test_what_ships_promises_split_independence_only_with_keys_or_start():
    from conftest import REPO

    from opinion_metrics.families.options import INTERVALS

    declared = next(option for option in INTERVALS if option.name == "bootstrap").meaning
    texts = {"declaration": declared, "guide": (REPO / "docs" / "guide.md").read_text(encoding="utf-8")}
    texts["definitions"] = (REPO / "docs" / "definitions.md").read_text(encoding="utf-8")
    texts.update({card.parent.name: card.read_text(encoding="utf-8") for card in REPO.glob("metrics/*/README.md")})
    assert len(texts) == 3 + len(FAMILIES)  # every family's card
    for name, text in texts.items():
        assert "start=" in text or "`start`" in text, name
        assert "keys=" in text or "ids" in text, name
