"""The command line's input and output handling: nothing it reads is overwritten, every output is
written whole or not at all, no choice of columns reads one thing as another, and --compare
pairs the systems' rows by id (or by position, with the same texts)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO

import opinion_metrics.cli.command as cli
from opinion_metrics import compare_systems, keyword_prf, weighted_keyword_prf
from opinion_metrics.cli import main

GOLD = [["war", "jedi"], ["ring"], ["heist", "vault"], ["ghost"]]
TEXTS = ["a war film with jedi", "a ring", "a heist on a vault", "a ghost story"]
SYSTEM_A = [["war"], ["sword"], ["heist"], ["ghost"]]
SYSTEM_B = [["war", "jedi"], ["ring"], ["car"], ["house"]]
N = {"n_resamples": 200, "random_state": 3}


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _long(order_b, id_column="review_id", texts=TEXTS):
    """Both systems' rows, one row per (system, review); system b's rows in `order_b`."""
    rows = [
        {"model": "a", id_column: i, "review": texts[i], "predictions": SYSTEM_A[i], "references": GOLD[i]}
        for i in range(4)
    ]
    rows += [
        {"model": "b", id_column: i, "review": texts[i], "predictions": SYSTEM_B[i], "references": GOLD[i]}
        for i in order_b
    ]
    return rows


@pytest.fixture
def no_work(monkeypatch):
    monkeypatch.setattr(cli, "evaluate_table", lambda *a, **k: pytest.fail("evaluated before checking the outputs"))
    monkeypatch.setattr(cli, "read_table", lambda *a, **k: pytest.fail("read the input before checking the outputs"))


@pytest.mark.parametrize("option", ["--output", "--plot"])
def test_an_output_that_is_an_input_is_refused_before_reading_anything(tmp_path, capsys, no_work, option):
    data = _jsonl(tmp_path / "x.jsonl", [{"predictions": ["a"], "references": ["a"]}])
    gold = _jsonl(tmp_path / "gold.jsonl", [{"movie": "m", "keywords": ["a"]}])
    original = data.read_bytes(), gold.read_bytes()
    (tmp_path / "link.png").symlink_to(data)
    os.link(gold, tmp_path / "hard.png")
    folder = tmp_path / "saved"
    folder.mkdir()
    (folder / "state.json").write_text("{}")
    suffix = ".png" if option == "--plot" else ".json"
    for argv, what in [
        ([str(data), option, str(data.with_suffix(suffix))], None),  # not the input: allowed by this check
        ([str(data), option, str(tmp_path / "link.png")], "file"),
        ([str(data), option, str(tmp_path / "." / "x.jsonl")], "file"),
        ([str(data), "--gold", str(gold), option, str(tmp_path / "hard.png")], "--gold file"),
        ([str(folder), option, str(folder / f"state{suffix}")], "file"),
    ]:
        if what is None:
            continue
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert f"is the input {what}" in err and "would destroy it" in err and err.count("\n") == 1
    assert (data.read_bytes(), gold.read_bytes()) == original


def test_an_unsupported_plot_extension_is_refused_up_front_listing_the_supported_ones(tmp_path, capsys, no_work):
    data = _jsonl(tmp_path / "x.jsonl", [{"predictions": ["a"], "references": ["a"]}])
    for name in ("r.bmp", "r"):
        assert main([str(data), "--plot", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert f"--plot {tmp_path / name}: give a file name ending in one of" in err
        assert ".png" in err and ".svg" in err and ".pdf" in err
        assert not (tmp_path / name).exists()


@pytest.mark.parametrize("suffix", [".svg", ".pdf"])
def test_a_plot_is_written_in_the_format_of_its_extension(tmp_path, capsys, suffix):
    data = _jsonl(tmp_path / "x.jsonl", [{"predictions": ["a"], "references": ["a"]}])
    assert main([str(data), "--plot", str(tmp_path / f"r{suffix}")]) == 0
    head = (tmp_path / f"r{suffix}").read_bytes()[:200]
    assert (b"<svg" in head) if suffix == ".svg" else head.startswith(b"%PDF")
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(["x.jsonl", f"r{suffix}"])  # no leftovers


def test_a_failed_write_leaves_the_old_output_whole(tmp_path, capsys, monkeypatch):
    data = _jsonl(tmp_path / "x.jsonl", [{"predictions": ["a"], "references": ["a"]}])
    output, plot = tmp_path / "r.json", tmp_path / "r.png"
    output.write_text('{"old": true}\n')
    plot.write_bytes(b"old plot")
    real = Path.write_text

    def half_then_full_disk(path, text, **kwargs):
        real(path, text[: len(text) // 2], **kwargs)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", half_then_full_disk)
    assert main([str(data), "--output", str(output)]) == 1
    assert f"cannot write {output}: No space left on device" in capsys.readouterr().err
    assert output.read_text() == '{"old": true}\n'
    monkeypatch.undo()

    def broken_plot(results, path, title=""):
        path.write_bytes(b"\x89PNG half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cli, "plot_results", broken_plot)
    assert main([str(data), "--output", str(output), "--plot", str(plot)]) == 1
    assert plot.read_bytes() == b"old plot"
    assert json.loads(output.read_text())["all"]["keyword_prf"]["f1"] == 1.0  # the JSON was written whole
    assert sorted(path.name for path in tmp_path.iterdir()) == ["r.json", "r.png", "x.jsonl"]  # no leftovers


def test_an_existing_output_keeps_its_permissions(tmp_path, capsys):
    data = _jsonl(tmp_path / "x.jsonl", [{"predictions": ["a"], "references": ["a"]}])
    output = tmp_path / "r.json"
    output.write_text("{}")
    output.chmod(0o640)
    assert main([str(data), "--output", str(output)]) == 0
    assert output.stat().st_mode & 0o777 == 0o640


def test_no_column_choice_reads_the_gold_lists_as_predictions(tmp_path, capsys):
    data = _jsonl(
        tmp_path / "x.jsonl",
        [{"keywords_a": ["a"], "references": ["a"], "scores": [0.5], "review": "a"}],
    )
    for argv, expected in [
        (["--predictions", "references"], "--predictions 'references' selects the gold column 'references'"),
        (["--predictions", "*"], "selects the gold column 'references' (model 'references')"),
        (["--predictions", "keywords_a", "--scores", "keywords_a"], "--scores 'keywords_a' is the predictions'"),
    ]:
        assert main([str(data), *argv]) == 2, argv
        assert expected in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit:  # refused while the command line is read
        main([str(data), "--predictions", ""])
    assert exit.value.code == 2
    assert "argument --predictions: is empty: name the column of predicted keywords" in capsys.readouterr().err


def test_an_empty_prediction_prefix_is_an_error_not_gold_against_gold(tmp_path, capsys):
    ratings = tmp_path / "r.csv"
    ratings.write_text("x,pred_x\n1,0\n2,0\n", encoding="utf-8")
    assert main([str(ratings), "--aspects", "x", "--prediction-prefix", ""]) == 2
    assert "--prediction-prefix is empty" in capsys.readouterr().err


def test_with_several_models_each_reads_its_own_scores_or_none(tmp_path, capsys):
    rows = [
        {"keywords_a": ["war", "x"], "keywords_b": ["x", "war"], "scores": [0.9, 0.1], "references": ["war"]},
        {"keywords_a": ["ring"], "keywords_b": ["ring"], "scores": [0.8], "references": ["ring"]},
    ]
    data = _jsonl(tmp_path / "x.jsonl", rows)
    # b's keywords in another order: a's scores would rank them wrongly
    assert main([str(data), "--predictions", "keywords_*", "--metrics", "weighted_keyword_prf"]) == 2
    assert "weighted_keyword_prf needs a scores column for model 'a': 'scores_a' not found" in capsys.readouterr().err
    assert (
        main([str(data), "--predictions", "keywords_*", "--scores", "scores", "--metrics", "weighted_keyword_prf"]) == 2
    )
    assert "--scores 'scores' is one column for 2 models" in capsys.readouterr().err
    # own columns: each model's result is the library's on its own scores
    for row in rows:
        row["scores_a"], row["scores_b"] = row["scores"], list(reversed(row["scores"]))
    data = _jsonl(tmp_path / "y.jsonl", rows)
    out = tmp_path / "out.json"
    assert (
        main([str(data), "--predictions", "keywords_*", "--metrics", "weighted_keyword_prf", "--output", str(out)]) == 0
    )
    results = json.loads(out.read_text())
    for model in "ab":
        expected = weighted_keyword_prf(
            [row[f"keywords_{model}"] for row in rows],
            [row[f"scores_{model}"] for row in rows],
            [row["references"] for row in rows],
        )
        assert results[model]["weighted_keyword_prf"] == pytest.approx(expected)
    # by default, the weighted family is left out when a model has no scores of its own
    partial = _jsonl(tmp_path / "z.jsonl", [{k: v for k, v in row.items() if k != "scores_b"} for row in rows])
    assert main([str(partial), "--predictions", "keywords_*", "--output", str(out)]) == 0
    assert set(json.loads(out.read_text())["a"]) == {"keyword_prf"}


REPORTED = {"p_value_holm", "pairs", "differing_pairs", "smallest_p_value"}  # --output adds the report's


def _flat(comparison):
    return {
        (key, name): value
        for key, values in comparison.items()
        for name, value in values.items()
        if name not in REPORTED
    }


def _expected_comparison():
    """The library's paired comparison of the two systems, example i with example i."""
    return _flat(compare_systems("keyword_prf", SYSTEM_A, SYSTEM_B, GOLD, **N))


@pytest.mark.parametrize(
    ("order_b", "id_column", "extra"),
    [
        ([3, 1, 0, 2], "review_id", []),
        ([2, 0, 3, 1], "id", []),
        ([2, 3, 0, 1], "Review_ID", []),
        ([1, 3, 2, 0], "review", ["--id", "review"]),  # --id: any column
    ],
)
def test_compare_pairs_the_systems_rows_by_id(tmp_path, capsys, order_b, id_column, extra):
    data = _jsonl(tmp_path / "x.jsonl", _long(order_b, id_column))
    out = tmp_path / "out.json"
    argv = [str(data), "--by", "model", "--compare", "a", "--n-resamples", "200", "--random-state", "3"]
    assert main([*argv, *extra, "--output", str(out)]) == 0
    differences = json.loads(out.read_text())["comparison"]["differences"]["b"]["keyword_prf"]
    expected = _expected_comparison()
    assert _flat(differences) == pytest.approx(expected)
    assert expected["f1", "b"] == pytest.approx(keyword_prf(SYSTEM_B, GOLD)["f1"])


def test_compare_refuses_a_missing_or_duplicated_id(tmp_path, capsys):
    argv = ["--by", "model", "--compare", "a", "--n-resamples", "50"]
    missing = _jsonl(tmp_path / "missing.jsonl", _long([0, 1, 3]))
    assert main([str(missing), *argv]) == 1
    err = capsys.readouterr().err
    assert "cannot compare model 'b' with 'a': review_id 2 (line 3 of missing.jsonl) has no row for model 'b'" in err
    twice = _long([0, 1, 2, 3])
    twice[-1]["review_id"] = 2
    assert main([str(_jsonl(tmp_path / "twice.jsonl", twice)), *argv]) == 1
    err = capsys.readouterr().err
    assert "review_id 2 appears twice for model 'b' (line 7 of twice.jsonl and line 8 of twice.jsonl)" in err
    extra = _long([0, 1, 2, 3])
    extra.append({**extra[-1], "review_id": 9})
    assert main([str(_jsonl(tmp_path / "extra.jsonl", extra)), *argv]) == 1
    assert "review_id 9 (line 9 of extra.jsonl) has no row for model 'a', only for 'b'" in capsys.readouterr().err
    assert main([str(missing), "--id", "nope", *argv]) == 2
    assert "column 'nope' not found" in capsys.readouterr().err
    assert main([str(missing), "--id", "review_id"]) == 2
    assert "--id pairs the rows of the systems compared: it needs --baseline" in capsys.readouterr().err


def test_compare_by_position_refuses_rows_whose_texts_differ(tmp_path, capsys):
    rows = [{k: v for k, v in row.items() if k != "review_id"} for row in _long([0, 1, 2, 3])]
    data = _jsonl(tmp_path / "same.jsonl", rows)
    out = tmp_path / "out.json"
    options = ["--n-resamples", str(N["n_resamples"]), "--random-state", str(N["random_state"])]
    assert main([str(data), "--by", "model", "--compare", "a", *options, "--output", str(out)]) == 0
    differences = json.loads(out.read_text())["comparison"]["differences"]["b"]["keyword_prf"]
    assert _flat(differences) == pytest.approx(_expected_comparison())
    rows[5]["review"] = "another review"  # b's second row: same gold, another review
    assert main([str(_jsonl(tmp_path / "x.jsonl", rows)), "--by", "model", "--compare", "a"]) == 1
    err = capsys.readouterr().err
    assert "their texts differ at line 6 of x.jsonl ('b') and line 2 of x.jsonl ('a')" in err
    assert "examples are paired by position" in err


def test_csv_list_cells_written_by_pandas_read_as_lists(tmp_path, capsys):
    frame = pd.DataFrame({"predictions": SYSTEM_B, "scores": [[0.9, 0.5], [0.7], [0.4], [0.2]], "references": GOLD})
    frame.to_csv(tmp_path / "x.csv", index=False)
    out = tmp_path / "out.json"
    assert main([str(tmp_path / "x.csv"), "--output", str(out)]) == 0
    results = json.loads(out.read_text())["all"]
    assert results["keyword_prf"] == pytest.approx(keyword_prf(SYSTEM_B, GOLD))
    assert results["weighted_keyword_prf"] == pytest.approx(
        weighted_keyword_prf(SYSTEM_B, frame["scores"].tolist(), GOLD)
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            '{"predictions": ["\\ud83d war"], "references": ["war"]}\n',
            "line 1: column 'predictions': '\\ud83d war' holds a lone surrogate",
        ),
        ('{"predictions": ' + "[" * 50000 + "]" * 50000 + ', "references": []}\n', "line 1: JSON nested too deeply"),
    ],
    ids=["surrogate", "deep"],
)
def test_unreadable_rows_are_one_line_naming_the_line(tmp_path, capsys, content, expected):
    data = tmp_path / "x.jsonl"
    data.write_text(content, encoding="utf-8")
    assert main([str(data)]) == 1
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1 and "Traceback" not in err


def test_superscript_digits_in_top_k_get_the_usual_message(tmp_path, capsys):
    data = _jsonl(tmp_path / "x.jsonl", [{"predictions": ["a"], "scores": [0.5], "references": ["a"]}])
    for value in ("5²", "²"):
        with pytest.raises(SystemExit):
            main([str(data), "--metrics", "weighted_keyword_prf", "--top-k", value])
        assert f"must be a positive integer, 'O' or 'M', got {value!r}" in capsys.readouterr().err


def test_an_output_through_a_link_or_to_stdout_is_written_where_it_points(tmp_path, capsys):
    data = _jsonl(tmp_path / "x.jsonl", [{"predictions": ["a"], "references": ["a", "b"]}])
    real = tmp_path / "real.json"
    real.write_text("{}")
    (tmp_path / "link.json").symlink_to(real)
    assert main([str(data), "--output", str(tmp_path / "link.json")]) == 0
    assert (tmp_path / "link.json").is_symlink()
    assert json.loads(real.read_text())["all"]["keyword_prf"]["recall"] == 0.5
    done = subprocess.run(
        [sys.executable, "-m", "opinion_metrics.cli", str(data), "--output", "/dev/stdout"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        check=True,
    )
    written = done.stdout[done.stdout.index("{") : done.stdout.rindex("}") + 1]
    assert json.loads(written)["all"]["keyword_prf"]["recall"] == 0.5


def test_csv_scores_of_a_pattern_are_read_as_numbers(tmp_path, capsys):
    rows = {"keywords_a": [["war", "x"]], "keywords_b": [["x", "war"]], "references": [["war"]]}
    frame = pd.DataFrame({**rows, "scores_a": [[0.9, 0.1]], "scores_b": [[0.8, 0.3]]})
    frame.to_csv(tmp_path / "x.csv", index=False)
    out = tmp_path / "out.json"
    assert main([str(tmp_path / "x.csv"), "--predictions", "keywords_*", "--output", str(out)]) == 0
    results = json.loads(out.read_text())
    for model in "ab":
        expected = weighted_keyword_prf(
            rows[f"keywords_{model}"], frame[f"scores_{model}"].tolist(), rows["references"]
        )
        assert results[model]["weighted_keyword_prf"] == pytest.approx(expected)


def test_a_csv_with_a_review_longer_than_csvs_default_field_limit_is_read(tmp_path, capsys):
    review = "a long review " * 20_000  # 280 KB: csv refuses fields over 128 KB by default
    pd.DataFrame({"predictions": [["long"]], "references": [["review"]], "review": [review]}).to_csv(
        tmp_path / "x.csv", index=False
    )
    out = tmp_path / "out.json"
    argv = [str(tmp_path / "x.csv"), "--presence", "present", "--output", str(out)]
    assert main(argv) == 0
    # "review" occurs in the text, "long" too: both gold keywords are present, one predicted
    assert json.loads(out.read_text())["all"]["keyword_prf"] == pytest.approx(
        keyword_prf([["long"]], [["review"]], texts=[review], presence="present")
    )


def test_a_pandas_json_of_columns_by_index_is_read_as_its_rows(tmp_path, capsys):
    pd.DataFrame({"predictions": [["war"], ["x"]], "references": [["war"], ["y"]]}).to_json(tmp_path / "x.json")
    assert main([str(tmp_path / "x.json"), "--output", str(tmp_path / "out.json")]) == 0
    written = json.loads((tmp_path / "out.json").read_text())["all"]["keyword_prf"]
    assert written == pytest.approx(keyword_prf([["war"], ["x"]], [["war"], ["y"]]))


@pytest.mark.parametrize(
    ("models", "expected"),
    [
        (["a", None], "--by model: line 2 of x.jsonl is empty; give every row a value"),
        (["a", ""], "--by model: line 2 of x.jsonl is empty"),
        (["a", ["b"]], "--by model: line 2 of x.jsonl is a list"),
        ([1, "1"], "--by model: 1 (line 1 of x.jsonl) and '1' (line 2 of x.jsonl) would be one group"),
        (["None", None], "--by model: line 2 of x.jsonl is empty"),
    ],
)
def test_by_values_that_would_pool_different_rows_are_refused(tmp_path, capsys, models, expected):
    rows = [{"model": model, "predictions": ["a"], "references": ["a"]} for model in models]
    assert main([str(_jsonl(tmp_path / "x.jsonl", rows)), "--by", "model"]) == 1
    assert expected in capsys.readouterr().err
