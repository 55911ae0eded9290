"""Generated text and the field's counting (docs/definitions.md section 13): `parse_tuples` on
hand-written outputs, unreadable segments counted, and `counting="membership"` equal to
ABSA-QUAD's / Generative-ABSA's `compute_f1_scores`, re-implemented here from its rule (a
predicted tuple is a hit when it is in its sentence's gold list), on the shared ASQP, ASTE and
TASD data with perturbed predictions, also written out as paraphrases and read back by this
file's own implementation of ABSA-QUAD's decoding rule."""

from __future__ import annotations

import ast
import math
import random

import pytest
from conftest import SHARED, require_shared

from opinion_metrics import parse_tuples, sentiment_tuple_prf

ABSA = SHARED / "data" / "absa"
WORDS = {"positive": "great", "negative": "bad", "neutral": "ok"}  # ABSA-QUAD's sentiment words


def load(task: str, name: str) -> list[list]:
    """The gold tuples of every sentence of a dataset's three splits."""
    examples = []
    for split in ("train", "dev", "test"):
        path = require_shared(ABSA / task / name / f"{split}.txt")
        for line in path.read_text(encoding="utf-8").splitlines():
            examples.append(ast.literal_eval(line.split("####")[1]))
    return examples


def compute_f1_scores(predicted: list[list], gold: list[list]) -> dict[str, float]:
    """The field's rule: hits = predicted tuples found in their sentence's gold list (each
    repeat counted); precision = hits / predictions, recall = hits / gold tuples."""
    hits = sum(sum(1 for item in p if item in g) for p, g in zip(predicted, gold))
    n_pred, n_gold = sum(map(len, predicted)), sum(map(len, gold))
    precision = hits / n_pred if n_pred else 0.0
    recall = hits / n_gold if n_gold else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / (precision + recall) if hits else 0.0,
    }


def perturbed(examples: list[list], seed: int, keep_one: bool = False) -> list[list]:
    """Predictions from gold tuples: some dropped, altered (another sentiment, another span of
    the corpus, another case), repeated, and spurious tuples from other sentences."""
    rng = random.Random(seed)
    pool = [item for example in examples for item in example]
    sentiments = sorted({item[-2] if isinstance(item[-1], str) and len(item) == 4 else item[-1] for item in pool})
    predictions = []
    for example in examples:
        found = []
        for original in example:
            item = list(original)
            draw = rng.random()
            if draw < 0.1:
                continue
            if draw < 0.2:
                position = len(item) - 2 if len(item) == 4 else len(item) - 1  # the sentiment
                item[position] = rng.choice(sentiments)
            elif draw < 0.27:
                item[0] = rng.choice(pool)[0]
            elif draw < 0.32 and isinstance(item[0], str):
                item[0] = item[0].upper()
            found.append(type(original)(item))  # written as the gold tuples are (lists or tuples)
            if rng.random() < 0.08:
                found.append(type(original)(item))
        if rng.random() < 0.15 or (keep_one and not found):
            found.append(rng.choice(pool))
        predictions.append(found)
    return predictions


def assert_values(result: dict, expected: dict) -> None:
    for key in ("precision", "recall", "f1"):
        assert math.isclose(result[key], expected[key], rel_tol=1e-12), (key, result[key], expected[key])


@pytest.mark.parametrize(
    ("task", "name", "elements"),
    [("asqp", "rest15", "asqp"), ("asqp", "rest16", "asqp"), ("aste", "laptop14", "aste"), ("aste", "rest16", "aste"),
     ("tasd", "rest15", "tasd"), ("tasd", "rest16", "tasd")],
)  # fmt: skip
def test_membership_is_compute_f1_scores_on_the_shared_data(task, name, elements):
    gold = load(task, name)
    predicted = perturbed(gold, seed=len(gold))
    expected = compute_f1_scores(predicted, gold)
    assert 0.5 < expected["precision"] < 1 and expected["recall"] < 1  # the perturbations bite
    result = sentiment_tuple_prf(predicted, gold, elements=elements, counting="membership", projections=[])
    assert_values(result, expected)
    assert sentiment_tuple_prf(gold, gold, elements=elements)["f1"] == 1.0  # gold against itself
    aspects = [[item[:1] for item in example] for example in predicted]  # the aspects alone, repeats counted
    projected = sentiment_tuple_prf(predicted, gold, elements=elements, counting="membership", projections=["aspect"])
    expected_aspects = compute_f1_scores(aspects, [[item[:1] for item in example] for example in gold])
    assert math.isclose(projected["aspect_precision"], expected_aspects["precision"], rel_tol=1e-12)


def paraphrase(example: list) -> str:
    """ABSA-QUAD's target text of quads (aspect, category, sentiment, opinion)."""
    return " [SSEP] ".join(
        f"{category} is {WORDS[sentiment]} because {'it' if aspect == 'NULL' else aspect} is {opinion}"
        for aspect, category, sentiment, opinion in example
    )


def decode(text: str) -> list[tuple[str, str, str, str]]:
    """ABSA-QUAD's decoding rule: segments split at "[SSEP]" and stripped; each split once at
    " because " and each half once at " is "; "it" is the implicit aspect; an unreadable
    segment reads as ("", "", "", "")."""
    quads = []
    for segment in [part.strip() for part in text.split("[SSEP]")]:
        halves = segment.split(" because ")
        parts = [half.split(" is ") for half in halves] if len(halves) == 2 else []
        if len(parts) == 2 and all(len(part) == 2 for part in parts):
            (category, word), (aspect, opinion) = parts
            quads.append((category, "NULL" if aspect.lower() == "it" else aspect, word, opinion))
        else:
            quads.append(("", "", "", ""))
    return quads


@pytest.mark.parametrize("name", ["rest15", "rest16"])
def test_membership_on_generated_paraphrases_is_compute_f1_scores_on_what_abs_quad_decodes(name):
    gold = [example for example in load("asqp", name) if all(decode(paraphrase([item]))[0][0] for item in example)]
    predicted = perturbed(gold, seed=7, keep_one=True)  # (an empty output: see the next test)
    texts = [paraphrase(example) for example in predicted]
    expected = compute_f1_scores([decode(text) for text in texts], [decode(paraphrase(example)) for example in gold])
    result = sentiment_tuple_prf(texts, gold, elements="asqp", format="paraphrase", counting="membership")
    assert_values(result, expected)
    assert result["unparsed"] == 0.0
    assert_values(sentiment_tuple_prf(texts, gold, elements="asqp", format="paraphrase"),
                  sentiment_tuple_prf(predicted, gold, elements="asqp"))  # fmt: skip


def test_where_reading_generated_text_differs_from_abs_quads_decoder():
    gold = [[("pizza", "food quality", "negative", "cold")]]
    # An empty output holds no tuple here; the decoder reads one unreadable tuple.
    assert decode("") == [("", "", "", "")]
    empty = sentiment_tuple_prf([""], gold, elements="asqp", format="paraphrase", zero_division=1.0)
    assert (empty["precision"], empty["recall"], empty["unparsed"]) == (1.0, 0.0, 0.0)
    # An unreadable segment matches nothing here, even an unreadable gold paraphrase there.
    odd = [("food", "food quality", "positive", "as good as it is here")]  # " is " twice in its half
    assert decode(paraphrase(odd)) == [("", "", "", "")] == decode("nonsense")
    result = sentiment_tuple_prf(["nonsense"], [odd], elements="asqp", format="paraphrase", counting="membership")
    assert (result["precision"], result["unparsed"]) == (0.0, 1.0)


def test_parse_tuples_reads_paraphrases():
    text = " food quality is bad because it is cold [SSEP] service general is OK because staff is slow [SSEP] "
    text += "[SSEP] ambience is great because place is what it is now [SSEP] drinks is superb because wine is fine"
    parsed = parse_tuples(text, format="paraphrase", elements="acos")
    assert parsed.tuples == [
        ("NULL", "food quality", "cold", "negative"),  # "it": the implicit aspect
        ("staff", "service general", "slow", "neutral"),  # the sentiment word in any case
        ("wine", "drinks", "fine", "superb"),  # an unknown sentiment word is kept as the label
    ]
    assert parsed.unparsed == ["ambience is great because place is what it is now"]  # " is " twice: unreadable
    assert parse_tuples("   ", format="paraphrase", elements="asqp").tuples == []
    with pytest.raises(ValueError, match="reads quads"):
        parse_tuples(text, format="paraphrase", elements="aste")


def test_parse_tuples_reads_tuples_in_element_order():
    parsed = parse_tuples(
        "(pizza, cold, negative);(staff ,  slow,neutral); (a, b); wine, ok, positive", format="tuples"
    )
    assert parsed.tuples == [("pizza", "cold", "negative"), ("staff", "slow", "neutral")]
    assert parsed.unparsed == ["(a, b)", "wine, ok, positive"]
    tasd = parse_tuples("(NULL, restaurant general, positive)", format="tuples", elements="tasd")
    assert tasd.tuples == [("NULL", "restaurant general", "positive")]


def test_unreadable_segments_count_as_predictions_and_are_reported():
    texts = ["(pizza, cold, negative); (staff, rude); ", "nothing readable", "(view, nice, positive)"]
    gold = [[("pizza", "cold", "NEG")], [("wine", "pricey", "NEG")], [("view", "nice", "POS")]]
    result = sentiment_tuple_prf(texts, gold, format="tuples", projections=[], return_per_example=True)
    # predictions: 1 + 1 unreadable, 0 + 1 unreadable, 1: 4 in all, 2 of them hits; 3 gold tuples.
    assert (result["precision"], result["recall"], result["unparsed"]) == (2 / 4, 2 / 3, 2.0)
    assert result["per_example"]["unparsed"] == [1.0, 1.0, 0.0]
    assert result["per_example"]["precision"] == [0.5, 0.0, 1.0]
    with pytest.raises(ValueError, match=r"predictions: example 1 must be the generated text \(a str\)"):
        sentiment_tuple_prf(["(a, b, c)", [("a", "b", "c")]], gold[:2], format="tuples")
