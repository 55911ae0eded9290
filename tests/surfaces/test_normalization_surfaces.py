"""The default normalization (docs/definitions.md section 1: dashes, connectors and "/" split
words) on every surface: "neo-noir" matches gold "neo noir" in the library families, the
evaluate modules, the CLI, the Spaces, presence detection in texts, explain and the Trainer
helpers. Under the old rule (dashes deleted: "neonoir") each of these fails.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import REPO, space_values
from state_cases import CharacterEncoder

from opinion_metrics import (
    explain,
    keyword_diversity,
    keyword_prf,
    semantic_keyword_prf,
    sentiment_appropriateness,
    weighted_keyword_prf,
)
from opinion_metrics.trainer import keyphrase_compute_metrics

PREDICTIONS = [["neo-noir", "coming-of-age_story"], ["and/or"]]
REFERENCES = [["neo noir", "coming of age story"], ["and or"]]
EXACT = {"precision": 1.0, "recall": 1.0, "f1": 1.0}


def test_the_library_families():
    assert keyword_prf(PREDICTIONS, REFERENCES, match="exact") == EXACT
    weighted = weighted_keyword_prf(PREDICTIONS, [[0.9, 0.5], [0.7]], REFERENCES, match="exact", k=2)
    assert weighted["weighted_precision"] == 1.0 and weighted["ndcg@2"] == 1.0
    semantic = semantic_keyword_prf([["neo-noir"]], [["neo noir", "nor eon"]], model=CharacterEncoder(), threshold=1.0)
    assert semantic["semantic_precision"] == 1.0  # "neo noir" itself, not only its letters
    # tokens: neo, noir, noir (2 of 3 distinct); "neonoir", "noir" were 2 of 2
    assert keyword_diversity([["neo-noir", "noir"]])["unique_token_ratio"] == pytest.approx(2 / 3)
    # "neo-noir" and "neo noir" are one keyword: the repeat is dropped, the sentiment is one keyword's
    assert sentiment_appropriateness(
        [["neo-noir", "neo noir"]], [["great"]], sentiment=lambda text: 0.25 if "-" in text else 0.75
    )["sas_from_keywords"] == pytest.approx(1 - abs(0.25 - 0.75))


def test_presence_detection_in_texts():
    """Gold "neo noir" occurs in "A neo-noir thriller." (the text prepared like the keywords)."""
    present = keyword_prf([["neo-noir"]], [["neo noir", "jedi"]], texts=["A neo-noir thriller."], presence="present")
    assert present == EXACT
    absent = keyword_prf([["jedi"]], [["neo noir", "jedi"]], texts=["A neo-noir thriller."], presence="absent")
    assert absent == EXACT  # the absent gold keywords are "jedi" alone (recall 0.5 with "neonoir")


def test_explain_pairs_the_dashed_prediction_with_its_gold_keyword():
    records = explain("keyword_prf", [["neo-noir", "pizza"]], [["neo noir"]], match="exact")
    pairs = [(match["prediction"], match["reference"]) for match in records[0]["matches"]]
    assert pairs == [("neo-noir", "neo noir")]


def test_the_evaluate_modules():
    evaluate = pytest.importorskip("evaluate")
    module = evaluate.load(str(REPO / "metrics" / "keyword_prf"))
    assert module.compute(predictions=PREDICTIONS, references=REFERENCES, match="exact") == EXACT
    module.add_batch(predictions=PREDICTIONS, references=REFERENCES)
    assert module.compute(match="exact") == EXACT


def test_the_command_line(tmp_path):
    from opinion_metrics.cli import main

    rows = [
        {"predictions": predictions, "references": references, "review": "A neo-noir film, coming-of-age story."}
        for predictions, references in zip(PREDICTIONS, REFERENCES)
    ]
    source = tmp_path / "reviews.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    output = tmp_path / "out.json"
    assert main([str(source), "--match", "exact", "--output", str(output), "--quiet"]) == 0
    assert json.loads(output.read_text())["all"]["keyword_prf"] == EXACT


def test_the_spaces():
    pytest.importorskip("gradio")
    from opinion_metrics.demo.controls import FAMILIES
    from opinion_metrics.demo.handlers import run

    options = {option.name: option.default for option in FAMILIES["keyword_prf"].options} | {"match": "exact"}
    status, summary, _, _ = run(
        "keyword_prf", "neo-noir; coming-of-age_story\nand/or", "neo noir; coming of age story\nand or", "", None,
        *options.values(),
    )  # fmt: skip
    assert status.startswith("Computed on")
    assert space_values(summary) == EXACT


class WordTokenizer:
    """A toy tokenizer: one id per word of a fixed vocabulary (0 pads)."""

    words = ["<pad>", "neo-noir", "neo", "noir", ";", "jedi"]

    def __init__(self):
        self.pad_token_id = 0

    def batch_decode(self, ids, skip_special_tokens=True):
        return [" ".join(self.words[i] for i in row if i) for row in np.asarray(ids).tolist()]


def test_the_trainer_helpers():
    compute_metrics = keyphrase_compute_metrics(WordTokenizer(), match="exact", metrics=("keyword_prf", "ndcg"))
    generated = np.array([[1, 4, 5]])  # "neo-noir ; jedi"
    labels = np.array([[2, 3, 4, 5]])  # "neo noir ; jedi"
    assert compute_metrics((generated, labels)) == {**EXACT, "ndcg@5": 1.0}
