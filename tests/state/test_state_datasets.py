"""MetricState from Hugging Face datasets (processes, key and group columns) and over the real
movie reviews split by movie: equal to the family functions and to compare_systems."""

from __future__ import annotations

import pytest
from state_cases import ASPECTS, INTERVALS, assert_same, corpus

from opinion_metrics import MetricState, compare_systems, keyword_prf


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
