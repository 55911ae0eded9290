"""Dask: the recipe of docs/scaling.md (a task per Parquet file, one state per model, only
the states' bytes travel, merged per model on the client) equals each model's rows
evaluated alone."""

from __future__ import annotations

import pytest
from engine_cases import POISSON, assert_rows, by_truth, random_corpus, random_slices

pa = pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def corpus() -> pa.Table:
    return random_corpus(300, seed=7)


def file_states(path, options: dict) -> dict:
    """The recipe's task: one state per model of one Parquet file, a batch at a time; only
    the states' bytes leave the worker (never rows)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from opinion_metrics import MetricState

    states = {}
    with pq.ParquetFile(path) as file:
        for batch in file.iter_batches(batch_size=50, columns=["review_id", "model", "predictions", "references"]):
            for model in pc.unique(batch.column("model")).to_pylist():
                rows = batch.filter(pc.equal(batch.column("model"), model))
                state = states.setdefault(model, MetricState("keyword_prf", **options))
                state.update(rows, predictions="predictions", references="references", keys="review_id")
    return {model: state.to_bytes() for model, state in states.items()}


@pytest.mark.slow
def test_dask_recipe(corpus, tmp_path):
    """The documented recipe: a task per file (the processes scheduler: only states travel
    through the client), one state per model, merged per model on the client; equal to each
    model's rows evaluated alone."""
    dask = pytest.importorskip("dask")
    import pyarrow.parquet as pq

    from opinion_metrics import MetricState

    table = corpus.append_column("model", pa.array(["a" if i % 3 else "b" for i in range(corpus.num_rows)]))
    for part, piece in enumerate(random_slices(table, 4, seed=5)):
        pq.write_table(piece, tmp_path / f"part-{part}.parquet")
    options = {"average": "micro", "bootstrap": "poisson", **POISSON}
    files = sorted(tmp_path.glob("*.parquet"))
    parts = dask.compute(*[dask.delayed(file_states)(path, options) for path in files], scheduler="processes")
    merged: dict = {}
    for part in parts:
        for model, data in part.items():
            state = MetricState.from_bytes(data)
            merged[model] = merged[model].merge(state) if model in merged else state
    results = [{"model": model, **state.compute()} for model, state in sorted(merged.items())]
    assert_rows(results, by_truth(table, "keyword_prf", {}, options, "model", "review_id"))
