"""Engines under issue 29: `from_dataset` gives function and model options back as
`--workers` does; every engine names a bad row by its key (and its dataset row or partition);
a task that dies once and is retried (Spark local[2,3], a Ray worker) never trips the
distinct-key check and gives the family function's values.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from conftest import local_ray_data, local_spark
from state_cases import CharacterEncoder, corpus, toy_sentiment

from opinion_metrics import MetricState, semantic_keyword_prf, sentiment_appropriateness

datasets = pytest.importorskip("datasets")
pa = pytest.importorskip("pyarrow")


def test_from_dataset_gives_function_and_model_options_back():
    """Refused before: each batch's state came back with the function as a description only."""
    columns = corpus("sentiment_appropriateness", 30, seed=1)
    data = datasets.Dataset.from_dict({"predictions": columns["predictions"], "references": columns["references"]})
    state = MetricState.from_dataset(
        data, "sentiment_appropriateness", sentiment=toy_sentiment, batch_size=7, num_proc=2
    )  # the function pickled to the processes, and given back to the states they return
    expected = sentiment_appropriateness(columns["predictions"], columns["references"], sentiment=toy_sentiment)
    assert state.compute() == pytest.approx(expected, abs=1e-12)
    model = CharacterEncoder()
    state = MetricState.from_dataset(data, "semantic_keyword_prf", model=model, threshold=0.8, batch_size=9)
    expected = semantic_keyword_prf(columns["predictions"], columns["references"], model=model, threshold=0.8)
    assert state.compute() == pytest.approx(expected, abs=1e-12)


def scored_with_a_bad_score_at(n: int, row: int) -> dict:
    """Weighted-family columns with a score of 1.5 (outside [0, 1]) in row `row`, ids r0, r1, ..."""
    columns = corpus("weighted_keyword_prf", n, seed=n)
    columns["predictions"][row] = ["jedi", "war"]
    columns["scores"][row] = [0.5, 1.5]
    return {
        "predictions": columns["predictions"],
        "scores": columns["scores"],
        "references": columns["references"],
        "review_id": [f"r{i}" for i in range(n)],
    }


def test_from_dataset_names_a_bad_row_by_its_dataset_row_and_key():
    """ "example 1" (its place in its batch of 3) for dataset row 7, before."""
    data = datasets.Dataset.from_dict(scored_with_a_bad_score_at(20, 7))
    message = r"scores: example 7{}, keyword 1 \('war'\): score 1.5 is outside \[0, 1\]"
    with pytest.raises(ValueError, match=message.format("")):
        MetricState.from_dataset(data, "weighted_keyword_prf", scores="scores", batch_size=3)
    with pytest.raises(ValueError, match=message.format(r" \(review_id='r7'\)")):
        MetricState.from_dataset(data, "weighted_keyword_prf", scores="scores", key="review_id", batch_size=3)


@pytest.fixture(scope="module")
def ray_data():
    yield from local_ray_data()


@pytest.fixture(scope="module")
def spark():
    """A Spark session whose tasks may fail 3 times (local[2,3]): a failed task is retried."""
    yield from local_spark("local[2,3]", "opinion-metrics retries", "OFF")


def sentiment_of(text: str) -> float:
    return (sum(map(ord, text)) % 101) / 100


def dies_once(marker: str):
    """`sentiment_of`, but the process dies the first time it is called anywhere (a lost
    executor, a killed Ray worker): its task is retried (a local function: pickled by value)."""

    def sentiment(text: str) -> float:

        if not os.path.exists(marker):
            with open(marker, "w"):
                pass
            os._exit(1)
        return (sum(map(ord, text)) % 101) / 100

    return sentiment


def retry_cases(tmp_path):
    """(table, key, options, expected, marker) without intervals (keyless states) and with
    Poisson intervals keyed by review_id."""
    columns = corpus("sentiment_appropriateness", 200, seed=4)
    table = pa.table(
        {
            "predictions": columns["predictions"],
            "references": columns["references"],
            "review_id": pa.array(np.arange(200)),
        }
    )
    poisson = {"confidence_level": 0.9, "n_resamples": 50, "bootstrap": "poisson"}
    for name, key, options in [("values", None, {}), ("poisson", "review_id", poisson)]:
        marker = tmp_path / f"died-{name}"
        expected = sentiment_appropriateness(
            columns["predictions"], columns["references"], sentiment=sentiment_of, **options
        )
        yield table, key, {**options, "sentiment": dies_once(str(marker))}, expected, marker


@pytest.mark.slow
def test_spark_tasks_retried_after_a_lost_worker_give_the_family_function(spark, tmp_path):
    from opinion_metrics import spark as om_spark

    for table, key, options, expected, marker in retry_cases(tmp_path):
        frame = spark.createDataFrame(table).repartition(6)
        result = om_spark.evaluate(frame, "sentiment_appropriateness", key=key, **options)
        assert marker.exists()  # a task did die, and was retried
        assert result == pytest.approx(expected, abs=1e-12)


@pytest.mark.slow
def test_ray_tasks_retried_after_a_lost_worker_give_the_family_function(ray_data, tmp_path):
    from opinion_metrics import ray as om_ray

    for table, key, options, expected, marker in retry_cases(tmp_path):
        dataset = ray_data.from_arrow(table).repartition(6)
        result = om_ray.evaluate(dataset, "sentiment_appropriateness", key=key, **options)
        assert marker.exists()
        assert result == pytest.approx(expected, abs=1e-12)


@pytest.mark.slow
def test_spark_and_ray_name_a_bad_row_by_its_key(spark, ray_data):
    """ "example 5" (its place in a block) for the dataset's row 33, before."""
    from opinion_metrics import ray as om_ray
    from opinion_metrics import spark as om_spark

    table = pa.table(scored_with_a_bad_score_at(80, 33))
    message = r"scores: the row with review_id='r33' \(row \d+ of {}\), keyword 1 \('war'\): score 1.5 is outside"
    frame = spark.createDataFrame(table).repartition(3)
    with pytest.raises(Exception, match=message.format(r"partition \d")):
        om_spark.evaluate(frame, "weighted_keyword_prf", scores="scores", key="review_id")
    dataset = ray_data.from_arrow(table).repartition(4)
    with pytest.raises(ValueError) as raised:  # the project's message first, not "UDF failed ..." (issue 37)
        om_ray.evaluate(dataset, "weighted_keyword_prf", scores="scores", key="review_id")
    assert re.match(message.format("its block"), str(raised.value)), str(raised.value)[:300]


@pytest.mark.slow
def test_a_ray_worker_error_is_a_value_error_with_the_projects_message_first(ray_data):
    """A worker's error in pooling groups and in the states alike: before, Ray's
    RayTaskError(UserCodeException), not a ValueError, its text a traceback under "UDF failed"."""
    from opinion_metrics import ray as om_ray

    table = pa.table({**scored_with_a_bad_score_at(40, 12), "movie": ["a", None] + ["b"] * 38})
    dataset = ray_data.from_arrow(table).repartition(3)
    with pytest.raises(ValueError) as raised:
        om_ray.evaluate(dataset, "keyword_prf", groups="movie")
    assert str(raised.value).startswith("groups: example 0 has no group (None): give every example a group")
    with pytest.raises(ValueError) as raised:
        om_ray.evaluate(dataset, "weighted_keyword_prf", scores="scores")
    assert str(raised.value).startswith("scores: row "), str(raised.value)[:300]
    assert "keyword 1 ('war'): score 1.5 is outside [0, 1]" in str(raised.value).splitlines()[0]
