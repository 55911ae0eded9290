"""What the command-line tests share: the bundled example, the model keyword_diversity adds,
small JSON Lines files (two systems, one score out of range), nested results compared up to
rounding, and a row of a printed table."""

import importlib.util
import json

import pytest
from conftest import REPO

EXAMPLE = REPO / "examples" / "reviews.jsonl"
# keyword_diversity adds self_similarity (the default model) whenever the semantic extra is installed
DIVERSITY_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
if importlib.util.find_spec("sentence_transformers") is None:
    DIVERSITY_MODEL = None


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


BY_MODEL = [  # line 4 is the second example of model m2
    {"model": "m1", "predictions": ["a"], "scores": [0.5], "references": ["a"]},
    {"model": "m2", "predictions": ["a"], "scores": [0.5], "references": ["a"]},
    {"model": "m1", "predictions": ["b"], "scores": [0.5], "references": ["a"]},
    {"model": "m2", "predictions": ["b"], "scores": [1.5], "references": ["a"]},
]


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
