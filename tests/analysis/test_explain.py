"""`opinion_metrics.explain`: the matching detail agrees with the metric's own counts."""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import pytest

from opinion_metrics import explain
from opinion_metrics.core.matching import maximum_matching, maximum_matching_pairs
from opinion_metrics.families.keyword_prf import keyword_prf, keyword_prf_statistics
from opinion_metrics.families.weighted_keyword_prf import weighted_statistics

MATCHED, MATCHED_GOLD = 4, 6  # averaging.PRF_COLUMNS: matched predictions, matched gold keywords


def _brute_force_matching_size(neighbors):
    """The largest number of left vertices with distinct right partners (every assignment tried)."""
    lefts = [i for i, row in enumerate(neighbors) if row]
    best = 0
    for size in range(len(lefts), 0, -1):
        for chosen in itertools.combinations(lefts, size):
            if any(len(set(rights)) == size for rights in itertools.product(*(neighbors[i] for i in chosen))):
                return size
    return best


@pytest.mark.parametrize("seed", range(40))
def test_matching_pairs_is_a_maximum_matching(seed):
    rng = np.random.default_rng(seed)
    neighbors = [sorted(set(rng.integers(0, 5, rng.integers(0, 4)).tolist())) for _ in range(rng.integers(1, 6))]
    pairs = maximum_matching_pairs(neighbors)
    assert all(right in neighbors[left] for left, right in pairs)
    assert len({left for left, _ in pairs}) == len({right for _, right in pairs}) == len(pairs)
    assert len(pairs) == _brute_force_matching_size(neighbors) == sum(maximum_matching(neighbors))


def test_a_long_augmenting_chain_is_explained_without_recursion():
    # prediction i ("t{i-1} t{i}") contains gold keywords i-1 and i as tokens; each new prediction's
    # first gold keyword is taken, so its augmenting path runs back through every earlier one
    n = 1200
    gold = [f"t{i}" for i in range(n)]
    predicted = ["t0"] + [f"t{i - 1} t{i}" for i in range(1, n)]
    record = explain("keyword_prf", [predicted], [gold], match="token")[0]
    assert record["matched_predictions"] == record["matched_references"] == n
    assert record["matches"] == [{"prediction": p, "reference": g} for p, g in zip(predicted, gold)]
    assert record["values"]["f1"] == 1.0


def test_the_weighted_explanation_takes_top_k_as_the_metric_does():
    predictions, scores, references = [["a", "b", "c"], ["b", "x"]], [[0.9, 0.5, 0.2], [0.7, 0.1]], [["b", "c"], ["x"]]
    for top_k, kept in (("M", 3), (None, 3), ("O", 2), (1, 1)):
        records = explain("weighted_keyword_prf", predictions, references, scores=scores, top_k=top_k)
        assert [len(record["predictions"]) for record in records] == [kept, min(kept, 2) if top_k != "O" else 1]
    record = explain("weighted_keyword_prf", predictions, references, scores=scores, top_k="M")[0]
    # by hand: b (0.5) and c (0.2) match of 0.9 + 0.5 + 0.2
    assert record["matched_score"] == pytest.approx(0.7)
    assert record["values"]["weighted_precision"] == pytest.approx(0.7 / 1.6)


def test_interval_options_do_not_change_the_explanation():
    predictions, references = [["a", "b"], ["c"]], [["a"], ["d"]]
    plain = explain("keyword_prf", predictions, references)
    for options in ({"bootstrap": "poisson"}, {"confidence_level": 0.9, "n_resamples": 50, "random_state": 1}):
        assert explain("keyword_prf", predictions, references, **options) == plain
    assert [record["values"]["f1"] for record in plain] == keyword_prf(
        predictions, references, return_per_example=True
    )["per_example"]["f1"]


def test_the_semantic_explanation_compares_as_the_metric_at_the_threshold():
    from opinion_metrics import semantic_keyword_prf
    from opinion_metrics.embeddings.encoder import KeywordEncoder, PrecomputedEncoder

    # a pair whose float32 product falls below its float64 cosine: at a threshold between them the metric
    # (float64) counts the match, and the explanation must too
    rng = np.random.default_rng(0)
    for trial in range(1000):
        vectors = dict(zip(("aa", "bb"), rng.standard_normal((2, 64)).astype(np.float32)))
        encoder = PrecomputedEncoder(vectors, name=f"random {trial}")
        vectors = KeywordEncoder(encoder).encode(["aa", "bb"])
        first, second = vectors[0].astype(float), vectors[1].astype(float)
        exact = math.fsum(first * second) / math.sqrt(math.fsum(first * first) * math.fsum(second * second))
        if float((vectors[:1] @ vectors[1:].T)[0, 0]) < exact - 1e-9:
            break
    assert float((vectors[:1] @ vectors[1:].T)[0, 0]) < exact - 1e-9
    threshold = exact - 1e-12  # below the float64 cosine (whatever its summation order), above the float32 one
    metric = semantic_keyword_prf([["aa"]], [["bb"]], model=encoder, threshold=threshold)
    record = explain("semantic_keyword_prf", [["aa"]], [["bb"]], model=encoder, threshold=threshold)[0]
    assert metric["semantic_precision"] == 1.0
    assert record["matched_predictions"] == 1 and record["matches"][0]["similarity"] == pytest.approx(exact, abs=1e-15)


def test_given_per_example_values_are_used_without_running_the_family_again(monkeypatch):
    import importlib

    module = importlib.import_module("opinion_metrics.families.keyword_prf")

    predictions, references = [["a", "b"], ["c"]], [["a"], ["d"]]
    per_example = keyword_prf(predictions, references, return_per_example=True)["per_example"]

    @functools.wraps(module.keyword_prf)  # its signature gives the family's defaults
    def refused(*args, **kwargs):
        pytest.fail("the family ran again")

    monkeypatch.setattr(module, "keyword_prf", refused)
    records = explain("keyword_prf", predictions, references, per_example=per_example)
    assert [record["values"]["f1"] for record in records] == per_example["f1"] == [2 / 3, 0.0]
    assert [record["matched_predictions"] for record in records] == [1, 0]
    with pytest.raises(ValueError, match="per_example holds values for 1 examples, but there are 2"):
        explain("keyword_prf", predictions, references, per_example={"f1": [1.0]})


def test_the_keyword_explanation_shows_which_prediction_matched_which_gold_keyword():
    records = explain("keyword_prf", [["social satire", "dark comedy", "pizza"]], [["satire", "class", "comedy"]])
    assert records[0]["matches"] == [
        {"prediction": "social satire", "reference": "satire"},
        {"prediction": "dark comedy", "reference": "comedy"},
    ]
    # 2 of 3 predictions, 2 of 3 gold keywords (SPEC's substring relation, by hand)
    assert records[0]["values"] == pytest.approx({"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3})


@pytest.mark.parametrize(
    "options",
    [{}, {"one_to_one": False}, {"match": "token", "top_k": 3}, {"presence": "present"}, {"top_k": "O"}],
)
def test_matched_counts_equal_the_metrics_on_the_movie_reviews(movie_reviews, options):
    reviews = movie_reviews[::97]
    predictions = [review["keywords_base"] for review in reviews]
    references = [review["gold"][:40] for review in reviews]
    texts = [review["review"] for review in reviews]
    given = {**options, "texts": texts}
    records = explain("keyword_prf", predictions, references, **given)
    statistics, _, included = keyword_prf_statistics(predictions, references, **given)
    assert [r["matched_predictions"] for r in records] == statistics[:, MATCHED].astype(int).tolist()
    assert [r["matched_references"] for r in records] == statistics[:, MATCHED_GOLD].astype(int).tolist()
    assert any(r["matches"] for r in records)
    for record in records:  # every shown pair is in the relation
        for match in record["matches"]:
            assert match["prediction"] in record["predictions"] and match["reference"] in record["references"]
    if included is not None:
        assert [r["values"]["f1"] is None for r in records] == (~included).tolist()


@pytest.mark.parametrize("options", [{}, {"one_to_one": False}, {"top_k": 2}])
def test_the_weighted_matched_score_equals_the_metrics(movie_reviews, options):
    reviews = movie_reviews[5::89]
    predictions = [review["keywords_reranker"] for review in reviews]
    scores = [review["scores_reranker"] for review in reviews]
    references = [review["gold"][:40] for review in reviews]
    options = {**options, "clip_scores": True}  # the real scores include negative cosines
    records = explain("weighted_keyword_prf", predictions, references, scores=scores, **options)
    statistics, _, _ = weighted_statistics(predictions, scores, references, **options)
    assert [r["matched_score"] for r in records] == pytest.approx(statistics[:, MATCHED].tolist())
    assert any(r["matches"] for r in records)


@pytest.mark.parametrize("one_to_one", [False, True])
def test_the_semantic_explanation_gives_each_pairs_cosine_and_the_metrics_counts(one_to_one):
    pytest.importorskip("sentence_transformers")
    from opinion_metrics.families.semantic_keyword_prf import semantic_statistics

    predictions = [["scary movie", "funny", "pizza"], ["war film", "zombie apocalypse"], ["horror", "horror film"]]
    references = [["horror film", "hilarious", "family drama"], ["war movie", "zombies", "survival"], ["horror film"]]
    records = explain("semantic_keyword_prf", predictions, references, one_to_one=one_to_one, threshold=0.6)
    statistics, _, _ = semantic_statistics(predictions, references, one_to_one=one_to_one, threshold=0.6)
    assert [r["matched_predictions"] for r in records] == statistics[:, MATCHED].astype(int).tolist()
    assert [r["matched_references"] for r in records] == statistics[:, MATCHED_GOLD].astype(int).tolist()
    first = records[0]
    assert first["threshold"] == 0.6 and len(first["closest_references"]) == 3
    from opinion_metrics.embeddings.encoder import KeywordEncoder

    vectors = KeywordEncoder().encode(first["predictions"] + first["references"])
    cosines = vectors[:3] @ vectors[3:].T  # by hand: every pair, then the best of each row and column
    for i, closest in enumerate(first["closest_references"]):
        j = int(cosines[i].argmax())
        assert (closest["prediction"], closest["reference"]) == (first["predictions"][i], first["references"][j])
        assert closest["similarity"] == pytest.approx(float(cosines[i, j]), abs=1e-5)
    best_gold = [max(0.0, float(cosines[:, j].max())) for j in range(3)]
    assert [max(0.0, c["similarity"]) for c in first["closest_predictions"]] == pytest.approx(best_gold, abs=1e-5)
    # soft precision / recall: the mean of the best cosines (clipped at 0)
    best = [max(0.0, float(cosines[i].max())) for i in range(3)]
    assert first["values"]["soft_precision"] == pytest.approx(sum(best) / 3, abs=1e-6)
    assert first["values"]["soft_recall"] == pytest.approx(sum(best_gold) / 3, abs=1e-6)


def test_the_sentiment_explanation_gives_each_keywords_and_the_reviews_sentiment():
    pytest.importorskip("vaderSentiment")
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    polarity = SentimentIntensityAnalyzer().polarity_scores

    def vader(text):
        found = polarity(text)
        return found["pos"] + 0.5 * found["neu"]

    records = explain(
        "sentiment_appropriateness", [["wonderful cast", "happy ending"]], [["boring"]], texts=["Boring."]
    )
    record = records[0]
    assert record["predictions"] == [
        {"keyword": "wonderful cast", "sentiment": pytest.approx(vader("wonderful cast"))},
        {"keyword": "happy ending", "sentiment": pytest.approx(vader("happy ending"))},
    ]
    mean = (vader("wonderful cast") + vader("happy ending")) / 2
    assert record["prediction_sentiment"] == pytest.approx(mean)
    assert record["text_sentiment"] == pytest.approx(vader("Boring."))
    assert record["values"]["sas_from_text"] == pytest.approx(1 - abs(mean - vader("Boring.")))
    assert record["values"]["sas_from_keywords"] == pytest.approx(1 - abs(mean - vader("boring")))


def test_diversity_names_the_repeats_and_the_aspect_score_has_no_per_example_explanation():
    record = explain("keyword_diversity", [["Star Wars", "star wars!", "space"]])[0]
    assert record["repeated"] == [["Star Wars", "star wars!"]]
    assert record["values"]["unique_keyword_ratio"] == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="corpus-level"):
        explain("aspect_sentiment_score", [[1]], [[1]])
    with pytest.raises(ValueError, match="did you mean 'match'"):
        explain("keyword_prf", [["a"]], [["a"]], mach="exact")


# --- the "why" views are complete (issue 30 item 4) ------------------------------------------


def test_diversity_names_the_repeated_tokens_that_unique_token_ratio_counts():
    from collections import Counter

    from opinion_metrics import normalize_keyword

    keywords = ["Star Wars", "star wars!", "space opera", "space", "the force"]
    record = explain("keyword_diversity", [keywords])[0]
    tokens = Counter(token for keyword in keywords for token in normalize_keyword(keyword).split())
    assert record["repeated_tokens"] == [{"token": t, "count": n} for t, n in tokens.items() if n > 1]
    assert record["repeated_tokens"] == [{"token": "star", "count": 2}, {"token": "wars", "count": 2},
                                         {"token": "space", "count": 2}]  # fmt: skip
    assert record["values"]["unique_token_ratio"] == pytest.approx(len(tokens) / sum(tokens.values()))
    assert record["normalized"] == {k: normalize_keyword(k) for k in keywords if normalize_keyword(k) != k}


def test_a_match_shows_the_normalized_forms_that_decided_it():
    from opinion_metrics import normalize_keyword

    record = explain("keyword_prf", [["Star Wars!", "pizza"]], [["star wars", "JEDI"]])[0]
    assert normalize_keyword("Star Wars!") == "star wars" == normalize_keyword("star wars")
    assert record["matches"] == [
        {"prediction": "Star Wars!", "reference": "star wars", "prediction_normalized": "star wars"}
    ]
    assert record["unmatched_predictions"] == ["pizza"] and record["unmatched_references"] == ["JEDI"]
    assert record["normalized"] == {"Star Wars!": "star wars", "JEDI": "jedi"}


def test_the_semantic_explanation_names_the_gold_keywords_recall_misses_with_their_best_cosine():
    pytest.importorskip("sentence_transformers")
    from opinion_metrics.embeddings.encoder import load_model

    predictions, references = [["scary movie", "pizza"]], [["horror film", "family drama", "war"]]
    record = explain("semantic_keyword_prf", predictions, references)[0]
    model = load_model("sentence-transformers/all-MiniLM-L6-v2")
    vectors = model.encode(["scary movie", "pizza", "horror film", "family drama", "war"], normalize_embeddings=True)
    cosines = vectors[:2] @ vectors[2:].T  # predictions x gold keywords
    reached = {j for j in range(3) if cosines[:, j].max() >= record["threshold"]}
    assert reached == {0}  # only horror film: scary movie reaches it
    unmatched = record["unmatched_references"]
    assert [pair["reference"] for pair in unmatched] == ["family drama", "war"]
    for pair, j in zip(unmatched, (1, 2)):
        best = int(cosines[:, j].argmax())
        assert pair["prediction"] == predictions[0][best]
        assert pair["similarity"] == pytest.approx(float(cosines[best, j]), abs=1e-5)
    assert record["values"]["semantic_recall"] == pytest.approx(1 / 3)
