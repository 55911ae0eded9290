"""--presence on the command line: present and absent keywords of single reviews with texts,
a list of views printed side by side, a missing text named by its line, the real movie data."""

import json

import pytest
from cli_cases import BY_MODEL, DIVERSITY_MODEL, EXAMPLE, _jsonl, _row_of
from conftest import MOVIE_REVIEWS, load_movie_reviews, require_shared

from opinion_metrics import keyword_prf
from opinion_metrics.cli import main
from opinion_metrics.io.read import load_table


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
