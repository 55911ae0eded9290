"""Real-shaped engines: the movie reviews x 4 models replicated to a million rows (--families realshaped)."""

from __future__ import annotations

import gzip
import json
import os
import sys
import time
from pathlib import Path

from .common import MODELS, RUNNER, _parquet_rows, load_movie_reviews, same

REAL_FILES = 24  # one of them empty, one in row groups of 1,000 rows


def write_real_shaped(data: Path, directory: Path, replicas: int) -> None:
    """The movie reviews x 4 models, replicated `replicas` times with unique keys (30: 1,001,520
    rows), each row carrying its movie's gold list (as a data engineer would join it): a
    folder of REAL_FILES Parquet files (one empty, one in row groups of 1,000 rows), the same
    rows in one file written with pyarrow's defaults (a single row group: its gold column
    alone decodes past 2 GiB), and the gold lists per movie (gold.parquet)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    corpus = load_movie_reviews(data, 1)
    gold = {}
    with open(data / "ground_truth.jsonl", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            gold[record["movie"]] = record["keywords"]
    reviews = []
    for path in sorted(data.glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            reviews.extend(json.loads(line)["review_id"] for line in lines)
    ids = [f"{review}-{model}" for model in MODELS for review in reviews]
    keywords = pa.list_(pa.string())
    replica = {
        "movie": pa.array(corpus.movies),
        "model": pa.array(corpus.models),
        "keywords": pa.array(corpus.predictions, keywords),
        "scores": pa.array(corpus.scores, pa.list_(pa.float64())),
        "gold": pa.array(corpus.references, keywords),
    }
    table = pa.concat_tables(
        pa.table({"key": pa.array([f"{copy}-{i}" for i in ids]), **replica}) for copy in range(replicas)
    )
    folder = directory / "folder"
    folder.mkdir(parents=True, exist_ok=True)
    edges = [table.num_rows * i // (REAL_FILES - 1) for i in range(REAL_FILES)]
    for part, (start, stop) in enumerate(zip(edges, edges[1:])):
        pq.write_table(table.slice(start, stop - start), folder / f"part-{part:02d}.parquet",
                       row_group_size=1000 if part == 5 else None)  # fmt: skip
    pq.write_table(table.slice(0, 0), folder / f"part-{REAL_FILES - 1:02d}.parquet")
    pq.write_table(table, directory / "reviews.parquet")
    pq.write_table(pa.table({"movie": list(gold), "keywords": list(gold.values())}), directory / "gold.parquet")


def _tree_rss_mib() -> float:
    """Resident memory of this process and all its descendants (Ray's and Spark's workers are),
    in MiB, from /proc (0 where there is none): shared pages are counted in each process."""
    parents: dict[int, int] = {}
    sizes: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        parents[int(entry.name)] = int(fields.get("PPid", "0").strip())
        sizes[int(entry.name)] = int(fields.get("VmRSS", "0 kB").split()[0])
    tree, frontier = {os.getpid()}, [os.getpid()]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier.extend(children)
    return sum(sizes.get(pid, 0) for pid in tree) / 1024


def real_run(engine: str, directory: Path, workers: int) -> dict:
    """One timed evaluation of keyword_prf by model on the real-shaped rows, in this fresh
    process: {"seconds", "results", "driver_peak_mib", "total_peak_mib"}."""
    import threading

    peak, done = [0.0], threading.Event()

    def sample() -> None:
        while not done.wait(0.25):
            peak[0] = max(peak[0], _tree_rss_mib())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    folder, file, gold = directory / "folder", directory / "reviews.parquet", directory / "gold.parquet"
    arguments = {"predictions": "keywords", "references": "gold", "by": "model"}
    joined = {"predictions": "keywords", "references": gold, "gold_key": "movie", "gold_column": "keywords"}
    start = time.perf_counter()
    if engine.startswith("cli"):
        import contextlib
        import io

        from opinion_metrics import cli

        source = file if "file" in engine else folder
        output = directory / f"{engine}.json"
        flags = ["--gold", str(gold), "--gold-column", "keywords"] if "gold" in engine else ["--references", "gold"]
        processes = ["--workers", str(workers)] if "workers" in engine else []
        with contextlib.redirect_stdout(io.StringIO()):
            status = cli.main([str(source), "--predictions", "keywords", *flags, "--by", "model", "--metrics",
                               "keyword_prf", *processes, "--quiet", "--output", str(output)])  # fmt: skip
        assert status == 0
        results = {model: found["keyword_prf"] for model, found in json.loads(output.read_text()).items()}
    elif engine.startswith("ray"):
        import ray

        from opinion_metrics import ray as om_ray

        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        try:
            ray.data.DataContext.get_current().enable_progress_bars = False
            dataset = ray.data.read_parquet(str(folder))
            if engine == "ray-semantic":
                dataset = dataset.limit(2000)
                rows = om_ray.evaluate(dataset, "semantic_keyword_prf", **arguments, device="cpu")
            else:
                given = {**joined, "by": "model"} if engine == "ray-gold" else arguments
                rows = om_ray.evaluate(dataset, "keyword_prf", **given)
        finally:
            ray.shutdown()
        results = {row.pop("model"): row for row in rows}
    elif engine.startswith("spark"):
        from pyspark.sql import SparkSession

        from opinion_metrics import spark as om_spark

        os.environ["PYSPARK_PYTHON"] = sys.executable
        session = SparkSession.builder.master(f"local[{workers}]").config("spark.ui.enabled", "false")
        spark = session.config("spark.driver.memory", "2g").getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        try:
            given = {**joined, "by": "model"} if engine == "spark-gold" else arguments
            rows = om_spark.evaluate(spark.read.parquet(str(folder)), "keyword_prf", **given)
        finally:
            spark.stop()
        results = {row.pop("model"): row for row in rows}
    elif engine == "dask":
        import dask

        files = sorted(folder.glob("*.parquet"))
        parts = dask.compute(*[dask.delayed(_dask_file_states)(path) for path in files], scheduler="processes",
                             num_workers=workers)  # fmt: skip
        from opinion_metrics import MetricState

        merged: dict = {}
        for part in parts:
            for model, data in part.items():
                state = MetricState.from_bytes(data)
                merged[model] = merged[model].merge(state) if model in merged else state
        results = {model: state.compute() for model, state in merged.items()}
    else:
        raise ValueError(f"unknown engine {engine!r}")
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forked parent (its size when it started us)
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    driver = int(status["VmHWM"].split()[0]) / 1024
    return {"seconds": seconds, "results": results, "driver_peak_mib": driver, "total_peak_mib": max(peak[0], driver)}


def _dask_file_states(path: Path) -> dict:
    """The Dask recipe's task (docs/scaling.md): one state per model of one file, a batch at a time."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from opinion_metrics import MetricState

    states: dict = {}
    with pq.ParquetFile(path) as file:
        for batch in file.iter_batches(batch_size=4096, columns=["model", "keywords", "gold"]):
            for model in pc.unique(batch.column("model")).to_pylist():
                rows = batch.filter(pc.equal(batch.column("model"), model))
                state = states.setdefault(model, MetricState("keyword_prf"))
                state.update(rows, predictions="keywords", references="gold")
    return {model: state.to_bytes() for model, state in states.items()}


REAL_RUNS = (
    ("CLI, the file (one row group), one process", "cli-file"),
    ("CLI, the file, --workers N", "cli-file-workers"),
    ("CLI, the folder, --workers N", "cli-folder-workers"),
    ("CLI, the folder, --gold per movie, --workers N", "cli-folder-gold-workers"),
    ("Ray Data, N CPUs, by=model", "ray"),
    ("Ray Data, by=model, a gold table", "ray-gold"),
    ("Spark local[N], by=model", "spark"),
    ("Spark, by=model, a gold table", "spark-gold"),
    ("Dask recipe, N processes, a state per model", "dask"),
    ("Ray Data semantic, read_parquet(folder).limit(2000)", "ray-semantic"),
)


def real_shaped(data: Path, directory: Path | None, replicas: int, workers: int, runs: list[str] | None) -> None:
    """Every engine on the real-shaped rows, keyword_prf per model in one pass, each run in a
    fresh process: wall time, the driver's peak and the peak of all its processes together."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        directory = directory or Path(scratch)
        if not (directory / "reviews.parquet").exists():
            start = time.perf_counter()
            write_real_shaped(data, directory, replicas)
            print(f"wrote the real-shaped rows in {time.perf_counter() - start:.0f} s")
        rows = _parquet_rows(directory / "reviews.parquet")
        header = f"real-shaped: keyword_prf by model, {rows:,} rows"
        print(f"{header:<56}{'seconds':>9}{'driver MiB':>12}{'total MiB':>11}")
        script = [sys.executable, str(RUNNER), "--engine-data", str(directory)]
        reports = {}
        for label, engine in REAL_RUNS:
            if runs and engine not in runs:
                continue
            command = [*script, "--engine-real-run", engine, "--workers", str(workers)]
            completed = subprocess.run(command, capture_output=True, text=True)
            if completed.returncode != 0:
                raise RuntimeError(f"{label} failed:\n{completed.stderr[-3000:]}")
            report = reports[engine] = json.loads(completed.stdout.splitlines()[-1])
            shown = label.replace("N", str(workers))
            print(
                f"{shown:<56}{report['seconds']:>9.1f}{report['driver_peak_mib']:>12.0f}{report['total_peak_mib']:>11.0f}"
            )
        lexical = [report["results"] for engine, report in reports.items() if engine != "ray-semantic"]
        for results in lexical[1:]:
            assert results.keys() == lexical[0].keys()
            assert all(same(results[model], lexical[0][model]) for model in results), "an engine differs"
        print("Equal results (1e-9) per model everywhere. driver: the peak RSS of the process that calls the engine;")
        print("total: the peak sum over it and all its descendants (workers, Ray's raylet, Spark's JVM), shared pages")
        print("counted in each.\n")
