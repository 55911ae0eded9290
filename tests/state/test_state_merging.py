"""MetricState merged (SPEC section 12): states fed in random batches and merged in random
orders equal the family functions; positions, keys and start; merging refusals; options,
reducers and statistics; what ships says about split independence."""

from __future__ import annotations

import json
import math
import pickle
import struct
import zlib

import numpy as np
import pyarrow as pa
import pytest
from state_cases import (
    ASPECTS,
    FAMILY_OPTIONS,
    INTERVALS,
    CharacterEncoder,
    assert_same,
    corpus,
    fit_corpus,
    merged_state,
    part,
    random_cuts,
    toy_sentiment,
)

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


def call(family, columns, **options):
    """The family function on the whole corpus."""
    function = FAMILIES[family].function
    if family == "weighted_keyword_prf":
        rest = {k: v for k, v in columns.items() if k not in ("predictions", "scores", "references")}
        return function(columns["predictions"], columns["scores"], columns["references"], **rest, **options)
    return function(**columns, **options)


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
