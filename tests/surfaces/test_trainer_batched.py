"""Batched evaluation (`compute_result`, Trainer's `batch_eval_metrics=True`): every helper adds
each batch to `MetricState`s and returns, on the last, what the unbatched call returns on the
same examples (intervals too, keyed by global position); memory follows the state, not the
evaluation set; each evaluation starts afresh. Then real Trainer and Seq2SeqTrainer runs."""

import numpy as np
import pytest
from conftest import load_movie_reviews

from opinion_metrics import keyword_prf, weighted_keyword_prf
from opinion_metrics.families.aspect_sentiment_score import aspect_sentiment_score
from opinion_metrics.families.keyword_diversity import keyword_diversity
from opinion_metrics.trainer import (
    FamilyScore,
    StateMetrics,
    aspect_compute_metrics,
    keyphrase_compute_metrics,
    split_keyphrases,
)

INTERVALS = [
    {},
    {"confidence_level": 0.9, "n_resamples": 300, "bootstrap": "poisson", "random_state": 3},
    {"confidence_level": 0.9, "n_resamples": 300},  # multinomial: the state keeps a row per example
]


def batched(compute_metrics, arrays, size):
    """compute_metrics called as batch_eval_metrics=True calls it: batch by batch, then compute_result=True."""
    n = len(arrays[0])
    results = []
    for start in range(0, n, size):
        batch = tuple(array[start : start + size] for array in arrays)
        results.append(compute_metrics(batch, compute_result=start + size >= n))
    assert all(result == {} for result in results[:-1])
    return results[-1]


class WordTokenizer:
    """id i decodes to WORDS[i]; 0 is padding."""

    WORDS = ["<pad>", "war", ";", "jedi", "empire", "droid", "the", "pizza", "scam", "fraud"]
    pad_token_id = 0

    def batch_decode(self, rows, skip_special_tokens=True):
        return [" ".join(self.WORDS[int(i)] for i in row if int(i) > 0) for row in np.asarray(rows)]


def id_rows(rng, n, width):
    """Rows of "keyphrase ; keyphrase ..." ids, padded with -100."""
    rows = np.full((n, width), -100)
    for i in range(n):
        words = [int(w) for w in rng.integers(1, len(WordTokenizer.WORDS), size=rng.integers(1, width + 1))]
        rows[i, : len(words)] = words
    return rows


@pytest.mark.parametrize("options", INTERVALS)
@pytest.mark.parametrize("size", [1, 7, 64])
def test_keyphrase_helper_batched_equals_unbatched(options, size):
    rng = np.random.default_rng(size)
    generated, labels, inputs = id_rows(rng, 50, 6), id_rows(rng, 50, 5), id_rows(rng, 50, 8)
    metrics = ("keyword_prf", "ndcg", "map")
    compute_metrics = keyphrase_compute_metrics(WordTokenizer(), metrics=metrics, k=3, presence="present", **options)
    whole = compute_metrics((generated, labels, inputs))
    assert batched(compute_metrics, (generated, labels, inputs), size) == pytest.approx(whole, rel=1e-12, abs=1e-15)
    # independently: decode, split, score with the library
    decode = WordTokenizer().batch_decode
    predictions = [split_keyphrases(text) for text in decode(np.maximum(generated, 0))]
    references = [split_keyphrases(text) for text in decode(np.maximum(labels, 0))]
    texts = decode(np.maximum(inputs, 0))
    expected = keyword_prf(predictions, references, texts=texts, presence="present", **options)
    ranking = weighted_keyword_prf(
        predictions, [[1.0] * len(p) for p in predictions], references, texts=texts, presence="present", k=3, **options
    )
    expected.update({key: value for key, value in ranking.items() if key.startswith(("ndcg@3", "map@3"))})
    assert whole == pytest.approx(expected, rel=1e-12)
    assert ("f1_ci_low" in whole) == bool(options) and ("ndcg@3_ci_high" in whole) == bool(options)


@pytest.mark.parametrize("options", INTERVALS)
@pytest.mark.parametrize("outputs", ["logits", "flat", "regression"])
def test_aspect_helper_batched_equals_unbatched(options, outputs):
    rng = np.random.default_rng(1)
    gold = rng.integers(0, 6, size=(40, 6))
    if outputs == "regression":
        predictions, helper = rng.normal(2.5, 2.0, size=(40, 6)), {"outputs": "regression"}
        ratings = np.clip(np.rint(predictions), 0, 5).astype(int)
    else:
        predictions = rng.normal(size=(40, 6, 6))
        ratings = predictions.argmax(-1)
        helper = {}
        if outputs == "flat":  # a stock head's (n, aspects * classes)
            predictions, helper = predictions.reshape(40, 36), {"classes": 6}
    compute_metrics = aspect_compute_metrics(**helper, **options)
    whole = compute_metrics((predictions, gold))
    assert whole == pytest.approx(aspect_sentiment_score(ratings, gold, **options), rel=1e-12)
    assert batched(compute_metrics, (predictions, gold), 9) == pytest.approx(whole, rel=1e-12, abs=1e-15)


def test_each_evaluation_starts_afresh_and_a_failed_one_too():
    compute_metrics = keyphrase_compute_metrics(WordTokenizer())
    rng = np.random.default_rng(5)
    generated, labels = id_rows(rng, 20, 5), id_rows(rng, 20, 5)
    first = batched(compute_metrics, (generated, labels), 6)
    assert batched(compute_metrics, (generated, labels), 6) == first  # the same, not twice the examples
    compute_metrics((generated[:6], labels[:6]), compute_result=False)
    with pytest.raises(ValueError, match="predictions look like logits"):
        compute_metrics((np.zeros((6, 5, 4)), labels[6:12]), compute_result=False)
    assert batched(compute_metrics, (generated, labels), 6) == first  # the failed evaluation's batch is gone
    assert compute_metrics((generated, labels)) == pytest.approx(first, rel=1e-12)


def test_memory_follows_the_state_not_the_evaluation_set():
    options = {"confidence_level": 0.9, "n_resamples": 100, "bootstrap": "poisson"}
    compute_metrics = keyphrase_compute_metrics(WordTokenizer(), **options)
    rng = np.random.default_rng(2)
    sizes = []
    for _ in range(40):
        generated, labels = id_rows(rng, 16, 5), id_rows(rng, 16, 5)
        compute_metrics((generated, labels), compute_result=False)
        state = compute_metrics._states[0]
        sizes.append(sum(array.nbytes for _, array in state.named_arrays()) + state.sketch.nbytes)
    assert state.n_examples == 640 and not state.rows
    # 512 examples or 640: the same bytes (sums, resample sums, a key sketch full at 512 keys)
    assert sizes[-1] == sizes[31] and state.positions == [(0, 640)]
    compute_metrics.reset()


def test_texts_given_for_presence_are_read_by_global_position():
    rng = np.random.default_rng(7)
    generated, labels = id_rows(rng, 12, 4), id_rows(rng, 12, 4)
    texts = [" ".join(WordTokenizer.WORDS[1 + (i + j) % 9] for j in range(3)) for i in range(12)]
    compute_metrics = keyphrase_compute_metrics(WordTokenizer(), presence="absent", texts=texts)
    assert batched(compute_metrics, (generated, labels), 5) == pytest.approx(compute_metrics((generated, labels)))
    with pytest.raises(ValueError, match=r"texts has 12 entries .* but the evaluation has at least 15 examples"):
        for start in range(0, 20, 5):  # the third batch of four runs past the texts
            compute_metrics((generated[:5], labels[:5]), compute_result=start == 15)
    with pytest.raises(ValueError, match=r"texts has 12 entries .* but the evaluation has 10 examples"):
        batched(compute_metrics, (generated[:10], labels[:10]), 5)


def test_a_helper_for_another_family_is_a_converter_and_one_line():
    def convert(evaluated):
        return {"predictions": [row.split("|") for row in evaluated.predictions]}

    compute_metrics = StateMetrics(convert, [FamilyScore("keyword_diversity", {"normalize": "none"})])
    predictions = np.array(["a|b|a", "c|c", "d|e|f"])
    expected = keyword_diversity([["a", "b", "a"], ["c", "c"], ["d", "e", "f"]], normalize="none")
    assert compute_metrics((predictions, None)) == expected
    assert expected["unique_keyword_ratio"] == pytest.approx((2 / 3 + 1 / 2 + 1) / 3)
    assert batched(compute_metrics, (predictions, [None] * 3), 2) == pytest.approx(compute_metrics((predictions, None)))
    with pytest.raises(ValueError, match=r"keyword_diversity has no option 'normalise'; did you mean 'normalize'"):
        StateMetrics(convert, [FamilyScore("keyword_diversity", {"normalise": "none"})])


# --- real Trainer runs with batch_eval_metrics=True ---

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")
pytest.importorskip("accelerate")

from test_trainer import AspectRater, local_tokenizer, tiny_t5, training_arguments  # noqa: E402


def test_trainer_batched_aspect_evaluation_equals_the_unbatched_one(tmp_path):
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(["good", "food", "hotel", "bad", "bus", "shop"], 6)) for _ in range(40)]
    tokenizer = local_tokenizer(texts)
    encoded = tokenizer(texts, padding="max_length", max_length=8)
    dataset = datasets.Dataset.from_dict({**encoded, "labels": rng.integers(0, 6, (40, 6)).tolist()})
    torch.manual_seed(0)
    model = AspectRater(len(tokenizer))
    options = {"confidence_level": 0.9, "n_resamples": 200, "bootstrap": "poisson"}
    values = {}
    for batch_eval_metrics in (False, True):
        args = training_arguments(tmp_path, batch_eval_metrics=batch_eval_metrics)
        trainer = transformers.Trainer(
            model=model, args=args, eval_dataset=dataset, compute_metrics=aspect_compute_metrics(**options)
        )
        values[batch_eval_metrics] = trainer.evaluate()
    logits = trainer.predict(dataset).predictions
    expected = aspect_sentiment_score(logits.argmax(-1), dataset["labels"], **options)
    assert {key: values[True][f"eval_{key}"] for key in expected} == pytest.approx(expected, rel=1e-12)
    assert {key: values[False][f"eval_{key}"] for key in expected} == pytest.approx(expected, rel=1e-12)


def test_seq2seq_trainer_batched_keyphrase_evaluation(tmp_path):
    reviews = load_movie_reviews()[:40]
    texts = [review["review"] for review in reviews]
    targets = [" ; ".join(review["keywords_base"]) for review in reviews]
    tokenizer = local_tokenizer(texts + targets)
    model = tiny_t5(tokenizer)
    inputs = tokenizer(texts, truncation=True, max_length=48, padding="max_length")
    labels = tokenizer(targets, truncation=True, max_length=16, padding="max_length")["input_ids"]
    labels = [[t if t != tokenizer.pad_token_id else -100 for t in row] for row in labels]
    dataset = datasets.Dataset.from_dict({**inputs, "labels": labels})
    args = training_arguments(
        tmp_path,
        transformers.Seq2SeqTrainingArguments,
        predict_with_generate=True,
        generation_max_length=12,
        batch_eval_metrics=True,
        include_for_metrics=["inputs"],
    )
    options = {"presence": "present", "confidence_level": 0.9, "n_resamples": 200, "bootstrap": "poisson"}
    compute_metrics = keyphrase_compute_metrics(tokenizer, metrics=("keyword_prf", "ndcg"), **options)
    trainer = transformers.Seq2SeqTrainer(model=model, args=args, eval_dataset=dataset, compute_metrics=compute_metrics)
    metrics = trainer.evaluate()
    generated = trainer.predict(dataset).predictions
    decoded = tokenizer.batch_decode(
        np.where(generated < 0, tokenizer.pad_token_id, generated), skip_special_tokens=True
    )
    predictions = [split_keyphrases(text) for text in decoded]
    gold = [split_keyphrases(text) for text in targets]
    documents = tokenizer.batch_decode(inputs["input_ids"], skip_special_tokens=True)
    expected = keyword_prf(predictions, gold, texts=documents, **options)
    assert {key: metrics[f"eval_{key}"] for key in expected} == pytest.approx(expected, rel=1e-12)
    assert "eval_ndcg@5_ci_low" in metrics and compute_metrics._states is None  # the next evaluation starts afresh
