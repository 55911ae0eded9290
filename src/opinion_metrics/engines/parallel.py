"""One big corpus on every core: a `MetricState` per contiguous chunk in worker processes,
merged in chunk order, computed once (the CLI's `--workers`).

The result equals the single-process one: chunks keep their global positions, so position
keys, and with multinomial intervals the concatenated statistics, are those of one process.
"""

from __future__ import annotations

import gc
import multiprocessing
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from ..core.cpus import available_cpus
from ..core.positions import rename_example
from ..state.metric_state import MetricState
from ..state.options import unnamed_objects

# Per-example inputs that the family functions take as keyword arguments.
PER_EXAMPLE = ("texts", "prediction_sentiments")


# Below this many examples per worker, processes cost more than they save.
MIN_CHUNK = 2_000


# Families whose model would be loaded once per process: they stay in one process.
ONE_PROCESS = ("semantic_keyword_prf", "keyword_diversity")


_work: dict[str, Any] = {}  # what forked workers read instead of receiving it pickled


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
    keys: Sequence[Any] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """The family's result on the corpus, computed in `workers` processes (see module doc).

    `keys` (one per example, e.g. the groups of pooled examples) are the Poisson bootstrap's
    keys; without them an example's key is its position. Columns of a Parquet file or folder
    (`tables.SourceColumn`) are streamed a batch at a time (`BATCH_ROWS` rows), in this
    process or, with workers, each worker reading its own chunks of row groups: the rows are
    never all in memory."""
    columns = {"predictions": predictions, "references": references, "scores": scores}
    columns.update({name: options.pop(name) for name in PER_EXAMPLE if name in options})
    columns = {name: column for name, column in columns.items() if column is not None}
    if family == "sentiment_appropriateness" and (workers > 1 or _source(columns) is not None):
        options.setdefault("workers", 1)  # one VADER per process (never forks inside a worker or per batch)
    state = MetricState(family, **options)  # checks the options here, before forking
    source = _source(columns)
    bounds = (
        _streamed_chunks(columns, source, workers) if source is not None else chunk_bounds(len(predictions), workers)
    )
    processes = min(workers, len(bounds), available_cpus())  # a pool forks all its processes at once
    if processes < 2 or family in ONE_PROCESS:
        chunks = bounds if source is not None else [(0, len(predictions))]
        with tqdm(
            total=len(predictions), desc=family, unit="example", leave=False, disable=None if source else True
        ) as progress:
            for chunk in chunks:
                state = state.merge(_chunk_state(family, options, columns, keys, *chunk))
                progress.update(chunk[1] - chunk[0])
        return state.compute()
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    shared = context.get_start_method() == "fork"
    # Forked workers keep the parent's rows out of their garbage collections (their pages stay shared).
    pool = ProcessPoolExecutor(processes, mp_context=context, initializer=gc.freeze if shared else None)
    progress = tqdm(
        total=len(predictions), desc=f"{family}, {processes} processes", unit="example", leave=False, disable=None
    )
    _work.update(family=family, options=options, columns=columns, keys=keys)
    try:
        with pool, progress:
            futures = []
            for chunk in bounds:
                start, stop = chunk[:2]
                if shared:
                    future = pool.submit(_forked_chunk, *chunk)
                else:
                    future = pool.submit(_chunk_bytes, family, options, *_sliced(columns, keys, *chunk))
                future.add_done_callback(lambda _, size=stop - start: progress.update(size))
                futures.append(future)
            for future in futures:  # chunk order (multinomial statistics concatenate in order), as they finish
                state = state.merge(MetricState.from_bytes(future.result(), **unnamed_objects(options)))
    finally:
        _work.clear()
    return state.compute()


def _source(columns: dict[str, Sequence[Any]]) -> Any:
    """The Parquet source the columns stream from (its columns of the same rows, in file
    order), or None: the columns are then sequences in memory."""
    from ..io.arrow import SourceColumn, streamed

    found = [column for column in columns.values() if isinstance(column, SourceColumn)]
    if not found or not all(map(streamed, found)):
        return None
    first = found[0]
    same = all(
        column.source is first.source
        and (column.rows is first.rows or np.array_equal(column.row_numbers(), first.row_numbers()))
        for column in found
    )
    return first.source if same else None


def _selection(columns: dict[str, Sequence[Any]]) -> np.ndarray | None:
    from ..io.arrow import SourceColumn

    return next(column.rows for column in columns.values() if isinstance(column, SourceColumn))


def _streamed_chunks(columns: dict[str, Sequence[Any]], source: Any, workers: int) -> list[tuple[int, int, int, int]]:
    """(first example, stop example, first row, stop row) per chunk of the source's row groups
    holding some of the examples (`ParquetSource.chunks`)."""
    rows = _selection(columns)
    chunks = []
    for low, high in source.chunks(max(1, min(workers, available_cpus()))):
        start, stop = (low, high) if rows is None else map(int, np.searchsorted(rows, [low, high]))
        if stop > start:
            chunks.append((start, stop, low, high))
    return chunks


def _sliced(
    columns: dict[str, Sequence[Any]], keys: Sequence[Any] | None, start: int, stop: int, *rows: int
) -> tuple[dict[str, Sequence[Any]], Sequence[Any] | None, int, int, int, int]:
    """A chunk's columns and keys, to send to a spawned worker (streamed columns stay unread)."""
    sliced = {name: column if hasattr(column, "source") else column[start:stop] for name, column in columns.items()}
    return sliced, None if keys is None else keys[start:stop], start, stop, *rows


@contextmanager
def _named_in_corpus(start: int) -> Iterator[None]:
    """A chunk's error names its example as one process would: "example 3" of the chunk
    starting at `start` is example `start + 3` of the corpus (the first mention, the example's)."""
    try:
        yield
    except (ValueError, TypeError) as error:
        if start and error.args and isinstance(error.args[0], str):
            shifted = rename_example(error.args[0], lambda example: f"example {start + example}")
            error.args = (shifted, *error.args[1:])
        raise


def _chunk_state(
    family: str,
    options: dict[str, Any],
    columns: dict[str, Sequence[Any]],
    keys: Sequence[Any] | None,
    start: int,
    stop: int,
    first_row: int | None = None,
    stop_row: int | None = None,
    offset: int = 0,
) -> MetricState:
    """The state of examples [start, stop): columns in memory are indexed from `offset` (a
    spawned worker's slice); streamed columns are read from rows [first_row, stop_row) of
    their file, a batch at a time."""
    from ..io.arrow import batch_values, selected

    state = MetricState(family, **options)
    streamed = {name: column for name, column in columns.items() if hasattr(column, "source")}
    if not streamed:
        with _named_in_corpus(start):
            state.update(**_slices(columns, start - offset, stop - offset), keys=_keys(keys, start, stop, offset))
        return state
    source, rows = next(iter(streamed.values())).source, _selection(streamed)
    names = {name: column.name for name, column in streamed.items()}
    shared = [names["references"]] if "references" in names else []
    position = start
    for batch_start, table in source.batches(list(dict.fromkeys(names.values())), first_row, stop_row):
        if rows is not None:
            table = selected(table, rows, batch_start)
        if not table.num_rows:
            continue
        values = batch_values(source, table, shared)
        end = position + table.num_rows
        given = {name: values[column] for name, column in names.items()}
        given.update(_slices({n: c for n, c in columns.items() if n not in names}, position - offset, end - offset))
        with _named_in_corpus(position):
            state.update(**given, keys=_keys(keys, position, end, offset))
        position = end
    return state


def _slices(columns: dict[str, Sequence[Any]], start: int, stop: int) -> dict[str, Sequence[Any]]:
    return {name: column[start:stop] for name, column in columns.items()}


def _keys(keys: Sequence[Any] | None, start: int, stop: int, offset: int) -> Sequence[Any]:
    """The examples' Poisson keys: the given ones, else their positions in the corpus."""
    return range(start, stop) if keys is None else keys[start - offset : stop - offset]


def _chunk_bytes(
    family: str,
    options: dict[str, Any],
    columns: dict[str, Sequence[Any]],
    keys: Sequence[Any] | None,
    start: int,
    stop: int,
    *rows: int,
) -> bytes:
    """A spawned worker's chunk: its columns sliced from `start` (streamed ones whole)."""
    return _chunk_state(family, options, columns, keys, start, stop, *rows, offset=start).to_bytes()


def _forked_chunk(start: int, stop: int, *rows: int) -> bytes:
    return _chunk_state(
        _work["family"], _work["options"], _work["columns"], _work["keys"], start, stop, *rows
    ).to_bytes()
