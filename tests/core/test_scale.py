"""A datasets.Dataset of 100k+ rows through add_batch: right values, flat memory while adding."""

import importlib.util
import tracemalloc
import uuid

import pytest
from conftest import REPO

datasets = pytest.importorskip("datasets")
evaluate = pytest.importorskip("evaluate")

from opinion_metrics import keyword_prf  # noqa: E402

pytestmark = pytest.mark.slow

spec = importlib.util.spec_from_file_location("evaluate_large_dataset", REPO / "examples" / "evaluate_large_dataset.py")
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)


def test_100k_rows_in_batches_with_flat_memory():
    rows, batch_size = 120_000, 10_000
    dataset = example.synthetic_dataset(rows)
    metric = evaluate.load(str(REPO / "metrics" / "keyword_prf"), experiment_id=uuid.uuid4().hex)
    peaks = []
    tracemalloc.start()
    try:
        for batch in dataset.iter(batch_size=batch_size):
            tracemalloc.reset_peak()
            metric.add_batch(predictions=batch["keywords"], references=batch["gold"])
            peaks.append(tracemalloc.get_traced_memory()[1])
            del batch
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    # Each batch costs about the same, and what stays allocated is far below the data size.
    assert len(peaks) == rows // batch_size
    assert max(peaks[1:]) < 1.5 * peaks[1]
    assert held < 2 * max(peaks)
    result = metric.compute(average="micro")
    expected = keyword_prf(dataset["keywords"][:], dataset["gold"][:], average="micro")
    assert result == pytest.approx(expected)


def test_the_example_script_runs():
    result = example.evaluate_in_batches(example.synthetic_dataset(2_000), 500, experiment_id=uuid.uuid4().hex)
    assert set(result) == {"precision", "recall", "f1"} and 0 < result["precision"] < 1
