"""The differential test through the evaluate modules: random corpora (format characters,
NUL, tabs, Unicode case, duplicates, empties) go through Arrow, `compute`, `add_batch`
and `add`, and every returned value must equal the brute force of `reference_impl`."""

import os

import numpy as np
import pytest

os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
evaluate = pytest.importorskip("evaluate")

import reference_impl as ref  # noqa: E402
from conftest import REPO  # noqa: E402
from test_differential import differences, random_corpus  # noqa: E402

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
