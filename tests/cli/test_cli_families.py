"""The opinion-metrics command line on the bundled example and on the real shared files: each
family's values equal the library's (CSV and JSON Lines, --group, --gold, model column
pairs), every option reaches its family, and the command lines of the README and the docs run."""

import csv
import json
import shlex

import pytest
from cli_cases import BY_MODEL, DIVERSITY_MODEL, EXAMPLE, _jsonl
from conftest import MOVIE_REVIEWS, REPO, SHARED_NAMED, TOURISM_REVIEWS, load_movie_reviews, require_shared

from opinion_metrics import keyword_prf, pool_by_group, weighted_keyword_prf
from opinion_metrics.cli import main
from opinion_metrics.families.aspect_sentiment_score import VIETNAMESE_COLUMNS, aspect_sentiment_score
from opinion_metrics.io.read import load_table


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


def test_the_command_in_a_host_process_gives_back_its_logging_and_environment(capsys, monkeypatch):
    """Called in a notebook or a test, the command quiets the model libraries while it runs
    and leaves their log levels and the environment as it found them (a transformers Trainer
    run afterwards would otherwise print its metrics: it reads the log level)."""
    import logging
    import os

    for name in ("HF_HUB_DISABLE_PROGRESS_BARS", "TRANSFORMERS_VERBOSITY", "TOKENIZERS_PARALLELISM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(logging.getLogger("datasets"), "level", logging.INFO)  # a host's own choice
    before = {name: logging.getLogger(name).level for name in ("transformers", "datasets", "evaluate")}
    environment = dict(os.environ)
    assert main([str(EXAMPLE), "--by", "model"]) == 0
    assert "keyword_prf" in capsys.readouterr().out
    assert {name: logging.getLogger(name).level for name in before} == before
    assert dict(os.environ) == environment
