"""`opinion_metrics.parallel` and the CLI's --workers: states of chunks computed in worker
processes, merged in chunk order, equal the single-process results (intervals included)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from engine_cases import CASES, family_result, random_corpus

from opinion_metrics import cli, keyword_prf
from opinion_metrics.engines import parallel
from opinion_metrics.io import arrow


@pytest.fixture(scope="module")
def corpus():
    return random_corpus(400, seed=11)


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 50 examples (instead of thousands), and a record of how many were made."""
    made = []
    bounds = parallel.chunk_bounds

    def recorded(n, workers):
        made.append(bounds(n, workers))
        return made[-1]

    monkeypatch.setattr(parallel, "MIN_CHUNK", 50)
    monkeypatch.setattr(parallel, "chunk_bounds", recorded)
    return made


def same(actual: dict, expected: dict) -> None:
    assert actual.keys() == expected.keys()
    for key, value in expected.items():
        assert math.isclose(actual[key], value, rel_tol=1e-12, abs_tol=1e-12), (key, actual[key], value)


INTERVALS = {"confidence_level": 0.9, "n_resamples": 100, "random_state": 5}
PROCESS_CASES = [case for case in CASES if case[0] not in parallel.ONE_PROCESS]


@pytest.mark.parametrize("intervals", [{}, INTERVALS, {**INTERVALS, "bootstrap": "poisson"}], ids=str)
@pytest.mark.parametrize(("family", "columns", "options"), PROCESS_CASES, ids=str)
def test_chunks_in_processes_equal_one_process(corpus, small_chunks, family, columns, options, intervals):
    options = {**options, **intervals}
    names = {"predictions": "predictions", "references": "references", **columns}
    data = {name: corpus.column(column).to_pylist() for name, column in names.items() if column is not None}
    result = parallel.compute(
        family, data.pop("predictions"), data.pop("references", None), scores=data.pop("scores", None),
        workers=2, **data, **options,
    )  # fmt: skip
    assert len(small_chunks[-1]) == 8  # 400 examples: 2 workers x 4 chunks of 50
    same(result, family_result(corpus, family, columns, options))


def test_chunk_bounds_cover_every_example_once():
    for n, workers in ((0, 2), (1, 4), (10_000, 2), (123_457, 3)):
        bounds = parallel.chunk_bounds(n, workers)
        covered = np.concatenate([np.arange(start, stop) for start, stop in bounds])
        assert covered.tolist() == list(range(n))
        assert len(bounds) <= max(1, workers * 4)


def write_jsonl(corpus, path):
    with open(path, "w", encoding="utf-8") as lines:
        for row in corpus.select(["predictions", "references", "scores", "texts", "movie"]).to_pylist():
            lines.write(json.dumps({**row, "review": row.pop("texts")}) + "\n")


@pytest.mark.parametrize(
    "flags",
    [
        ["--metrics", "keyword_prf", "weighted_keyword_prf"],
        ["--metrics", "keyword_prf", "--ci", "0.9", "--n-resamples", "100", "--by", "movie"],
        ["--metrics", "keyword_prf", "--presence", "all,present", "--average", "micro", "--top-k", "3"],
        ["--metrics", "weighted_keyword_prf", "--group", "movie"],
    ],
    ids=str,
)
def test_cli_workers_equal_one_process(corpus, small_chunks, tmp_path, flags):
    data = tmp_path / "corpus.jsonl"
    write_jsonl(corpus, data)
    outputs = []
    for workers in ([], ["--workers", "2"]):
        output = tmp_path / f"out{len(workers)}.json"
        assert cli.main([str(data), *flags, *workers, "--output", str(output)]) == 0
        outputs.append(json.loads(output.read_text()))
    one, many = outputs
    assert one.keys() == many.keys()
    for subset in one:
        for family in one[subset]:
            same(many[subset][family], one[subset][family])
    if "--group" not in flags and "--by" not in flags:
        assert any(len(bounds) > 1 for bounds in small_chunks)  # the processes really ran


def test_workers_flag_keeps_its_meaning_for_sentiment(corpus, tmp_path):
    """sentiment_appropriateness takes --workers as its own option (VADER processes)."""
    data = tmp_path / "corpus.jsonl"
    write_jsonl(corpus.slice(0, 40), data)
    output = tmp_path / "out.json"
    assert (
        cli.main([str(data), "--metrics", "sentiment_appropriateness", "--workers", "2", "--output", str(output)]) == 0
    )
    result = json.loads(output.read_text())["all"]["sentiment_appropriateness"]
    expected = family_result(corpus.slice(0, 40), "sentiment_appropriateness", {"texts": "texts"}, {})
    same(result, expected)


@pytest.mark.parametrize("intervals", [{}, {"confidence_level": 0.9, "n_resamples": 50, "bootstrap": "poisson"}])
def test_chunks_merge_with_a_function_option(corpus, small_chunks, intervals):
    """A normalize function has no name a state can store: each chunk's state gets the
    driver's function back, so the chunks merge (a lambda in every worker is the same one)."""
    predictions, references = (corpus.column(name).to_pylist() for name in ("predictions", "references"))
    lowered = lambda keyword: keyword.lower().strip()  # noqa: E731
    expected = keyword_prf(predictions, references, normalize=lowered, **intervals)
    result = parallel.compute("keyword_prf", predictions, references, workers=2, normalize=lowered, **intervals)
    assert len(small_chunks[-1]) > 1
    same(result, expected)


def test_a_parquet_file_is_converted_by_the_workers_not_the_parent(corpus, tmp_path, monkeypatch):
    """With --workers, the parent reads no row of a Parquet file (`tables.batch_values` is
    never called there): each worker reads and converts its own chunks of row groups; the
    results are one process's, which streams the file a batch at a time."""
    import os

    import pyarrow.parquet as pq

    data = tmp_path / "corpus.parquet"
    pq.write_table(corpus.select(["predictions", "references", "scores", "movie"]), data, row_group_size=30)
    monkeypatch.setattr(arrow, "CHUNK_ROWS", 60)
    monkeypatch.setattr(arrow, "BATCH_ROWS", 16)
    parent, converted = os.getpid(), []  # the workers' conversions happen in their own copies of this list
    original = arrow.batch_values

    def spied(*arguments, **keywords):
        if os.getpid() == parent:
            converted.append(arguments[1].num_rows)
        return original(*arguments, **keywords)

    monkeypatch.setattr(arrow, "batch_values", spied)
    outputs = []
    for workers in (["--workers", "2"], []):
        output = tmp_path / f"out{len(workers)}.json"
        assert (
            cli.main([str(data), "--metrics", "keyword_prf", "weighted_keyword_prf", *workers, "--output", str(output)])
            == 0
        )
        outputs.append(json.loads(output.read_text())["all"])
        if workers:
            assert converted == []
    assert sum(converted) == 2 * corpus.num_rows and max(converted) <= 16  # one process: a batch at a time
    for family in outputs[1]:
        same(outputs[0][family], outputs[1][family])
        same(
            outputs[1][family], family_result(corpus, family, {"scores": "scores"} if "weighted" in family else {}, {})
        )


def test_arrow_columns_convert_whole_once_or_a_slice_at_a_time():
    import pyarrow as pa

    from opinion_metrics.io.rows import ArrowColumn

    rows = [["a", "b"], None, [], ["b"], ["c", None]]
    chunked = pa.chunked_array([pa.array(rows[:2]), pa.array(rows[2:])])
    column = ArrowColumn(chunked)
    part = column[1:4]
    assert isinstance(part, ArrowColumn) and part.to_pylist() == rows[1:4] and len(part) == 3
    assert column[::2] == rows[::2] and column[-1] == rows[-1]  # not a plain slice: converted whole
    assert list(column) == rows and column[1:4] == rows[1:4]  # once converted, slices are lists
    assert column.take([0, 1, 2, 3, 4]) is column and column.take([3, 0]) == [rows[3], rows[0]]


def test_the_workers_progress_counts_every_example_once(corpus, small_chunks, monkeypatch):
    counted = []

    class Recorded:
        def __init__(self, total, **options):
            self.total, self.done = total, 0
            counted.append(self)

        def update(self, n):
            self.done += n

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(parallel, "tqdm", Recorded)
    predictions, references = (corpus.column(name).to_pylist() for name in ("predictions", "references"))
    parallel.compute("keyword_prf", predictions, references, workers=2)
    assert [(bar.total, bar.done) for bar in counted] == [(400, 400)] and len(small_chunks[-1]) == 8


BAD_ROWS = [  # (row of 400, what is wrong, what the message says)
    (333, {"predictions": ["war", 5]}, "keyword 1 must be a str, got int 5"),
    (251, {"scores": [0.5]}, "but 1 scores"),
    (399, {"references": "war"}, "'war' is a text, not a list of keywords"),
]


@pytest.mark.parametrize(("row", "change", "said"), BAD_ROWS, ids=str)
def test_a_bad_row_is_named_as_one_process_names_it(corpus, small_chunks, tmp_path, capsys, row, change, said):
    # with --workers, the error named the row within its chunk ("line 34" for line 334)
    rows = corpus.select(["predictions", "references", "scores"]).to_pylist()
    rows[row].update(change)
    data = tmp_path / "bad.jsonl"
    data.write_text("".join(json.dumps(one) + "\n" for one in rows), encoding="utf-8")
    errors = []
    for workers in ([], ["--workers", "2"]):
        assert cli.main([str(data), "--metrics", "weighted_keyword_prf", *workers]) == 1
        errors.append(capsys.readouterr().err)
    assert errors[0] == errors[1] and f"line {row + 1} of bad.jsonl" in errors[0] and said in errors[0]
    # a text where keywords belong is refused as the file is read, before any chunk is sent
    assert not small_chunks if isinstance(change.get("references"), str) else len(small_chunks[-1]) == 8
    columns = {name: [one[name] for one in rows] for name in ("predictions", "references", "scores")}
    with pytest.raises(ValueError, match=rf": example {row}\b") as caught:
        parallel.compute(
            "weighted_keyword_prf", columns["predictions"], columns["references"], scores=columns["scores"], workers=2
        )
    with pytest.raises(ValueError) as alone:
        parallel.compute(
            "weighted_keyword_prf", columns["predictions"], columns["references"], scores=columns["scores"], workers=1
        )
    assert str(caught.value) == str(alone.value)


def test_more_workers_than_chunks_or_cpus_start_no_idle_processes(corpus, small_chunks, monkeypatch):
    # ProcessPoolExecutor forks all its processes at once: --workers 100000 forked 100000 (killed)
    from opinion_metrics.families import sentiment_appropriateness as sentiment

    started = []
    for module in (parallel, sentiment):
        real = module.ProcessPoolExecutor

        def recorded(workers, *args, real=real, **kwargs):
            started.append(workers)
            return real(min(workers, 2), *args, **kwargs)  # at worst two here, whatever is decided

        monkeypatch.setattr(module, "ProcessPoolExecutor", recorded)
    predictions, references = (corpus.column(name).to_pylist() for name in ("predictions", "references"))
    same(
        parallel.compute("keyword_prf", predictions, references, workers=100_000), keyword_prf(predictions, references)
    )
    assert 1 < len(small_chunks[-1]) <= 8  # 400 examples, chunks of 50 at least
    texts = ["great fun", "a dull plot", "good"]
    assert sentiment.vader_in_parallel(texts, "weighted", 100_000) == sentiment.vader_in_parallel(texts, "weighted", 1)
    cpus = parallel.available_cpus()
    assert started[0] <= min(len(small_chunks[-1]), cpus) and started[1:] == [1, 1]


def test_the_callers_frozen_objects_stay_frozen(corpus, small_chunks):
    import gc

    predictions, references = (corpus.column(name).to_pylist() for name in ("predictions", "references"))
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        result = parallel.compute("keyword_prf", predictions, references, workers=2)
        assert gc.get_freeze_count() > frozen // 2 > 0  # not unfrozen (a few frozen objects may be freed)
    finally:
        gc.unfreeze()
    same(result, keyword_prf(predictions, references))


def test_one_cpu_starts_no_pool(corpus, small_chunks, monkeypatch):
    def refused(*args, **kwargs):
        raise AssertionError("a process pool was started on one CPU")

    monkeypatch.setattr(parallel, "available_cpus", lambda: 1)
    monkeypatch.setattr(parallel, "ProcessPoolExecutor", refused)
    predictions, references = (corpus.column(name).to_pylist() for name in ("predictions", "references"))
    same(parallel.compute("keyword_prf", predictions, references, workers=4), keyword_prf(predictions, references))
