"""The command line's errors: one readable line, in flags rather than keyword arguments,
naming the line of the file (or of the gold file) and the column; usage errors before any
work; a failure of one family never stops another that does not read the bad value."""

import json
import re
import sys

import pytest
from cli_cases import BY_MODEL, EXAMPLE, _jsonl

from opinion_metrics.cli import main


def test_errors_are_one_readable_line(tmp_path, capsys):
    assert main([str(EXAMPLE), "--predictions", "nope"]) == 2
    assert "column 'nope' not found" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"predictions": ["a", 3], "references": ["a"]}\n')
    assert main([str(bad)]) == 1  # a data error
    assert "predictions: line 1 of bad.jsonl, keyword 1 must be a str, got int 3" in capsys.readouterr().err


def test_a_non_integer_rating_in_a_csv_is_an_error_not_truncated(tmp_path, capsys):
    path = tmp_path / "ratings.csv"
    path.write_text("x,y,pred_x,pred_y\n0,4,0,4.5\n", encoding="utf-8")
    assert main([str(path), "--aspects", "x,y"]) == 1
    assert "line 2 of ratings.csv, aspect 'y': rating must be an integer, got 4.5" in capsys.readouterr().err


def test_bad_output_paths_are_refused_before_any_work(tmp_path, capsys, monkeypatch):
    import opinion_metrics.cli.command as cli

    path = _jsonl(tmp_path / "x.jsonl", BY_MODEL)
    monkeypatch.setattr(cli, "evaluate_table", lambda *a, **k: pytest.fail("evaluated before checking the outputs"))
    afile = tmp_path / "afile"
    afile.write_text("")
    for option, target, expected in [
        ("--output", tmp_path / "missing" / "r.json", f"--output {tmp_path / 'missing' / 'r.json'}: the folder"),
        ("--plot", tmp_path / "missing" / "r.png", "does not exist"),
        ("--plot", tmp_path, "is a folder; give a file name"),
        ("--output", afile / "r.json", "does not exist"),
    ]:
        assert main([str(path), option, str(target)]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and expected in captured.err and captured.err.count("\n") == 1
    assert not (tmp_path / "missing").exists()
    same = ["--output", str(tmp_path / "r"), "--plot", str(tmp_path / "r")]
    assert main([str(path), *same]) == 2
    assert "--output and --plot name the same file" in capsys.readouterr().err


def test_plot_without_matplotlib_is_a_usage_error_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    path = _jsonl(tmp_path / "x.jsonl", BY_MODEL[:1])
    assert main([str(path), "--plot", str(tmp_path / "r.png")]) == 2
    captured = capsys.readouterr()
    assert (
        captured.out == ""
        and captured.err == "opinion-metrics: error: --plot needs matplotlib: pip install matplotlib\n"
    )
    assert not (tmp_path / "r.png").exists()


def test_errors_name_flags_not_keyword_arguments(tmp_path, capsys):
    path = _jsonl(tmp_path / "x.jsonl", BY_MODEL)
    assert main([str(path), "--metrics", "weighted_keyword_prf"]) == 1
    err = capsys.readouterr().err
    assert "pass --clip-scores to clip" in err and "clip_scores" not in err
    assert "scores: line 4 of x.jsonl, keyword 0 ('b'): score 1.5 is outside [0, 1]" in err
    rating = tmp_path / "r.csv"
    rating.write_text("x,pred_x\n1,1\n", encoding="utf-8")
    assert main([str(rating), "--aspects", "x", "--min-rating", "3", "--max-rating", "2"]) == 2
    err = capsys.readouterr().err
    assert "--min-rating < --max-rating" in err and "min_rating" not in err


def test_with_by_an_example_is_counted_in_the_file_not_in_the_subset(tmp_path, capsys):
    path = _jsonl(tmp_path / "x.jsonl", [{**row, "scores": [0.5]} for row in BY_MODEL])
    rows = [dict(row) for row in BY_MODEL]
    rows[3]["predictions"] = ["b", 7]  # example 1 of the subset m2, line 4 of the file
    _jsonl(path, rows)
    assert main([str(path), "--by", "model"]) == 1
    err = capsys.readouterr().err
    assert "predictions: line 4 of x.jsonl, keyword 1 must be a str, got int 7" in err and "example" not in err
    csv_path = tmp_path / "x.csv"  # in a CSV the header is line 1
    csv_path.write_text("model,predictions,scores,references\nm1,a,1,a\nm2,a,1,a\nm2,b,1.5,a\n", encoding="utf-8")
    assert main([str(csv_path), "--by", "model", "--metrics", "weighted_keyword_prf"]) == 1
    assert "scores: line 4 of x.csv, keyword 0 ('b'): score 1.5 is outside [0, 1]" in capsys.readouterr().err


def test_a_gold_file_error_names_the_line_of_the_gold_file(tmp_path, capsys):
    reviews = _jsonl(
        tmp_path / "reviews.jsonl", [{"movie": "b", "predictions": ["x"]}, {"movie": "a", "predictions": []}]
    )
    gold = _jsonl(tmp_path / "gold.jsonl", [{"movie": "a", "keywords": ["x"]}, {"movie": "b", "keywords": ["y", None]}])
    assert main([str(reviews), "--gold", str(gold)]) == 1
    err = capsys.readouterr().err
    assert "references (column 'keywords'): line 2 of gold.jsonl, keyword 1 must be a str, got None" in err
    twice = _jsonl(tmp_path / "twice.jsonl", [{"movie": "a", "keywords": []}, {"movie": "b"}, {"movie": "a"}])
    assert main([str(reviews), "--gold", str(twice)]) == 1
    assert "movie: 'a' has two gold lists (line 1 of twice.jsonl and line 3 of twice.jsonl); keep one" in (
        capsys.readouterr().err
    )
    numbers = _jsonl(tmp_path / "numbers.jsonl", [{"movie": "a", "keywords": []}, {"movie": 7, "keywords": []}])
    texts = _jsonl(tmp_path / "texts.jsonl", [{"movie": "7", "predictions": []}, {"movie": "8", "predictions": []}])
    assert main([str(texts), "--gold", str(numbers)]) == 1
    err = capsys.readouterr().err
    assert "no gold keywords in numbers.jsonl for movie '7', '8'; the files write the keys differently" in err
    listed = _jsonl(tmp_path / "listed.jsonl", [{"movie": "a", "keywords": []}, {"movie": ["b"], "keywords": []}])
    assert main([str(reviews), "--gold", str(listed)]) == 1
    assert "movie: line 2 of listed.jsonl must be a string or an integer, got ['b']" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--k", "--top-k"])
@pytest.mark.parametrize("value", ["2.5", "0", "-1", "True", "1e3", ""])
def test_k_and_top_k_are_positive_integers(tmp_path, capsys, option, value):
    with pytest.raises(SystemExit) as caught:
        main([str(EXAMPLE), option, value])
    err = capsys.readouterr().err
    assert caught.value.code == 2 and re.search(rf"argument {option}: must be (a positive integer|an integer)", err)


def test_a_pattern_that_matches_no_column_is_a_usage_error(capsys):
    assert main([str(EXAMPLE), "--predictions", "keywords_*"]) == 2
    assert "--predictions 'keywords_*' matches no column of reviews.jsonl" in capsys.readouterr().err


def test_a_named_column_that_is_missing_is_never_silently_skipped(tmp_path, capsys):
    path = _jsonl(tmp_path / "x.jsonl", [{"predictions": ["a"], "references": ["a"]}])
    for option in ("--scores", "--texts"):  # else: no weighted family / no text sentiment, silently
        metrics = ["--metrics", "sentiment_appropriateness"] if option == "--texts" else []
        assert main([str(path), option, "nope", *metrics]) == 2
        assert f"column 'nope' not found in x.jsonl (columns: predictions, references); choose one with {option}" in (
            capsys.readouterr().err
        )
    with pytest.raises(SystemExit) as caught:  # an empty list would mean the default aspects
        main([str(path), "--aspects", " , "])
    assert caught.value.code == 2 and "expected names separated by commas" in capsys.readouterr().err


def test_every_option_says_what_it_means_in_help():
    from opinion_metrics.cli.parser import build_parser

    missing = [action.option_strings or action.dest for action in build_parser()._actions if not action.help]
    assert missing == []


def test_with_group_a_row_error_names_the_line(tmp_path, capsys):
    rows = [{**row, "movie": "a"} for row in BY_MODEL[:2]] + [{**BY_MODEL[2], "movie": ["b"]}]
    path = _jsonl(tmp_path / "x.jsonl", rows)
    assert main([str(path), "--group", "movie"]) == 1
    assert "--group movie: line 3 of x.jsonl is a list; give every row a value" in capsys.readouterr().err


def test_scores_out_of_range_do_not_stop_a_family_that_ignores_scores(tmp_path, capsys):
    path = _jsonl(tmp_path / "x.jsonl", [{**row, "movie": "a"} for row in BY_MODEL])  # line 4 has a score 1.5
    output = tmp_path / "out.json"
    arguments = ["--group", "movie", "--metrics", "keyword_prf", "--system", "none", "--output", str(output)]
    assert main([str(path), *arguments]) == 0
    # the two systems pooled on purpose (--system none): predictions [a, b] against gold [a]
    assert json.loads(output.read_text())["all"]["keyword_prf"] == pytest.approx(
        {"precision": 0.5, "recall": 1.0, "f1": 2 / 3}
    )


def test_a_write_that_fails_after_the_check_is_one_line(tmp_path, capsys, monkeypatch):
    import opinion_metrics.cli.command as cli

    monkeypatch.setattr(cli, "check_output", lambda path, option: None)  # as if the folder vanished since
    path = _jsonl(tmp_path / "x.jsonl", BY_MODEL[:1])
    assert main([str(path), "--output", str(tmp_path / "gone" / "r.json")]) == 1
    captured = capsys.readouterr()
    assert "precision" in captured.out  # the results still reach stdout
    assert (
        captured.err
        == f"opinion-metrics: error: cannot write {tmp_path / 'gone' / 'r.json'}: No such file or directory\n"
    )


def test_library_words_become_flags_and_only_where_they_name_an_option():
    from opinion_metrics.cli.command import _Speaker
    from opinion_metrics.cli.inputs import UsageError
    from opinion_metrics.cli.parser import build_parser

    speak = _Speaker(build_parser())
    located = "scores: example 2, keyword 0: score 1.5 is outside [0, 1]; pass clip_scores=True to clip"
    cases = {  # a message about an option is a usage error; one about an example, a data error
        located: (
            "scores (column 's'): line 4, keyword 0: score 1.5 is outside [0, 1]; pass --clip-scores to clip",
            ValueError,
        ),
        "predictions: example 0 has 2 matches with one_to_one=False": (
            "predictions: line 2 has 2 matches with --no-one-to-one",
            ValueError,
        ),
        "top_k must be None, 'M', 'O' or a positive integer, got 0": (
            "--top-k must be None, 'M', 'O' or a positive integer, got 0",
            UsageError,
        ),
        "k must be a positive integer, got 0": ("--k must be a positive integer, got 0", UsageError),
        "need 1 <= min_rating < max_rating, got 3 and 2": (
            "need 1 <= --min-rating < --max-rating, got 3 and 2",
            UsageError,
        ),
        "device='cuda' is not available": ("--device cuda is not available", UsageError),
        "the model returned embeddings of shape (2, 3) for 1 texts": (
            "the model returned embeddings of shape (2, 3) for 1 texts",
            ValueError,
        ),
        "ndcg@k needs k": ("ndcg@k needs k", ValueError),
    }
    for message, (expected, kind) in cases.items():
        spoken = speak(message, lambda side, example: f"line {example + 2}", {"scores": "s"})
        assert (str(spoken), type(spoken)) == (expected, kind), message
