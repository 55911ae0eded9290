"""One big corpus on every core: a `MetricState` per contiguous chunk in worker processes,
merged in chunk order, computed once (the CLI's `--workers`).

The result equals the single-process one: chunks keep their global positions, so position
keys, and with multinomial intervals the concatenated statistics, are those of one process.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import re
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any

from tqdm.auto import tqdm

from .state import MetricState, unnamed_objects

# Per-example inputs that the family functions take as keyword arguments.
PER_EXAMPLE = ("texts", "prediction_sentiments")
# Below this many examples per worker, processes cost more than they save.
MIN_CHUNK = 2_000
# Families whose model would be loaded once per process: they stay in one process.
ONE_PROCESS = ("semantic_keyword_prf", "keyword_diversity")

_work: dict[str, Any] = {}  # what forked workers read instead of receiving it pickled


def available_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def chunk_bounds(n: int, workers: int) -> list[tuple[int, int]]:
    """Contiguous (start, stop) chunks: a few per worker (for balance), none under MIN_CHUNK."""
    count = max(1, min(workers * 4, n // MIN_CHUNK))
    edges = [n * i // count for i in range(count + 1)]
    return [(edges[i], edges[i + 1]) for i in range(count)]


def compute(
    family: str,
    predictions: Sequence[Any],
    references: Sequence[Any] | None,
    *,
    scores: Sequence[Any] | None = None,
    workers: int,
    **options: Any,
) -> dict[str, Any]:
    """The family's result on the corpus, computed in `workers` processes (see module doc)."""
    columns = {"predictions": predictions, "references": references, "scores": scores}
    columns.update({name: options.pop(name) for name in PER_EXAMPLE if name in options})
    columns = {name: column for name, column in columns.items() if column is not None}
    state = MetricState(family, **options)  # checks the options here, before forking
    bounds = chunk_bounds(len(predictions), workers)
    processes = min(workers, len(bounds), available_cpus())  # a pool forks all its processes at once
    if processes < 2 or family in ONE_PROCESS:
        return state.merge(_chunk_state(family, options, columns, 0, len(predictions))).compute()
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    shared = context.get_start_method() == "fork"
    # Forked workers keep the parent's rows out of their garbage collections (their pages stay shared).
    pool = ProcessPoolExecutor(processes, mp_context=context, initializer=gc.freeze if shared else None)
    progress = tqdm(
        total=len(predictions), desc=f"{family}, {processes} processes", unit="example", leave=False, disable=None
    )
    _work.update(family=family, options=options, columns=columns)
    try:
        with pool, progress:
            futures = []
            for start, stop in bounds:
                future = (
                    pool.submit(_forked_chunk, start, stop)
                    if shared
                    else pool.submit(_chunk_bytes, family, options, _sliced(columns, start, stop), start)
                )
                future.add_done_callback(lambda _, size=stop - start: progress.update(size))
                futures.append(future)
            for future in futures:  # chunk order (multinomial statistics concatenate in order), as they finish
                state = state.merge(MetricState.from_bytes(future.result(), **unnamed_objects(options)))
    finally:
        _work.clear()
    return state.compute()


def _sliced(columns: dict[str, Sequence[Any]], start: int, stop: int) -> dict[str, Sequence[Any]]:
    return {name: column[start:stop] for name, column in columns.items()}


_EXAMPLE = re.compile(r"\bexample (\d+)")


@contextmanager
def _named_in_corpus(start: int) -> Iterator[None]:
    """A chunk's error names its example as one process would: "example 3" of the chunk
    starting at `start` is example `start + 3` of the corpus (the first mention, the example's)."""
    try:
        yield
    except (ValueError, TypeError) as error:
        if start and error.args and isinstance(error.args[0], str):
            shifted = _EXAMPLE.sub(lambda found: f"example {start + int(found.group(1))}", error.args[0], count=1)
            error.args = (shifted, *error.args[1:])
        raise


def _chunk_state(
    family: str, options: dict[str, Any], columns: dict[str, Sequence[Any]], start: int, stop: int
) -> MetricState:
    state = MetricState(family, **options)
    with _named_in_corpus(start):
        state.update(**_sliced(columns, start, stop), keys=range(start, stop))
    return state


def _chunk_bytes(family: str, options: dict[str, Any], columns: dict[str, Sequence[Any]], offset: int) -> bytes:
    state = MetricState(family, **options)
    n = len(columns["predictions"])
    with _named_in_corpus(offset):
        state.update(**columns, keys=range(offset, offset + n))
    return state.to_bytes()


def _forked_chunk(start: int, stop: int) -> bytes:
    return _chunk_state(_work["family"], _work["options"], _work["columns"], start, stop).to_bytes()
