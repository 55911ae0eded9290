"""The tuple helper (`tuple_compute_metrics`): generated ids and label ids decoded with a real
tokenizer (trained here, nothing downloaded), read as sentiment tuples; its values are
`sentiment_tuple_prf`'s on the decoded text, batch by batch too."""

import numpy as np
import pytest
from test_trainer_batched import batched

from opinion_metrics import parse_tuples, sentiment_tuple_prf
from opinion_metrics.trainer import tuple_compute_metrics

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from test_trainer import local_tokenizer  # noqa: E402

TRIPLETS = [
    "(pizza, over cooked, negative); (staff, friendly, positive)",
    "(wine list, long, positive)",
    "(service, slow, negative); (dessert, great, positive); (music, loud, negative)",
    "(room, tiny, negative)",
    "",  # a review without tuples
    "(view, stunning, positive); (bed, comfy, positive)",
    "(pasta, bland, neutral)",
]
GENERATED = [
    "(pizza, over cooked, negative); (staff, friendly, negative)",  # one sentiment wrong
    "(wine list, long, positive); (wine, long",  # an unreadable segment
    "(service, slow, negative); (music, loud, negative)",
    "",  # nothing generated
    "(room, tiny, negative)",
    "(view, stunning, positive); (view, stunning, positive); (bed, comfy, positive)",  # a repeat
    "pasta is bland",
]
QUADS = [
    "food quality is bad because pizza is over cooked [SSEP] service general is great because staff is friendly",
    "ambience general is great because it is cosy",
    "drinks prices is bad because wine is expensive",
]
QUADS_GENERATED = [
    "food quality is bad because pizza is over cooked [SSEP] service general is bad because staff is friendly",
    "ambience general is great because it is cosy [SSEP] the decor",
    "drinks prices is ok because wine is expensive",
]


@pytest.fixture(scope="module")
def tokenizer():
    tokenizer = local_tokenizer(TRIPLETS + GENERATED + QUADS + QUADS_GENERATED)
    tokenizer.add_tokens(["[SSEP]"])  # a normal token: special tokens are skipped when decoding
    return tokenizer


def ids(tokenizer, texts, pad):
    """The texts' token ids, padded with `pad` (-100 for labels, as DataCollatorForSeq2Seq pads them)."""
    rows = tokenizer(texts)["input_ids"]
    width = max(map(len, rows)) + 2
    return np.array([row + [pad] * (width - len(row)) for row in rows])


def direct(tokenizer, generated, labels, format, elements, **options):  # noqa: A002
    """`sentiment_tuple_prf` on the decoded generations and the decoded targets' tuples."""
    pad = tokenizer.pad_token_id
    predictions = tokenizer.batch_decode(np.where(generated < 0, pad, generated), skip_special_tokens=True)
    targets = tokenizer.batch_decode(np.where(labels < 0, pad, labels), skip_special_tokens=True)
    references = [parse_tuples(text, format=format, elements=elements).tuples for text in targets]
    return sentiment_tuple_prf(predictions, references, format=format, elements=elements, **options)


@pytest.mark.parametrize(
    ("format", "elements", "generated", "targets"),
    [("tuples", "aste", GENERATED, TRIPLETS), ("paraphrase", "asqp", QUADS_GENERATED, QUADS)],
)
def test_the_helper_gives_the_family_values_on_the_decoded_text(tokenizer, format, elements, generated, targets):  # noqa: A002
    predictions, labels = ids(tokenizer, generated, tokenizer.pad_token_id), ids(tokenizer, targets, -100)
    compute_metrics = tuple_compute_metrics(tokenizer, elements=elements, format=format)
    result = compute_metrics((predictions, labels))
    assert result == direct(tokenizer, predictions, labels, format, elements)
    assert result["unparsed"] == (2.0 if format == "tuples" else 1.0)  # "(wine, long", "pasta is bland"; "the decor"
    overlap = tuple_compute_metrics(tokenizer, elements=elements, format=format, match="overlap", average="macro")
    assert overlap((predictions, labels)) == direct(
        tokenizer, predictions, labels, format, elements, match="overlap", average="macro"
    )


@pytest.mark.parametrize(
    "options", [{}, {"confidence_level": 0.9, "n_resamples": 200, "bootstrap": "poisson"}, {"counting": "membership"}]
)
@pytest.mark.parametrize("size", [1, 3])
def test_batched_equals_unbatched(tokenizer, options, size):
    arrays = (ids(tokenizer, GENERATED, tokenizer.pad_token_id), ids(tokenizer, TRIPLETS, -100))
    compute_metrics = tuple_compute_metrics(tokenizer, **options)
    whole = compute_metrics(arrays)
    assert batched(compute_metrics, arrays, size) == pytest.approx(whole, rel=1e-12, abs=1e-15)
    assert whole == pytest.approx(direct(tokenizer, *arrays, "tuples", "aste", **options), rel=1e-12)
    assert ("f1_ci_low" in whole) == ("confidence_level" in options)


def test_label_padding_is_read_as_the_pad_token(tokenizer):
    labels = ids(tokenizer, TRIPLETS, -100)
    assert (labels == -100).any()
    predictions = ids(tokenizer, TRIPLETS, tokenizer.pad_token_id)
    result = tuple_compute_metrics(tokenizer)((predictions, labels))
    assert result["f1"] == 1.0 and result["unparsed"] == 0.0
    assert tuple_compute_metrics(tokenizer).inputs((predictions, labels))["references"][0] == [
        ("pizza", "over cooked", "negative"),
        ("staff", "friendly", "positive"),
    ]


def test_bad_input_says_what_to_do(tokenizer):
    labels = ids(tokenizer, TRIPLETS[:2], -100)
    logits = np.random.default_rng(0).normal(size=(2, labels.shape[1], len(tokenizer))).astype(np.float32)
    with pytest.raises(ValueError, match=r"predictions look like logits .*predict_with_generate=True"):
        tuple_compute_metrics(tokenizer)((logits, labels))
    truncated = ids(tokenizer, ["(pizza, over cooked, negative); (staff, friendly"], -100)
    with pytest.raises(ValueError, match=r"label_ids: example 0: the target text '\( staff , friendly' cannot be read"):
        tuple_compute_metrics(tokenizer)((truncated, truncated))
    with pytest.raises(ValueError, match=r"format must be 'paraphrase' or 'tuples'.*got None"):
        tuple_compute_metrics(tokenizer, format=None)
    with pytest.raises(ValueError, match=r"format='paraphrase' reads quads"):
        tuple_compute_metrics(tokenizer, format="paraphrase")
    with pytest.raises(ValueError, match=r"has no option 'mach'; did you mean 'match'"):
        tuple_compute_metrics(tokenizer, mach="overlap")
    with pytest.raises(ValueError, match="the tokenizer has no pad_token_id"):
        tuple_compute_metrics(object())


def test_seq2seq_trainer_evaluates_generated_tuples_batch_by_batch(tmp_path, tokenizer):
    """A tiny untrained T5 with `batch_eval_metrics=True`: two batches, the values of the family
    on what it generated (mostly unreadable text: `unparsed`) and on the decoded targets."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    datasets = pytest.importorskip("datasets")
    pytest.importorskip("accelerate")
    from test_trainer import tiny_t5, training_arguments

    sources, targets = GENERATED * 4, TRIPLETS * 4  # 28 examples: two batches of 16
    model = tiny_t5(tokenizer)
    inputs = tokenizer(sources, truncation=True, max_length=32, padding="max_length")
    labels = ids(tokenizer, targets, -100).tolist()
    dataset = datasets.Dataset.from_dict({**inputs, "labels": labels})
    args = training_arguments(
        tmp_path,
        transformers.Seq2SeqTrainingArguments,
        predict_with_generate=True,
        generation_max_length=12,
        batch_eval_metrics=True,
    )
    compute_metrics = tuple_compute_metrics(tokenizer, match="overlap")
    trainer = transformers.Seq2SeqTrainer(model=model, args=args, eval_dataset=dataset, compute_metrics=compute_metrics)
    metrics = trainer.evaluate()
    generated = trainer.predict(dataset).predictions
    expected = direct(tokenizer, generated, np.array(labels), "tuples", "aste", match="overlap")
    assert {key: metrics[f"eval_{key}"] for key in expected} == pytest.approx(expected, rel=1e-12)
    assert metrics["eval_unparsed"] > 0


def test_a_tiny_example_gives_the_values_counted_by_hand(tokenizer):
    # gold: 3 tuples; generated: 4, of which (pizza, over cooked, negative) and (room, tiny, negative) are gold:
    # precision 2/4, recall 2/3, F1 = 2 * (1/2) * (2/3) / (1/2 + 2/3) = 4/7 (micro, exact match)
    targets = ["(pizza, over cooked, negative); (staff, friendly, positive)", "(room, tiny, negative)"]
    generated = [
        "(pizza, over cooked, negative); (staff, friendly, negative)",
        "(room, tiny, negative); (view, stunning, positive)",
    ]
    result = tuple_compute_metrics(tokenizer)(
        (ids(tokenizer, generated, tokenizer.pad_token_id), ids(tokenizer, targets, -100))
    )
    assert result["precision"] == pytest.approx(1 / 2, abs=1e-12)
    assert result["recall"] == pytest.approx(2 / 3, abs=1e-12)
    assert result["f1"] == pytest.approx(4 / 7, abs=1e-12)
    assert result["unparsed"] == 0.0
