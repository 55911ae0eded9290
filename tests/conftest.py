"""Shared fixtures: the real data under ../shared/data (read in place, never copied)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from opinion_metrics import _native

# Never reach for the Hub in tests: evaluate modules load by path, models from packages.
os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
# The real data: where OPINION_METRICS_SHARED names it (then it must be there), else a folder
# named shared next to the checkout (when it is absent, the tests that read it are skipped).
SHARED_NAMED = bool(os.environ.get("OPINION_METRICS_SHARED"))
SHARED = Path(os.environ["OPINION_METRICS_SHARED"]) if SHARED_NAMED else REPO.parent / "shared"
MOVIE_REVIEWS = SHARED / "data" / "movie_reviews"
TOURISM_REVIEWS = SHARED / "data" / "tourism_reviews_vi" / "train.csv"
MODELS = ("base", "reranker", "sentiment", "metadata")
# The implementations a fast-path test runs, each forced with OPINION_METRICS_IMPLEMENTATION
# (opinion_metrics._native): the C helper where it is built, and always its Python twins.
IMPLEMENTATIONS = ("c", "python") if _native.helper() is not None else ("python",)


def true_in_every_thread(work: Callable[[int], bool], threads: int = 4) -> bool:
    """Whether `work(0)`, ..., `work(threads - 1)` all return True, run at once in threads
    that switch every microsecond (interleavings a plain run would rarely reach)."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with ThreadPoolExecutor(threads) as pool:
            return all(pool.map(work, range(threads)))
    finally:
        sys.setswitchinterval(interval)


def approx_nested(expected: Any, **tolerances: float) -> Any:
    """`expected` with every number and list of numbers wrapped in `pytest.approx`, at any
    depth of dicts and lists (pytest.approx itself takes one level: a dict of lists is a
    TypeError from pytest 9)."""
    if isinstance(expected, dict):
        return {key: approx_nested(value, **tolerances) for key, value in expected.items()}
    if isinstance(expected, (list, tuple)) and any(isinstance(value, (dict, list, tuple)) for value in expected):
        return type(expected)(approx_nested(value, **tolerances) for value in expected)
    return pytest.approx(expected, **tolerances)


def require_shared(path: Path) -> Path:
    """Skip when the shared data is absent; fail when OPINION_METRICS_SHARED names a folder
    that lacks it (CI names it where it has the data)."""
    if not path.exists():
        if SHARED_NAMED:
            pytest.fail(f"OPINION_METRICS_SHARED names {SHARED}, which lacks {path}")
        pytest.skip(f"shared data not found at {path} (set OPINION_METRICS_SHARED)")
    return path


def load_movie_reviews() -> list[dict]:
    """Every review of every movie, with its movie's gold keywords under "gold"."""
    directory = require_shared(MOVIE_REVIEWS)
    gold = {}
    with open(directory / "ground_truth.jsonl", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            gold[record["movie"]] = record["keywords"]
    reviews = []
    for path in sorted(directory.glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            for line in lines:
                review = json.loads(line)
                review["gold"] = gold[review["movie"]]
                reviews.append(review)
    return reviews


@pytest.fixture(scope="session")
def movie_reviews() -> list[dict]:
    return load_movie_reviews()


def space_results(result, system=None):
    """The Spaces' results table (an API dict of headers and data, or a DataFrame) as {metric:
    (value, interval or None)} of one system's column (default: the first), the metric's name
    without its direction and meaning, a value without its Markdown bold; "examples" left out."""
    import re

    if isinstance(result, dict):
        headers, rows = result["headers"], result["data"]
    else:
        headers, rows = list(result.columns), result.values.tolist()
    names = [header.removesuffix(" (baseline)") for header in headers]
    column = 1 if system is None else names.index(system)
    found = {}
    for row in rows:
        name = re.split(r"[\u00a0 ][↑↓]", row[0].split("<br>")[0])[0].replace("\u00a0", " ")
        if name == "examples":
            continue
        lines = str(row[column]).replace("**", "").split("<br>")
        value = float(lines[0]) if lines[0] not in ("n/a", "") else None
        interval = next((line for line in lines[1:] if line.startswith("[")), None)
        found[name] = (value, tuple(map(float, interval.strip("[]").split(",\u00a0"))) if interval else None)
    return found


def space_values(result, system=None):
    """{metric: value} of `space_results`."""
    return {name: value for name, (value, _) in space_results(result, system).items()}


# --- the Spaces in headless Chromium ---------------------------------------------------------------

CHROMIUM = Path("/usr/bin/chromium")
VIEWPORT = {"width": 1400, "height": 1000}


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium driven by Playwright (skipped where it is not installed; CI installs it)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail("CI installs Debian's chromium; /usr/bin/chromium is missing")
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"],
        )  # fmt: skip
        yield browser
        browser.close()


def launch_space(app) -> str:
    """Launch a Space's app on a free local port; its URL."""
    _, url, _ = app.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    return url


def keep_screenshots(shots: Path) -> None:
    """Copy the screenshots of `shots` to $OPINION_METRICS_SCREENSHOTS when it is set."""
    if os.environ.get("OPINION_METRICS_SCREENSHOTS"):
        for shot in shots.glob("*.png"):
            shutil.copy(shot, os.environ["OPINION_METRICS_SCREENSHOTS"])


def local_ray_data():
    """Ray Data on a local 2-CPU cluster, shut down after (the body of a module fixture: `yield from`)."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield ray.data
    ray.shutdown()


def local_spark(master: str, name: str, log_level: str):
    """A local Spark session on `master`, stopped after (the body of a module fixture: `yield from`);
    a failure in CI without Java, else a skip."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        if os.environ.get("CI"):
            pytest.fail("Spark needs Java in CI (.ci/run installs openjdk-17-jre-headless)")
        pytest.skip("Spark needs Java (install a Java 17 runtime)")
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master(master)
        .appName(name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel(log_level)
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _no_terminal_width(monkeypatch):
    """Printed tables fit $COLUMNS when it is set: each test sets it where it wants a width (a
    terminal, or pytest-xdist's workers, may set it otherwise)."""
    monkeypatch.delenv("COLUMNS", raising=False)
