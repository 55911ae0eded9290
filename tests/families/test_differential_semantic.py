"""Differential test of `semantic_keyword_prf` (SPEC sections 3, 5 and 9): every
combination of normalize x stemmer x one_to_one x average x top_k x zero_division x
threshold on random corpora, with the similarity blocks forced small (`block_elements`)
and left at their default, and each path of the document pairs' similarities forced in
turn (numpy blocks per example, numpy blocks of a shared gold list, torch blocks as on a
GPU, here on the CPU), against the brute force of `reference_impl`.

The stand-in encoder maps a string to a small integer vector (from its MD5), so the
library's float32 cosines and the brute force's float64 ones agree to 1e-6; thresholds
stay away from every similarity that occurs (checked), so none flips a decision: -1
matches everything, 1 only equal keywords (S = 1 exactly, whatever float32 gives).
"""

import itertools

import numpy as np
import pytest
import reference_impl as ref
from differential_cases import (
    NORMALIZES,
    PREPARATIONS,
    PRESENCES,
    STEMMERS,
    TOP_KS,
    StandInEncoder,
    check,
    differences,
    embed,
    options_text,
    prepared_as,
    random_corpus,
    random_texts,
)

from opinion_metrics.embeddings import cosines
from opinion_metrics.embeddings.encoder import KeywordEncoder
from opinion_metrics.families.semantic_keyword_prf import semantic_keyword_prf

THRESHOLDS = (-1.0, 0.3141, 0.8123, 1.0)
OPTIONS = [
    dict(zip(("one_to_one", "average", "top_k", "zero_division", "threshold"), values))
    for values in itertools.product((True, False), ("macro", "micro"), TOP_KS, (0.0, 1.0), THRESHOLDS)
]
BLOCKS = (None, 1, 5)  # None: the library's default block size
PATHS = ("per example", "shared lists", "torch, per example", "torch, shared lists")


def force_path(monkeypatch, path: str) -> list[tuple[bool, bool]]:
    """Make `semantic_keyword_prf` take `path`; the list it returns receives (on a torch
    device, gold list shared) for every block computed."""
    if path.startswith("torch"):
        torch = pytest.importorskip("torch")
        monkeypatch.setattr(KeywordEncoder, "pair_device", lambda self: torch.device("cpu"))
    else:
        monkeypatch.setattr(KeywordEncoder, "pair_device", lambda self: None)
    # 0: every gold list of two examples or more is a shared block; 10**9: none is.
    monkeypatch.setattr(cosines, "_SHARED_GAIN", 0 if path.endswith("shared lists") else 10**9)
    blocks: list[tuple[bool, bool]] = []
    maxima = cosines._Similarities.maxima

    def recorded(self, predicted, gold, edges, shared=None):
        blocks.append((self.device is not None, gold.ndim == 1))
        return maxima(self, predicted, gold, edges, shared)

    monkeypatch.setattr(cosines._Similarities, "maxima", recorded)
    return blocks


def similarities(predictions, references, normalize, stemmer) -> set[float]:
    rows = itertools.chain(predictions, references)
    keywords = {ref.normalize(keyword, normalize, stemmer) for row in rows for keyword in row}
    keywords.discard("")
    return {ref.cosine(embed(a), embed(b)) for a in keywords for b in keywords if a != b}


@pytest.mark.parametrize("stemmer", STEMMERS)
@pytest.mark.parametrize("normalize", NORMALIZES, ids=lambda n: getattr(n, "__name__", n))
def test_semantic_keyword_prf_equals_spec(normalize, stemmer, monkeypatch):
    encoder = StandInEncoder()
    problems = []
    taken = set()
    for n, options in enumerate(OPTIONS):
        computed = force_path(monkeypatch, PATHS[n % len(PATHS)])
        rng = np.random.default_rng([n, NORMALIZES.index(normalize), int(stemmer is None), 3])
        predictions, _, references = random_corpus(rng, int(rng.integers(1, 10)))
        texts = random_texts(rng, predictions, references)
        threshold = options["threshold"]
        if threshold > -1.0:  # every cosine is >= -1
            occurring = similarities(predictions, references, normalize, stemmer)
            assert all(abs(s - threshold) > 1e-5 for s in occurring), threshold
        presence = PRESENCES[n // len(PREPARATIONS) % len(PRESENCES)]
        options = {**options, "presence": presence, "normalize": normalize, "stemmer": stemmer}
        expected = ref.semantic_keyword_prf(predictions, references, texts=texts, embed=embed, **options)
        preparation = PREPARATIONS[n % len(PREPARATIONS)]
        shaped, _, shaped_references, shaped_texts = prepared_as(
            preparation, predictions, [[]] * len(predictions), references, texts
        )
        for block in BLOCKS:
            blocks = {} if block is None else {"block_elements": block}
            actual = semantic_keyword_prf(
                shaped,
                shaped_references,
                texts=shaped_texts,
                model=encoder,
                return_per_example=True,
                **blocks,
                **options,
            )
            path = PATHS[n % len(PATHS)]
            where = f"semantic_keyword_prf({options_text(**options, **blocks)}; preparation {preparation}; {path})"
            problems += differences(actual, expected, (predictions, references, texts), where, tolerance=1e-6)
        taken.update((PATHS[n % len(PATHS)], *block) for block in computed)
    check(problems)
    # every path ran
    assert {
        ("per example", False, False),
        ("shared lists", False, True),
        ("torch, per example", True, False),
        ("torch, shared lists", True, True),
    } <= taken
