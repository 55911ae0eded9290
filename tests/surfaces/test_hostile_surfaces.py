"""Inputs a hostile user tried on the CLI, the file readers and the Spaces' text boxes after
the surfaces were hardened (issue 17): files written by pandas / polars / Excel, list cells in
other syntaxes, odd consoles and plot formats. Each case failed before its fix."""

import json
import subprocess
import sys

import pandas as pd
import pytest

from opinion_metrics import keyword_prf
from opinion_metrics.cli import main
from opinion_metrics.demo.parsing import collect_inputs
from opinion_metrics.io.read import read_table
from opinion_metrics.io.table import TableError
from opinion_metrics.view import figures

ROWS = [
    {"review_id": 1, "model": "a", "predictions": ["great acting", "bad plot"], "references": ["acting", "plot"]},
    {"review_id": 2, "model": "a", "predictions": ["star wars", "fun"], "references": ["star wars (1977)"]},
    {"review_id": 1, "model": "b", "predictions": ["acting"], "references": ["acting", "plot"]},
    {"review_id": 2, "model": "b", "predictions": ["fun", "star"], "references": ["star wars (1977)"]},
]


def _expected_by_model(match: str = "substring") -> dict[str, dict[str, float]]:
    """keyword_prf per model, computed by the library on the rows themselves (not through a file)."""
    found = {}
    for model in ("a", "b"):
        rows = [row for row in ROWS if row["model"] == model]
        found[model] = keyword_prf([r["predictions"] for r in rows], [r["references"] for r in rows], match=match)
    return found


def _run(argv, capsys):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


# pandas' DataFrame.to_json writes orient="columns" by default; "split", "index" and "table"
# are its other object layouts. Each holds the same rows as orient="records".
@pytest.mark.parametrize("orient", ["columns", "split", "index", "table"])
def test_every_object_layout_of_pandas_to_json_is_read_as_its_rows(tmp_path, capsys, orient):
    path = tmp_path / f"{orient}.json"
    pd.DataFrame(ROWS).to_json(path, orient=orient)
    table = read_table(path, ["predictions", "references"], [])
    assert table.columns == {name: [row[name] for row in ROWS] for name in ROWS[0]}
    status, out, err = _run([path, "--by", "model", "--output", tmp_path / "out.json"], capsys)
    assert status == 0, err
    written = json.loads((tmp_path / "out.json").read_text())
    expected = _expected_by_model()
    for model in ("a", "b"):
        assert written[model]["keyword_prf"] == pytest.approx(expected[model])


def test_pandas_values_layout_is_refused_naming_the_orient_that_keeps_column_names(tmp_path):
    path = tmp_path / "values.json"
    pd.DataFrame(ROWS).to_json(path, orient="values")
    with pytest.raises(TableError, match="orient='records'"):
        read_table(path)


@pytest.mark.parametrize("cell", ["{'a', 'b'}", '{"a", "b"}', "{'a': 1}", '{"a": 0.5}', "set()", "{}"])
def test_a_csv_cell_holding_a_python_set_or_dict_is_refused_not_read_as_one_keyword(tmp_path, cell):
    # pandas' to_csv writes a column of sets as "{'a', 'b'}": read as the keyword "{'a', 'b'}", it
    # matched "a" by substring and scored precision 1.
    path = tmp_path / "sets.csv"
    pd.DataFrame({"predictions": [cell], "references": ["a"]}).to_csv(path, index=False)
    with pytest.raises(TableError, match=r"line 2: column 'predictions'.*(set|object|dict)"):
        read_table(path, ["predictions", "references"], [])


def test_a_keyword_in_braces_that_is_no_literal_stays_a_keyword(tmp_path):
    path = tmp_path / "braces.csv"
    path.write_text("predictions,references\n{redacted}; b,a\n", encoding="utf-8")
    assert read_table(path, ["predictions"], []).columns["predictions"] == [["{redacted}", "b"]]


@pytest.mark.parametrize("cell", ['["\\ud83d x"]', "['\\ud83d x']", "['\\U0001F600', '\\udc00']"])
def test_a_lone_surrogate_written_as_an_escape_in_a_csv_list_cell_is_refused(tmp_path, cell):
    path = tmp_path / "escaped.csv"
    pd.DataFrame({"predictions": [cell], "references": ["x"]}).to_csv(path, index=False)
    with pytest.raises(TableError, match="line 2: column 'predictions'.*lone surrogate"):
        read_table(path, ["predictions"], [])


def test_an_escaped_emoji_in_a_csv_list_cell_is_read(tmp_path):
    path = tmp_path / "emoji.csv"
    pd.DataFrame({"predictions": ["['\\U0001F600 fun', \"\\u00e9t\\u00e9\"]"]}).to_csv(path, index=False)
    assert read_table(path, ["predictions"], []).columns["predictions"] == [["\U0001f600 fun", "été"]]


def test_a_predictions_pattern_with_brackets_reads_its_csv_list_cells(tmp_path, capsys):
    # fnmatch read "kw[1]_*" as a character class: the cells "x; y" stayed strings
    path = tmp_path / "brackets.csv"
    path.write_text("references,kw[1]_a,kw[1]_b\nx,x; y,x\n", encoding="utf-8")
    table = read_table(path, ["kw[1]_*"], [])
    assert table.columns["kw[1]_a"] == [["x", "y"]] and table.columns["kw[1]_b"] == [["x"]]
    status, out, err = _run([path, "--predictions", "kw[1]_*", "--output", tmp_path / "o.json"], capsys)
    assert status == 0, err
    written = json.loads((tmp_path / "o.json").read_text())
    assert written["a"]["keyword_prf"] == pytest.approx(keyword_prf([["x", "y"]], [["x"]]))
    assert written["b"]["keyword_prf"]["precision"] == 1.0


def test_decimal_scores_from_parquet_are_read_as_numbers(tmp_path):
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    scores = pa.array([[decimal.Decimal("0.50"), decimal.Decimal("0.25")]], pa.list_(pa.decimal128(5, 2)))
    path = tmp_path / "decimal.parquet"
    pq.write_table(pa.table({"predictions": [["a", "b"]], "references": [["a"]], "scores": scores}), path)
    read = read_table(path).columns["scores"]
    assert read == [[0.5, 0.25]] and all(type(value) is float for value in read[0])


def test_an_unwritable_plot_format_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    # .pgf needs a LaTeX installation: matplotlib raised a RuntimeError traceback after the whole computation
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name, *args, **kwargs: None)
    data = tmp_path / "x.jsonl"
    data.write_text(json.dumps({"predictions": ["a"], "references": ["a"]}) + "\n", encoding="utf-8")
    status, out, err = _run([data, "--plot", tmp_path / "x.pgf"], capsys)
    assert status == 2 and out == ""
    assert ".pgf needs LaTeX" in err and "Traceback" not in err
    assert not (tmp_path / "x.pgf").exists()


def test_an_error_while_drawing_is_one_line_and_keeps_the_old_file(tmp_path, capsys, monkeypatch):
    import opinion_metrics.cli.command as cli

    def fail(*args, **kwargs):
        raise RuntimeError("renderer exploded")

    monkeypatch.setattr(cli, "plot_results", fail)
    data = tmp_path / "x.jsonl"
    data.write_text(json.dumps({"predictions": ["a"], "references": ["a"]}) + "\n", encoding="utf-8")
    plot = tmp_path / "x.png"
    plot.write_bytes(b"old")
    status, out, err = _run([data, "--plot", plot], capsys)
    assert status == 1 and err.strip() == f"opinion-metrics: error: cannot draw {plot}: renderer exploded"
    assert plot.read_bytes() == b"old"


def test_a_console_that_cannot_show_a_character_does_not_crash_the_cli(tmp_path):
    # a Windows console (cp1252): printing a model named with an emoji raised UnicodeEncodeError
    data = tmp_path / "x.jsonl"
    rows = [{"model": "\U0001f468\u200d\U0001f469 family", "predictions": ["a"], "references": ["a"]}]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    env = {"PYTHONIOENCODING": "cp1252", "PYTHONPATH": ":".join(sys.path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "opinion_metrics.cli", str(data), "--by", "model"],
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode("cp1252", "replace")
    out = done.stdout.decode("cp1252")
    assert "\\U0001f468\\u200d\\U0001f469 family" in out and "1.0000" in out


def test_a_shared_predictions_box_reads_a_year_in_parentheses_as_part_of_the_keyword():
    # The combined Space passes no family: "Star Wars (1977)" on every line read as the keyword
    # "Star Wars" with score 1977, and the lexical families scored "Star Wars".
    predictions = "Star Wars (1977)\nThe Godfather (1972); mafia"
    inputs = collect_inputs(["predictions", "references"], predictions, "star wars (1977)\nthe godfather (1972)")
    assert inputs.data["predictions"] == [["Star Wars (1977)"], ["The Godfather (1972)", "mafia"]]
    assert inputs.data["scores"] is None
    scored = collect_inputs(["predictions", "references"], "war (0.8); jedi (0.2)\nring (1)", "war\nring")
    assert scored.data["predictions"] == [["war", "jedi"], ["ring"]]
    assert scored.data["scores"] == [[0.8, 0.2], [1.0]]


def test_an_ndjson_file_from_polars_is_read_as_json_lines(tmp_path, capsys):
    import polars as pl

    path = tmp_path / "rows.ndjson"
    pl.DataFrame(ROWS).write_ndjson(path)
    table = read_table(path, [], [])
    assert table.columns["predictions"] == [row["predictions"] for row in ROWS] and table.lines == [1, 2, 3, 4]
    assert read_table(_gzip(path), [], []).columns == table.columns
    status, out, err = _run([path, "--by", "model", "--output", tmp_path / "out.json"], capsys)
    assert status == 0, err
    assert json.loads((tmp_path / "out.json").read_text())["b"]["keyword_prf"] == pytest.approx(
        _expected_by_model()["b"]
    )


def _gzip(path):
    import gzip

    packed = path.with_name(path.name + ".gz")
    packed.write_bytes(gzip.compress(path.read_bytes()))
    return packed


def test_json_lines_saved_as_json_are_read_as_json_lines(tmp_path):
    # pandas' df.to_json("x.json", orient="records", lines=True): "invalid JSON (Extra data)" before
    path = tmp_path / "rows.json"
    pd.DataFrame(ROWS).to_json(path, orient="records", lines=True)
    table = read_table(path, [], [])
    assert table.columns == {name: [row[name] for row in ROWS] for name in ROWS[0]} and table.lines == [1, 2, 3, 4]
    broken = tmp_path / "broken.json"
    broken.write_text('{"predictions": ["a"]}\n{"predictions": [}\n', encoding="utf-8")
    with pytest.raises(TableError, match=r"broken.json, line 2: invalid JSON"):
        read_table(broken)


def test_a_json_array_saved_as_jsonl_says_to_name_it_json(tmp_path):
    path = tmp_path / "rows.jsonl"
    pd.DataFrame(ROWS).to_json(path, orient="records")
    with pytest.raises(TableError, match=r"line 1: .*got a list.*name the file \.json"):
        read_table(path)


def test_blanks_around_csv_header_names_are_not_part_of_the_names(tmp_path, capsys):
    # "predictions, references" (a blank after the comma) named a column " references"
    path = tmp_path / "blanks.csv"
    path.write_text("predictions, references ,  model\nwar; jedi, war ,a\nring,ring; sword,a\n", encoding="utf-8")
    assert list(read_table(path, ["predictions", "references"], []).columns) == ["predictions", "references", "model"]
    status, out, err = _run([path, "--by", "model", "--output", tmp_path / "o.json"], capsys)
    assert status == 0, err
    expected = keyword_prf([["war", "jedi"], ["ring"]], [["war"], ["ring", "sword"]])
    assert json.loads((tmp_path / "o.json").read_text())["a"]["keyword_prf"] == pytest.approx(expected)
    twice = tmp_path / "twice.csv"
    twice.write_text("predictions,predictions \na,b\n", encoding="utf-8")
    with pytest.raises(TableError, match="column 'predictions' appears twice"):
        read_table(twice)


def test_a_csv_file_joins_a_json_gold_file_whose_keys_are_numbers(tmp_path, capsys):
    # a CSV cannot write a number: its movie "1" is the gold file's movie 1 (refused before)
    predictions = tmp_path / "p.csv"
    predictions.write_text("movie,predictions\n1,acting; plot\n2,star wars\n1,acting\n", encoding="utf-8")
    gold = tmp_path / "g.jsonl"
    gold.write_text(
        '{"movie": 1, "keywords": ["acting", "story"]}\n{"movie": 2, "keywords": ["star wars"]}\n', encoding="utf-8"
    )
    status, out, err = _run([predictions, "--gold", gold, "--output", tmp_path / "o.json"], capsys)
    assert status == 0, err
    expected = keyword_prf(
        [["acting", "plot"], ["star wars"], ["acting"]], [["acting", "story"], ["star wars"], ["acting", "story"]]
    )
    assert json.loads((tmp_path / "o.json").read_text())["all"]["keyword_prf"] == pytest.approx(expected)
    # and the other way round; a gold file with 1 and "1" is two gold lists for one CSV key
    reviews = tmp_path / "r.jsonl"
    reviews.write_text('{"movie": 2, "predictions": ["star wars"]}\n', encoding="utf-8")
    gold_csv = tmp_path / "g.csv"
    gold_csv.write_text("movie,keywords\n2,star wars; jedi\n", encoding="utf-8")
    assert _run([reviews, "--gold", gold_csv, "--output", tmp_path / "o2.json"], capsys)[0] == 0
    recall = json.loads((tmp_path / "o2.json").read_text())["all"]["keyword_prf"]["recall"]
    assert recall == 0.5
    gold.write_text('{"movie": 1, "keywords": ["a"]}\n{"movie": "1", "keywords": ["b"]}\n', encoding="utf-8")
    status, out, err = _run([predictions, "--gold", gold], capsys)
    assert status == 1 and "movie: '1' has two gold lists (line 1 of g.jsonl and line 2 of g.jsonl)" in err


def test_a_gold_file_does_not_silently_replace_the_files_own_references(tmp_path, capsys):
    reviews = tmp_path / "r.jsonl"
    reviews.write_text('{"movie": "m", "predictions": ["a"], "references": ["zzz"]}\n', encoding="utf-8")
    gold = tmp_path / "g.jsonl"
    gold.write_text('{"movie": "m", "keywords": ["a"]}\n', encoding="utf-8")
    status, out, err = _run([reviews, "--gold", gold], capsys)
    assert status == 2 and out == ""
    assert "r.jsonl has its own gold column 'references'" in err
    assert _run([reviews, "--gold", gold, "--references", "gold", "--output", tmp_path / "o.json"], capsys)[0] == 0
    assert json.loads((tmp_path / "o.json").read_text())["all"]["keyword_prf"]["precision"] == 1.0


def test_a_gold_key_that_differs_only_in_blanks_or_case_is_named(tmp_path, capsys):
    reviews = tmp_path / "r.jsonl"
    reviews.write_text('{"movie": "Star Wars ", "predictions": ["a"]}\n', encoding="utf-8")
    gold = tmp_path / "g.jsonl"
    gold.write_text('{"movie": "star wars", "keywords": ["a"]}\n', encoding="utf-8")
    status, out, err = _run([reviews, "--gold", gold], capsys)
    assert status == 1
    assert "no gold keywords in g.jsonl for movie 'Star Wars '; g.jsonl has 'star wars' (blanks or case differ)" in err


def test_an_excel_csv_separated_by_semicolons_is_read_with_its_decimal_commas(tmp_path, capsys):
    # Excel in many countries writes ';' between cells and 0,5 for a half (refused before)
    path = tmp_path / "excel.csv"
    text = '\ufeffmodel;predictions;scores;references\r\na;"war; jedi";"0,9; 0,25";war\r\na;ring;1;"ring; sword"\r\n'
    path.write_bytes(text.encode("utf-8"))
    table = read_table(path, ["predictions", "references"], ["scores"])
    assert table.columns == {
        "model": ["a", "a"],
        "predictions": [["war", "jedi"], ["ring"]],
        "scores": [[0.9, 0.25], [1.0]],
        "references": [["war"], ["ring", "sword"]],
    }
    assert table.lines == [2, 3]
    pd.DataFrame({"predictions": ["war", "ring"], "references": ["war", "x"]}).to_csv(
        tmp_path / "tabs.csv", sep="\t", index=False
    )
    assert read_table(tmp_path / "tabs.csv", ["predictions"], []).columns["references"] == ["war", "x"]
    commas = tmp_path / "commas.tsv"
    commas.write_text("predictions,references\nwar,war\n", encoding="utf-8")
    assert read_table(commas, ["predictions"], []).columns == {"predictions": [["war"]], "references": ["war"]}
    status, out, err = _run([path, "--by", "model", "--output", tmp_path / "o.json"], capsys)
    assert status == 0, err
    expected = keyword_prf([["war", "jedi"], ["ring"]], [["war"], ["ring", "sword"]])
    assert json.loads((tmp_path / "o.json").read_text())["a"]["keyword_prf"] == pytest.approx(expected)


def test_the_ratings_box_reads_plain_integers_only_and_takes_semicolons():
    from opinion_metrics.demo.parsing import parse_rating_lines

    # int() reads "1_0" as 10 and "４" as 4: a typo must not become another rating
    for typed in ("1_0, 3", "４, 3", "3, 0x1"):
        with pytest.raises(ValueError, match="line 1: ratings must be integers"):
            parse_rating_lines(typed)
    assert parse_rating_lines("5; 0; 3\n4,0 ,+2\n-0 1") == [[5, 0, 3], [4, 0, 2], [0, 1]]


def test_a_keyword_without_a_readable_score_is_named():
    from opinion_metrics.demo.parsing import parse_keyword_lines

    with pytest.raises(ValueError, match=r"line 2: give a score to every keyword or to none; 'b \(nan\)' has none"):
        parse_keyword_lines("x (0.1)\na (0.5); b (nan)", scored=True)


def test_a_plot_of_hundreds_of_by_values_stays_readable(tmp_path, capsys, monkeypatch):
    # --by review_id on 400 reviews: a title listing 400 ids ran off the figure, 2,400 value
    # labels piled up above the bars and the legend was cut off
    import opinion_metrics.cli.command as cli

    drawn = {}

    def keep(results, path, title=""):
        figure = figures.results_figure(results, title)
        drawn["title"], drawn["figure"] = title, figure
        path.write_bytes(b"png")

    monkeypatch.setattr(cli, "plot_results", keep)
    data = tmp_path / "many.jsonl"
    rows = [{"review_id": i, "predictions": ["a", "b"], "references": ["a"]} for i in range(400)]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    status, out, err = _run([data, "--by", "review_id", "--plot", tmp_path / "many.png"], capsys)
    assert status == 0, err
    assert drawn["title"] == "many.jsonl (review_id: 0, 1, 2, 3, 4 and 395 more)"
    axis = drawn["figure"].axes[0]
    assert len(axis.texts) == 0 and axis.get_legend() is None  # 400 bars per metric: no labels, no legend
    few = figures.results_figure({"a": {"keyword_prf": {"precision": 0.5}}, "b": {"keyword_prf": {"precision": 0.25}}})
    assert [text.get_text() for text in few.axes[0].texts] == ["0.5000", "0.2500"]
    assert [text.get_text() for text in few.axes[0].get_legend().get_texts()] == ["a", "b"]


def test_an_unknown_compare_base_lists_a_few_short_values(tmp_path, capsys):
    data = tmp_path / "x.jsonl"
    rows = [{"model": f"model {i} " + "x" * 200, "predictions": ["a"], "references": ["a"]} for i in range(30)]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    status, out, err = _run([data, "--by", "model", "--compare", "nope"], capsys)
    assert status == 2
    shown = "model 0 " + "x" * 29 + "..."
    assert f"--compare 'nope' is not a system of column 'model' (there: {shown}, " in err  # the flag typed
    assert "and 20 more)" in err and len(err) < 800


def test_a_ratings_file_with_some_aspects_says_how_to_evaluate_it(tmp_path, capsys):
    # only two of the six default aspects: the lexical families were picked and 'predictions' was missing
    path = tmp_path / "ratings.csv"
    path.write_text("review,giai_tri,luu_tru,pred_giai_tri,pred_luu_tru\nok,5,0,4,0\n", encoding="utf-8")
    status, out, err = _run([path], capsys)
    assert status == 2
    assert "--metrics aspect_sentiment_score --aspects giai_tri,luu_tru" in err
    status, out, err = _run([path, "--metrics", "aspect_sentiment_score", "--aspects", "giai_tri,luu_tru"], capsys)
    assert status == 0, err


def test_two_subsets_that_would_share_a_result_name_are_refused(tmp_path, capsys):
    # model 'a' with --by value 'b/x' and model 'a/b' with value 'x' were both "a/b/x": one row vanished
    path = tmp_path / "x.csv"
    path.write_text("keywords_a,keywords_a/b,references,model\nx,q,x,b/x\nq,x,x,x\n", encoding="utf-8")
    status, out, err = _run([path, "--predictions", "keywords_*", "--by", "model"], capsys)
    assert status == 2 and out == ""
    assert "two result rows would both be named 'a/b/x'" in err


@pytest.mark.parametrize(
    ("films", "message"),
    [
        ([None, 1], "--group film: line 1 of x.jsonl is empty; give every row a value"),
        (["", 1], "--group film: line 1 of x.jsonl is empty"),
        ([1, "1"], "--group film: 1 (line 1 of x.jsonl) and '1' (line 2 of x.jsonl) would be one group"),
    ],
)
def test_group_values_are_checked_like_by_values(tmp_path, capsys, films, message):
    # a missing film was pooled as a group of its own, and 1 / "1" as two groups
    path = tmp_path / "x.jsonl"
    rows = [{"film": film, "predictions": ["a"], "references": ["a"]} for film in films]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    status, out, err = _run([path, "--group", "film"], capsys)
    assert status == 1 and message in err


def test_a_pipe_or_standard_input_is_refused_instead_of_hanging(tmp_path, capsys):
    # a named pipe called x.jsonl was opened twice (gzip check, then reading): the second open waited forever
    import os

    fifo = tmp_path / "x.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(TableError, match="x.jsonl: not a regular file \\(a pipe or a device\\)"):
        read_table(fifo)  # refused before opening it: no writer is needed
    status, out, err = _run(["-"], capsys)
    assert status == 2 and "standard input is not read; save the data to a file" in err


@pytest.mark.parametrize("writer", ["pandas_feather", "polars_ipc"])
def test_arrow_ipc_files_from_pandas_and_polars_are_read(tmp_path, capsys, writer):
    import polars as pl

    path = tmp_path / ("rows.feather" if writer == "pandas_feather" else "rows.arrow")
    if writer == "pandas_feather":
        pd.DataFrame(ROWS).to_feather(path)
    else:
        pl.DataFrame(ROWS).write_ipc(path)
    assert read_table(path).columns == {name: [row[name] for row in ROWS] for name in ROWS[0]}
    status, out, err = _run([path, "--by", "model", "--output", tmp_path / "o.json"], capsys)
    assert status == 0, err
    assert json.loads((tmp_path / "o.json").read_text())["a"]["keyword_prf"] == pytest.approx(_expected_by_model()["a"])


def test_a_space_refuses_an_arrow_upload_whose_decoded_size_it_cannot_bound(tmp_path):
    from opinion_metrics.demo.parsing import read_upload

    path = tmp_path / "rows.feather"
    pd.DataFrame(ROWS).to_feather(path)
    with pytest.raises(ValueError, match="rows.feather: upload a .csv, .tsv, .jsonl"):
        read_upload(path)


def test_output_dash_is_refused_instead_of_writing_a_file_named_dash(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "x.jsonl"
    data.write_text(json.dumps({"predictions": ["a"], "references": ["a"]}) + "\n", encoding="utf-8")
    status, out, err = _run([data, "--output", "-"], capsys)
    assert status == 2 and "--output -: give a file name (the tables already go to standard output" in err
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize(
    "name",
    [
        "predictions\u200b",  # a zero-width space (copied from a web page)
        "\u200epredictions",  # a left-to-right mark (an editor of right-to-left text)
        "\ufeffpredictions",  # a BOM inside the file (a header pasted from another file)
        "\u00a0predictions\u200d ",  # a no-break space, a zero-width joiner, a blank
    ],
)
def test_invisible_characters_around_a_csv_header_name_are_not_part_of_it(tmp_path, capsys, name):
    # the column was "not found" in a message listing a column that looked exactly like it
    path = tmp_path / "x.csv"
    path.write_text(f"{name},references\nwar; jedi,war\n", encoding="utf-8")
    assert list(read_table(path).columns) == ["predictions", "references"]
    status, out, err = _run([path, "--output", tmp_path / "o.json"], capsys)
    assert status == 0, err
    expected = keyword_prf([["war", "jedi"]], [["war"]])
    assert json.loads((tmp_path / "o.json").read_text())["all"]["keyword_prf"] == pytest.approx(expected)


def test_a_csv_header_name_in_decomposed_unicode_is_read_composed(tmp_path, capsys):
    # "pre\u0301dictions" (macOS writes e + a combining accent) was not the typed "pr\u00e9dictions"
    path = tmp_path / "x.csv"
    path.write_text("pre\u0301dictions,re\u0301fe\u0301rences\nguerre,guerre\n", encoding="utf-8")
    assert list(read_table(path).columns) == ["pr\u00e9dictions", "r\u00e9f\u00e9rences"]
    status, out, err = _run([path, "--predictions", "pr\u00e9dictions", "--references", "r\u00e9f\u00e9rences"], capsys)
    assert status == 0, err


def test_a_column_not_found_names_a_column_differing_only_in_invisible_characters_or_unicode_form(tmp_path, capsys):
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({"predictions\u200b": ["a"], "re\u0301f": ["a"]}) + "\n", encoding="utf-8")
    status, out, err = _run([path], capsys)
    assert status == 2
    assert "'predictions\\u200b' differs from 'predictions' only in invisible characters" in err, err
    assert "\u200b" not in err  # the list of columns escapes it too
    status, out, err = _run([path, "--predictions", "predictions\u200b", "--references", "r\u00e9f"], capsys)
    assert status == 2
    assert "'re\\u0301f' differs from 'r\u00e9f' only in invisible characters or its Unicode form" in err, err


@pytest.mark.parametrize("bom", ["", "\ufeff"])
def test_a_csv_row_repeating_the_header_is_refused_as_a_second_file_joined_on(tmp_path, bom):
    # `cat a.csv b.csv > all.csv`: the second header was read as an example, "predictions" vs "references"
    path = tmp_path / "all.csv"
    path.write_text(f"predictions,references\nwar,war\n{bom}predictions,references\njedi,war\n", encoding="utf-8")
    with pytest.raises(TableError, match="^all.csv, line 3: this row repeats the header"):
        read_table(path)


@pytest.mark.parametrize("name", ["results.csv", "results.parquet", "results.jsonl", "results.json.gz", "r.xlsx"])
def test_output_named_as_another_format_is_refused_instead_of_holding_json(tmp_path, capsys, name):
    # --output results.csv wrote JSON text into a .csv (and a .gz file that gzip cannot open)
    data = tmp_path / "x.jsonl"
    data.write_text(json.dumps({"predictions": ["a"], "references": ["a"]}) + "\n", encoding="utf-8")
    status, out, err = _run([data, "--output", tmp_path / name], capsys)
    assert status == 2 and f"--output {tmp_path / name}: the results are written as JSON; name a .json file" in err
    assert not (tmp_path / name).exists()
    for fine in ("results.json", "results.txt", "results", "from.csv.json"):
        status, out, err = _run([data, "--output", tmp_path / fine], capsys)
        assert status == 0 and json.loads((tmp_path / fine).read_text())["all"]["keyword_prf"]["f1"] == 1.0


def test_empty_unnamed_csv_columns_are_dropped_and_unnamed_ones_holding_values_are_refused(tmp_path, capsys):
    # Excel writes a trailing ",," for columns once used: "column '' appears twice in the header"
    path = tmp_path / "excel.csv"
    path.write_text("predictions,references,,\nwar,war,,\njedi; war,war, ,\n", encoding="utf-8")
    assert read_table(path, ["predictions", "references"], []).columns == {
        "predictions": [["war"], ["jedi", "war"]],
        "references": [["war"], ["war"]],
    }
    status, out, err = _run([path, "--output", tmp_path / "o.json"], capsys)
    assert status == 0, err
    indexed = tmp_path / "indexed.csv"  # pandas' to_csv: an unnamed index column, kept
    indexed.write_text(",predictions,references,\n0,war,war,\n1,jedi,war,\n", encoding="utf-8")
    assert list(read_table(indexed).columns) == ["", "predictions", "references"]
    unnamed = tmp_path / "unnamed.csv"
    unnamed.write_text(",predictions,\n0,war,x\n", encoding="utf-8")
    with pytest.raises(TableError, match="^unnamed.csv, line 1: 2 columns without a name hold values; name them"):
        read_table(unnamed)
