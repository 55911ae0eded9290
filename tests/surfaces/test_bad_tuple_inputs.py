"""The bad-input catalogue of sentiment_tuple_prf, in the style of test_bad_inputs.py: every
case through the library, the evaluate module (`compute`, and `add_batch` then `compute`) and,
where a file can hold it, the command line; each message names the example (the line), the
tuple, the element and the value."""

import json
import re

import pytest
from conftest import REPO

from opinion_metrics import sentiment_tuple_prf
from opinion_metrics.cli.command import main

evaluate = pytest.importorskip("evaluate")

OK = [[("pizza", "good", "POS")], [("staff", "rude", "NEG")]]


def tuples(predictions=OK, references=OK):
    return {"predictions": predictions, "references": references}


# (inputs, options, regex of the library's message, texts every route's message contains)
CATALOGUE = [
    (tuples([[("pizza", "good")], []]), {}, r"predictions: example 0, tuple 0 has 2 elements, expected 3 \(aspect, opinion, sentiment\)", ["example 0", "tuple 0"]),
    (tuples([[], [("pizza", 3, "POS")]]), {}, r"predictions: example 1, tuple 0, opinion must be a text span \(str\), token positions \(a list of int\) or None \(implicit\), got int 3", ["example 1", "tuple 0", "3"]),
    (tuples(references=[[], [("pizza", "good", None)]]), {}, r"references: example 1, tuple 0, sentiment must be a label \(str\), got NoneType None", ["example 1", "tuple 0", "sentiment"]),
    (tuples([[("!!!", "good", "POS")], []]), {}, r"predictions: example 0, tuple 0, aspect is empty once normalized \('!!!'\); write None or 'NULL'", ["example 0", "tuple 0", "'!!!'"]),
    (tuples(references=[[("pizza", "good", " ")], []]), {}, r"references: example 0, tuple 0, sentiment is an empty label: ' '", ["example 0", "tuple 0"]),
    (tuples([[([1], [], "POS")], []], [[([1], [2], "POS")], []]), {}, r"predictions: example 0, tuple 0, opinion has no token positions", ["example 0", "tuple 0"]),
    (tuples([[([-1], [2], "POS")], []], [[([1], [2], "POS")], []]), {}, r"predictions: example 0, tuple 0, aspect: token positions are integers >= 0, got int -1", ["example 0", "-1"]),
    (tuples([[([True], [2], "POS")], []], [[([1], [2], "POS")], []]), {}, r"token positions are integers >= 0, got bool True", ["example 0", "True"]),
    (tuples(references=[[([1], [2], "POS")], []]), {}, r"references: example 0, tuple 0, aspect is given as positions, but as text at predictions: example 0, tuple 0, aspect", ["example 0", "positions"]),
    (tuples([[{"aspect": "pizza", "opinion": "good", "sentiment": "POS", "polarity": "x"}], []]), {}, r"predictions: example 0, tuple 0 has key 'polarity', not an element", ["example 0", "'polarity'"]),
    (tuples([[{"aspect": "pizza", "sentiment": "POS"}], []], [[{"aspect": "pizza", "opinion": "good", "sentiment": "POS"}], []]), {}, r"has no 'opinion'", ["'opinion'"]),
    (tuples(["(pizza, good, positive)", []]), {}, r"predictions: example 0 must be a list of tuples, got str .*generated text needs format=", ["example 0", "format"]),
    (tuples(), {"format": "tuples"}, r"predictions: example 0 must be the generated text \(a str\) with format='tuples'", ["example 0", "format"]),
    (tuples(references=[None, []]), {}, r"references: example 0 must be a list of tuples, got NoneType None", ["example 0", "None"]),
    (tuples(OK[:1]), {}, r"predictions has 1, references has 2 \(example 1 has no predictions\)", ["example 1"]),
    (tuples([], []), {}, r"cannot evaluate an empty corpus \(0 examples\)", ["0 examples"]),
    (tuples(), {"elements": "quads"}, r"elements must be a preset \(aope, aste, tasd, asqp, acos\) or element names", ["quads"]),
    (tuples(), {"elements": ["aspect", "aspect"]}, r"elements names an element twice", ["twice"]),
    (tuples(), {"match": "substring"}, r"match must be one of \('exact', 'overlap'\), got 'substring'", ["substring"]),
    (tuples(), {"counting": "set"}, r"counting must be one of \('one_to_one', 'membership'\), got 'set'", ["'set'"]),
    (tuples(), {"counting": "membership", "match": "overlap"}, r"counting='membership' counts the field's way .*leave match at the default", ["match"]),
    (tuples(), {"counting": "membership", "average": "macro"}, r"leave average at the default", ["average"]),
    (tuples(), {"projections": [["category"]]}, r"projections: \['category'\] must name distinct elements of the tuple", ["category"]),
    (tuples(), {"projections": "aspect,aspect"}, r"projections: 'aspect' is given twice", ["twice"]),
    (tuples(), {"label_map": {"pos": 1}}, r"label_map maps labels \(non-empty str\) to labels, got 'pos': 1", ["'pos'"]),
    (tuples(), {"label_map": "pos:positive"}, r"label_map must be label=label pairs separated by commas, got 'pos:positive'", ["pos:positive"]),
    (tuples(), {"format": "paraphrase"}, r"format='paraphrase' reads quads .*give elements='asqp' or 'acos'", ["asqp"]),
    (tuples(), {"format": "json"}, r"format must be one of \(None, 'paraphrase', 'tuples'\), got 'json'", ["json"]),
    (tuples([[("  ", "good", "POS")], []]), {"counting": "membership"}, r"predictions: example 0, tuple 0, aspect is empty", ["example 0", "tuple 0"]),
    (tuples(references=[[], [("pizza", "good", 5)]]), {"counting": "membership"}, r"references: example 1, tuple 0, sentiment must be a label \(str\), got int 5", ["example 1", "5"]),
    (tuples(), {"zero_division": 2}, r"zero_division must be a number in \[0, 1\], got 2", ["2"]),
]  # fmt: skip

IDS = [str(number) for number in range(len(CATALOGUE))]


def test_the_catalogue_is_large():
    assert len(CATALOGUE) >= 30


@pytest.mark.parametrize(("inputs", "options", "message", "mentions"), CATALOGUE, ids=IDS)
def test_library(inputs, options, message, mentions):
    with pytest.raises(ValueError, match=message) as error:
        sentiment_tuple_prf(**inputs, **options)
    assert all(text in str(error.value) for text in mentions)


@pytest.fixture
def module():
    return evaluate.load(str(REPO / "metrics" / "sentiment_tuple_prf"))


@pytest.mark.parametrize(("inputs", "options", "message", "mentions"), CATALOGUE, ids=IDS)
def test_evaluate_module(inputs, options, message, mentions, module):
    with pytest.raises(ValueError, match=message):
        module.compute(**inputs, **options)
    # Through add_batch, a shape Arrow cannot hold is refused when the batch is added (token
    # positions go in mappings there), the rest at compute; a missing key with it.
    with pytest.raises(ValueError) as error:
        module.add_batch(**inputs)
        module.compute(**options)
    assert all(text in str(error.value) for text in mentions), str(error.value)


def _cli_case(case):
    """The case as a JSON Lines file holds it (equal lengths, JSON values, options as flags)."""
    inputs, options, message, mentions = case
    if len({len(column) for column in inputs.values()}) > 1 or not inputs["predictions"]:
        return None
    flags = []
    for name, value in options.items():
        if not isinstance(value, (str, int)):
            return None
        flags += [f"--{name.replace('_', '-')}", str(value)]
    mentions = [re.sub(r"example (\d+)", lambda m: f"line {int(m[1]) + 1}", text) for text in mentions]
    return inputs, flags, mentions


CLI_CASES = [found for found in map(_cli_case, CATALOGUE) if found is not None]


@pytest.mark.parametrize(("inputs", "flags", "mentions"), CLI_CASES)
def test_command_line(inputs, flags, mentions, tmp_path, capsys):
    path = tmp_path / "tuples.jsonl"
    rows = [{"predicted_tuples": p, "tuples": r} for p, r in zip(inputs["predictions"], inputs["references"])]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    try:
        status = main([str(path), *flags, "--quiet"])
    except SystemExit as exit:  # a flag argparse refuses
        status = exit.code
    error = capsys.readouterr().err
    assert status in (1, 2) and error.startswith("opinion-metrics: error:"), error
    assert all(text.replace("_", "-") in error or text in error for text in mentions), error
