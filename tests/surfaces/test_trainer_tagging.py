"""The tagging helper (`keyphrase_tagging_compute_metrics`): seqeval's chunking against a
port of seqeval, decoding with WordPiece and SentencePiece-style tokenizers built here, the
errors, and real Trainer runs of a tiny token-classification BERT (nothing downloaded)
whose logged values equal the library's on phrases decoded independently."""

import itertools
import random

import numpy as np
import pytest

from opinion_metrics import keyword_prf
from opinion_metrics.families.keyword_diversity import keyword_diversity
from opinion_metrics.trainer import keyphrase_compute_metrics, keyphrase_tagging_compute_metrics, tag_spans

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
datasets = pytest.importorskip("datasets")
pytest.importorskip("accelerate")

BIO = ["O", "B", "I"]
WORDS = ["star", "wars", "stormbattered", "lighthouse", "the", "keeper", "madness", "sea", "jedi", "empire", "a"]
PIECES = ["star", "wars", "storm", "##batter", "##ed", "light", "##house", "the", "keeper", "mad", "##ness", "sea"]
VOCABULARY = ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *PIECES, "jedi", "empire", "a"]


def seqeval_chunks(tags):
    """A port of seqeval's get_entities (IOB2 / IOBES, default mode): [start, stop) spans."""

    def split(chunk):
        return chunk[0], chunk[1:].split("-", maxsplit=1)[-1] or "_"

    def end_of_chunk(prev, tag, prev_type, kind):
        return prev in "ES" or (prev in "BI" and tag in "BSO") or (prev != "O" and prev_type != kind)

    def start_of_chunk(prev, tag, prev_type, kind):
        return tag in "BS" or (prev in "ESO" and tag in "EI") or (tag != "O" and prev_type != kind)

    prev, prev_type, begin, chunks = "O", "", 0, []
    for i, chunk in enumerate([*tags, "O"]):
        tag, kind = split(chunk)
        if end_of_chunk(prev, tag, prev_type, kind):
            chunks.append((begin, i))
        if start_of_chunk(prev, tag, prev_type, kind):
            begin = i
        prev, prev_type = tag, kind
    return chunks


def test_tag_spans_follow_seqeval_on_random_and_exhaustive_sequences():
    alphabet = ["O", "B", "I", "E", "S", "B-X", "I-X", "E-X", "S-X", "B-Y", "I-Y"]
    for length in range(1, 5):
        for tags in itertools.product(["O", "B", "I", "E", "S", "I-X"], repeat=length):
            assert tag_spans(list(tags)) == seqeval_chunks(list(tags)), tags
    rng = random.Random(0)
    for _ in range(500):
        tags = rng.choices(alphabet, k=rng.randint(1, 30))
        assert tag_spans(tags) == seqeval_chunks(tags), tags
    assert tag_spans(["O", "I", "I", "O", "B", "I"]) == [(1, 3), (4, 6)]  # a stray I starts a phrase


@pytest.fixture(scope="module")
def wordpiece(tmp_path_factory):
    directory = tmp_path_factory.mktemp("wordpiece")
    (directory / "vocab.txt").write_text("\n".join(VOCABULARY) + "\n", encoding="utf-8")
    return transformers.BertTokenizerFast.from_pretrained(str(directory))


def metaspace_tokenizer():
    """A SentencePiece-style tokenizer ("▁" starts a word) built from a list of pieces."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    pieces = ["<pad>", "</s>", "<unk>", "▁star", "▁wars", "▁storm", "batter", "ed", "▁the", "▁light", "house"]
    model = models.Unigram([(piece, -1.0 - len(piece) / 10) for piece in pieces], unk_id=2)
    tokenizer = Tokenizer(model)
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.decoder = decoders.Metaspace()
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token="<pad>", eos_token="</s>", unk_token="<unk>"
    )


def encode(tokenizer, sentences, tags, length=24):
    """Input ids and labels at each word's first token (-100 elsewhere), and the word ids."""
    encoded = tokenizer(sentences, is_split_into_words=True, padding="max_length", max_length=length)
    labels, word_ids = [], []
    for i, row in enumerate(tags):
        words = encoded.word_ids(i)
        labels.append([-100 if w is None or (j and words[j - 1] == w) else row[w] for j, w in enumerate(words)])
        word_ids.append(words)
    return np.array(encoded["input_ids"]), np.array(labels), word_ids


def decoded_phrases(tokenizer, ids, word_ids, word_tags, names):
    """Brute force: seqeval's chunks of the word tags, each decoded from all its words' tokens."""
    phrases = []
    for row, words, tags in zip(ids, word_ids, word_tags):
        found = []
        for start, stop in seqeval_chunks([names[t] for t in tags]):
            tokens = [int(row[j]) for j, w in enumerate(words) if w is not None and start <= w < stop]
            text = tokenizer.decode(tokens, skip_special_tokens=True).strip()
            if text:
                found.append(text)
        phrases.append(found)
    return phrases


@pytest.mark.parametrize("make", ["wordpiece", "metaspace"])
def test_phrases_are_decoded_as_the_tokenizer_writes_them(make, request):
    tokenizer = request.getfixturevalue("wordpiece") if make == "wordpiece" else metaspace_tokenizer()
    sentences = [["the", "stormbattered", "lighthouse", "star", "wars"], ["star", "wars", "the", "lighthouse"]]
    gold = [[0, 1, 2, 1, 2], [1, 2, 0, 1]]
    ids, labels, _ = encode(tokenizer, sentences, gold)
    predicted = np.where(labels < 0, 0, labels)
    predicted[1, np.flatnonzero(labels[1] >= 0)[1]] = 0  # "star" alone
    predicted[1, np.flatnonzero(labels[1] >= 0)[3]] = 2  # a stray I: "lighthouse" still a phrase
    compute_metrics = keyphrase_tagging_compute_metrics(tokenizer, label_names=BIO, family="keyword_diversity")
    columns = compute_metrics.inputs((predicted, labels, ids))
    assert columns["references"] == [["stormbattered lighthouse", "star wars"], ["star wars", "lighthouse"]]
    assert columns["predictions"] == [["stormbattered lighthouse", "star wars"], ["star", "lighthouse"]]
    expected = keyword_prf(columns["predictions"], columns["references"], match="exact")
    assert (
        keyphrase_tagging_compute_metrics(tokenizer, label_names=BIO, match="exact")((predicted, labels, ids))
        == expected
    )
    assert expected["precision"] == 0.75


def test_label_names_from_a_model_a_config_a_mapping_or_a_list_and_bioes(wordpiece):
    sentences, gold = [["star", "wars", "the", "sea"]], [[1, 3, 0, 4]]  # B E O S
    names = ["O", "B-KEY", "I-KEY", "E-KEY", "S-KEY"]
    ids, labels, _ = encode(wordpiece, sentences, gold)
    config = transformers.BertConfig(
        vocab_size=len(VOCABULARY), hidden_size=8, num_hidden_layers=1, num_attention_heads=1, intermediate_size=8,
        id2label=dict(enumerate(names)), label2id={name: i for i, name in enumerate(names)},
    )  # fmt: skip
    model = transformers.BertForTokenClassification(config)
    logits = np.eye(5)[np.where(labels < 0, 0, labels)]  # (1, length, 5): the gold tags
    logits[0, np.flatnonzero(labels[0] >= 0)[3]] = np.eye(5)[0]  # "sea" predicted O
    for source in (model, config, config.id2label, names, {str(i): n for i, n in enumerate(names)}):
        result = keyphrase_tagging_compute_metrics(wordpiece, label_names=source)((logits, labels, ids))
        assert result == keyword_prf([["star wars"]], [["star wars", "sea"]])


BAD = [
    ({"label_names": None}, r"needs the tag names by id: label_names=model.config.id2label"),
    ({"label_names": ["LABEL_0", "LABEL_1"]}, r"tag 0 is 'LABEL_0', not a BIO or BIOES tag"),
    ({"label_names": ["O", "I"]}, r"have no B \(or S\) tag"),
    ({"label_names": {0: "O", 2: "B"}}, r"the ids must be 0..1, got \[0, 2\]"),
    ({"label_names": "OBI"}, r"label_names must name the tags by id"),
    ({"label_names": {"O": 0, "B": 1, "I": 2}}, r"the ids must be integers, .* \(that is label2id: pass id2label\)"),
    ({"label_names": BIO, "averge": "micro"}, r"keyword_prf has no option 'averge'; did you mean 'average'\?"),
    ({"label_names": BIO, "match": "fuzzy"}, r"match must be one of .*got 'fuzzy'"),
    ({"label_names": BIO, "family": "weighted_keyword_prf"}, r"family must be one of \('keyword_prf', "),
    ({"label_names": BIO, "family": "keyword_diversity", "average": "micro"}, r"keyword_diversity has no option"),
    ({"label_names": BIO, "references": [["a"], "b"]}, r"references: example 1 must be a list of keywords"),
    ({"label_names": BIO, "return_per_example": True}, r"Trainer logs numbers: leave out return_per_example"),
]


@pytest.mark.parametrize(("options", "message"), BAD)
def test_bad_helper_options_fail_when_it_is_made(wordpiece, options, message):
    with pytest.raises(ValueError, match=message):
        keyphrase_tagging_compute_metrics(wordpiece, **options)


def test_bad_calls_name_the_setting_the_example_and_the_value(wordpiece):
    ids, labels, _ = encode(wordpiece, [["star", "wars"], ["the", "sea"]], [[1, 2], [0, 1]])
    compute_metrics = keyphrase_tagging_compute_metrics(wordpiece, label_names=BIO)
    with pytest.raises(ValueError, match=r"set TrainingArguments\(include_for_metrics=\[\"inputs\"\]\)"):
        compute_metrics((labels, labels))
    bad = np.where(labels < 0, 0, labels)
    bad[1, 2] = 7
    with pytest.raises(ValueError, match=r"predictions: example 1, token 2: tag id 7 is not one of the 3 tags"):
        compute_metrics((bad, labels, ids))
    with pytest.raises(ValueError, match=r"predictions have 4 classes, label_names names 3 tags"):
        compute_metrics((np.zeros((*labels.shape, 4)), labels, ids))
    with pytest.raises(ValueError, match=r"references has 3 entries .* but the evaluation has 2 examples"):
        keyphrase_tagging_compute_metrics(wordpiece, label_names=BIO, references=[["a"]] * 3)((labels, labels, ids))


def test_references_count_gold_keyphrases_absent_from_the_text_and_presence_reads_the_inputs(wordpiece):
    ids, labels, _ = encode(wordpiece, [["star", "wars", "the", "sea"]], [[1, 2, 0, 1]])
    predicted = np.where(labels < 0, 0, labels)  # "star wars", "sea"
    gold = [["star wars", "galactic empire"]]  # the second is absent from the review
    result = keyphrase_tagging_compute_metrics(wordpiece, label_names=BIO, references=gold)((predicted, labels, ids))
    assert result == keyword_prf([["star wars", "sea"]], gold) == {"precision": 0.5, "recall": 0.5, "f1": 0.5}
    present = keyphrase_tagging_compute_metrics(wordpiece, label_names=BIO, references=gold, presence="present")
    expected = keyword_prf([["star wars", "sea"]], gold, texts=["star wars the sea"], presence="present")
    assert present((predicted, labels, ids)) == expected == {"precision": 0.5, "recall": 1.0, "f1": 2 / 3}
    given = keyphrase_tagging_compute_metrics(
        wordpiece, label_names=BIO, references=gold, presence="absent", texts=(text for text in ["star wars the sea"])
    )
    assert given((predicted, labels, ids)) == keyword_prf(
        [["star wars", "sea"]], gold, texts=["star wars the sea"], presence="absent"
    )


# --- real Trainer runs ---


def tagged_dataset(tokenizer, n=24, seed=0):
    rng = random.Random(seed)
    sentences = [rng.choices(WORDS, k=rng.randint(4, 9)) for _ in range(n)]
    tags = [[rng.choice([0, 0, 1, 2]) for _ in sentence] for sentence in sentences]
    ids, labels, word_ids = encode(tokenizer, sentences, tags)
    dataset = datasets.Dataset.from_dict({"input_ids": ids.tolist(), "labels": labels.tolist()})
    return dataset, ids, word_ids, tags


def tagging_model(seed=0):
    config = transformers.BertConfig(
        vocab_size=len(VOCABULARY), hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
        num_labels=3, id2label=dict(enumerate(BIO)), label2id={name: i for i, name in enumerate(BIO)},
    )  # fmt: skip
    torch.manual_seed(seed)
    return transformers.BertForTokenClassification(config)


def arguments(tmp_path, **extra):
    return transformers.TrainingArguments(
        output_dir=str(tmp_path), per_device_eval_batch_size=8, report_to=[], use_cpu=True, seed=0, **extra
    )


def word_predictions(logits, word_ids):
    """The argmax tag of each word's first token (logits, or tag ids already)."""
    tags = []
    for row, words in zip(logits.argmax(-1) if logits.ndim == 3 else logits, word_ids):
        tags.append([int(row[j]) for j, w in enumerate(words) if w is not None and (j == 0 or words[j - 1] != w)])
    return tags


@pytest.mark.parametrize("route", ["logits", "argmax", "batched"])
def test_trainer_logs_the_library_values_on_independently_decoded_phrases(tmp_path, wordpiece, route):
    dataset, ids, word_ids, gold_tags = tagged_dataset(wordpiece)
    model = tagging_model()
    options = {"confidence_level": 0.9, "n_resamples": 200, "bootstrap": "poisson"} if route == "batched" else {}
    extra = {"batch_eval_metrics": True} if route == "batched" else {}
    trainer = transformers.Trainer(
        model=model,
        args=arguments(tmp_path, include_for_metrics=["inputs"], **extra),
        eval_dataset=dataset,
        compute_metrics=keyphrase_tagging_compute_metrics(wordpiece, label_names=model.config.id2label, **options),
        preprocess_logits_for_metrics=(lambda logits, labels: logits.argmax(-1)) if route == "argmax" else None,
    )
    metrics = trainer.evaluate()
    logits = trainer.predict(dataset).predictions
    predicted = decoded_phrases(wordpiece, ids, word_ids, word_predictions(logits, word_ids), BIO)
    gold = decoded_phrases(wordpiece, ids, word_ids, gold_tags, BIO)
    assert sum(map(len, predicted)) >= 10 and any("##" not in p and " " in p for row in gold for p in row)
    expected = keyword_prf(predicted, gold, **options)
    assert {key: metrics[f"eval_{key}"] for key in expected} == pytest.approx(expected, rel=1e-12)
    assert trainer.state.log_history[-1]["eval_f1"] == metrics["eval_f1"]


def test_trainer_with_references_and_another_family(tmp_path, wordpiece):
    dataset, ids, word_ids, _ = tagged_dataset(wordpiece, n=12, seed=1)
    references = [["star wars", "galactic empire"]] * 12
    model = tagging_model(seed=1)
    trainer = transformers.Trainer(
        model=model,
        args=arguments(tmp_path, include_for_metrics=["inputs"]),
        eval_dataset=dataset,
        compute_metrics=keyphrase_tagging_compute_metrics(wordpiece, label_names=model, references=references),
    )
    metrics = trainer.evaluate()
    predicted = decoded_phrases(wordpiece, ids, word_ids, word_predictions(trainer.predict(dataset).predictions,
                                                                           word_ids), BIO)  # fmt: skip
    assert metrics["eval_recall"] == pytest.approx(keyword_prf(predicted, references)["recall"])
    trainer.compute_metrics = keyphrase_tagging_compute_metrics(wordpiece, label_names=BIO, family="keyword_diversity")
    metrics = trainer.evaluate()
    assert metrics["eval_unique_keyword_ratio"] == pytest.approx(keyword_diversity(predicted)["unique_keyword_ratio"])


def test_trainer_without_inputs_says_which_setting(tmp_path, wordpiece):
    dataset, *_ = tagged_dataset(wordpiece, n=4)
    trainer = transformers.Trainer(
        model=tagging_model(),
        args=arguments(tmp_path),
        eval_dataset=dataset,
        compute_metrics=keyphrase_tagging_compute_metrics(wordpiece, label_names=BIO),
    )
    with pytest.raises(ValueError, match=r"include_for_metrics=\[\"inputs\"\]"):
        trainer.evaluate()


def test_the_generation_helper_refuses_tag_ids_and_names_the_tagging_helper(tmp_path, wordpiece):
    """The issue's trap: keyphrase_compute_metrics on a token-classification model with an
    argmax in preprocess_logits_for_metrics scored tag ids decoded as [unused0], [unused1]."""
    dataset, *_ = tagged_dataset(wordpiece, n=8)
    trainer = transformers.Trainer(
        model=tagging_model(),
        args=arguments(tmp_path),
        eval_dataset=dataset,
        compute_metrics=keyphrase_compute_metrics(wordpiece),
        preprocess_logits_for_metrics=lambda logits, labels: logits.argmax(-1),
    )
    with pytest.raises(ValueError, match=r"special or unused tokens .*use keyphrase_tagging_compute_metrics"):
        trainer.evaluate()
    trainer.preprocess_logits_for_metrics = None
    with pytest.raises(ValueError, match=r"look like logits .*use keyphrase_tagging_compute_metrics"):
        trainer.evaluate()
    # generated text, and an empty generation ([CLS] [SEP] padding), are not refused
    compute_metrics = keyphrase_compute_metrics(wordpiece)
    text = np.array([[4, 7, 8, 5, 0, 0], [4, 5, 0, 0, 0, 0]])  # "star wars", ""
    assert compute_metrics((text, text)) == keyword_prf([["star wars"], []], [["star wars"], []])
