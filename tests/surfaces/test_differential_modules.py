"""The differential test through the evaluate modules and the CLI: random corpora (format
characters, NUL, tabs, Unicode case, duplicates, empties) go through Arrow, `compute`,
`add_batch` and `add`, or a JSON Lines file and `opinion-metrics --output`, and every
returned value must equal the brute force of `reference_impl`."""

import json
import math
import os

import numpy as np
import pytest

os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
evaluate = pytest.importorskip("evaluate")

import reference_impl as ref  # noqa: E402
from conftest import REPO  # noqa: E402
from differential_cases import differences, random_corpus  # noqa: E402

from opinion_metrics.cli.command import main  # noqa: E402

OPTIONS = [
    {"match": "substring", "normalize": "default", "top_k": None},
    {"match": "token", "normalize": "ascii", "top_k": 3, "one_to_one": False},
    {"match": "token", "normalize": "none", "top_k": "O", "average": "micro"},
    {"match": "exact", "normalize": "default", "top_k": 1, "stemmer": "porter", "zero_division": 1.0},
    {"match": "substring", "normalize": "none", "top_k": "M", "one_to_one": False, "average": "micro"},
]


@pytest.fixture(scope="module")
def modules():
    return {name: evaluate.load(str(REPO / "metrics" / name)) for name in ("keyword_prf", "weighted_keyword_prf")}


@pytest.mark.parametrize("seed", range(len(OPTIONS)))
def test_modules_equal_spec(modules, seed):
    options = OPTIONS[seed]
    rng = np.random.default_rng([seed, 2026])
    predictions, scores, references = random_corpus(rng, 40)
    expected = ref.keyword_prf(predictions, references, **options)
    module = modules["keyword_prf"]
    actual = module.compute(predictions=predictions, references=references, return_per_example=True, **options)
    problems = differences(actual, expected, (predictions, references), f"keyword_prf module compute {options}")
    module.add_batch(predictions=predictions[:25], references=references[:25])
    for predicted, gold in zip(predictions[25:], references[25:]):
        module.add(prediction=predicted, reference=gold)
    actual = module.compute(return_per_example=True, **options)
    problems += differences(actual, expected, (predictions, references), f"keyword_prf module add_batch {options}")

    weighted_options = {**options, "k": 1 + seed, "relevance": ("graded", "binary")[seed % 2]}
    expected = ref.weighted_keyword_prf(predictions, scores, references, **weighted_options)
    module = modules["weighted_keyword_prf"]
    actual = module.compute(
        predictions=predictions, scores=scores, references=references, return_per_example=True, **weighted_options
    )
    corpus = (predictions, scores, references)
    problems += differences(actual, expected, corpus, f"weighted_keyword_prf module compute {weighted_options}")
    module.add_batch(predictions=predictions[:13], scores=scores[:13], references=references[:13])
    module.add_batch(predictions=predictions[13:], scores=scores[13:], references=references[13:])
    actual = module.compute(return_per_example=True, **weighted_options)
    problems += differences(actual, expected, corpus, f"weighted_keyword_prf module add_batch {weighted_options}")
    assert not problems, "\n".join(problems[:8])


def cli_arguments(options: dict) -> list[str]:
    arguments = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if name == "one_to_one":
            arguments.append(flag if value else "--no-one-to-one")
        elif value is not None:
            arguments += [flag, str(value)]
    return arguments


@pytest.mark.parametrize("seed", range(len(OPTIONS)))
def test_cli_equals_spec(tmp_path, seed):
    options = {**OPTIONS[seed], "k": 1 + seed, "relevance": ("graded", "binary")[seed % 2]}
    rng = np.random.default_rng([seed, 2027])
    predictions, scores, references = random_corpus(rng, 40)
    path = tmp_path / "corpus.jsonl"
    rows = (
        json.dumps({"predictions": p, "scores": s, "references": g}) for p, s, g in zip(predictions, scores, references)
    )
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    output = tmp_path / "results.json"
    assert main([str(path), "--output", str(output), *cli_arguments(options)]) == 0
    results = json.loads(output.read_text(encoding="utf-8"))["all"]
    keyword_options = {k: v for k, v in options.items() if k not in ("k", "relevance")}
    expected = {
        "keyword_prf": ref.keyword_prf(predictions, references, **keyword_options),
        "weighted_keyword_prf": ref.weighted_keyword_prf(predictions, scores, references, **options),
    }
    for family, values in expected.items():
        values.pop("per_example")
        assert results[family].keys() == values.keys(), family
        for key, value in values.items():
            assert math.isclose(results[family][key], value, rel_tol=1e-12, abs_tol=1e-12), (family, key, options)
