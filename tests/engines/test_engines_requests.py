"""What the engines check and arrange before the work, without an engine running: requests
they cannot do exactly refused before the dataset is touched, only the needed columns read,
one VADER per worker with a process cache, model actors leaving a CPU for reading, a
keyword the vocabulary pass missed embedded where it is met."""

from __future__ import annotations

import numpy as np
import pytest
from engine_cases import hash_encoder, ray_engine, spark_engine

pa = pytest.importorskip("pyarrow")


def test_engines_refuse_what_they_cannot_do_exactly():
    """Checked before the dataset is touched (no engine needed)."""
    from opinion_metrics import ray as om_ray
    from opinion_metrics import spark as om_spark

    for evaluate in (om_ray.evaluate, om_spark.evaluate):
        with pytest.raises(ValueError, match="key="):
            evaluate(None, "keyword_prf", confidence_level=0.95, bootstrap="poisson")
        with pytest.raises(ValueError, match="bootstrap='poisson'"):
            evaluate(None, "keyword_prf", key="review_id", confidence_level=0.95)
        with pytest.raises(ValueError, match="keyword_prf takes no scores"):
            evaluate(None, "keyword_prf", scores="scores")
        with pytest.raises(ValueError, match="has no option 'averge'"):
            evaluate(None, "keyword_prf", averge="micro")
        with pytest.raises(ValueError, match="cannot be pooled"):
            evaluate(None, "aspect_sentiment_score", groups="movie")
        with pytest.raises(ValueError, match="must name a column"):
            evaluate(None, "keyword_prf", predictions=["a"])


class _Projection(Exception):
    pass


class _Recorder:
    """A stand-in dataset: records the columns selected, then stops the evaluation."""

    def __init__(self) -> None:
        self.selected = None

    def select_columns(self, names):  # Ray Data
        self.selected = list(names)
        raise _Projection

    def select(self, *names):  # Spark
        self.selected = list(names)
        raise _Projection


@pytest.mark.parametrize("engine", ["ray", "spark"])
def test_only_the_needed_columns_are_read(engine):
    """The first thing each engine does is select the columns the family reads (pushed down
    into the reading), before any shuffle for partitions= or groups=."""
    pytest.importorskip("pyarrow")
    module = ray_engine() if engine == "ray" else spark_engine()
    cases = [
        ({"predictions": "keywords", "references": "gold"}, ["keywords", "gold"]),
        ({"predictions": "keywords", "scores": "s", "key": "id", "by": "model", "groups": "movie",
          "references": {"m": ["a"]}, "gold_key": "movie"}, ["keywords", "s", "id", "model", "movie"]),
    ]  # fmt: skip
    for family, (arguments, expected) in zip(["keyword_prf", "weighted_keyword_prf"], cases):
        recorder = _Recorder()
        with pytest.raises(_Projection):
            module.evaluate(recorder, family, partitions=8, **arguments)
        assert recorder.selected == expected


def test_sentiment_runs_one_vader_per_engine_worker_with_a_process_cache(monkeypatch):
    """Engines run VADER in their own worker (no processes forked inside it); each process
    keeps one cache of VADER's scores, so a review is scored once, not once per block."""
    from opinion_metrics.engines.support import check_request
    from opinion_metrics.families import sentiment_appropriateness as sentiment

    request = check_request("sentiment_appropriateness", {"predictions": "p", "texts": "t"}, None, None, {})
    assert request.options["workers"] == 1
    texts = ["a wonderful film.", "a terrible plot."]
    first = sentiment.sentiment_appropriateness([["great"], ["boring"]], texts=texts, workers=1)

    def unavailable(*_):
        raise AssertionError("VADER ran again on strings this process has scored")

    monkeypatch.setattr(sentiment, "vader_sentiment", lambda mapping: unavailable)
    again = sentiment.sentiment_appropriateness([["boring"], ["great"]], texts=texts[::-1], workers=1)
    assert again["sas_from_text"] == first["sas_from_text"]


def test_model_actors_leave_a_cpu_for_reading():
    """The embedding stage: one actor per GPU where the cluster has GPUs; else CPU actors
    sharing every CPU but one (for their torch threads), never all of them."""
    pytest.importorskip("pyarrow")
    from opinion_metrics.ray import model_actors

    assert model_actors({"CPU": 2.0}, None, None) == (1, 0, 1)
    assert model_actors({"CPU": 16.0}, None, None) == (1, 0, 15)
    assert model_actors({"CPU": 16.0}, 4, None) == (4, 0, 3)
    assert model_actors({"CPU": 2.0}, 3, None) == (1, 0, 1)
    assert model_actors({"CPU": 1.0}, None, None) == (1, 0, 0)
    assert model_actors({"CPU": 16.0, "GPU": 4.0}, None, None) == (4, 1, 1)
    assert model_actors({"CPU": 16.0, "GPU": 4.0}, None, 0.5) == (8, 0.5, 1)
    assert model_actors({"CPU": 16.0, "GPU": 4.0}, 2, None) == (2, 1, 1)


def test_a_keyword_the_vocabulary_pass_missed_is_embedded_where_it_is_met():
    """A dataset whose rows differ between the two passes (`limit`, sampling) gives the
    statistics keywords the vocabulary never saw: they are embedded there, by the model."""
    from opinion_metrics.engines.vectors import VectorLookup, embed_keywords, vector_table

    encoder = hash_encoder()
    keywords = ["jedi", "dark side", "the force", "droid", "wookiee"]
    known = embed_keywords(pa.table({"keyword": keywords[:2]}), encoder, "cpu", 8)
    every = embed_keywords(pa.table({"keyword": keywords}), encoder, "cpu", 8)
    lookup = VectorLookup(vector_table([known]), "toy", fallback=(encoder, "cpu", 8))
    order = ["droid", "jedi", "wookiee", "droid", "dark side", "the force"]
    expected = np.stack([every.column("vector")[keywords.index(word)].values.to_numpy() for word in order])
    assert np.array_equal(lookup.encode(order), expected)
    with pytest.raises(ValueError, match="no precomputed embedding for the keyword 'droid'"):
        VectorLookup(vector_table([known]), "toy").encode(["jedi", "droid"])
