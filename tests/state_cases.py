"""What the MetricState tests share: random corpora of every family (with a toy encoder and
a toy sentiment function), the family options they run, states of random batches merged in
random orders, and bytes forged in the declared layout."""

from __future__ import annotations

import hashlib
import json
import math
import struct

import numpy as np

from opinion_metrics import MetricState
from opinion_metrics.state.wire import MAGIC

WORDS = ("war", "peace", "jedi", "droid", "empire", "satire", "comedy", "family", "pizza", "space", "opera", "dark")
ASPECTS = ("food", "room", "staff")


class CharacterEncoder:
    """A deterministic toy sentence encoder: letter counts plus a constant dimension."""

    def encode(self, texts, **_):
        vectors = np.zeros((len(texts), 27), dtype=np.float32)
        for row, text in enumerate(texts):
            vectors[row, 26] = 1.0
            for character in text:
                if "a" <= character <= "z":
                    vectors[row, ord(character) - 97] += 1.0
        return vectors


def toy_sentiment(text):
    return (sum(map(ord, text)) % 101) / 100


def keywords(rng, low, high):
    count = int(rng.integers(low, high + 1))
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 3)))) for _ in range(count)]


def corpus(family, n, seed):
    """Random inputs of `family` for n examples (some empty lists, some texts without keywords)."""
    rng = np.random.default_rng(seed)
    if family == "aspect_sentiment_score":
        return {
            "predictions": rng.integers(0, 6, size=(n, len(ASPECTS))),
            "references": rng.integers(0, 6, size=(n, len(ASPECTS))),
        }
    predictions = [keywords(rng, 0, 5) for _ in range(n)]
    columns = {"predictions": predictions}
    if family != "keyword_diversity":
        columns["references"] = [keywords(rng, 0, 4) for _ in range(n)]
    if family in ("keyword_prf", "weighted_keyword_prf", "semantic_keyword_prf", "sentiment_appropriateness"):
        missing = None if family == "sentiment_appropriateness" else ""  # SAS: a missing text; others: an empty one
        columns["texts"] = [" ".join(rng.choice(WORDS, size=8)) if rng.random() < 0.9 else missing for _ in range(n)]
    if family == "weighted_keyword_prf":
        columns["scores"] = [rng.random(len(p)).round(3).tolist() for p in predictions]
    return columns


def part(columns, rows):
    return {
        name: (value[rows] if isinstance(value, np.ndarray) else [value[i] for i in rows])
        for name, value in columns.items()
    }


def random_cuts(n, parts, rng):
    cuts = sorted(rng.choice(np.arange(1, n), size=parts - 1, replace=False).tolist()) if parts > 1 else []
    return [np.arange(a, b) for a, b in zip([0, *cuts], [*cuts, n])]


def merged_state(family, columns, options, rng, parts, *, keep_order=False, key=lambda i: i):
    """States of random contiguous batches (keys from `key`), merged in a random order
    (a random order-preserving tree when `keep_order`)."""
    n = len(columns["predictions"])
    states = [
        MetricState(family, **options).update(**part(columns, rows), keys=[key(int(i)) for i in rows])
        for rows in random_cuts(n, parts, rng)
    ]
    if not keep_order:
        rng.shuffle(states)
    while len(states) > 1:
        i = int(rng.integers(0, len(states) - 1))
        states[i : i + 2] = [states[i] + states[i + 1]]
    return states[0]


def assert_same(result, expected, tolerance=1e-12):
    assert list(result) == list(expected)
    for key, value in expected.items():
        assert isinstance(result[key], float)
        assert math.isclose(result[key], value, rel_tol=0, abs_tol=tolerance), (key, result[key], value)


FAMILY_OPTIONS = [
    ("keyword_prf", {}),
    ("keyword_prf", {"average": "micro", "match": "exact"}),
    ("keyword_prf", {"match": "token", "one_to_one": False, "top_k": 2, "zero_division": 1.0}),
    ("keyword_prf", {"top_k": "O", "presence": "present"}),
    ("keyword_prf", {"presence": "absent", "average": "micro", "stemmer": "porter"}),
    ("weighted_keyword_prf", {}),
    ("weighted_keyword_prf", {"k": 3, "relevance": "binary", "average": "micro", "top_k": 2}),
    ("weighted_keyword_prf", {"presence": "present", "one_to_one": False}),
    ("semantic_keyword_prf", {"model": CharacterEncoder(), "threshold": 0.8}),
    ("semantic_keyword_prf", {"model": CharacterEncoder(), "one_to_one": True, "average": "micro", "top_k": 3}),
    ("sentiment_appropriateness", {"sentiment": toy_sentiment}),
    ("sentiment_appropriateness", {"sentiment": toy_sentiment, "normalize": "ascii"}),
    ("aspect_sentiment_score", {"aspects": ASPECTS}),
    ("aspect_sentiment_score", {"aspects": ASPECTS, "zero_division": 0.0, "min_rating": 2, "max_rating": 5}),
    ("keyword_diversity", {}),
    ("keyword_diversity", {"model": CharacterEncoder(), "zero_division": 1.0}),
]
INTERVALS = {"confidence_level": 0.9, "n_resamples": 200, "random_state": 7}


def fit_corpus(family, options, columns):
    if family == "aspect_sentiment_score" and options.get("min_rating") == 2:
        columns = {name: np.where(table == 1, 2, table) for name, table in columns.items()}
    return columns


def forge(header, payload=b"", version=3):
    """Bytes in the declared layout with a valid checksum (a careful forger, or a buggy writer)."""
    encoded = json.dumps(header).encode()
    body = MAGIC + struct.pack("<HI", version, len(encoded)) + encoded + payload
    return body + hashlib.sha256(body).digest()
