"""evaluate's own distributed mechanism: 2 real processes add half the data each; process
0 returns the single-process result, the other None."""

import json
import subprocess
import sys
import uuid

import pytest
from conftest import REPO

pytestmark = pytest.mark.slow

evaluate = pytest.importorskip("evaluate")

CASES = {
    "keyword_diversity": (
        {"predictions": [["Star Wars", "star wars!", "space opera"], ["jedi"], [], ["droid", "droid army"]]},
        {"return_per_example": True},
    ),
    "keyword_prf": (
        {
            "predictions": [["war", "jedi"], ["droid"], [], ["ring", "hobbit"], ["space opera"]],
            "references": [["jedi", "empire"], ["droid"], ["x"], ["hobbit"], ["space opera", "jedi"]],
        },
        {"match": "token", "average": "micro", "return_per_example": True},
    ),
    "weighted_keyword_prf": (
        {
            "predictions": [["war", "jedi"], ["droid"], ["ring", "hobbit"], ["a"]],
            "scores": [[0.9, 0.2], [0.5], [0.3, 0.8], [1.0]],
            "references": [["jedi", "empire"], ["droid"], ["hobbit"], []],
        },
        {"k": 3},
    ),
    "aspect_sentiment_score": (
        {"predictions": [[0, 4], [3, 0], [5, 5], [0, 0]], "references": [[0, 5], [3, 2], [4, 5], [0, 1]]},
        {"aspects": ["food", "hotel"]},
    ),
    "sentiment_appropriateness": (
        {
            "predictions": [["great acting"], ["boring plot", "slow"], ["space"]],
            "references": [["masterpiece"], ["dull"], []],
            "texts": ["Loved it.", None, "Fine."],
        },
        {},
    ),
    "sentiment_tuple_prf": (
        {
            "predictions": [
                [["pizza", "over cooked", "NEG"], ["the staff", "friendly", "POS"]],
                [],
                [["wine", "pricey", "NEG"]],
            ],
            "references": [
                [["pizza", "over cooked", "negative"]],
                [["service", "slow", "NEG"]],
                [["NULL", "pricey", "neg"]],
            ],
        },
        {"match": "overlap", "return_per_example": True},
    ),
    "semantic_keyword_prf": (
        {
            "predictions": [["space opera", "jedi knight"], ["scam"], ["pizza"]],
            "references": [["space opera", "jedi"], ["fraud"], ["food"]],
        },
        {"threshold": 0.6},
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_two_processes_equal_one(name, tmp_path):
    if name == "semantic_keyword_prf":
        pytest.importorskip("sentence_transformers")
    if name == "sentiment_appropriateness":
        pytest.importorskip("vaderSentiment")
    columns, options = CASES[name]
    module_dir = str(REPO / "metrics" / name)
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps({"columns": columns, "options": options}))
    experiment_id = f"test-{uuid.uuid4().hex}"
    worker = str(REPO / "tests" / "distributed_worker.py")
    outputs = [tmp_path / f"out{i}.json" for i in range(2)]
    processes = [
        subprocess.Popen(
            [sys.executable, worker, module_dir, str(i), "2", experiment_id, str(inputs), str(outputs[i])],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in range(2)
    ]
    logs = [process.communicate(timeout=300)[0] for process in processes]
    assert [process.returncode for process in processes] == [0, 0], logs
    results = [json.loads(output.read_text()) for output in outputs]
    single = evaluate.load(module_dir).compute(**columns, **options)
    assert results[1] is None
    assert results[0] == single
