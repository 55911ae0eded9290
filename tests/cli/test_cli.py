"""The opinion-metrics command line, on the bundled example and on the real shared files."""

import csv
import importlib.util
import json
import re
import shlex
import sys

import pytest
from conftest import MOVIE_REVIEWS, REPO, SHARED_NAMED, TOURISM_REVIEWS, load_movie_reviews, require_shared

from opinion_metrics import keyword_prf, pool_by_group, weighted_keyword_prf
from opinion_metrics.cli import main
from opinion_metrics.families.aspect_sentiment_score import VIETNAMESE_COLUMNS, aspect_sentiment_score
from opinion_metrics.io.read import load_table

EXAMPLE = REPO / "examples" / "reviews.jsonl"
# keyword_diversity adds self_similarity (the default model) whenever the semantic extra is installed
DIVERSITY_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
if importlib.util.find_spec("sentence_transformers") is None:
    DIVERSITY_MODEL = None


def test_bundled_example_prints_one_table_per_family_and_writes_json(tmp_path, capsys):
    output = tmp_path / "results.json"
    assert main([str(EXAMPLE), "--by", "model", "--output", str(output), "--plot", str(tmp_path / "r.png")]) == 0
    printed = capsys.readouterr().out
    assert "keyword_prf" in printed and "weighted_keyword_prf" in printed and "baseline" in printed
    results = json.loads(output.read_text())
    table = load_table(EXAMPLE, [], [])
    rows = [i for i, model in enumerate(table["model"]) if model == "baseline"]
    expected = keyword_prf([table["predictions"][i] for i in rows], [table["references"][i] for i in rows])
    assert results["baseline"]["keyword_prf"] == pytest.approx(expected)
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_csv_with_semicolon_lists_and_group_pooling(tmp_path, capsys):
    path = tmp_path / "data.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["movie", "predictions", "scores", "references"])
        writer.writerow(["m1", "war; jedi", "0.9; 0.1", "jedi; empire"])
        writer.writerow(["m1", "droid", "0.5", "jedi; empire"])
        writer.writerow(["m2", "ring", "1.0", "hobbit"])
    assert main([str(path), "--group", "movie", "--output", str(tmp_path / "out.json")]) == 0
    pooled = pool_by_group(
        [["war", "jedi"], ["droid"], ["ring"]],
        [["jedi", "empire"]] * 2 + [["hobbit"]],
        ["m1", "m1", "m2"],
        scores=[[0.9, 0.1], [0.5], [1.0]],
    )
    results = json.loads((tmp_path / "out.json").read_text())["all"]
    assert results["keyword_prf"] == pytest.approx(keyword_prf(pooled.predictions, pooled.references))
    assert results["weighted_keyword_prf"] == pytest.approx(
        weighted_keyword_prf(pooled.predictions, pooled.scores, pooled.references)
    )


def test_errors_are_one_readable_line(tmp_path, capsys):
    assert main([str(EXAMPLE), "--predictions", "nope"]) == 2
    assert "column 'nope' not found" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"predictions": ["a", 3], "references": ["a"]}\n')
    assert main([str(bad)]) == 1  # a data error
    assert "predictions: line 1 of bad.jsonl, keyword 1 must be a str, got int 3" in capsys.readouterr().err


def test_real_movie_reviews_with_a_separate_gold_file(tmp_path, capsys):
    directory = require_shared(MOVIE_REVIEWS)
    output = tmp_path / "out.json"
    code = main(
        [
            str(directory / "IndianaJones.jsonl.gz"),
            "--predictions",
            "keywords_base",
            "--scores",
            "scores_base",
            "--gold",
            str(directory / "ground_truth.jsonl"),
            "--clip-scores",
            "--output",
            str(output),
        ]
    )
    assert code == 0
    reviews = [r for r in load_movie_reviews() if r["movie"] == "IndianaJones"]
    predictions = [r["keywords_base"] for r in reviews]
    references = [r["gold"] for r in reviews]
    results = json.loads(output.read_text())["all"]
    assert results["keyword_prf"] == pytest.approx(keyword_prf(predictions, references))
    expected = weighted_keyword_prf(predictions, [r["scores_base"] for r in reviews], references, clip_scores=True)
    assert results["weighted_keyword_prf"] == pytest.approx(expected)


def test_real_tourism_ratings(tmp_path, capsys):
    source = require_shared(TOURISM_REVIEWS)
    with open(source, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))[:500]
    path = tmp_path / "ratings.csv"  # the gold columns plus a model's predictions
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(list(VIETNAMESE_COLUMNS) + [f"pred_{c}" for c in VIETNAMESE_COLUMNS])
        for i, row in enumerate(rows):
            gold = [int(row[c]) for c in VIETNAMESE_COLUMNS]
            writer.writerow(gold + [g if (i + j) % 7 else (g % 5) + 1 for j, g in enumerate(gold)])
    output = tmp_path / "out.json"
    assert main([str(path), "--aspects", ",".join(VIETNAMESE_COLUMNS), "--output", str(output)]) == 0
    table = load_table(path, [], [])
    gold = [[int(table[c][i]) for c in VIETNAMESE_COLUMNS] for i in range(len(rows))]
    predicted = [[int(table[f"pred_{c}"][i]) for c in VIETNAMESE_COLUMNS] for i in range(len(rows))]
    expected = aspect_sentiment_score(predicted, gold, aspects=VIETNAMESE_COLUMNS)
    assert json.loads(output.read_text())["all"]["aspect_sentiment_score"] == pytest.approx(expected)
    (tmp_path / "out.json").unlink()  # the Vietnamese columns are found without --aspects
    assert main([str(path), "--output", str(output)]) == 0
    assert json.loads(output.read_text())["all"]["aspect_sentiment_score"] == pytest.approx(expected)


def test_a_non_integer_rating_in_a_csv_is_an_error_not_truncated(tmp_path, capsys):
    path = tmp_path / "ratings.csv"
    path.write_text("x,y,pred_x,pred_y\n0,4,0,4.5\n", encoding="utf-8")
    assert main([str(path), "--aspects", "x,y"]) == 1
    assert "line 2 of ratings.csv, aspect 'y': rating must be an integer, got 4.5" in capsys.readouterr().err


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


BY_MODEL = [  # line 4 is the second example of model m2
    {"model": "m1", "predictions": ["a"], "scores": [0.5], "references": ["a"]},
    {"model": "m2", "predictions": ["a"], "scores": [0.5], "references": ["a"]},
    {"model": "m1", "predictions": ["b"], "scores": [0.5], "references": ["a"]},
    {"model": "m2", "predictions": ["b"], "scores": [1.5], "references": ["a"]},
]


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


def test_a_huge_k_runs_on_a_tiny_file(tmp_path, capsys):
    output = tmp_path / "out.json"
    path = _jsonl(tmp_path / "x.jsonl", BY_MODEL[:3])
    arguments = ["--k", "1000000000", "--top-k", "1000000000", "--system", "none", "--output", str(output)]
    assert main([str(path), *arguments]) == 0
    results = json.loads(output.read_text())["all"]["weighted_keyword_prf"]
    # one gold keyword per example, ranked first or absent: nDCG and AP are 1, 1, 0
    assert results["ndcg@1000000000"] == pytest.approx(2 / 3)
    assert results["map@1000000000"] == pytest.approx(2 / 3)


def test_zero_division_reaches_the_aspect_family(tmp_path, capsys):
    path = tmp_path / "r.csv"  # aspect y is absent from both sides: its F1 is the zero_division value
    path.write_text("x,y,pred_x,pred_y\n1,0,1,0\n2,0,3,0\n", encoding="utf-8")
    output = tmp_path / "out.json"
    assert main([str(path), "--aspects", "x,y", "--output", str(output)]) == 0
    assert json.loads(output.read_text())["all"]["aspect_sentiment_score"]["f1_y"] == 1.0  # the family's default
    assert main([str(path), "--aspects", "x,y", "--zero-division", "0", "--output", str(output)]) == 0
    results = json.loads(output.read_text())["all"]["aspect_sentiment_score"]
    assert results["f1_y"] == 0.0 and results["r2_x"] == pytest.approx(1 - 1 / 32)  # (2 - 3)^2 / (2 (5 - 1)^2)
    assert results["score"] == pytest.approx((1 - 1 / 32) / 2)


def test_model_column_pairs_in_one_run(tmp_path, capsys):
    directory = require_shared(MOVIE_REVIEWS)
    output = tmp_path / "out.json"
    arguments = [str(directory / "IndianaJones.jsonl.gz"), "--predictions", "keywords_*", "--scores", "scores_*"]
    arguments += ["--gold", str(directory / "ground_truth.jsonl"), "--clip-scores", "--output", str(output)]
    assert main(arguments) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[0] == "model"
    results = json.loads(output.read_text())
    assert list(results) == ["base", "reranker", "sentiment", "metadata"]
    reviews = [r for r in load_movie_reviews() if r["movie"] == "IndianaJones"]
    references = [r["gold"] for r in reviews]
    for model, by_family in results.items():
        predictions, scores = [r[f"keywords_{model}"] for r in reviews], [r[f"scores_{model}"] for r in reviews]
        assert by_family["keyword_prf"] == pytest.approx(keyword_prf(predictions, references))
        expected = weighted_keyword_prf(predictions, scores, references, clip_scores=True)
        assert by_family["weighted_keyword_prf"] == pytest.approx(expected)


def test_a_pattern_that_matches_no_column_is_a_usage_error(capsys):
    assert main([str(EXAMPLE), "--predictions", "keywords_*"]) == 2
    assert "--predictions 'keywords_*' matches no column of reviews.jsonl" in capsys.readouterr().err


def test_scores_are_never_sentiments_unless_named(tmp_path, capsys):
    from opinion_metrics.families.sentiment_appropriateness import sentiment_appropriateness

    rows = [
        {"predictions": ["great acting", "boring plot"], "scores": [0.9, 0.1], "feeling": [1.0, 0.0],
         "references": ["great acting"], "review": "Great acting, but a boring plot."},
        {"predictions": ["awful"], "scores": [0.8], "feeling": [0.0], "references": ["awful"], "review": "Awful."},
    ]  # fmt: skip
    path = _jsonl(tmp_path / "x.jsonl", rows)
    output = tmp_path / "out.json"
    predictions, references = [r["predictions"] for r in rows], [r["references"] for r in rows]
    texts = [r["review"] for r in rows]
    assert main([str(path), "--metrics", "sentiment_appropriateness", "--output", str(output)]) == 0
    expected = sentiment_appropriateness(predictions, references, texts=texts)
    assert json.loads(output.read_text())["all"]["sentiment_appropriateness"] == pytest.approx(expected)
    arguments = [str(path), "--metrics", "sentiment_appropriateness", "--prediction-sentiments", "feeling"]
    assert main([*arguments, "--output", str(output)]) == 0
    expected = sentiment_appropriateness(
        predictions, references, texts=texts, prediction_sentiments=[r["feeling"] for r in rows]
    )
    assert json.loads(output.read_text())["all"]["sentiment_appropriateness"] == pytest.approx(expected)
    csv_path = tmp_path / "x.csv"  # the same from a CSV: lists separated by ';'
    lines = ["predictions,feeling,references,review"]
    for r in rows:
        feeling = ";".join(map(str, r["feeling"]))
        lines.append(f'{";".join(r["predictions"])},{feeling},{r["references"][0]},"{r["review"]}"')
    csv_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main([str(csv_path), *arguments[1:], "--output", str(output)]) == 0
    assert json.loads(output.read_text())["all"]["sentiment_appropriateness"] == pytest.approx(expected)
    assert main([str(csv_path), *arguments[1:], "--group", "references"]) == 2
    assert "--prediction-sentiments cannot be pooled with --group" in capsys.readouterr().err


def test_device_reaches_the_semantic_family(tmp_path, capsys):
    from opinion_metrics.embeddings.encoder import clear_embedding_cache
    from opinion_metrics.families.semantic_keyword_prf import semantic_keyword_prf

    output = tmp_path / "out.json"
    rows = [{"predictions": ["space war", "droid"], "references": ["galactic war", "robot"]}]
    path = _jsonl(tmp_path / "x.jsonl", rows)
    arguments = [str(path), "--metrics", "semantic_keyword_prf", "--device", "cpu", "--output", str(output)]
    assert main(arguments) == 0
    expected = semantic_keyword_prf([rows[0]["predictions"]], [rows[0]["references"]], device="cpu")
    assert json.loads(output.read_text())["all"]["semantic_keyword_prf"] == pytest.approx(expected)
    capsys.readouterr()
    clear_embedding_cache()  # else the cached embeddings answer without the model
    with pytest.raises(SystemExit) as exit:  # refused with the options, before any model loads
        main([str(path), "--metrics", "semantic_keyword_prf", "--device", "no-such-device"])
    assert exit.value.code == 2
    error = next(line for line in capsys.readouterr().err.splitlines() if line.startswith("opinion-metrics: error"))
    assert error.startswith("opinion-metrics: error: argument --device: must be 'cpu', 'cuda', 'cuda:N' or 'mps'")
    assert "got 'no-such-device': not a device PyTorch knows" in error


def test_the_plot_names_the_file_and_models_and_labels_tiny_values():
    from opinion_metrics.view.figures import results_figure

    results = {
        "base": {"keyword_prf": {"precision": 0.4, "recall": 0.0035}},
        "sentiment": {"keyword_prf": {"precision": 0.2}},
    }
    figure = results_figure(results, "SW_Episode4.jsonl.gz (model: base, sentiment)")
    assert figure.get_suptitle() == "SW_Episode4.jsonl.gz (model: base, sentiment)"
    (axis,) = figure.axes
    labels = [text.get_text() for text in axis.texts]
    assert "0.0035" in labels and "0.4000" in labels and "0.2000" in labels
    assert [text.get_text() for text in axis.get_legend().get_texts()] == ["base", "sentiment"]
    # the missing recall of "sentiment" is no bar, not a bar of 0
    assert len([patch for patch in axis.patches if patch.get_height() == patch.get_height()]) == 3


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


def test_the_readme_command_lines_run(tmp_path, monkeypatch, capsys):
    """Every opinion-metrics command of the README and the docs runs."""
    documents = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    texts = [path.read_text(encoding="utf-8") for path in documents]
    blocks = [block.split("```", 1)[0] for text in texts for block in text.split("```bash\n")[1:]]
    commands = [
        part.strip()
        for block in blocks
        for line in block.replace("\\\n", " ").splitlines()
        for part in line.split("&&")
        if part.strip().startswith("opinion-metrics ")
    ]
    assert commands
    if not MOVIE_REVIEWS.exists():  # those on the IMDB data need it; every other command runs
        if SHARED_NAMED:
            require_shared(MOVIE_REVIEWS)  # named but missing: a failure
        commands = [command for command in commands if "movie_reviews/" not in command]
    monkeypatch.chdir(tmp_path)  # where the commands write their plots
    for command in commands:
        # examples/ is in the repository; the README's movie_reviews/ is the IMDB data the tests read.
        arguments = [
            str(REPO / word)
            if word.startswith("examples/")
            else str(MOVIE_REVIEWS.parent / word)
            if word.startswith("movie_reviews/")
            else word
            for word in shlex.split(command)[1:]
        ]
        assert main(arguments) == 0, command


def test_an_undefined_value_prints_as_n_a_and_draws_no_bar():
    from opinion_metrics.view.figures import results_figure
    from opinion_metrics.view.text import format_tables

    results = {"m1": {"aspect_sentiment_score": {"score": 0.5, "r2_x": None}}, "m2": {"keyword_prf": {"f1": 0.25}}}
    assert format_tables(results, "model").splitlines() == [
        "aspect_sentiment_score",
        "model  score ↑",
        "m1     0.5000",
        "",
        "aspect_sentiment_score: x",
        "model  r2 ↑",
        "m1     n/a",
        "↑ higher is better",
        "",
        "keyword_prf",
        "model     f1 ↑",
        "m2     0.2500",
        "↑ higher is better",
    ]
    axis = results_figure(results).axes[0]
    assert [text.get_text() for text in axis.texts] == ["0.5000", "", "", ""]


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


def test_declared_options_reach_their_families(tmp_path, capsys):
    from opinion_metrics.families.keyword_diversity import keyword_diversity
    from opinion_metrics.families.sentiment_appropriateness import sentiment_appropriateness

    table = load_table(EXAMPLE, [], [])
    predictions, references, texts = table["predictions"], table["references"], table["review"]
    output = tmp_path / "out.json"

    def run(*arguments):
        assert main([str(EXAMPLE), *arguments, "--system", "none", "--output", str(output)]) == 0
        return json.loads(output.read_text())["all"]

    results = run("--metrics", "keyword_prf", "--presence", "present")
    expected = keyword_prf(predictions, references, texts=texts, presence="present")
    assert results["keyword_prf"] == pytest.approx(expected)
    assert expected != keyword_prf(predictions, references)  # the option changes the numbers here
    interval = ["--confidence-level", "0.9", "--n-resamples", "50", "--random-state", "3"]
    results = run("--metrics", "weighted_keyword_prf", *interval)
    expected = weighted_keyword_prf(
        predictions, table["scores"], references, confidence_level=0.9, n_resamples=50, random_state=3
    )
    assert "ndcg@5_ci_low" in expected and results["weighted_keyword_prf"] == pytest.approx(expected)
    results = run("--metrics", "weighted_keyword_prf", *interval, "--bootstrap", "poisson")
    poisson = weighted_keyword_prf(
        predictions,
        table["scores"],
        references,
        confidence_level=0.9,
        n_resamples=50,
        random_state=3,
        bootstrap="poisson",
    )
    assert poisson != expected and results["weighted_keyword_prf"] == pytest.approx(poisson)
    results = run("--metrics", "keyword_diversity", "sentiment_appropriateness", "--mapping", "compound")
    assert results["keyword_diversity"] == pytest.approx(keyword_diversity(predictions, model=DIVERSITY_MODEL))
    expected = sentiment_appropriateness(predictions, references, texts=texts, mapping="compound")
    assert results["sentiment_appropriateness"] == pytest.approx(expected)


def test_presence_needs_single_reviews_with_texts(tmp_path, capsys):
    assert main([str(EXAMPLE), "--presence", "absent", "--group", "model"]) == 2
    assert "--presence cannot be pooled with --group (it is per review)" in capsys.readouterr().err
    path = _jsonl(tmp_path / "x.jsonl", BY_MODEL)
    assert main([str(path), "--presence", "absent"]) == 2
    assert "--presence needs the review texts: name their column with --texts" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(path), "--confidence-level", "1.5"])
    assert "argument --ci/--confidence-level: must be a number strictly between 0 and 1, got 1.5" in (
        capsys.readouterr().err
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


REPORTED = ["p_value_holm", "pairs", "differing_pairs", "smallest_p_value"]  # --output's comparison adds these


def _assert_close(actual: dict, expected: dict) -> None:
    """Nested dicts of numbers are equal up to rounding (pytest.approx takes one level); a
    comparison's values may be followed by the report's (REPORTED)."""
    assert [key for key in actual if key not in REPORTED] == list(expected)
    for key, value in expected.items():
        if isinstance(value, dict):
            _assert_close(actual[key], value)
        else:
            assert actual[key] == pytest.approx(value), key


def _row_of(printed: str, family: str, subset: str) -> str:
    """The line of `subset` in the table of `family` (tables are separated by blank lines)."""
    block = next(block for block in printed.split("\n\n") if block.splitlines()[0] == family)
    return next(line for line in block.splitlines()[2:] if line.split()[0] == subset)


def test_ci_prints_intervals_keeps_flat_keys_and_draws_error_bars(tmp_path, capsys):
    table = load_table(EXAMPLE, [], [])
    rows = [i for i, model in enumerate(table["model"]) if model == "sentiment"]
    predictions, references = [table["predictions"][i] for i in rows], [table["references"][i] for i in rows]
    scores = [table["scores"][i] for i in rows]
    output = tmp_path / "out.json"
    interval = ["--ci", "0.9", "--n-resamples", "200", "--random-state", "5"]
    assert main([str(EXAMPLE), "--by", "model", *interval, "--output", str(output)]) == 0
    printed = capsys.readouterr().out
    options = {"confidence_level": 0.9, "n_resamples": 200, "random_state": 5}
    expected = {
        "keyword_prf": keyword_prf(predictions, references, **options),
        "weighted_keyword_prf": weighted_keyword_prf(predictions, scores, references, **options),
    }
    _assert_close(json.loads(output.read_text())["sentiment"], expected)  # the flat keys
    for family, values in expected.items():
        keys = [key for key in values if "_ci_" not in key]
        cells = [f"{values[k]:.4f} [{values[k + '_ci_low']:.4f}, {values[k + '_ci_high']:.4f}]" for k in keys]
        row = re.sub(r"(\d)[* ] \[", r"\1 [", _row_of(printed, family, "sentiment"))  # the best mark's place
        assert re.split(r"\s{2,}", row) == ["sentiment", *cells]
        header = printed.split(family + "\n", 1)[1].splitlines()[0].split()
        assert header == ["model", *(word for key in keys for word in (key, "↑"))]  # no separate _ci_ columns
    from opinion_metrics.view.figures import results_figure

    figure = results_figure(json.loads(output.read_text()))
    axis = figure.axes[0]  # keyword_prf: precision, recall, f1 for baseline and sentiment
    assert [label.get_text() for label in axis.get_xticklabels()] == ["precision", "recall", "f1"]
    bars = [container for container in axis.containers if hasattr(container, "errorbar")]
    segments = bars[1].errorbar.lines[2][0].get_segments()  # the sentiment bars' error bars
    f1 = expected["keyword_prf"]
    assert segments[2][:, 1] == pytest.approx([f1["f1_ci_low"], f1["f1_ci_high"]])


def test_compare_matches_compare_systems_on_the_real_movie_data(tmp_path, capsys):
    from opinion_metrics import compare_systems
    from opinion_metrics.view.significance import signed  # +0.0000 for a difference that rounds to 0, never -0.0000

    directory = require_shared(MOVIE_REVIEWS)
    output = tmp_path / "out.json"
    arguments = [str(directory / "SW_Episode4.jsonl.gz"), "--predictions", "keywords_*", "--scores", "scores_*"]
    arguments += ["--gold", str(directory / "ground_truth.jsonl"), "--clip-scores", "--compare", "base"]
    arguments += ["--metrics", "keyword_prf", "weighted_keyword_prf", "--n-resamples", "300"]
    assert main([*arguments, "--output", str(output)]) == 0
    printed = capsys.readouterr().out
    written = json.loads(output.read_text())
    assert list(written["results"]) == ["base", "reranker", "sentiment", "metadata"]
    comparison = written["comparison"]
    assert (comparison["base"], comparison["method"], comparison["confidence_level"]) == ("base", "permutation", 0.95)
    reviews = [r for r in load_movie_reviews() if r["movie"] == "SW_Episode4"]
    references = [r["gold"] for r in reviews]
    assert list(comparison["differences"]) == ["reranker", "sentiment", "metadata"]
    significant = 0
    for model in comparison["differences"]:
        expected = compare_systems(
            "keyword_prf", [r["keywords_base"] for r in reviews], [r[f"keywords_{model}"] for r in reviews],
            references, n_resamples=300,
        )  # fmt: skip
        _assert_close(comparison["differences"][model]["keyword_prf"], expected)
        expected = compare_systems(
            "weighted_keyword_prf", [r["keywords_base"] for r in reviews], [r[f"keywords_{model}"] for r in reviews],
            references, scores_a=[r["scores_base"] for r in reviews], scores_b=[r[f"scores_{model}"] for r in reviews],
            n_resamples=300, clip_scores=True,
        )  # fmt: skip
        _assert_close(comparison["differences"][model]["weighted_keyword_prf"], expected)
        for family in ("keyword_prf", "weighted_keyword_prf"):
            block = next(b for b in printed.split("\n\n") if b.startswith(f"{family}: each model against base"))
            for key, result in comparison["differences"][model][family].items():
                line = next(line for line in block.splitlines() if line.split()[:3] == [model, key, "↑"])
                assert line.split()[3:8] == [
                    f"{result['a']:.4f}", f"{result['b']:.4f}", signed(result["difference"]),
                    f"[{signed(result['difference_ci_low'])},", f"{signed(result['difference_ci_high'])}]",
                ]  # fmt: skip
                # Holm over the 3 models compared with base: at least the p-value, which the 9th field shows
                assert result["p_value_holm"] >= result["p_value"] and result["pairs"] == len(reviews)
                assert line.rstrip("‡").endswith("†") == (result["p_value_holm"] < 0.05)
                significant += result["p_value_holm"] < 0.05
    # the "sentiment" model differs from "base" beyond doubt; "reranker" has the same keywords (p = 1)
    assert comparison["differences"]["sentiment"]["keyword_prf"]["f1"]["p_value"] < 0.01
    assert comparison["differences"]["reranker"]["keyword_prf"]["f1"]["p_value"] == 1.0
    assert significant > 0
    assert "\n† significant at the 0.05 level, after Holm's correction for the 3 systems compared with base" in printed


def test_compare_by_model_pairs_rows_by_position_with_the_chosen_method_and_level(tmp_path, capsys):
    from opinion_metrics import compare_systems

    table = load_table(EXAMPLE, [], [])
    by_model = {m: [i for i, model in enumerate(table["model"]) if model == m] for m in ("baseline", "sentiment")}
    output = tmp_path / "out.json"
    arguments = ["--by", "model", "--compare", "baseline", "--compare-method", "bootstrap", "--ci", "0.8"]
    assert main([str(EXAMPLE), *arguments, "--metrics", "keyword_prf", "--output", str(output)]) == 0
    expected = compare_systems(
        "keyword_prf",
        [table["predictions"][i] for i in by_model["baseline"]],
        [table["predictions"][i] for i in by_model["sentiment"]],
        [table["references"][i] for i in by_model["baseline"]],
        method="bootstrap",
        confidence_level=0.8,
    )
    written = json.loads(output.read_text())
    _assert_close(written["comparison"]["differences"]["sentiment"]["keyword_prf"], expected)
    assert written["comparison"]["method"] == "bootstrap" and written["comparison"]["confidence_level"] == 0.8
    printed = capsys.readouterr().out
    assert "80% interval" in printed and "† significant at the 0.2 level" in printed
    assert "p-values and intervals: the same 1,000 paired bootstrap resamples" in printed
    assert "sentiment vs baseline: 6 pairs" in printed and "warning: sentiment vs baseline has only 6 pairs" in printed


def test_compare_refuses_systems_that_cannot_be_paired(tmp_path, capsys):
    rows = [dict(row) for row in BY_MODEL]  # m1 on lines 1 and 3, m2 on lines 2 and 4
    path = _jsonl(tmp_path / "x.jsonl", rows)
    assert main([str(path), "--by", "model", "--compare", "m1", "--metrics", "keyword_prf"]) == 0
    rows[3]["references"] = ["c"]
    _jsonl(path, rows)
    assert main([str(path), "--by", "model", "--compare", "m1", "--metrics", "keyword_prf"]) == 1
    assert (
        "cannot compare model 'm2' with 'm1': their references differ at line 4 of x.jsonl ('m2') and "
        "line 3 of x.jsonl ('m1'); examples are paired by position within each model's rows"
    ) in capsys.readouterr().err
    _jsonl(path, rows[:3])
    assert main([str(path), "--by", "model", "--compare", "m2", "--metrics", "keyword_prf"]) == 1
    assert "cannot compare model 'm1' with 'm2': 'm2' has 1 row, 'm1' has 2" in capsys.readouterr().err
    texts = [{**row, "review": f"a b {i // 2}"} for i, row in enumerate(BY_MODEL)]  # lines 3 and 4 differ
    path = _jsonl(tmp_path / "t.jsonl", [{**row, "review": "a b"} for row in BY_MODEL[:2]] + texts[2:])
    arguments = ["--by", "model", "--compare", "m1", "--metrics", "keyword_prf"]
    assert main([str(path), *arguments]) == 0  # the texts are not read
    texts[3]["review"] = "b"
    _jsonl(path, texts)
    assert main([str(path), *arguments, "--presence", "present"]) == 1
    assert "their texts differ at line 4 of t.jsonl ('m2') and line 3 of t.jsonl ('m1')" in capsys.readouterr().err
    # after a --gold join: the gold lists of the movies at the same position differ
    reviews = [
        {"model": m, "movie": movie, "predictions": ["x"]}
        for m, movie in [("a", "s"), ("b", "s"), ("a", "t"), ("b", "u")]
    ]
    gold = [{"movie": "s", "keywords": ["x"]}, {"movie": "t", "keywords": ["y"]}, {"movie": "u", "keywords": ["z"]}]
    arguments = ["--gold", str(_jsonl(tmp_path / "gold.jsonl", gold)), "--by", "model", "--compare", "a"]
    assert main([str(_jsonl(tmp_path / "r.jsonl", reviews)), *arguments]) == 1
    assert "their references differ at line 4 of r.jsonl ('b') and line 3 of r.jsonl ('a')" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--system", "none", "--baseline", "baseline"], "--baseline needs systems to compare: a system column"),
        (
            ["--baseline", "nope"],
            "--baseline 'nope' is not a system of column 'model' (there: baseline, sentiment)",
        ),
        (["--baseline", "Baseline"], "(there: baseline, sentiment); did you mean 'baseline'?"),
        (["--baseline", "sentimnt"], "(there: baseline, sentiment); did you mean 'sentiment'?"),
        (["--compare-method", "bootstrap"], "--compare-method needs --baseline NAME"),
        (["--by", "review_id", "--compare", "r1"], "--baseline 'r1': there is no other value of --by review_id"),
        (["--by", "movie"], "holds several systems in column 'model': --by movie would pool them"),
    ],
)
def test_compare_usage_errors(tmp_path, capsys, arguments, message):
    rows = [{"review_id": "r1", "predictions": row["predictions"], "references": row["references"]} for row in BY_MODEL]
    path = _jsonl(tmp_path / "x.jsonl", rows[:2])  # one system
    source = EXAMPLE if "review_id" not in arguments else path
    assert main([str(source), *arguments]) == 2
    assert message in capsys.readouterr().err


def test_presence_list_prints_the_views_side_by_side(tmp_path, capsys):
    table = load_table(EXAMPLE, [], [])
    output = tmp_path / "out.json"
    arguments = ["--by", "model", "--presence", "all,present,absent", "--metrics", "keyword_prf", "keyword_diversity"]
    assert main([str(EXAMPLE), *arguments, "--output", str(output)]) == 0
    printed = capsys.readouterr().out
    results = json.loads(output.read_text())
    from opinion_metrics.families.keyword_diversity import keyword_diversity

    for model in ("baseline", "sentiment"):
        rows = [i for i, value in enumerate(table["model"]) if value == model]
        predictions, references = [table["predictions"][i] for i in rows], [table["references"][i] for i in rows]
        texts = [table["review"][i] for i in rows]
        for presence in ("all", "present", "absent"):
            expected = keyword_prf(predictions, references, texts=texts, presence=presence)
            assert results[f"{model}/{presence}"]["keyword_prf"] == pytest.approx(expected)
            cells = _row_of(printed, "keyword_prf", f"{model}/{presence}").split()[1:]
            assert [cell.rstrip("*") for cell in cells] == [
                f"{expected[key]:.4f}" if expected[key] is not None else "n/a" for key in expected
            ]
            other = "sentiment" if model == "baseline" else "baseline"  # the best is marked within the view
            versus = keyword_prf([table["predictions"][i] for i, value in enumerate(table["model"]) if value == other],
                                 [table["references"][i] for i, value in enumerate(table["model"]) if value == other],
                                 texts=[table["review"][i] for i, value in enumerate(table["model"]) if value == other],
                                 presence=presence)  # fmt: skip
            assert cells[2].endswith("*") == (round(expected["f1"], 4) >= round(versus["f1"], 4))
        diversity = keyword_diversity(predictions, model=DIVERSITY_MODEL)
        assert results[model]["keyword_diversity"] == pytest.approx(diversity)  # no views
    assert printed.splitlines()[1].split()[0] == "model/presence"
    assert results["baseline/present"] != results["baseline/absent"]
    with pytest.raises(SystemExit):
        main([str(EXAMPLE), "--presence", "present,sometimes"])
    assert "argument --presence: must be all, present, absent or a list of them, got 'sometimes'" in (
        capsys.readouterr().err
    )


def test_presence_with_a_missing_text_names_the_line(tmp_path, capsys):
    rows = [{**row, "review": "a b"} for row in BY_MODEL]
    rows[2]["review"] = None
    path = _jsonl(tmp_path / "x.jsonl", rows)
    assert main([str(path), "--presence", "all,present", "--metrics", "keyword_prf"]) == 1
    assert "texts (column 'review'): line 3 of x.jsonl must be a str, got NoneType None" in capsys.readouterr().err
    assert main([str(path), "--presence", "all", "--metrics", "keyword_prf"]) == 0  # the texts are not read


def test_present_keywords_on_the_real_movie_data(tmp_path, capsys):
    directory = require_shared(MOVIE_REVIEWS)
    output = tmp_path / "out.json"
    arguments = [str(directory / "IndianaJones.jsonl.gz"), "--predictions", "keywords_*", "--metrics", "keyword_prf"]
    arguments += ["--gold", str(directory / "ground_truth.jsonl"), "--presence", "all,present", "--output", str(output)]
    assert main(arguments) == 0
    results = json.loads(output.read_text())
    reviews = [r for r in load_movie_reviews() if r["movie"] == "IndianaJones"]
    references, texts = [r["gold"] for r in reviews], [r["review"] for r in reviews]
    for model in ("base", "sentiment"):
        predictions = [r[f"keywords_{model}"] for r in reviews]
        assert results[f"{model}/all"]["keyword_prf"] == pytest.approx(keyword_prf(predictions, references))
        expected = keyword_prf(predictions, references, texts=texts, presence="present")
        assert results[f"{model}/present"]["keyword_prf"] == pytest.approx(expected)
        assert expected["recall"] > 10 * results[f"{model}/all"]["keyword_prf"]["recall"]  # the point of the view
