"""The match relation kept across calls (`matching._KnownRelation`): calls whose vocabularies
overlap (a corpus scored in chunks, as `--workers` and the engines do) reuse the string
pairs related before and still equal the SPEC brute force, also when the cache starts again."""

from __future__ import annotations

import numpy as np
import pytest
import reference_impl as ref
from conftest import approx_nested, true_in_every_thread

from opinion_metrics import keyword_prf
from opinion_metrics.core import containment, documents, relations


def vocabulary_corpus(seed: int, n: int, words: list[str]) -> tuple[list, list]:
    rng = np.random.default_rng(seed)

    def draw(low: int, high: int) -> list[str]:
        return [words[i] for i in rng.integers(len(words), size=int(rng.integers(low, high)))]

    return [draw(0, 5) for _ in range(n)], [draw(0, 9) for _ in range(n)]


@pytest.fixture(autouse=True)
def relation_between_distinct_strings(monkeypatch):
    """The relation kept across calls is the one computed between the distinct strings of
    prepared corpora: forced where testing each example's pairs would cost less."""
    monkeypatch.setattr(relations, "relation_by_pairs", lambda corpus: False)
    monkeypatch.setattr(documents, "documents_cheaper", lambda references: False)


WORDS = ["a", "ab", "b a", "a b c", "abc", "c", "x y", "y", "x", "Ab C", "zz", "z", "b  a", "ca b", "a-b"]


def brute_force(predictions, references, match):
    return ref.keyword_prf(predictions, references, match=match)


@pytest.mark.parametrize("match", ["substring", "token"])
def test_chunks_with_new_gold_and_new_predictions_equal_the_brute_force(match):
    relations.clear_lexical_caches()
    rng = np.random.default_rng(1)
    for chunk in range(12):
        # each chunk draws from a vocabulary that grows: old strings meet new ones on both sides
        words = WORDS[: 4 + chunk] + [f"{w} {chunk}" for w in rng.choice(WORDS, 3)]
        predictions, references = vocabulary_corpus(chunk, 60, words)
        actual = keyword_prf(predictions, references, match=match, return_per_example=True)
        expected = brute_force(predictions, references, match)
        assert actual["per_example"] == approx_nested(expected["per_example"]), chunk
        assert actual["f1"] == pytest.approx(expected["f1"])
    known = relations._KNOWN[match]
    assert len(known.gold_strings) > 10 and len(known.predicted) > 10  # the relation was kept and grown


def test_a_full_cache_starts_again_and_stays_right(monkeypatch):
    relations.clear_lexical_caches()
    monkeypatch.setattr(relations._KnownRelation, "_LIMIT", 40)
    starts = []
    original = relations._KnownRelation.__init__

    def counted(self, match):
        starts.append(match)
        original(self, match)

    monkeypatch.setattr(relations._KnownRelation, "__init__", counted)
    for chunk in range(6):
        predictions, references = vocabulary_corpus(chunk, 30, WORDS + [f"w{chunk} {i}" for i in range(10)])
        actual = keyword_prf(predictions, references, return_per_example=True)
        assert actual["per_example"] == approx_nested(brute_force(predictions, references, "substring")["per_example"])
    assert len(starts) > 2  # made once, then started again as it filled


def test_the_held_relation_stays_under_its_limit_after_a_call(monkeypatch):
    relations.clear_lexical_caches()
    monkeypatch.setattr(relations._KnownRelation, "_LIMIT", 200)
    words = [f"w{i}" for i in range(400)] + ["w"]  # "w" is in every one of them: 400 pairs at once
    keyword_prf([["w"], *[[w] for w in words]], [words] * (len(words) + 1), match="substring")
    assert "substring" not in relations._KNOWN or relations._KNOWN["substring"].size <= 200
    again = keyword_prf([["w"]], [words], match="substring", return_per_example=True)
    assert again["per_example"] == approx_nested(brute_force([["w"]], [words], "substring")["per_example"])


def test_a_small_call_after_a_large_one_relates_only_its_own_strings(monkeypatch):
    relations.clear_lexical_caches()
    monkeypatch.setattr(relations._KnownRelation, "_FLOOR", 50)
    large = [f"gold {i}" for i in range(1_000)]
    keyword_prf([["gold"], ["old 7"]], [large, large], match="substring")
    related = []
    relation_pair_arrays = relations.relation_pair_arrays

    def recorded(predicted, gold, match):
        related.append(len(gold))
        return relation_pair_arrays(predicted, gold, match)

    monkeypatch.setattr(relations, "relation_pair_arrays", recorded)  # as the kept relation calls it
    small = keyword_prf([["a new one", "gold 1"]], [["gold 1", "one"]], match="substring", return_per_example=True)
    assert related and max(related) <= 2  # not the 1,000 gold strings known before
    expected = brute_force([["a new one", "gold 1"]], [["gold 1", "one"]], "substring")
    assert small["per_example"] == approx_nested(expected["per_example"])


@pytest.mark.parametrize("match", ["substring", "token"])
def test_threads_sharing_the_relation_get_their_own_pairs(match):
    import random

    relations.clear_lexical_caches()

    def agrees(seed):
        draw = random.Random(seed)
        for _ in range(150):  # new strings in most calls: the relation grows while others read it
            predicted = list(dict.fromkeys(" ".join(draw.choices("abcd", k=2)) for _ in range(20)))
            gold = list(dict.fromkeys(" ".join(draw.choices("abcd", k=4)) for _ in range(20)))
            owner, related = relations.related_positions(predicted, gold, match)
            if set(zip(owner.tolist(), related.tolist())) != containment.relation_pairs(predicted, gold, match):
                return False
        return True

    assert true_in_every_thread(agrees)
