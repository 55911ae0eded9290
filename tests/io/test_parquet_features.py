"""Parquet files and folders meeting the CLI's features (issue 37, item 1): the same rows as
JSON Lines give the same results with --presence, --group, --per-example, --by and --baseline;
a hive-partitioned folder (Spark's `partitionBy("model")`) reads its folder names as a column,
as pyarrow's datasets and Ray's `read_parquet` do; a text where lists belong, in one file of a
folder, is refused naming the file and the row."""

from __future__ import annotations

import json

import pytest

from opinion_metrics import cli, keyword_prf, weighted_keyword_prf
from opinion_metrics.io.read import read_table
from opinion_metrics.io.table import TableError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
ds = pytest.importorskip("pyarrow.dataset")

# Two systems (a, b) on the same four reviews of two movies: a system column, and side by side.
REVIEWS = [
    ("r1", "sw", "the jedi fight the empire", ["jedi", "empire", "droid"]),
    ("r2", "sw", "a droid and a jedi", ["jedi", "empire", "droid"]),
    ("r3", "hp", "the wizard school", ["wizard", "school", "owl"]),
    ("r4", "hp", "an owl flies", ["wizard", "school", "owl"]),
]
PREDICTED = {
    "a": [(["jedi", "war"], [0.9, 0.4]), (["droid"], [0.7]), (["wizard", "owl"], [0.8, 0.6]), (["broom"], [0.5])],
    "b": [(["empire"], [0.6]), (["jedi", "droid"], [0.9, 0.3]), (["school"], [0.4]), (["owl", "night"], [0.9, 0.2])],
}
LONG = [
    {"model": model, "review_id": rid, "movie": movie, "review": text, "predictions": keywords,
     "scores": scores, "references": gold}
    for model, predicted in PREDICTED.items()
    for (rid, movie, text, gold), (keywords, scores) in zip(REVIEWS, predicted)
]  # fmt: skip
WIDE = [
    {"review_id": rid, "movie": movie, "review": text, "references": gold,
     **{f"keywords_{m}": PREDICTED[m][i][0] for m in PREDICTED},
     **{f"scores_{m}": PREDICTED[m][i][1] for m in PREDICTED}}
    for i, (rid, movie, text, gold) in enumerate(REVIEWS)
]  # fmt: skip


def write(rows: list[dict], folder, name: str) -> tuple:
    """The rows as JSON Lines and as Parquet (two row groups)."""
    lines, parquet = folder / f"{name}.jsonl", folder / f"{name}.parquet"
    lines.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    pq.write_table(pa.Table.from_pylist(rows), parquet, row_group_size=3)
    return lines, parquet


def run(path, arguments: list[str], tmp_path) -> tuple[dict, list[dict]]:
    """--output's JSON and --per-example's records (without the input's line or row: JSON Lines
    has lines, Parquet rows)."""
    output, examples = tmp_path / f"{path.name}.json", tmp_path / f"{path.name}.per.jsonl"
    assert cli.main([str(path), *arguments, "--quiet", "--output", str(output), "--per-example", str(examples)]) == 0
    records = [json.loads(line) for line in examples.read_text(encoding="utf-8").splitlines()]
    return json.loads(output.read_text()), [{k: v for k, v in r.items() if k not in ("line", "row")} for r in records]


@pytest.mark.parametrize(
    ("rows", "arguments"),
    [
        (LONG, ["--presence", "present"]),
        (WIDE, ["--presence", "present"]),
        (LONG, ["--group", "movie"]),
        (WIDE, ["--group", "movie"]),
        (LONG, ["--baseline", "a", "--n-resamples", "50", "--random-state", "1"]),
        (WIDE, ["--baseline", "a", "--n-resamples", "50", "--random-state", "1"]),
        (LONG, ["--by", "movie", "--presence", "all,present"]),
    ],
)
def test_parquet_gives_what_the_same_rows_in_json_lines_give(tmp_path, capsys, rows, arguments):
    lines, parquet = write(rows, tmp_path, "rows")
    assert run(parquet, arguments, tmp_path) == run(lines, arguments, tmp_path)
    capsys.readouterr()


def test_a_model_column_of_a_parquet_file_is_compared_with_the_baseline(tmp_path, capsys):
    _, parquet = write(LONG, tmp_path, "rows")
    result, _ = run(parquet, ["--baseline", "a", "--metrics", "keyword_prf", "--n-resamples", "50"], tmp_path)
    rows = {m: [row for row in LONG if row["model"] == m] for m in PREDICTED}
    for model, mine in rows.items():
        expected = keyword_prf([row["predictions"] for row in mine], [row["references"] for row in mine])
        assert result["results"][model]["keyword_prf"] == pytest.approx(expected, abs=1e-12)
    difference = result["comparison"]["differences"]["b"]["keyword_prf"]["f1"]
    assert difference["difference"] == pytest.approx(
        result["results"]["b"]["keyword_prf"]["f1"] - result["results"]["a"]["keyword_prf"]["f1"], abs=1e-12
    )
    capsys.readouterr()


def partitioned(tmp_path, rows: list[dict], column: str = "model"):
    """`rows` written as Spark's `partitionBy(column)` writes them: `column=value/part-0.parquet`
    (the column in the folder names only), and `_SUCCESS`."""
    folder = tmp_path / "partitioned"
    table = pa.Table.from_pylist(rows)
    pq.write_to_dataset(table, folder, partition_cols=[column], basename_template="part-{i}.parquet")
    (folder / "_SUCCESS").write_text("")
    return folder


@pytest.mark.parametrize("workers", [[], ["--workers", "2"]])
def test_a_hive_partitioned_folder_reads_its_folder_names_as_a_column(tmp_path, capsys, workers):
    folder = partitioned(tmp_path, LONG)
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.parquet")) == [
        "model=a/part-0.parquet",
        "model=b/part-0.parquet",
    ]
    table = read_table(folder)
    assert table.columns["model"] == ["a"] * 4 + ["b"] * 4  # as pyarrow's hive partitioning reads them:
    assert (
        ds.dataset(folder, format="parquet", partitioning="hive").to_table().column("model").to_pylist()
        == ["a"] * 4 + ["b"] * 4
    )
    assert table.location(5) == "row 6 of partitioned (model=b/part-0.parquet, row 2)"
    output = tmp_path / "out.json"
    arguments = ["--metrics", "keyword_prf", "weighted_keyword_prf", "--quiet", "--output", str(output)]
    assert cli.main([str(folder), *arguments, *workers]) == 0
    assert "2 systems from `model`" in capsys.readouterr().out
    result = json.loads(output.read_text())
    assert list(result) == ["a", "b"]  # one row per system: never pooled
    for model in PREDICTED:
        mine = [row for row in LONG if row["model"] == model]
        columns = {name: [row[name] for row in mine] for name in ("predictions", "scores", "references")}
        assert result[model]["keyword_prf"] == pytest.approx(
            keyword_prf(columns["predictions"], columns["references"]), abs=1e-12
        )
        assert result[model]["weighted_keyword_prf"] == pytest.approx(
            weighted_keyword_prf(columns["predictions"], columns["scores"], columns["references"]), abs=1e-12
        )


def test_hive_values_are_unescaped_and_a_null_partition_is_named(tmp_path, capsys):
    rows = [{**row, "model": {"a": "base/v1 é", "b": None}[row["model"]]} for row in LONG]
    folder = partitioned(tmp_path, rows)
    assert read_table(folder).columns["model"] == [None] * 4 + ["base/v1 é"] * 4  # files in name order
    expected = ds.dataset(folder, format="parquet", partitioning="hive").to_table().column("model").to_pylist()
    assert sorted(expected, key=str) == sorted(read_table(folder).columns["model"], key=str)
    assert cli.main([str(folder), "--metrics", "keyword_prf"]) == 1
    assert "row 1 of partitioned (model=__HIVE_DEFAULT_PARTITION__/part-0.parquet, row 1) is empty" in (
        capsys.readouterr().err
    )


def test_a_column_in_both_a_file_and_its_folder_name_is_refused(tmp_path):
    folder = tmp_path / "both" / "model=a"
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(LONG[:2]), folder / "part-0.parquet")
    with pytest.raises(TableError, match=r"column 'model' is both in the file and in its folder name \(model=a/"):
        read_table(tmp_path / "both")


@pytest.mark.parametrize("lazy", [False, True])
def test_a_text_where_lists_belong_in_one_file_of_a_folder_names_the_file_and_the_row(tmp_path, capsys, lazy):
    folder = tmp_path / "folder"
    folder.mkdir()
    pq.write_table(pa.Table.from_pylist(LONG[:3]), folder / "part-0.parquet")
    texts = [{**row, "predictions": "; ".join(row["predictions"])} for row in LONG[3:]]
    pq.write_table(pa.Table.from_pylist(texts), folder / "part-1.parquet")
    assert cli.main([str(folder), "--metrics", "keyword_prf"]) == 1
    err = capsys.readouterr().err
    assert "column 'predictions', row 4 of folder (part-1.parquet, row 1): 'broom' is a text, not a list" in err
    assert read_table(folder, lazy=lazy).columns["predictions"][3] == "broom"  # read as it is; refused where used
    pq.write_table(pa.Table.from_pylist(texts), tmp_path / "texts.parquet")
    assert cli.main([str(tmp_path / "texts.parquet"), "--metrics", "keyword_prf"]) == 1
    assert "column 'predictions', row 1 of texts.parquet: 'broom' is a text" in capsys.readouterr().err
