"""The bad-input catalogue at the surfaces: files read by the CLI and uploaded to the Spaces
(`read_table`, `read_upload`) and the Spaces' text boxes (`collect_inputs`). Each case is read
the way its user meant, or refused with one clear `ValueError` naming the line: never misread,
never a raw crash, never unbounded memory or time."""

import gzip
import json
import re
import subprocess
import sys

import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import REPO

from opinion_metrics.cli import main
from opinion_metrics.core.validation import parse_top_k
from opinion_metrics.demo.controls import FAMILIES as SPACE_FAMILIES
from opinion_metrics.demo.controls import keyword_options
from opinion_metrics.demo.parsing import (
    check_upload_size,
    collect_inputs,
    parse_keyword_lines,
    read_upload,
    split_score,
    split_systems,
)
from opinion_metrics.io.read import read_table
from opinion_metrics.io.table import LIST_HELP, TableError

KEYWORDS = [["war", "jedi knight"], [], ["it's", 'say "hi"', "a; b"]]
SCORES = [[0.9, 0.25], [], [1.0, 0.5, 0.0]]


def _inputs(family, predictions, references="gold", extra=""):
    return collect_inputs(SPACE_FAMILIES[family].inputs, predictions, references, extra, family=family).data


def _both(path):
    """What the CLI reads (`read_table` with its default list columns) and what a Space reads."""
    cli = read_table(path, ["predictions", "references"], ["scores"]).columns
    space = read_upload(path).columns
    assert cli == space
    return cli


# --- "(...)" is a score only where the family takes scores --------------------------------------


@pytest.mark.parametrize("family", ["keyword_prf", "semantic_keyword_prf", "keyword_diversity"])
def test_a_family_without_scores_keeps_parentheses_in_its_keywords(family):
    data = _inputs(family, "Star Wars (1977); Alien (0.5)\nHeat (1995)", "Star Wars (1977)\nHeat (1995)")
    assert data["predictions"] == [["Star Wars (1977)", "Alien (0.5)"], ["Heat (1995)"]]
    assert data["scores"] is None
    if "references" in data:
        assert data["references"] == [["Star Wars (1977)"], ["Heat (1995)"]]


def test_the_weighted_family_reads_scores_but_its_gold_keywords_stay_whole():
    data = _inputs("weighted_keyword_prf", "war (0.9); jedi (1e-1)\nring (+.5)", "Star Wars (1977)\nring (2)")
    assert data["predictions"] == [["war", "jedi"], ["ring"]]
    assert data["scores"] == [[0.9, 0.1], [0.5]]
    assert data["references"] == [["Star Wars (1977)"], ["ring (2)"]]


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ("war (0.9)", ("war", 0.9)),
        ("war(1)", ("war", 1.0)),
        ("Star Wars (IV)", ("Star Wars (IV)", None)),
        ("war (nan)", ("war (nan)", None)),
        ("war (inf)", ("war (inf)", None)),
        ("war (1_0)", ("war (1_0)", None)),
        ("war (0.5) x", ("war (0.5) x", None)),
        ("(0.5)", ("", 0.5)),
        ("a (b) (0.25)", ("a (b)", 0.25)),
        ("war ()", ("war ()", None)),
        ("war (1e5e5)", ("war (1e5e5)", None)),
    ],
)
def test_split_score(item, expected):
    assert split_score(item) == expected


def test_the_score_syntax_is_parsed_in_linear_time_on_a_1mb_line():
    # Each of these made the former regex backtrack quadratically (hours on 1 MB).
    script = (
        "from opinion_metrics.demo.parsing import parse_keyword_lines\n"
        "n = 1_000_000\n"
        "cases = ['x' + ' ' * n + 'y', 'w (' + '1' * n + 'x)', 'w (' + ' ' * n, '(' * n + '0.5)']\n"
        "print([len(parse_keyword_lines(case)[0][0][0]) for case in cases])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=_env(), check=True
    )
    n = 1_000_000
    assert done.stdout.strip() == str([n + 2, n + 5, 3, n - 1])


def _env():
    import os

    return {**os.environ, "PYTHONPATH": str(REPO / "src")}


# --- list cells in CSV ---------------------------------------------------------------------------


def test_list_columns_written_by_pandas_to_csv_read_as_the_same_lists(tmp_path):
    frame = pd.DataFrame({"predictions": KEYWORDS, "scores": SCORES, "references": [["war"], ["x"], []]})
    for suffix, separator in ((".csv", ","), (".tsv", "\t")):
        path = tmp_path / f"x{suffix}"
        frame.to_csv(path, index=False, sep=separator)
        columns = _both(path)
        assert columns["predictions"] == KEYWORDS
        assert columns["scores"] == SCORES
        assert columns["references"] == [["war"], ["x"], []]


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ('["a", "b"]', ["a", "b"]),  # JSON
        ("['a', \"b\"]", ["a", "b"]),  # Python
        ("('a', 'b')", ["a", "b"]),  # a tuple column
        ("('a',)", ["a"]),
        ("['', 'a']", ["", "a"]),
        ("['a',\n 'b']", ["a", "b"]),
        ("[]", []),
        ("  ['a']  ", ["a"]),
        ("[np.str_('a'), np.str_('b')]", ["a", "b"]),  # numpy 2's scalars, from a list of them
        ('["[redacted]"]', ["[redacted]"]),  # brackets in a keyword: a JSON list
        ("(untitled); b", ["(untitled)", "b"]),  # parentheses that are no tuple: plain items
        ("Alien (1979)", ["Alien (1979)"]),
        ("a;b;;c", ["a", "b", "c"]),
    ],
)
def test_a_list_cell_in_any_written_form(tmp_path, cell, expected):
    path = tmp_path / "x.csv"
    pd.DataFrame({"predictions": [cell], "references": ["x"]}).to_csv(path, index=False)
    assert _both(path)["predictions"] == [expected]


@pytest.mark.parametrize(
    ("cell", "column", "expected"),
    [
        ("['a' 'b']", "predictions", "looks like a list but is not a flat list"),  # numpy's repr: no commas
        ("[['a'], ['b']]", "predictions", "looks like a list but is not a flat list"),
        ("[redacted]", "predictions", "'[redacted]' looks like a list"),
        ("[a, b]", "predictions", "looks like a list"),
        ("[True]", "predictions", "looks like a list"),
        ("['a''b']", "predictions", "looks like a list"),  # two literals side by side: one string to Python
        ("['a'\n'b']", "predictions", "looks like a list"),
        ("[b'a']", "predictions", "looks like a list"),
        ("[f'{a}']", "predictions", "looks like a list"),
        ("[__import__('os').getcwd()]", "predictions", "looks like a list"),
        ("[0.9 0.1]", "scores", "looks like a list"),  # numpy float array
        ("['0.9']", "scores", "expected a list of numbers"),
        ("[np.float64(0.5), np.float64(-1e-3)]", "scores", None),
        ("[np.float64(nan)]", "scores", "looks like a list"),
        ("[np.float64(0.5, 1)]", "scores", "looks like a list"),
        ("[np.evil(0.5)]", "scores", "looks like a list"),
        ("0.9; high", "scores", "expected numbers separated by ';'"),
    ],
)
def test_a_list_cell_that_cannot_be_read_is_refused_saying_how_to_write_it(tmp_path, cell, column, expected):
    path = tmp_path / "x.csv"
    row = {"predictions": "a", "scores": "0.5", "references": "x", column: cell}
    pd.DataFrame([row, row]).to_csv(path, index=False)
    if expected is None:  # read, not refused
        assert read_upload(path).columns[column] == [[0.5, -0.001]] * 2
        return
    for read in (lambda: read_table(path, ["predictions", "references"], ["scores"]), lambda: read_upload(path)):
        with pytest.raises(ValueError) as caught:
            read()
        message = str(caught.value)
        assert message.startswith(f"x.csv, line 2: column {column!r}: ") and expected in message
        if "looks like a list" in expected:
            assert LIST_HELP in message


# --- encodings and line endings ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"predictions,references\r\nwar;jedi,war\r\n", None),  # Windows line endings
        (b"\xef\xbb\xbfpredictions,references\nwar;jedi,war\n", None),  # BOM
        ("predictions,references\nwar;jedi,war\n".encode("utf-16"), "UTF-16 text; save the file as UTF-8"),
        (
            "predictions,references\nwar;jedi,war\n".encode("utf-16-le"),
            "UTF-16 text without a BOM; save the file as UTF-8",
        ),
        ("predictions,references\nwar;jedi,caf\xe9\n".encode("latin-1"), "line 2: not UTF-8 text (byte 0xe9)"),
        (b"predictions,references\nwar;jedi,\xed\xa0\xbd\n", "line 2: not UTF-8 text (byte 0xed)"),  # a surrogate
    ],
    ids=["crlf", "bom", "utf16", "utf16-no-bom", "latin1", "surrogate-bytes"],
)
def test_csv_encodings(tmp_path, content, expected):
    path = tmp_path / "x.csv"
    path.write_bytes(content)
    if expected is None:
        assert _both(path) == {"predictions": [["war", "jedi"]], "references": [["war"]]}
        return
    for read in (lambda: read_table(path, ["predictions"]), lambda: read_upload(path)):
        with pytest.raises(ValueError, match=expected.replace("(", r"\(").replace(")", r"\)")):
            read()


# --- lone surrogates and deep nesting ------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        (
            "x.jsonl",
            '{"predictions": ["ok"], "references": ["a"]}\n{"predictions": ["\\ud83d"], "references": ["a"]}\n',
            "x.jsonl, line 2: column 'predictions': '\\ud83d' holds a lone surrogate",
        ),
        (
            "x.json",
            '[{"predictions": ["ok"], "references": ["a"]},\n {"predictions": ["ok"], "references": ["\\udc00x"]}]',
            "x.json, line 2: column 'references': '\\udc00x' holds a lone surrogate",
        ),
        (
            "columns.json",
            '{"predictions": [["ok"], ["\\ud83dwar"]], "references": [["a"], ["b"]]}',
            "columns.json: row 2, column 'predictions': '\\ud83dwar' holds a lone surrogate",
        ),
        ("name.jsonl", '{"pre\\ud83d": ["ok"]}\n', "name.jsonl: a column name: 'pre\\ud83d' holds a lone surrogate"),
        (
            "deep.jsonl",
            '{"predictions": []}\n{"predictions": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
            "deep.jsonl, line 2: JSON nested too deeply",
        ),
        (
            "deep.json",
            '[{"predictions": []},\n\n{"predictions": ' + "[" * 100_000 + "]" * 100_000 + "}]",
            "deep.json, line 3: JSON nested too deeply",
        ),
        (
            "object.json",
            '{"p": ' + '{"a": ' * 100_000 + "1" + "}" * 100_001,
            "object.json, line 1: JSON nested too deeply",
        ),
    ],
    ids=["jsonl", "json-rows", "json-columns", "column-name", "deep-jsonl", "deep-json", "deep-object"],
)
def test_files_with_lone_surrogates_or_deep_nesting_are_refused_naming_the_line(tmp_path, name, content, expected):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    gzipped = tmp_path / (name + ".gz")
    gzipped.write_bytes(gzip.compress(content.encode()))
    for read in (read_table, read_upload):
        for file, shown in ((path, expected), (gzipped, expected.replace(name, name + ".gz", 1))):
            with pytest.raises(TableError) as caught:
                read(file)
            assert str(caught.value).startswith(shown)


def test_deeply_nested_values_are_checked_for_surrogates_without_recursion(tmp_path):
    from opinion_metrics.io.json_files import _check_texts

    value = ["\ud83d"]
    for _ in range(5000):  # deeper than the recursion limit
        value = [value]
    with pytest.raises(TableError, match=r"^x.jsonl, line 7: column 'predictions': '\\ud83d' holds a lone surrogate"):
        _check_texts(tmp_path / "x.jsonl", {"predictions": [value]}, [7])


@pytest.mark.parametrize("box", ["predictions", "references", "texts"])
def test_a_lone_surrogate_in_a_text_box_is_refused_naming_the_line(box):
    boxes = {"predictions": "war\njedi", "references": "war\njedi", "texts": "a\nb"}
    boxes[box] = "war\nthe \ud83d emoji"
    with pytest.raises(ValueError) as caught:
        collect_inputs(SPACE_FAMILIES["keyword_prf"].inputs, boxes["predictions"], boxes["references"], boxes["texts"])
    assert (
        str(caught.value)
        == f"{box}, line 2: 'the \\ud83d emoji' holds a lone surrogate (half of an emoji, a truncated text?)"
    )


def test_a_lone_surrogate_in_the_aspect_boxes_is_refused():
    with pytest.raises(ValueError, match=r"^references, line 1: '\\udc00' holds a lone surrogate"):
        collect_inputs(SPACE_FAMILIES["aspect_sentiment_score"].inputs, "1", "\udc00", "a")
    with pytest.raises(ValueError, match=r"^aspects, line 2: 'b\\ud83d' holds a lone surrogate"):
        collect_inputs(SPACE_FAMILIES["aspect_sentiment_score"].inputs, "1, 2", "1, 2", "a\nb\ud83d")


# --- Parquet: Arrow types and decoded size -------------------------------------------------------


def test_parquet_arrow_list_and_string_types_read_as_lists_and_strings(tmp_path):
    table = pa.table(
        {
            "predictions": pa.array([["a", "b"], ["c", "d"]], type=pa.list_(pa.string(), 2)),  # fixed size
            "references": pa.array([["a"], []], type=pa.large_list(pa.large_string())),
            "scores": pa.array([[0.5, 0.25], [1.0, 0.0]], type=pa.list_(pa.float32(), 2)),
            "model": pa.array(["m", "m"]).dictionary_encode(),
        }
    )
    path = tmp_path / "x.parquet"
    pq.write_table(table, path)
    assert _both(path) == {
        "predictions": [["a", "b"], ["c", "d"]],
        "references": [["a"], []],
        "scores": [[0.5, 0.25], [1.0, 0.0]],
        "model": ["m", "m"],
    }


def test_a_csv_of_numpy_array_cells_is_refused_saying_how_to_write_lists(tmp_path):
    frame = pl.DataFrame({"predictions": [["a", "b"]], "scores": [[0.5, 1.0]], "references": [["a"]]}).to_pandas()
    frame.to_csv(tmp_path / "x.csv", index=False)  # polars -> pandas holds numpy arrays: "['a' 'b']"
    with pytest.raises(TableError, match=r"a numpy array's text, without commas: write df\[column\].map\(list\)"):
        read_upload(tmp_path / "x.csv")
    frame["predictions"] = frame["predictions"].map(list)
    frame["scores"] = frame["scores"].map(list)
    frame.to_csv(tmp_path / "x.csv", index=False)
    assert _both(tmp_path / "x.csv") == {"predictions": [["a", "b"]], "scores": [[0.5, 1.0]], "references": [["a"]]}


def test_files_written_by_polars_read_as_written(tmp_path):
    frame = pl.DataFrame({"predictions": KEYWORDS, "references": [["war"], ["x"], []], "scores": SCORES})
    frame.write_parquet(tmp_path / "x.parquet")
    frame.write_ndjson(tmp_path / "x.jsonl")
    for name in ("x.parquet", "x.jsonl"):
        columns = _both(tmp_path / name)
        assert columns == {"predictions": KEYWORDS, "references": [["war"], ["x"], []], "scores": SCORES}


def test_a_dictionary_encoded_parquet_of_a_few_kb_is_refused_by_its_decoded_size(tmp_path):
    text = "x" * 100_000
    path = tmp_path / "bomb.parquet"
    rows = 600  # 60 MB once decoded, from a file of about 1 KB
    column = pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), pa.array([text]))
    pq.write_table(pa.table({"predictions": column}), path, compression="zstd")
    assert path.stat().st_size < 10_000
    with pytest.raises(ValueError, match=r"^bomb.parquet expands to more than 50 MB, the most this Space accepts$"):
        check_upload_size(path)
    # the same inside lists, and a file just under the bound is read
    nested = pa.ListArray.from_arrays(pa.array(range(rows + 1), pa.int32()), column)
    pq.write_table(pa.table({"predictions": nested}), path, compression="zstd")
    with pytest.raises(ValueError, match="expands to more than 50 MB"):
        check_upload_size(path)
    small = pa.DictionaryArray.from_arrays(pa.array([0] * 400, pa.int32()), pa.array([text]))
    pq.write_table(pa.table({"predictions": small}), path, compression="zstd")
    assert read_upload(path).columns["predictions"] == [text] * 400


def test_a_parquet_of_millions_of_nulls_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "nulls.parquet"
    pq.write_table(pa.table({"predictions": pa.nulls(6_000_000, pa.list_(pa.string()))}), path)
    assert path.stat().st_size < 100_000
    with pytest.raises(ValueError, match=r"^nulls.parquet holds 6,000,000 values, more than the 5,000,000"):
        check_upload_size(path)


def test_a_gzip_bomb_is_refused_by_its_decompressed_size(tmp_path):
    path = tmp_path / "x.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"predictions": ["' + b"a" * 60_000_000 + b'"]}\n'))
    assert path.stat().st_size < 1_000_000
    with pytest.raises(ValueError, match="expands to more than 50 MB"):
        read_upload(path)


# --- several systems in one upload ---------------------------------------------------------------


def test_an_upload_with_several_systems_is_not_pooled_and_splits_per_system(tmp_path):
    path = tmp_path / "x.jsonl"
    rows = [
        {"model": "a", "predictions": ["war"], "references": ["war"]},
        {"model": "b", "predictions": ["x"], "references": ["war"]},
        {"model": "a", "predictions": ["ring"], "references": ["jedi"]},
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    upload = read_upload(path)
    with pytest.raises(ValueError, match=r"the file holds 2 systems in column `model` \(a, b\); their rows are not"):
        collect_inputs(SPACE_FAMILIES["keyword_prf"].inputs, "", "", "", upload, family="keyword_prf")
    systems = split_systems(upload)
    assert list(systems) == ["a", "b"]
    assert systems["a"].columns["predictions"] == [["war"], ["ring"]] and systems["a"].lines == [1, 3]
    assert systems["b"].columns["references"] == [["war"]] and systems["b"].lines == [2]
    data = collect_inputs(SPACE_FAMILIES["keyword_prf"].inputs, "", "", "", systems["a"], family="keyword_prf").data
    assert data["predictions"] == [["war"], ["ring"]] and data["references"] == [["war"], ["jedi"]]
    assert list(split_systems(upload, "model")) == ["a", "b"]
    with pytest.raises(ValueError, match="no system column `system`"):
        split_systems(upload, "system")
    frame = pl.DataFrame({"system": ["a", "b", "b"], "predictions": [["x"], ["y"], [None]], "references": [["x"]] * 3})
    frame.write_parquet(tmp_path / "x.parquet")
    systems = split_systems(read_upload(tmp_path / "x.parquet"))
    assert list(systems) == ["a", "b"] and systems["b"].columns["predictions"] == [["y"], [None]]
    assert systems["b"].location(1) == "row 3 of x.parquet"  # its row in the file, not in b's rows
    inputs = collect_inputs(SPACE_FAMILIES["keyword_prf"].inputs, "", "", "", systems["b"], family="keyword_prf")
    assert inputs.where(1) == "row 3 of x.parquet (example 2)"  # b's second example, counted from 1


# --- top_k typed with superscripts ---------------------------------------------------------------


@pytest.mark.parametrize("value", ["5²", "²", "５", "1⁰"])
def test_superscript_digits_in_top_k_get_the_usual_message(value):
    expected = f"top_k must be M, O or a positive integer, got {value!r}"
    with pytest.raises(ValueError) as caught:
        parse_top_k(value)
    assert str(caught.value) == expected
    with pytest.raises(ValueError) as caught:  # the Space's box
        keyword_options({"top_k": value})
    assert str(caught.value) == expected


def test_keyword_lines_still_parse_scores_where_the_family_takes_them():
    assert parse_keyword_lines("a (0.5); b (1)\n", scored=True) == ([["a", "b"]], [[0.5, 1.0]])
    assert parse_keyword_lines("a (0.5); b (1)\n", scored=False) == ([["a (0.5)", "b (1)"]], None)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_text_boxes_split_lines_at_any_line_ending(newline):
    data = _inputs("keyword_prf", newline.join(["war; jedi", "ring"]), newline.join(["war", "ring"]))
    assert data["predictions"] == [["war", "jedi"], ["ring"]] and data["references"] == [["war"], ["ring"]]


def test_parquet_uploads_with_map_struct_nested_and_categorical_columns_are_read(tmp_path):
    path = tmp_path / "x.parquet"
    table = pa.table(
        {
            "predictions": pa.array([["a"], ["b", "c"]]),
            "nested": pa.array([[["a"]], [["b", "c"]]]),
            "tags": pa.array([[("k", "v")], []], type=pa.map_(pa.string(), pa.string())),
            "meta": pa.array([{"x": "y"}, {"x": None}]),
        }
    )
    pq.write_table(table, path)
    columns = read_upload(path).columns
    assert columns["tags"] == [[("k", "v")], []] and columns["meta"] == [{"x": "y"}, {"x": None}]
    assert columns["nested"] == [[["a"]], [["b", "c"]]]
    frame = pl.DataFrame({"predictions": [["a"]] * 3, "model": pl.Series(["x", "y", "x"], dtype=pl.Categorical)})
    frame.write_parquet(path)
    assert read_upload(path).columns["model"] == ["x", "y", "x"]


def test_a_parquet_whose_texts_are_delta_byte_array_encoded_is_refused_saying_why(tmp_path):
    path = tmp_path / "delta.parquet"
    column = pa.array(["a review"] * 10)
    pq.write_table(pa.table({"p": column}), path, use_dictionary=False, column_encoding={"p": "DELTA_BYTE_ARRAY"})
    with pytest.raises(ValueError, match="DELTA_BYTE_ARRAY encoding, which this Space does not expand; save it with"):
        read_upload(path)


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("x.jsonl", '{"predictions": ["a"], "predictions": ["b"]}\n', "x.jsonl, line 1: key 'predictions'"),
        (
            "x.json",
            '[{"predictions": ["a"]},\n{"references": ["a"], "references": []}]',
            "x.json, line 2: key 'references'",
        ),
        ("columns.json", '{"predictions": [["a"]], "predictions": [["b"]]}', "columns.json, line 1: key 'predictions'"),
    ],
)
def test_a_key_given_twice_in_one_json_object_is_refused_not_the_last_one_kept(tmp_path, name, content, expected):
    path = tmp_path / name
    path.write_text(content)
    for read in (read_table, read_upload):
        with pytest.raises(TableError, match=f"^{re.escape(expected)} appears twice in one object; keep one$"):
            read(path)


def test_a_score_without_its_keyword_is_refused():
    with pytest.raises(ValueError, match=r"^predictions, line 2: '\(0.5\)' is a score without its keyword$"):
        _inputs("weighted_keyword_prf", "a (0.1)\nb (0.2); (0.5)", "a\nb")


@pytest.mark.parametrize("family", ["keyword_prf", "weighted_keyword_prf"])
def test_the_comparison_tab_reads_the_keywords_alike_for_every_family(monkeypatch, family):
    # The cold pass: "keyword (0.55)" was the keyword "keyword (0.55)" for keyword_prf, "keyword" elsewhere.
    from opinion_metrics.analysis import compare as comparison
    from opinion_metrics.demo.comparing import compare_systems_tab

    seen = {}

    def spy(name, a, b, gold, **options):
        seen.update(a=a, b=b, gold=gold, scores=options.get("scores_a"))
        raise ValueError("stop here")

    monkeypatch.setattr(comparison, "compare_systems_with_pairs", spy)
    typed = "[A] Heat (0.5)\n[A] Alien (1)\n[B] Heat (1)\n[B] Ring (0.25)"
    with pytest.raises(Exception, match="stop here"):
        compare_systems_tab(family, typed, "Heat (1995)\nAlien (0.5)", "")
    assert seen["gold"] == [["Heat (1995)"], ["Alien (0.5)"]]  # gold keywords have no scores
    assert seen["a"] == [["Heat"], ["Alien"]] and seen["b"] == [["Heat"], ["Ring"]]
    if family == "weighted_keyword_prf":
        assert seen["scores"] == [[0.5], [1.0]]


def _twice_named(path):
    """A Parquet or Arrow IPC file whose columns 'predictions' and 'references' appear twice
    (pyarrow writes such a schema, Feather V1 refuses it)."""
    import pyarrow.ipc as ipc

    table = pa.table(
        [pa.array([["a"], ["b"]]), pa.array([["a"], ["c"]]), pa.array([["x"], ["y"]]), pa.array([[], []])],
        names=["predictions", "references", "predictions", "references"],
    )
    if path.suffix == ".parquet":
        pq.write_table(table, path)
    else:
        with ipc.new_file(path, table.schema) as writer:
            writer.write_table(table)
    return path


@pytest.mark.parametrize("name", ["twice.parquet", "twice.arrow", "twice.feather"])
def test_a_parquet_or_arrow_file_with_a_column_name_given_twice_is_refused_naming_it(tmp_path, capsys, name):
    # the last column of a name was read silently (the CLI), or "not a readable Parquet file" (a Space)
    path = _twice_named(tmp_path / name)
    expected = f"{name}: column 'predictions' appears twice; give each column its own name"
    readers = [read_table, lambda p: read_table(p, lazy=True)]
    for read in readers + ([read_upload] if name.endswith(".parquet") else []):
        with pytest.raises(TableError, match=f"^{re.escape(expected)}$"):
            read(path)
    assert main([str(path)]) == 1
    assert expected in capsys.readouterr().err


def test_a_feather_v1_file_is_read_as_its_columns(tmp_path):
    # pyarrow's write_feather(version=1) (and old pandas' to_feather) write Feather V1, which
    # is no Arrow IPC file: "Expected to read 826361158 metadata bytes" before
    import warnings

    from pyarrow import feather

    columns = {"texts": ["good", "bad", "café ☕"], "labels": [1, 0, 1], "rating": [0.5, 1.5, 2.0]}
    for name in ("v1.feather", "v1.arrow"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # pyarrow deprecates writing V1
            feather.write_feather(pa.table(columns), tmp_path / name, version=1)
        assert read_table(tmp_path / name).columns == columns
        lazy = read_table(tmp_path / name, lazy=True).columns
        assert {column: list(values) for column, values in lazy.items()} == columns
