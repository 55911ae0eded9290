"""Reading tables from files (shared by the CLI and the Spaces): every unreadable file is one
`TableError` line naming the file, the line (1-based, as editors count) and what was expected."""

import gzip
import json
from pathlib import Path

import pytest

from opinion_metrics.cli import main
from opinion_metrics.io.read import load_table, read_table
from opinion_metrics.io.table import TableError

ROW = '{"predictions": ["war"], "references": ["war", "jedi"]}\n'

# (file name, content, expected part of the message, its line or None)
BAD_FILES = [
    (
        "unequal.json",
        '{"model":["m1"],"predictions":[["a"],["b"]],"references":[["a"],["x"]]}',
        "'model' has 1, 'predictions' has 2, 'references' has 2",
        None,
    ),
    (
        "longer_first.json",
        '{"model":["m1","m2","m3"],"predictions":[["a"]],"references":[["a"]]}',
        "'model' has 3, 'predictions' has 1",
        None,
    ),
    (
        "numbers.json",
        "[1, 2, 3]",
        "expected a list of row objects or an object mapping each column to a list; got a list holding a number (1)",
        1,
    ),
    ("string.json", '"reviews"', 'got a string ("reviews")', 1),
    ("null.json", "null", "got null", 1),
    ("scalar_column.json", '{"predictions": "war"}', "column 'predictions' is a string", None),
    ("second_item.json", '[\n  {"predictions": []},\n  "oops"\n]', "got a list holding a string", 3),
    ("broken.json", '[\n  {"predictions": [}\n]', "invalid JSON", 2),
    ("list_line.jsonl", ROW + "\n" + '["war"]\n', "expected a JSON object (one row per line), got a list", 3),
    ("number_line.jsonl", ROW + "42\n", "expected a JSON object (one row per line), got a number (42)", 2),
    ("invalid.jsonl", ROW + ROW + '{"predictions": ["war"\n', "invalid JSON", 3),
    ("wide.csv", "predictions,references\nwar,war\nwar,jedi,empire\n", "3 fields, but the header has 2", 3),
    ("narrow.csv", "predictions,references\nwar\n", "1 fields, but the header has 2", 2),
    (
        "latin1.csv",
        "predictions,references\nwar,war\ncaf\xe9,caf\xe9\n".encode("latin-1"),
        "not UTF-8 text (byte 0xe9)",
        3,
    ),
    ("binary.csv", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not UTF-8 text (byte 0x89)", 1),
    ("utf16.csv", "predictions,references\nwar,war\n".encode("utf-16"), "UTF-16 text; save the file as UTF-8", 1),
    ("nul.jsonl", ROW.encode() + b"\x00\x01\x02\n", "binary data", 2),
    ("mac.csv", "predictions,references\ra,a\r", "not a readable CSV (new-line character seen in unquoted field;", 1),
    (
        "scores.csv",
        "predictions,scores,references\nwar,0.5,war\nwar,high,war\n",
        "column 'scores': expected numbers separated by ';', got 'high'",
        3,
    ),
    ("plain.jsonl.gz", ROW, "not a gzip file", None),
    ("truncated.jsonl.gz", gzip.compress(ROW.encode() * 2000)[:-40], "corrupt gzip data", None),
]


def _write(path, content):
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


@pytest.mark.parametrize(("name", "content", "expected", "line"), BAD_FILES, ids=[case[0] for case in BAD_FILES])
def test_an_unreadable_file_is_one_line_naming_the_file_the_line_and_what_was_expected(
    tmp_path, capsys, name, content, expected, line
):
    path = _write(tmp_path / name, content)
    with pytest.raises(TableError) as caught:
        read_table(path, ["predictions", "references"], ["scores"])
    message = str(caught.value)
    assert expected in message and "\n" not in message
    assert message.startswith(f"{name}, line {line}: " if line else f"{name}")
    assert caught.value.line == line or (line is None and name.startswith("truncated"))
    # the CLI prints the same single line, exit status 1 (the data), no traceback
    assert main([str(path)]) == 1
    err = capsys.readouterr().err
    assert err == f"opinion-metrics: error: {message}\n"


def test_a_truncated_gz_names_the_line_where_the_data_stops(tmp_path):
    path = _write(tmp_path / "t.jsonl.gz", gzip.compress(ROW.encode() * 2000)[:-40])
    with pytest.raises(TableError, match=r"t\.jsonl\.gz, line \d+: corrupt gzip data") as caught:
        read_table(path)
    assert 1 < caught.value.line <= 2000


def test_unequal_columns_are_never_truncated_to_the_first_column(tmp_path):
    path = _write(
        tmp_path / "x.json", json.dumps({"model": ["m1"], "predictions": [["a"], ["b"]], "references": [["a"], ["x"]]})
    )
    with pytest.raises(ValueError, match="columns of different lengths"):
        load_table(path, [], [])


def test_paths_that_are_the_wrong_kind_are_usage_errors(tmp_path, capsys):
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "notes.txt").write_text("x")
    other = _write(tmp_path / "data.txt", ROW)
    for path, expected in [
        (
            folder,
            "folder: a folder, but neither a folder of Parquet files nor a datasets folder saved with save_to_disk",
        ),
        (other, "data.txt: unsupported kind of file; use .jsonl"),
        (tmp_path / "missing.jsonl", "missing.jsonl: no such file or folder"),
    ]:
        with pytest.raises(TableError) as caught:
            read_table(path)
        assert caught.value.usage and str(caught.value).startswith(expected)
        assert main([str(path)]) == 2
        assert capsys.readouterr().err == f"opinion-metrics: error: {caught.value}\n"


def test_a_bom_and_upper_case_extensions_just_work(tmp_path):
    bom = _write(tmp_path / "bom.CSV", "\ufeffpredictions,references\nwar; jedi,jedi\n")
    assert load_table(bom, ["predictions", "references"], []) == {
        "predictions": [["war", "jedi"]],
        "references": [["jedi"]],
    }
    upper = _write(tmp_path / "x.JSONL.GZ", gzip.compress(("\ufeff" + ROW).encode()))
    assert load_table(upper, [], []) == {"predictions": [["war"]], "references": [["war", "jedi"]]}
    bom_json = _write(tmp_path / "x.Json", "\ufeff" + json.dumps([json.loads(ROW)]))
    assert load_table(bom_json, [], []) == {"predictions": [["war"]], "references": [["war", "jedi"]]}


def test_rows_know_their_lines(tmp_path):
    csv_path = _write(tmp_path / "x.csv", 'predictions,references\n\n"war\nstar",jedi\nwar,jedi\n')
    table = read_table(csv_path, ["predictions"], [])
    assert table.columns["predictions"] == [["war\nstar"], ["war"]]
    assert table.lines == [3, 5] and table.location(1) == "line 5 of x.csv"
    json_path = _write(tmp_path / "x.json", '[\n {"a": 1},\n\n {"a": 2}, {"a": 3}\n]')
    table = read_table(json_path)
    assert table.columns == {"a": [1, 2, 3]} and table.lines == [2, 4, 4]
    jsonl_path = _write(tmp_path / "x.jsonl", "\n" + ROW + "\n\n" + ROW)
    assert read_table(jsonl_path).lines == [2, 5]
    columns = _write(tmp_path / "c.json", '{"a": [1, 2]}')
    table = read_table(columns)
    assert table.lines is None and table.location(1) == "row 2 of c.json"


def test_pattern_columns_of_a_csv_are_split(tmp_path):
    path = _write(tmp_path / "x.csv", "keywords_a,scores_a,keywords_b,scores_b\nwar; jedi,0.5; 0.25,x,1\n")
    table = load_table(path, ["keywords_*"], ["scores_*"])
    assert table == {
        "keywords_a": [["war", "jedi"]],
        "scores_a": [[0.5, 0.25]],
        "keywords_b": [["x"]],
        "scores_b": [[1.0]],
    }


def test_a_datasets_folder(tmp_path):
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_dict({"predictions": [["war"]], "references": [["war", "jedi"]]}).save_to_disk(
        str(tmp_path / "d")
    )
    assert load_table(tmp_path / "d", [], []) == {"predictions": [["war"]], "references": [["war", "jedi"]]}


def test_parquet_files(tmp_path, capsys):
    parquet = pytest.importorskip("pyarrow.parquet")
    import pyarrow

    rows = {"predictions": [["war"], ["jedi"]], "references": [["war", "jedi"], ["droid"]]}
    parquet.write_table(pyarrow.table(rows), tmp_path / "x.PARQUET")
    table = read_table(tmp_path / "x.PARQUET")
    assert table.columns == rows and table.location(1) == "row 2 of x.PARQUET"
    broken = _write(tmp_path / "broken.parquet", b"PAR1 this is not parquet")
    with pytest.raises(TableError, match=r"^broken\.parquet: not a readable Parquet file \(") as caught:
        read_table(broken)
    assert not caught.value.usage
    assert main([str(broken)]) == 1


def test_every_format_gives_the_same_numbers(tmp_path):
    import csv

    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as parquet

    from opinion_metrics import keyword_prf, weighted_keyword_prf

    rows = [  # inner double space, non-ASCII, a ';'-free comma inside a keyword, an empty list
        {"model": "m1", "predictions": ["café  noir", "war, peace"], "scores": [0.75, 0.5], "references": ["café"]},
        {"model": "m2", "predictions": [], "scores": [], "references": ["jedi", "war"]},
        {"model": "m1", "predictions": ["jedi knight"], "scores": [1.0], "references": ["jedi", "empire"]},
    ]
    columns = {name: [row[name] for row in rows] for name in rows[0]}
    paths = [_write(tmp_path / "x.jsonl", "".join(json.dumps(row) + "\n" for row in rows))]
    paths.append(_write(tmp_path / "x.json.gz", gzip.compress(json.dumps(columns).encode())))
    paths.append(_write(tmp_path / "rows.json", json.dumps(rows, indent=2)))
    with open(tmp_path / "x.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(list(columns))
        for row in rows:
            writer.writerow([row["model"], *(";".join(map(str, row[name])) for name in list(columns)[1:])])
    paths.append(tmp_path / "x.csv")
    parquet.write_table(pyarrow.table(columns), tmp_path / "x.parquet")
    paths.append(tmp_path / "x.parquet")
    expected = {
        "keyword_prf": keyword_prf(columns["predictions"], columns["references"]),
        "weighted_keyword_prf": weighted_keyword_prf(columns["predictions"], columns["scores"], columns["references"]),
    }
    for path in paths:
        output = tmp_path / f"{path.name}.out.json"
        assert main([str(path), "--system", "none", "--output", str(output)]) == 0, path.name  # the rows pooled
        results = json.loads(output.read_text())["all"]
        for family, values in expected.items():
            assert results[family] == pytest.approx(values), path.name


def test_a_datasets_folder_with_several_splits_names_them(tmp_path, capsys):
    datasets = pytest.importorskip("datasets")
    split = datasets.Dataset.from_dict({"predictions": [["war"]], "references": [["war"]]})
    datasets.DatasetDict({"train": split, "test": split}).save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(TableError, match=r"^dd: a datasets folder with 2 splits \(train, test\); give one split's"):
        read_table(tmp_path / "dd")
    assert main([str(tmp_path / "dd")]) == 2
    assert read_table(tmp_path / "dd" / "test").columns == {"predictions": [["war"]], "references": [["war"]]}
    datasets.DatasetDict({"only": split}).save_to_disk(str(tmp_path / "one"))
    assert read_table(tmp_path / "one").columns == {"predictions": [["war"]], "references": [["war"]]}


@pytest.mark.parametrize("seed", range(4))
def test_arrow_columns_equal_to_pydict_on_random_tables(seed):
    """Strings alone and in lists (nulls, slices, several chunks, large types, mostly repeated
    or mostly distinct values) come back as `to_pydict` gives them; other types are untouched."""
    import random

    import pyarrow as pa

    from opinion_metrics.io.arrow import arrow_columns

    rng = random.Random(seed)
    pool = ["a", "b", "Café", "😀 x", "", " sp ", "z" * 40, "ℌ"] + [f"w{i}" for i in range(seed * 40)]
    for trial in range(150):
        n = rng.randrange(0, 30)

        def keywords():
            if rng.random() < 0.1:
                return None
            return [None if rng.random() < 0.1 else rng.choice(pool) for _ in range(rng.randrange(0, 6))]

        list_type = rng.choice([pa.list_(pa.string()), pa.large_list(pa.large_string()), pa.list_(pa.large_string())])
        table = pa.table(
            {
                "keywords": pa.array([keywords() for _ in range(n)], type=list_type),
                "text": pa.array([None if rng.random() < 0.2 else rng.choice(pool) for _ in range(n)]),
                "scores": pa.array([[rng.random()] for _ in range(n)], type=pa.list_(pa.float64())),
                "id": pa.array(range(n), type=pa.int64()),
            }
        )
        if n > 2 and rng.random() < 0.6:  # several chunks, some of them slices
            a, b = sorted(rng.sample(range(n), 2))
            table = pa.concat_tables([table.slice(a, b - a), table.slice(0, a), table.slice(b)])
        assert arrow_columns(table) == table.to_pydict(), (seed, trial)


def test_arrow_columns_share_repeated_strings_and_restore_the_garbage_collector():
    import gc

    import pyarrow as pa

    from opinion_metrics.io.arrow import arrow_columns

    table = pa.table({"keywords": [["plot twist", "acting"], ["acting"], ["plot twist"]] * 100})
    rows = arrow_columns(table)["keywords"]
    assert rows[0][1] is rows[1][0] and rows[0][0] is rows[299][0]  # one object per distinct string
    assert gc.isenabled()
    gc.disable()
    try:
        arrow_columns(table)
        assert not gc.isenabled()  # left as the caller had it
    finally:
        gc.enable()


@pytest.mark.parametrize("lazy", [False, True])
def test_a_parquet_text_that_is_not_utf8_is_named_when_read_lazily_too(tmp_path, lazy, capsys):
    """Read lazily (the CLI: streamed a batch at a time, in workers), invalid UTF-8 is refused
    when the rows are read, with the same message, never deep inside a metric."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    offsets = pa.py_buffer(np.array([0, 4, 8], dtype=np.int32).tobytes())
    texts = pa.Array.from_buffers(pa.string(), 2, [None, offsets, pa.py_buffer(b"war\xffjedi")])  # unchecked bytes
    keywords = pa.ListArray.from_arrays(pa.array([0, 1, 2], pa.int32()), texts)
    pq.write_table(pa.table({"predictions": keywords, "references": keywords}), tmp_path / "bad.parquet")
    message = r"^bad\.parquet: a text column holds bytes that are not UTF-8"
    with pytest.raises(TableError, match=message):
        table = read_table(tmp_path / "bad.parquet", lazy=lazy)
        table.columns["predictions"].to_pylist()
    assert main([str(tmp_path / "bad.parquet"), "--workers", "2"]) == 1
    assert "bad.parquet: a text column holds bytes that are not UTF-8" in capsys.readouterr().err


def test_a_table_error_survives_pickling():
    """A worker's `TableError` (a streamed chunk's) reaches the parent whole."""
    import pickle

    error = TableError(Path("x.parquet"), "a text column holds bytes that are not UTF-8", line=3, usage=True)
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.path, copy.line, copy.usage) == (str(error), error.path, 3, True)
