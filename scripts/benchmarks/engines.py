"""Engines: one big corpus split over processes, Ray Data and Spark (--families engines)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from .common import RUNNER, _parquet_rows, same

ENGINE_FILES = 16


def write_engine_corpus(rows: int, directory: Path, seed: int = 0) -> None:
    """`rows` synthetic examples in ENGINE_FILES Parquet files (part-XX.parquet) and in one
    file (all.parquet, for the CLI): review_id, 5 predictions and 5-20 gold keywords of its
    own per row, drawn from 20,000 phrases (built column-wise with Arrow: seconds, not minutes)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(600)])
    phrases = pa.array([" ".join(rng.choice(words, rng.integers(1, 4), replace=False)) for _ in range(20_000)])
    directory.mkdir(parents=True, exist_ok=True)
    writer = pq.ParquetWriter(directory / "all.parquet", _engine_schema())
    for part, (start, stop) in enumerate(_bounds(rows, ENGINE_FILES)):
        n = stop - start
        gold_sizes = rng.integers(5, 21, n)
        predictions = pa.ListArray.from_arrays(
            pa.array(np.arange(n + 1) * 5, pa.int32()), phrases.take(rng.integers(0, len(phrases), n * 5))
        )
        gold_offsets = np.concatenate([[0], np.cumsum(gold_sizes)]).astype(np.int32)
        references = pa.ListArray.from_arrays(
            pa.array(gold_offsets), phrases.take(rng.integers(0, len(phrases), int(gold_offsets[-1])))
        )
        table = pa.table(
            {"review_id": pa.array(np.arange(start, stop)), "predictions": predictions, "references": references},
            schema=_engine_schema(),
        )
        pq.write_table(table, directory / f"part-{part:02d}.parquet")
        writer.write_table(table)
    writer.close()


def _engine_schema():
    import pyarrow as pa

    keywords = pa.list_(pa.string())
    return pa.schema([("review_id", pa.int64()), ("predictions", keywords), ("references", keywords)])


def _bounds(n: int, parts: int) -> list[tuple[int, int]]:
    edges = [n * i // parts for i in range(parts + 1)]
    return list(zip(edges, edges[1:]))


INTERVALS = {"confidence_level": 0.95, "bootstrap": "poisson", "n_resamples": 1000}


def engine_run(engine: str, directory: Path, workers: int, intervals: bool) -> dict:
    """One timed evaluation of keyword_prf (point values, or with 1,000 Poisson resamples)
    in this fresh process: {"seconds", "result", "driver_peak_mib", "state_bytes"}."""
    import resource

    options = INTERVALS if intervals else {}
    parts = sorted(str(path) for path in directory.glob("part-*.parquet"))
    state = None
    start = time.perf_counter()
    if engine == "single":  # the family function on the whole corpus, read into Python lists
        import pyarrow.parquet as pq

        from opinion_metrics import keyword_prf

        table = pq.read_table(directory / "all.parquet")
        result = keyword_prf(table.column("predictions").to_pylist(), table.column("references").to_pylist(), **options)
    elif engine == "states":  # one process, one state per file: the memory of one file at a time
        import pyarrow.parquet as pq

        from opinion_metrics import MetricState

        state = MetricState("keyword_prf", **options)
        for path in parts:
            state.update_arrow(pq.read_table(path), predictions="predictions", references="references", key="review_id")
        result = state.compute()
    elif engine == "cli":  # the command line, --workers N (1: one process)
        import contextlib
        import io

        from opinion_metrics import cli

        output = directory / f"cli-{workers}.json"
        flags = ["--ci", "0.95", "--bootstrap", "poisson"] if intervals else []
        with contextlib.redirect_stdout(io.StringIO()):
            status = cli.main(
                [str(directory / "all.parquet"), "--metrics", "keyword_prf", "--workers", str(workers), "--output",
                 str(output), *flags]
            )  # fmt: skip
        assert status == 0
        result = json.loads(output.read_text())["all"]["keyword_prf"]
    elif engine == "ray":
        import ray

        from opinion_metrics import ray as om_ray

        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        ray.data.DataContext.get_current().enable_progress_bars = False
        dataset = ray.data.read_parquet(parts, override_num_blocks=len(parts))
        state = om_ray.state(dataset, "keyword_prf", key="review_id", **options)
        result = state.compute()
    elif engine == "spark":
        from pyspark.sql import SparkSession

        from opinion_metrics import spark as om_spark

        os.environ["PYSPARK_PYTHON"] = sys.executable
        spark = SparkSession.builder.master(f"local[{workers}]").config("spark.ui.enabled", "false").getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        frame = spark.read.parquet(*parts)
        state = om_spark.state(frame, "keyword_prf", key="review_id", partitions=len(parts), **options)
        result = state.compute()
    else:
        raise ValueError(f"unknown engine {engine!r}")
    seconds = time.perf_counter() - start
    times = os.times()  # this process and its waited-for children (the CLI's workers; not Ray's or Spark's)
    cpu = times.user + times.system + times.children_user + times.children_system
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    size = len(state.to_bytes()) if state is not None else None
    return {"seconds": seconds, "cpu_seconds": cpu, "result": result, "driver_peak_mib": peak, "state_bytes": size}


def engines(rows: int, workers: int, directory: Path | None, intervals: bool) -> None:
    """One process vs the CLI's --workers vs Ray Data vs Spark on the same Parquet corpus,
    each run in a fresh process (its peak memory is the driver's)."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        directory = directory or Path(scratch)
        if not (directory / "all.parquet").exists():
            start = time.perf_counter()
            write_engine_corpus(rows, directory)
            print(f"wrote {rows:,} rows in {ENGINE_FILES} Parquet files in {time.perf_counter() - start:.0f} s")
        rows = _parquet_rows(directory / "all.parquet")
        kind = "1,000 Poisson resamples" if intervals else "point values"
        header = f"engines: keyword_prf, {rows:,} rows, {kind}"
        print(f"{header:<52}{'seconds':>9}{'ratio':>7}{'CPU s':>8}{'driver MiB':>12}")
        script = [sys.executable, str(RUNNER), "--engine-data", str(directory)]
        reports = {}
        for label, engine, processes in (
            ("one process: the family function", "single", 1),
            ("one process: a state per file", "states", 1),
            ("CLI, one process", "cli", 1),
            (f"CLI --workers {workers}", "cli", workers),
            (f"Ray Data, {workers} CPUs", "ray", workers),
            (f"Spark local[{workers}]", "spark", workers),
        ):
            command = [*script, "--engine-run", engine, "--workers", str(processes)]
            completed = subprocess.run(
                [*command, *(["--engine-intervals"] if intervals else [])], capture_output=True, text=True
            )
            if completed.returncode != 0:
                raise RuntimeError(f"{label} failed:\n{completed.stderr[-3000:]}")
            report = reports[label] = json.loads(completed.stdout.splitlines()[-1])
            base = reports["CLI, one process" if engine == "cli" else "one process: the family function"]
            ratio = report["seconds"] / base["seconds"]
            cpu = f"{report['cpu_seconds']:.1f}" if engine in ("single", "states", "cli") else "-"
            print(f"{label:<52}{report['seconds']:>9.1f}{ratio:>7.2f}{cpu:>8}{report['driver_peak_mib']:>12.0f}")
        truth = reports["one process: the family function"]["result"]
        assert all(same(truth, report["result"]) for report in reports.values()), "an engine differs"
        ray_report, states = reports[f"Ray Data, {workers} CPUs"], reports["one process: a state per file"]
        if ray_report["state_bytes"] is not None:
            size = ray_report["state_bytes"] / 1024
            print(f"Equal results (1e-9) everywhere. The merged state: {size:,.1f} KiB serialized, whatever the rows.")
        # What each engine worker does is the per-file state path: its rows per CPU second project linearly
        # (merging adds states of constant size); the engines' own overhead is the ratio of their wall time.
        per_core = rows / states["cpu_seconds"]
        print(f"Per core (a state per file, CPU time): {per_core:,.0f} rows/s. 100 million rows on 16-core machines:")
        print("  " + "   ".join(f"{m} x 16: {100e6 / (per_core * m * 16) / 60:,.1f} min" for m in (1, 4, 16, 64)))
        print(
            f"Targets: CLI --workers {workers} <= 0.6x one process (on {workers} free cores); driver peak under "
            "500 MiB whatever the row count (Spark's driver JVM not included).\n"
        )
