"""Parquet files and folders streamed by row group (`tables.ParquetSource`, `SourceColumn`)
through `parallel.compute` and the CLI: equal to the family functions on the same rows,
whatever the row groups, batches, chunks, files (an empty one included) and selections."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest
from engine_cases import family_result, random_corpus

from opinion_metrics import MetricState, cli, pool_by_group
from opinion_metrics.engines import parallel
from opinion_metrics.io import arrow
from opinion_metrics.io.arrow import ParquetSource, SourceColumn
from opinion_metrics.io.read import read_table
from opinion_metrics.io.table import TableError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

COLUMNS = ["review_id", "predictions", "references", "scores", "texts", "movie"]


@pytest.fixture(scope="module")
def corpus() -> pa.Table:
    return random_corpus(300, seed=21).select(COLUMNS)


@pytest.fixture
def small(monkeypatch):
    """Batches of 7 rows, chunks of up to 40: every path of the reader runs on 300 rows."""
    monkeypatch.setattr(arrow, "BATCH_ROWS", 7)
    monkeypatch.setattr(arrow, "CHUNK_ROWS", 40)


def write_folder(table: pa.Table, folder, sizes=(0, 90, 1, 0, 120), row_groups=(None, 13, None, None, 1000)):
    """`table` in files of `sizes` rows (the rest in the last one), some empty, some with
    small row groups; a hidden file and Spark's _SUCCESS that must be skipped."""
    folder.mkdir()
    start = 0
    for number, (size, group) in enumerate(zip(sizes, row_groups)):
        size = table.num_rows - start if number == len(sizes) - 1 else size
        pq.write_table(table.slice(start, size), folder / f"part-{number:02d}.parquet", row_group_size=group)
        start += size
    (folder / "_SUCCESS").write_text("")
    pq.write_table(table.slice(0, 5), folder / ".hidden.parquet")
    return folder


def test_batches_cover_any_range_in_order(corpus, small, tmp_path):
    source = ParquetSource(write_folder(corpus, tmp_path / "folder"))
    assert source.num_rows == corpus.num_rows and len(source.files) == 5
    rng = np.random.default_rng(0)
    for start, stop in [(0, None), (0, 1), (89, 92), (90, 91), (299, 300), *rng.integers(0, 300, (20, 2)).tolist()]:
        start, stop = (start, stop) if stop is None or start <= stop else (stop, start)
        parts = list(source.batches(["review_id", "references"], start, stop))
        assert all(table.num_rows <= 7 for _, table in parts)
        assert [first for first, _ in parts] == list(np.cumsum([start] + [t.num_rows for _, t in parts[:-1]]))
        read = [value for _, table in parts for value in table.column("references").to_pylist()]
        assert read == corpus.column("references").slice(start, (stop or 300) - start).to_pylist()
    for parts in (1, 2, 3):
        chunks = source.chunks(parts)
        assert chunks[0][0] == 0 and chunks[-1][1] == 300
        assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))


def test_a_big_row_group_is_cut_for_workers(corpus, small, tmp_path):
    pq.write_table(corpus, tmp_path / "one.parquet")  # one row group of 300 rows
    source = ParquetSource(tmp_path / "one.parquet")
    assert source.chunks(1) == [(0, 300)]
    chunks = source.chunks(3)
    assert len(chunks) == 3 and chunks[0][0] == 0 and chunks[-1][1] == 300
    assert all(start % 7 == 0 for start, _ in chunks)  # whole batches


def test_source_columns_read_like_the_table(corpus, small, tmp_path):
    table = read_table(write_folder(corpus, tmp_path / "folder"), lazy=True)
    column = table.columns["references"]
    assert isinstance(column, SourceColumn) and len(column) == 300
    assert column[10:20].to_pylist() == corpus.column("references").to_pylist()[10:20]
    rows = [3, 7, 8, 9, 150, 299]
    assert column.take(rows).to_pylist() == [corpus.column("references")[i].as_py() for i in rows]
    assert column.take(rows[::-1]).to_pylist() == [corpus.column("references")[i].as_py() for i in rows[::-1]]
    whole = read_table(tmp_path / "folder")
    assert whole.columns == {name: corpus.column(name).to_pylist() for name in corpus.column_names}
    assert table.location(95) == "row 96 of folder (part-04.parquet, row 5)"
    assert table.location(90) == "row 91 of folder (part-02.parquet, row 1)"


def test_equal_gold_lists_are_one_object(tmp_path):
    """A movie's gold list on every row is read as one list (prepared once by the library)."""
    gold = [["jedi", "force"], ["ring"], ["jedi", "force"], None, ["ring"]]
    pq.write_table(pa.table({"references": gold}), tmp_path / "gold.parquet")
    values = read_table(tmp_path / "gold.parquet").columns["references"]
    assert values == gold and values[0] is values[2] and values[1] is values[4]


def compute(corpus: pa.Table, folder, family: str, options: dict, workers: int, rows=None, keys=None) -> dict:
    table = read_table(folder, lazy=True)
    take = (lambda column: column) if rows is None else (lambda column: column.take(rows))
    arguments = {"texts": take(table.columns["texts"])} if family == "sentiment_appropriateness" else {}
    scores = take(table.columns["scores"]) if family == "weighted_keyword_prf" else None
    return parallel.compute(
        family, take(table.columns["predictions"]), take(table.columns["references"]), scores=scores,
        workers=workers, keys=keys, **arguments, **options,
    )  # fmt: skip


STREAMED = [
    ("keyword_prf", {}),
    ("keyword_prf", {"confidence_level": 0.9, "n_resamples": 50}),
    ("keyword_prf", {"confidence_level": 0.9, "n_resamples": 50, "bootstrap": "poisson", "top_k": 2}),
    ("weighted_keyword_prf", {"k": 3}),
    ("sentiment_appropriateness", {}),
]


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize(("family", "options"), STREAMED, ids=str)
def test_streamed_states_equal_the_family_function(corpus, small, tmp_path, family, options, workers):
    folder = write_folder(corpus, tmp_path / "folder")
    columns = {"scores": "scores"} if family == "weighted_keyword_prf" else {}
    if family == "sentiment_appropriateness":
        columns = {"texts": "texts"}
    assert_same(compute(corpus, folder, family, options, workers), family_result(corpus, family, columns, options))
    rows = np.flatnonzero(np.arange(300) % 3 != 1)  # one system's rows: positions within them are the keys
    chosen = corpus.take(rows)
    expected = family_result(chosen, family, columns, options)
    assert_same(compute(corpus, folder, family, options, workers, rows=rows), expected)


def test_keys_are_the_poisson_keys(corpus, small, tmp_path):
    folder = write_folder(corpus, tmp_path / "folder")
    options = {"confidence_level": 0.9, "n_resamples": 50, "bootstrap": "poisson"}
    keys = [f"review {i}" for i in range(300)]
    state = MetricState("keyword_prf", **options)
    columns = {name: corpus.column(name).to_pylist() for name in ("predictions", "references")}
    state.update(**columns, keys=keys)
    for workers in (1, 2):
        assert_same(compute(corpus, folder, "keyword_prf", options, workers, keys=keys), state.compute())


def test_the_parent_reads_no_rows_with_workers(corpus, small, tmp_path, monkeypatch):
    folder = write_folder(corpus, tmp_path / "folder")
    parent, converted = os.getpid(), []
    original = arrow.batch_values

    def spied(*arguments, **keywords):
        if os.getpid() == parent:
            converted.append(arguments[1].num_rows)
        return original(*arguments, **keywords)

    monkeypatch.setattr(arrow, "batch_values", spied)
    compute(corpus, folder, "keyword_prf", {}, workers=2)
    assert converted == []
    compute(corpus, folder, "keyword_prf", {}, workers=1)
    assert sum(converted) == 300 and max(converted) <= 7


def test_a_bad_file_in_a_folder_is_named(corpus, tmp_path):
    folder = write_folder(corpus, tmp_path / "folder")
    pq.write_table(pa.table({"other": [1]}), folder / "part-09.parquet")
    with pytest.raises(TableError, match=r"^part-09\.parquet: its columns differ from those of part-00\.parquet"):
        read_table(folder, lazy=True)
    (folder / "part-09.parquet").write_bytes(b"PAR1 not parquet")
    with pytest.raises(TableError, match=r"^part-09\.parquet: not a readable Parquet file"):
        read_table(folder, lazy=True)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TableError, match="neither a folder of Parquet files nor a datasets folder"):
        read_table(empty, lazy=True)


def run_cli(arguments: list[str], tmp_path) -> dict:
    output = tmp_path / f"out-{len(list(tmp_path.iterdir()))}.json"
    assert cli.main([*arguments, "--quiet", "--output", str(output)]) == 0
    return json.loads(output.read_text())


@pytest.mark.parametrize("workers", [[], ["--workers", "2"]])
def test_the_cli_reads_a_folder_like_the_same_rows_in_jsonl(corpus, small, tmp_path, workers, capsys):
    """--by, intervals, scores: a folder of Parquet files gives what the rows in one JSON
    Lines file give (read whole, the family functions)."""
    folder = write_folder(corpus, tmp_path / "folder")
    lines = tmp_path / "rows.jsonl"
    lines.write_text("".join(json.dumps(row) + "\n" for row in corpus.to_pylist()))
    flags = ["--by", "movie", "--metrics", "keyword_prf", "weighted_keyword_prf", "--ci", "0.9", "--n-resamples", "50"]
    for bootstrap in ("multinomial", "poisson"):
        streamed = run_cli([str(folder), *flags, "--bootstrap", bootstrap, *workers], tmp_path)
        read = run_cli([str(lines), *flags, "--bootstrap", bootstrap], tmp_path)
        assert streamed.keys() == read.keys() and len(streamed) == 7
        for movie in read:
            for family in read[movie]:
                assert_same(streamed[movie][family], read[movie][family])
    capsys.readouterr()


def test_the_cli_joins_a_gold_file_to_streamed_rows(corpus, small, tmp_path):
    """--gold: each row's gold list from a file of gold lists per movie, joined to the rows of
    a Parquet file read a batch at a time."""
    movies = sorted(set(corpus.column("movie").to_pylist()))
    gold = {movie: [f"gold {i}", "jedi", "the force"][: 1 + i % 3] for i, movie in enumerate(movies)}
    (tmp_path / "gold.jsonl").write_text(
        "".join(json.dumps({"movie": m, "keywords": k}) + "\n" for m, k in gold.items())
    )
    rows = corpus.drop_columns(["references"])
    pq.write_table(rows, tmp_path / "rows.parquet", row_group_size=50)
    expected_table = rows.append_column("references", pa.array([gold[m] for m in rows.column("movie").to_pylist()]))
    for workers in ([], ["--workers", "2"]):
        result = run_cli([str(tmp_path / "rows.parquet"), "--gold", str(tmp_path / "gold.jsonl"), *workers], tmp_path)
        assert_same(result["all"]["keyword_prf"], family_result(expected_table, "keyword_prf", {}, {}))


def assert_same(actual: dict, expected: dict, tolerance: float = 1e-12) -> None:
    assert actual.keys() == expected.keys()
    for key, value in expected.items():
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(actual[key]), key
        else:
            assert math.isclose(actual[key], value, rel_tol=tolerance, abs_tol=tolerance), (key, actual[key], value)


def grouped_rows(n: int = 240, groups: int = 30, seed: int = 4) -> list[dict]:
    """Rows of `groups` groups whose pooled lists overlap only in part (random words)."""
    rng = np.random.default_rng(seed)
    words = [f"word {i}" for i in range(60)]
    return [
        {"review_id": i, "group": f"g{i % groups}", "predictions": list(rng.choice(words, 3, replace=False)),
         "references": list(rng.choice(words, 4, replace=False))}
        for i in range(n)
    ]  # fmt: skip


def test_grouped_intervals_key_each_group_by_its_value(tmp_path):
    """--group with Poisson intervals: a pooled example's key is its group value, as the
    engines' groups= makes it (test_engines_ray and test_engines_spark check theirs against the same state)."""
    rows = grouped_rows()
    lines = tmp_path / "rows.jsonl"
    lines.write_text("".join(json.dumps(row) + "\n" for row in rows))
    options = {"confidence_level": 0.9, "n_resamples": 200, "random_state": 3, "bootstrap": "poisson"}
    flags = ["--ci", "0.9", "--n-resamples", "200", "--random-state", "3", "--bootstrap", "poisson"]
    pooled = pool_by_group(*([row[name] for row in rows] for name in ("predictions", "references", "group")))
    state = MetricState("keyword_prf", **options)
    state.update(predictions=pooled.predictions, references=pooled.references, keys=pooled.groups)
    for extra in ([], ["--per-example", str(tmp_path / "examples.jsonl")]):
        result = run_cli([str(lines), "--group", "group", "--metrics", "keyword_prf", *flags, *extra], tmp_path)
        assert_same(result["all"]["keyword_prf"], state.compute())
    by_position = MetricState("keyword_prf", **options)
    by_position.update(predictions=pooled.predictions, references=pooled.references)
    assert by_position.compute() != state.compute()  # the keys decide the intervals


def test_grouped_comparisons_key_each_group_by_its_value(tmp_path):
    """--compare with --group and Poisson resampling: the two systems' pooled groups keyed by
    their value, as `compare_systems(state_a, state_b)` of engine states."""
    from opinion_metrics import compare_systems

    rows = grouped_rows()
    systems = [
        {**row, "model": model, "predictions": row["predictions"][::step]}
        for model, step in (("a", 1), ("b", -1))
        for row in rows
    ]
    lines = tmp_path / "rows.jsonl"
    lines.write_text("".join(json.dumps(row) + "\n" for row in systems))
    flags = ["--ci", "0.9", "--n-resamples", "200", "--bootstrap", "poisson", "--top-k", "2"]
    result = run_cli([str(lines), "--group", "group", "--by", "model", "--compare", "a", *flags], tmp_path)
    options = {"confidence_level": 0.9, "n_resamples": 200, "bootstrap": "poisson", "top_k": 2}
    states = []
    for model in ("a", "b"):
        mine = [row for row in systems if row["model"] == model]
        pooled = pool_by_group(*([row[name] for row in mine] for name in ("predictions", "references", "group")))
        state = MetricState("keyword_prf", **options)
        states.append(state.update(predictions=pooled.predictions, references=pooled.references, keys=pooled.groups))
    expected = compare_systems(*states)
    for key, values in expected.items():
        reported = result["comparison"]["differences"]["b"]["keyword_prf"][key]
        assert_same({name: reported[name] for name in values}, values)  # (the report adds pairs, Holm, ...)
