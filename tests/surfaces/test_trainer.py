"""Trainer helpers: unit cases, and real Trainer / Seq2SeqTrainer evaluations with tiny
models built from local configs and tokenizers trained here (nothing downloaded)."""

import csv
import math

import numpy as np
import pytest
from conftest import TOURISM_REVIEWS, load_movie_reviews, require_shared

from opinion_metrics import keyword_prf
from opinion_metrics.families.aspect_sentiment_score import VIETNAMESE_COLUMNS, aspect_sentiment_score
from opinion_metrics.trainer import (
    aspect_compute_metrics,
    keyphrase_compute_metrics,
    ratings_from_logits,
    ratings_from_regression,
    split_keyphrases,
)


def test_ratings_from_logits_and_regression():
    logits = np.zeros((2, 2, 6))
    logits[0, 0, 4] = logits[0, 1, 0] = logits[1, 0, 2] = logits[1, 1, 5] = 1.0
    assert ratings_from_logits(logits).tolist() == [[4, 0], [2, 5]]
    outputs = np.array([[0.49, 0.51, 2.5, 7.0, -3.0]])
    assert ratings_from_regression(outputs).tolist() == [[0, 1, 2, 5, 0]]
    assert ratings_from_regression(np.array([[0.8, 1.4]]), min_rating=2).tolist() == [[2, 2]]
    with pytest.raises(ValueError, match=r"shape \(examples, aspects, classes\)"):
        ratings_from_logits(np.zeros((2, 6)))
    with pytest.raises(ValueError, match="example 0, aspect 1 is nan"):
        ratings_from_regression(np.array([[1.0, np.nan]]))


def test_aspect_compute_metrics_accepts_tuples_and_eval_predictions():
    class EvalPrediction:
        predictions = np.array([[[0, 9, 0], [0, 0, 9]]])
        label_ids = np.array([[1, 2]])

    metric = aspect_compute_metrics(aspects=["a", "b"], max_rating=2)
    assert metric(EvalPrediction())["score"] == 1.0
    assert metric((EvalPrediction.predictions, EvalPrediction.label_ids))["score"] == 1.0
    with pytest.raises(ValueError, match="outputs must be one of"):
        aspect_compute_metrics(outputs="probabilities")


def test_split_keyphrases():
    assert split_keyphrases(" war ; star wars;; jedi ") == ["war", "star wars", "jedi"]
    assert split_keyphrases("a, b", ",") == ["a", "b"]


transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")
pytest.importorskip("accelerate")


def local_tokenizer(texts, extra=()):
    """A word-level tokenizer trained on `texts` (no download)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    specials = ["[PAD]", "[UNK]", "[EOS]", *extra]
    tokenizer.train_from_iterator(texts, trainers.WordLevelTrainer(vocab_size=4000, special_tokens=specials))
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]"
    )


def tiny_bert_config(vocab_size, **extra):
    return transformers.BertConfig(
        vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, **extra
    )


def tiny_t5(tokenizer, num_layers=1):
    """An untrained T5 of a few thousand weights over `tokenizer`'s vocabulary, seeded (torch seed 0)."""
    config = transformers.T5Config(
        vocab_size=len(tokenizer), d_model=32, d_ff=64, d_kv=16, num_layers=num_layers, num_heads=2,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.pad_token_id,
    )  # fmt: skip
    torch.manual_seed(0)
    return transformers.T5ForConditionalGeneration(config)


class AspectRater(torch.nn.Module):
    """A tiny BERT encoder with one softmax over {absent, 1..5} per aspect."""

    def __init__(self, vocab_size, n_aspects=6, n_classes=6):
        super().__init__()
        self.encoder = transformers.BertModel(tiny_bert_config(vocab_size))
        self.head = torch.nn.Linear(32, n_aspects * n_classes)
        self.shape = (n_aspects, n_classes)

    def forward(self, input_ids, attention_mask=None, labels=None):
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state[:, 0]
        logits = self.head(hidden).view(-1, *self.shape)
        loss = None
        if labels is not None:
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, self.shape[1]), labels.reshape(-1))
        return {"loss": loss, "logits": logits}


@pytest.fixture(scope="module")
def tourism_slice():
    with open(require_shared(TOURISM_REVIEWS), encoding="utf-8", newline="") as lines:
        rows = list(csv.DictReader(lines))[:96]
    return [row["Review"] for row in rows], [[int(row[c]) for c in VIETNAMESE_COLUMNS] for row in rows]


def training_arguments(tmp_path, cls=None, **extra):
    cls = cls or transformers.TrainingArguments
    return cls(output_dir=str(tmp_path), per_device_eval_batch_size=16, report_to=[], use_cpu=True, seed=0, **extra)


@pytest.mark.parametrize("outputs", ["logits", "regression"])
def test_trainer_evaluate_with_the_aspect_helper(tmp_path, tourism_slice, outputs):
    texts, ratings = tourism_slice
    tokenizer = local_tokenizer(texts)
    encoded = tokenizer(texts, truncation=True, max_length=64, padding="max_length")
    torch.manual_seed(0)
    if outputs == "logits":
        model = AspectRater(len(tokenizer))
        labels = ratings
    else:
        config = tiny_bert_config(len(tokenizer), num_labels=6, problem_type="regression")
        model = transformers.BertForSequenceClassification(config)
        labels = [[float(r) for r in row] for row in ratings]
    dataset = datasets.Dataset.from_dict({**encoded, "labels": labels})
    trainer = transformers.Trainer(
        model=model,
        args=training_arguments(tmp_path),
        eval_dataset=dataset,
        compute_metrics=aspect_compute_metrics(outputs=outputs, aspects=VIETNAMESE_COLUMNS),
    )
    metrics = trainer.evaluate()
    assert {"eval_score", "eval_f1_an_uong", "eval_r2_an_uong", "eval_score_mua_sam"} <= set(metrics)
    assert all(0.0 <= metrics[f"eval_{key}_{c}"] <= 1.0 for key in ("f1", "r2", "score") for c in VIETNAMESE_COLUMNS)
    # The same value computed independently from the raw predictions.
    raw = trainer.predict(dataset).predictions
    predicted = raw.argmax(-1) if outputs == "logits" else np.clip(np.rint(raw), 0, 5).astype(int)
    expected = aspect_sentiment_score(predicted, ratings, aspects=VIETNAMESE_COLUMNS)
    assert metrics["eval_score"] == pytest.approx(expected["score"])


def test_seq2seq_trainer_evaluate_with_the_keyphrase_helper(tmp_path):
    reviews = load_movie_reviews()[:40]
    texts = [review["review"] for review in reviews]
    targets = [" ; ".join(review["keywords_base"]) for review in reviews]
    tokenizer = local_tokenizer(texts + targets)
    model = tiny_t5(tokenizer, num_layers=2)
    inputs = tokenizer(texts, truncation=True, max_length=48, padding="max_length")
    labels = tokenizer(targets, truncation=True, max_length=16, padding="max_length")["input_ids"]
    labels = [[t if t != tokenizer.pad_token_id else -100 for t in row] for row in labels]
    dataset = datasets.Dataset.from_dict({**inputs, "labels": labels})
    args = training_arguments(
        tmp_path, transformers.Seq2SeqTrainingArguments, predict_with_generate=True, generation_max_length=12
    )
    compute_metrics = keyphrase_compute_metrics(tokenizer, metrics=("keyword_prf", "ndcg", "map"))
    trainer = transformers.Seq2SeqTrainer(model=model, args=args, eval_dataset=dataset, compute_metrics=compute_metrics)
    metrics = trainer.evaluate()
    for key in ("eval_precision", "eval_recall", "eval_f1", "eval_ndcg@5", "eval_map@5"):
        assert 0.0 <= metrics[key] <= 1.0, key
    # Independently: decode the generated ids and the targets, split, score.
    generated = trainer.predict(dataset).predictions
    generated = np.where(generated < 0, tokenizer.pad_token_id, generated)
    decoded = [split_keyphrases(t) for t in tokenizer.batch_decode(generated, skip_special_tokens=True)]
    gold = [split_keyphrases(t) for t in targets]
    assert metrics["eval_f1"] == pytest.approx(keyword_prf(decoded, gold)["f1"])


def test_keyphrase_helper_decodes_labels_with_ignore_index():
    class Tokenizer:
        pad_token_id = 0
        vocab = {1: "war", 2: ";", 3: "jedi"}

        def batch_decode(self, rows, skip_special_tokens=True):
            return [" ".join(self.vocab[i] for i in row if i != 0) for row in rows]

    metric = keyphrase_compute_metrics(Tokenizer())
    result = metric((np.array([[1, 2, 3]]), np.array([[3, -100, -100]])))
    assert result == {"precision": 0.5, "recall": 1.0, "f1": 2 / 3}
    with pytest.raises(ValueError, match="metrics must be a non-empty subset"):
        keyphrase_compute_metrics(Tokenizer(), metrics=("bleu",))


def test_keyphrase_helper_scores_present_keywords_from_texts_or_decoded_inputs():
    class Tokenizer:
        pad_token_id = 0
        vocab = {1: "war", 2: ";", 3: "jedi", 4: "the", 5: "droid"}

        def batch_decode(self, rows, skip_special_tokens=True):
            return [" ".join(self.vocab[i] for i in row if i != 0) for row in rows]

    class EvalPrediction:  # what Trainer passes with include_for_metrics=["inputs"]
        predictions = np.array([[1, 2, 5]])  # "war ; droid"
        label_ids = np.array([[3, 2, 5]])  # "jedi ; droid"
        inputs = np.array([[4, 5, 1, -100]])  # "the droid war"

    # Present: predictions war, droid; references droid (jedi is absent): P = 1/2, R = 1;
    # the hit at rank 2 gives nDCG = (1 / log2 3) / 1 and AP = (1 / 2) / 1.
    expected = {"precision": 0.5, "recall": 1.0, "f1": 2 / 3, "ndcg@5": 1 / math.log2(3), "map@5": 0.5}
    from_inputs = keyphrase_compute_metrics(Tokenizer(), metrics=("keyword_prf", "ndcg", "map"), presence="present")
    assert from_inputs(EvalPrediction()) == pytest.approx(expected)
    from_texts = keyphrase_compute_metrics(
        Tokenizer(), metrics=("keyword_prf", "ndcg", "map"), presence="present", texts=["the droid war"]
    )
    assert from_texts((EvalPrediction.predictions, EvalPrediction.label_ids)) == pytest.approx(expected)
    with pytest.raises(ValueError, match="presence needs the source documents"):
        keyphrase_compute_metrics(Tokenizer(), presence="absent")(
            (EvalPrediction.predictions, EvalPrediction.label_ids)
        )


def test_keyphrase_helper_checks_its_options_when_it_is_made():
    class Tokenizer:
        pad_token_id = 0

        def batch_decode(self, rows, skip_special_tokens=True):
            return []

    with pytest.raises(ValueError, match="has no option 'averge'; did you mean 'average'"):
        keyphrase_compute_metrics(Tokenizer(), averge="micro")
    with pytest.raises(ValueError, match="presence must be one of"):
        keyphrase_compute_metrics(Tokenizer(), presence="presnt")


class WordTokenizer:
    pad_token_id = 0
    vocab = {1: "war", 2: ";", 3: "jedi"}

    def batch_decode(self, rows, skip_special_tokens=True):
        return [" ".join(self.vocab[int(i)] for i in row if i != 0) for row in rows]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"separator": ""}, r"separator must be a non-blank str such as ';', got ''"),
        ({"separator": " "}, r"separator must be a non-blank str"),
        ({"separator": None}, r"separator must be a non-blank str"),
        ({"k": 0}, r"k must be a positive integer, got 0"),
        ({"k": 2.5}, r"k must be a positive integer, got 2.5"),
        ({"metrics": "ndcg"}, r"metrics must be a non-empty subset of .*got 'ndcg'"),
        ({"texts": ["fine", 3]}, r"texts: example 1 must be a str, got int 3"),
        ({"texts": ["fine \ud83d"]}, r"texts: example 0 .* holds a lone surrogate"),
    ],
)
def test_keyphrase_helper_options_are_checked_when_it_is_made(options, message):
    with pytest.raises(ValueError, match=message):
        keyphrase_compute_metrics(WordTokenizer(), **options)


def test_keyphrase_helper_given_logits_says_so():
    metric = keyphrase_compute_metrics(WordTokenizer())
    logits = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(np.float32)  # (examples, length, vocabulary)
    labels = np.array([[1, 2, 3], [3, -100, -100]])
    with pytest.raises(
        ValueError, match=r"predictions look like logits \(shape \(2, 3, 4\).*predict_with_generate=True"
    ):
        metric((logits, labels))
    with pytest.raises(ValueError, match=r"predictions look like logits .*predict_with_generate=True"):
        metric((logits[:, :, 0], labels))  # 2-d but not integer-valued
    # integer-valued floats are ids (what some loops gather as float arrays)
    assert metric((np.array([[1.0, 2.0, 3.0], [3.0, 0.0, 0.0]]), labels)) == keyword_prf(
        [["war", "jedi"], ["jedi"]], [["war", "jedi"], ["jedi"]]
    )


def test_aspect_helper_checks_zero_division_when_made():
    with pytest.raises(ValueError, match=r"zero_division must be a number in \[0, 1\], got 2"):
        aspect_compute_metrics(zero_division=2)


def test_helpers_given_something_other_than_an_eval_prediction_say_so():
    for metric in (keyphrase_compute_metrics(WordTokenizer()), aspect_compute_metrics()):
        with pytest.raises(ValueError, match=r"an EvalPrediction or a \(predictions, label_ids\) pair, got NoneType"):
            metric(None)


def test_keyphrase_helper_reads_texts_given_as_a_generator_once():
    metric = keyphrase_compute_metrics(WordTokenizer(), presence="present", texts=(text for text in ["war", "jedi"]))
    ids = np.array([[1, 0, 0], [3, 0, 0]])
    assert metric((ids, ids)) == keyword_prf([["war"], ["jedi"]], [["war"], ["jedi"]])


def test_aspect_helper_reads_a_stock_heads_flat_logits_with_classes_and_says_how_otherwise():
    rng = np.random.default_rng(0)
    logits, labels = rng.normal(size=(5, 6, 6)), rng.integers(0, 6, size=(5, 6))
    expected = aspect_sentiment_score(logits.argmax(-1), labels)
    assert aspect_compute_metrics(classes=6)((logits.reshape(5, 36), labels)) == expected
    assert aspect_compute_metrics(classes=6)((logits, labels)) == expected
    hint = r"logits have shape \(5, 36\).*pass classes=6 to aspect_compute_metrics .*logits\.reshape\(n, 6, 6\)"
    with pytest.raises(ValueError, match=hint):
        aspect_compute_metrics()((logits.reshape(5, 36), labels))
    with pytest.raises(ValueError, match=r"35 columns are not a multiple of the 6 aspects: .* 6 \* 6 = 36 logits"):
        aspect_compute_metrics()((logits.reshape(5, 36)[:, :35], labels))
    with pytest.raises(ValueError, match=r"logits have 36 columns, not a multiple of classes=5"):
        aspect_compute_metrics(classes=5)((logits.reshape(5, 36), labels))
    with pytest.raises(ValueError, match=r"logits have 6 classes per aspect but classes=4"):
        aspect_compute_metrics(classes=4)((logits, labels))
    with pytest.raises(ValueError, match=r'classes reshapes classification logits: give it with outputs="logits"'):
        aspect_compute_metrics(outputs="regression", classes=6)
    with pytest.raises(ValueError, match=r"classes must be an integer >= 2 .*got 1"):
        aspect_compute_metrics(classes=1)


def test_aspect_helper_takes_the_interval_options_checked_when_made():
    rng = np.random.default_rng(1)
    logits, labels = rng.normal(size=(30, 6, 6)), rng.integers(0, 6, size=(30, 6))
    options = {"confidence_level": 0.9, "n_resamples": 200, "random_state": 4, "bootstrap": "poisson"}
    result = aspect_compute_metrics(**options)((logits, labels))
    assert result == aspect_sentiment_score(logits.argmax(-1), labels, **options)
    assert result["score_ci_low"] <= result["score"] <= result["score_ci_high"]
    with pytest.raises(ValueError, match=r"has no option 'confidence_levl'; did you mean 'confidence_level'\?"):
        aspect_compute_metrics(confidence_levl=0.9)
    with pytest.raises(ValueError, match=r"bootstrap must be one of"):
        aspect_compute_metrics(bootstrap="jackknife")


def aspect_loss(outputs, labels, num_items_in_batch=None):
    """docs/trainer.md's loss for a stock head: (n, 36) logits as 6 aspects x 6 classes."""
    return torch.nn.functional.cross_entropy(outputs["logits"].reshape(-1, 6), labels.reshape(-1))


def test_a_stock_sequence_classification_head_trains_with_the_documented_loss(tmp_path, tourism_slice):
    texts, ratings = tourism_slice
    tokenizer = local_tokenizer(texts)
    dataset = datasets.Dataset.from_dict(
        {**tokenizer(texts, truncation=True, max_length=64, padding="max_length"), "labels": ratings}
    )
    torch.manual_seed(0)
    model = transformers.AutoModelForSequenceClassification.from_config(tiny_bert_config(len(tokenizer), num_labels=36))
    args = training_arguments(
        tmp_path, num_train_epochs=3, per_device_train_batch_size=16, learning_rate=2e-3, save_strategy="no"
    )
    trainer = transformers.Trainer(
        model=model,
        args=args,
        train_dataset=dataset,
        eval_dataset=dataset,
        compute_loss_func=aspect_loss,
        compute_metrics=aspect_compute_metrics(classes=6, aspects=VIETNAMESE_COLUMNS),
    )
    before = trainer.evaluate()
    trainer.train()
    after = trainer.evaluate()
    assert after["eval_loss"] < before["eval_loss"] - 0.1
    logits = trainer.predict(dataset).predictions  # (n, 36), as the stock head gives them
    assert logits.shape == (len(texts), 36)
    expected = aspect_sentiment_score(logits.reshape(-1, 6, 6).argmax(-1), ratings, aspects=VIETNAMESE_COLUMNS)
    assert after["eval_score"] == pytest.approx(expected["score"], rel=1e-12)
