"""The Poisson bootstrap of MetricState (SPEC section 12): intervals and paired tests do not
depend on the partitioning; coverage; the counter-based weights against a pure-Python
generator; keys and groups, from lists, numpy, pandas and Arrow (dictionary-encoded too)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from state_cases import ASPECTS, INTERVALS, assert_same, corpus, merged_state, part, random_cuts

from opinion_metrics import MetricState, compare_systems, keyword_prf
from opinion_metrics.families.registry import FAMILIES
from opinion_metrics.state.metric_state import statistics
from opinion_metrics.stats import poisson


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
