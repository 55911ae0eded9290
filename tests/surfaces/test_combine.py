"""`evaluate.combine` over the project's modules: `compute(predictions=..., references=...)`
for any mix (a reference-free module ignores the references), each option reaching only the
modules that take it, an option no module takes named with the closest, and every module's
options checked before any module consumes its added rows."""

import pytest
from conftest import REPO

from opinion_metrics import keyword_prf, weighted_keyword_prf
from opinion_metrics.families.keyword_diversity import keyword_diversity
from opinion_metrics.families.semantic_keyword_prf import semantic_keyword_prf
from opinion_metrics.families.sentiment_appropriateness import sentiment_appropriateness

evaluate = pytest.importorskip("evaluate")

PREDICTIONS = [["war", "jedi", "War!"], ["fraud", "scam artist"], []]
REFERENCES = [["war", "empire"], ["scam"], ["family"]]
SCORES = [[0.9, 0.4, 0.2], [0.5, 0.7], []]
TEXTS = ["the war of the jedi", "a fraud and a scam artist", "family"]


class TinyEncoder:
    """Deterministic embeddings without a model."""

    def encode(self, texts, **options):
        import numpy as np

        return np.array([[len(t), sum(map(ord, t)) % 97 + 1, 1.0] for t in texts], dtype=np.float32)


def sentiment(text):
    return 0.25 if "war" in text.lower() else 0.75


def fresh(name):
    return evaluate.load(str(REPO / "metrics" / name))


def test_compute_with_references_includes_a_reference_free_module():
    combined = evaluate.combine([fresh("keyword_prf"), fresh("keyword_diversity")])
    expected = {**keyword_prf(PREDICTIONS, REFERENCES), **keyword_diversity(PREDICTIONS)}
    assert combined.compute(predictions=PREDICTIONS, references=REFERENCES) == expected
    # alone, the reference-free module still refuses references it cannot use
    with pytest.raises(ValueError, match=r"Bad inputs for evaluation module: \['references'\]"):
        fresh("keyword_diversity").compute(predictions=PREDICTIONS, references=REFERENCES)


def test_every_keyword_module_together_each_with_its_own_inputs_and_options():
    names = ["keyword_prf", "weighted_keyword_prf", "semantic_keyword_prf", "sentiment_appropriateness"]
    combined = evaluate.combine([*map(fresh, names), fresh("keyword_diversity")])
    options = {
        "average": "micro",  # keyword_prf, weighted, semantic
        "k": 2,  # weighted only
        "threshold": 0.9,  # semantic only
        "model": TinyEncoder(),  # semantic and diversity
        "sentiment": sentiment,  # sentiment_appropriateness only
        "presence": "present",  # the keyword families with texts
    }
    result = combined.compute(predictions=PREDICTIONS, references=REFERENCES, scores=SCORES, texts=TEXTS, **options)
    encoder = options["model"]
    expected = {
        **keyword_prf(PREDICTIONS, REFERENCES, texts=TEXTS, average="micro", presence="present"),
        **weighted_keyword_prf(PREDICTIONS, SCORES, REFERENCES, texts=TEXTS, average="micro", k=2, presence="present"),
        **semantic_keyword_prf(
            PREDICTIONS,
            REFERENCES,
            texts=TEXTS,
            average="micro",
            threshold=0.9,
            model=encoder,
            presence="present",
        ),
        **sentiment_appropriateness(PREDICTIONS, REFERENCES, texts=TEXTS, sentiment=sentiment),
        **keyword_diversity(PREDICTIONS, model=encoder),
    }
    assert result == expected
    assert "ndcg@2" in result and "self_similarity" in result and "sas_from_text" in result


def test_added_rows_then_compute_with_options_for_some_modules():
    combined = evaluate.combine([fresh("keyword_prf"), fresh("keyword_diversity")])
    combined.add_batch(predictions=PREDICTIONS[:2], references=REFERENCES[:2])
    combined.add(prediction=PREDICTIONS[2], reference=REFERENCES[2])
    expected = {
        **keyword_prf(PREDICTIONS, REFERENCES, match="exact", top_k=1, confidence_level=0.9, n_resamples=50),
        **keyword_diversity(PREDICTIONS, confidence_level=0.9, n_resamples=50),
    }
    assert combined.compute(match="exact", top_k=1, confidence_level=0.9, n_resamples=50) == expected


@pytest.mark.parametrize(
    ("option", "closest"), [("averge", "average"), ("treshold", "threshold"), ("modle", "model"), ("kk", "k")]
)
def test_an_option_no_module_takes_is_named_with_the_closest(option, closest):
    combined = evaluate.combine([fresh("keyword_prf"), fresh("weighted_keyword_prf"), fresh("semantic_keyword_prf")])
    combined.add_batch(predictions=PREDICTIONS, references=REFERENCES, scores=SCORES)
    message = (
        r"no module of this combination \(keyword_prf, weighted_keyword_prf, semantic_keyword_prf\) takes "
        rf"'{option}' \(did you mean '{closest}'\?\)"
    )
    with pytest.raises(ValueError, match=message):
        combined.compute(**{option: 1})
    # nothing was consumed: the corrected call scores the added rows
    result = combined.compute(model=TinyEncoder(), k=2)
    assert result["f1"] == keyword_prf(PREDICTIONS, REFERENCES)["f1"]
    assert result["ndcg@2"] == weighted_keyword_prf(PREDICTIONS, SCORES, REFERENCES, k=2)["ndcg@2"]


def test_a_bad_value_for_a_later_module_is_refused_before_any_module_consumes_its_rows():
    combined = evaluate.combine([fresh("keyword_prf"), fresh("weighted_keyword_prf")])
    combined.add_batch(predictions=PREDICTIONS, references=REFERENCES, scores=SCORES)
    with pytest.raises(ValueError, match=r"relevance must be one of .*got 'exponential'"):
        combined.compute(relevance="exponential")  # weighted_keyword_prf's option, checked by the first module
    assert combined.compute(relevance="binary") == {
        **keyword_prf(PREDICTIONS, REFERENCES),
        **weighted_keyword_prf(PREDICTIONS, SCORES, REFERENCES, relevance="binary"),
    }


def test_the_aspect_module_in_a_combination_takes_only_its_options():
    ratings = [[1, 0, 0, 0, 0, 7], [0, 2, 0, 0, 0, 0]]
    gold = [[1, 0, 0, 0, 0, 6], [0, 3, 0, 0, 0, 0]]
    combined = evaluate.combine([fresh("aspect_sentiment_score")])
    from opinion_metrics import aspect_sentiment_score

    expected = aspect_sentiment_score(ratings, gold, max_rating=7)
    assert combined.compute(predictions=ratings, references=gold, max_rating=7) == expected
    with pytest.raises(ValueError, match=r"takes 'max_ratings' \(did you mean 'max_rating'\?\)"):
        combined.compute(predictions=ratings, references=gold, max_ratings=7)
