"""Evaluate a large `datasets.Dataset` batch by batch with flat memory.

The keyword module validates each batch and appends it to evaluate's Arrow cache on disk,
so memory during the loop is one batch, whatever the number of rows:

    python examples/evaluate_large_dataset.py --rows 200000 --batch-size 10000
"""

from __future__ import annotations

import argparse
import os
import random
import time
import tracemalloc
from pathlib import Path

os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")

import datasets  # noqa: E402
import evaluate  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
VOCABULARY = [
    f"{a} {b}"
    for a in ("space", "star", "dark", "epic", "slow", "great")
    for b in ("war", "opera", "plot", "score", "hero")
]


def synthetic_dataset(rows: int, seed: int = 0) -> datasets.Dataset:
    """Reviews with 5 predicted keywords and 8 gold keywords each."""
    rng = random.Random(seed)
    return datasets.Dataset.from_dict(
        {
            "keywords": [rng.sample(VOCABULARY, 5) for _ in range(rows)],
            "gold": [rng.sample(VOCABULARY, 8) for _ in range(rows)],
        }
    )


def evaluate_in_batches(dataset: datasets.Dataset, batch_size: int, experiment_id: str | None = None) -> dict:
    """add_batch over Dataset.iter, then one compute."""
    metric = evaluate.load(str(REPO / "metrics" / "keyword_prf"), experiment_id=experiment_id)
    for batch in dataset.iter(batch_size=batch_size):
        metric.add_batch(predictions=batch["keywords"], references=batch["gold"])
    return metric.compute(average="micro")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--batch-size", type=int, default=10_000)
    args = parser.parse_args()
    dataset = synthetic_dataset(args.rows)
    tracemalloc.start()
    start = time.perf_counter()
    result = evaluate_in_batches(dataset, args.batch_size)
    elapsed = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    print(
        f"{args.rows} rows in batches of {args.batch_size}: {elapsed:.1f} s, peak Python memory {peak / 2**20:.0f} MiB"
    )
    print(result)


if __name__ == "__main__":
    main()
