"""Present and absent keywords (SPEC section 9): hand cases and a brute force on the movie data."""

import unicodedata

import numpy as np
import pytest
from nltk.stem.porter import PorterStemmer

from opinion_metrics import keyword_prf, semantic_keyword_prf, weighted_keyword_prf


def test_a_keyword_is_present_when_its_tokens_are_a_contiguous_run_of_the_text():
    text = "A party for the art crowd: star wars fans only."
    result = keyword_prf(
        [["art", "party", "wars fans", "crowd star", "star fans", "Star-Wars"]],
        [["star wars", "art", "party people"]],
        texts=[text],
        presence="present",
        match="exact",
        return_per_example=True,
    )
    # Present predictions: art, party, wars fans, crowd star (":" removed), star wars ("-" separates
    # words); not "star fans" (not contiguous). Present references: star wars, art. Matches: art,
    # star wars.
    assert (result["precision"], result["recall"]) == (pytest.approx(2 / 5), pytest.approx(1.0))
    absent = keyword_prf(
        [["art", "party", "star fans", "party people"]],
        [["star wars", "art", "party people"]],
        texts=[text],
        presence="absent",
        match="exact",
    )
    # Absent predictions: star fans, party people; absent references: party people.
    assert (absent["precision"], absent["recall"]) == (pytest.approx(1 / 2), pytest.approx(1.0))


def test_art_is_not_present_in_party():
    result = keyword_prf([["art"]], [["art", "party"]], texts=["What a party."], presence="present")
    # "art" is absent as a prediction and as a reference: only "party" is a present reference.
    assert (result["precision"], result["recall"]) == (0.0, 0.0)


def test_stemmed_presence_prepares_the_text_like_the_keywords():
    texts = ["The droids were running from the troopers."]
    plain = keyword_prf([["droid"]], [["droid", "trooper"]], texts=texts, presence="present")
    stemmed = keyword_prf([["droid"]], [["droid", "trooper"]], texts=texts, presence="present", stemmer="porter")
    assert plain["recall"] == 0.0  # no reference is present without stemming: left out, zero_division
    assert (stemmed["precision"], stemmed["recall"]) == (1.0, 0.5)


def test_examples_without_a_present_reference_are_left_out_of_every_mean_and_micro_sum():
    predictions = [["jedi"], ["pizza"], ["empire"]]
    references = [["jedi"], ["pasta"], ["empire", "rebels"]]
    texts = ["A jedi story.", "No reference occurs here.", "The empire strikes."]
    result = keyword_prf(predictions, references, texts=texts, presence="present", return_per_example=True)
    assert result["per_example"]["precision"] == [1.0, None, 1.0]
    assert result["recall"] == pytest.approx((1.0 + 1.0) / 2)
    micro = keyword_prf(predictions, references, texts=texts, presence="present", average="micro")
    assert (micro["precision"], micro["recall"]) == (1.0, 1.0)
    nothing_left = keyword_prf([["a"]], [["b"]], texts=["c"], presence="present", zero_division=0.5)
    assert nothing_left == {"precision": 0.5, "recall": 0.5, "f1": 0.5}


def test_presence_needs_texts_and_rejects_bad_values():
    with pytest.raises(ValueError, match="presence needs texts"):
        keyword_prf([["a"]], [["a"]], presence="present")
    with pytest.raises(ValueError, match=r"texts: example 1 must be a str, got NoneType None"):
        keyword_prf([["a"], ["b"]], [["a"], ["b"]], texts=["a", None], presence="absent")
    with pytest.raises(ValueError, match="presence must be one of"):
        keyword_prf([["a"]], [["a"]], texts=["a"], presence="present-only")
    with pytest.raises(ValueError, match="texts has 1"):
        keyword_prf([["a"], ["b"]], [["a"], ["b"]], texts=["a"], presence="present")


def test_weighted_and_semantic_families_take_presence():
    predictions, scores, references = [["jedi", "pizza"]], [[0.8, 0.2]], [["jedi", "empire"]]
    texts = ["Jedi and pizza."]
    weighted = weighted_keyword_prf(predictions, scores, references, texts=texts, presence="present")
    # matched confidence 0.8 of 1.0; one present reference (jedi), found at rank 1
    assert (weighted["weighted_precision"], weighted["weighted_recall"], weighted["ndcg@5"]) == (0.8, 0.8, 1.0)

    axes = {"jedi": 0, "pizza": 1, "empire": 2}

    class OneHot:  # a stand-in encoder: each keyword on its own axis
        def encode(self, texts, **options):
            return np.eye(3)[[axes[text] for text in texts]]

    present = semantic_keyword_prf(predictions, references, texts=texts, presence="present", model=OneHot())
    assert (present["semantic_precision"], present["semantic_recall"]) == (0.5, 1.0)
    absent = semantic_keyword_prf(predictions, references, texts=texts, presence="absent", model=OneHot())
    assert (absent["semantic_precision"], absent["semantic_recall"]) == (0.0, 0.0)  # no absent prediction


# --- brute force on the movie data -------------------------------------------------------


def normalize(text):
    """Section 1's "default": dashes, connectors and "/" separate words; other P*, S*, Cf go."""
    text = unicodedata.normalize("NFKC", text).casefold()
    separators = {c for c in text if unicodedata.category(c) in ("Pd", "Pc") or c == "/"}
    dropped = {c for c in text if unicodedata.category(c)[0] in "PS" or unicodedata.category(c) == "Cf"} - separators
    return " ".join("".join(" " if c in separators else c for c in text if c not in dropped).split())


def is_present(keyword, text_tokens):
    tokens = keyword.split()
    return any(text_tokens[i : i + len(tokens)] == tokens for i in range(len(text_tokens) - len(tokens) + 1))


@pytest.mark.parametrize("stem", [False, True])
def test_presence_split_equals_a_brute_force_loop_on_the_movie_data(movie_reviews, stem):
    stemmer = PorterStemmer()

    def prepare(text):
        text = normalize(text)
        return " ".join(stemmer.stem(t, to_lowercase=False) for t in text.split()) if stem else text

    sample = movie_reviews[::60]
    predictions = [review["keywords_base"] or [] for review in sample]
    references = [review["gold"] for review in sample]
    texts = [review["review"] for review in sample]
    for presence in ("present", "absent"):
        kept_p, kept_r, kept_t = [], [], []
        for predicted, gold, text in zip(predictions, references, texts):
            tokens = prepare(text).split()
            wanted = presence == "present"
            gold_kept = [g for g in gold if prepare(g) and is_present(prepare(g), tokens) == wanted]
            if gold_kept:
                kept_r.append(gold_kept)
                kept_p.append([p for p in predicted if prepare(p) and is_present(prepare(p), tokens) == wanted])
                kept_t.append(text)
        options = {"stemmer": "porter" if stem else None}
        expected = keyword_prf(kept_p, kept_r, **options)
        result = keyword_prf(predictions, references, texts=texts, presence=presence, **options)
        assert result == pytest.approx(expected)
        micro = keyword_prf(predictions, references, texts=texts, presence=presence, average="micro", **options)
        assert micro == pytest.approx(keyword_prf(kept_p, kept_r, average="micro", **options))
        assert kept_r and result != keyword_prf(predictions, references, **options)


def test_a_normalizer_returning_a_non_string_for_a_text_is_named():
    with pytest.raises(ValueError, match="normalize returned NoneType None for a text"):
        keyword_prf([["a"]], [["a"]], texts=["zzz"], presence="present", normalize=lambda s: None if s == "zzz" else s)


def test_texts_of_the_wrong_length_are_named_even_when_presence_is_all():
    with pytest.raises(ValueError, match="predictions has 2, texts has 1"):
        keyword_prf([["a"], ["b"]], [["a"], ["b"]], texts=["x"])
