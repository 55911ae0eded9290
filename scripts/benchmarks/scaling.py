"""Scaling on synthetic data: the lexical families by size, semantic similarities in blocks."""

from __future__ import annotations

import functools

from .common import measure


def synthetic_corpus(n: int, seed: int = 0) -> tuple[list, list, list]:
    """n examples, 5 scored predictions and 8 gold keywords each, from 5,000 phrases; every
    example has its own gold list (no sharing to exploit)."""
    import random

    rng = random.Random(seed)
    words = [f"w{i}" for i in range(400)]
    phrases = [" ".join(rng.sample(words, rng.randint(1, 3))) for _ in range(5000)]
    predictions = [rng.sample(phrases, 5) for _ in range(n)]
    scores = [[round(rng.random(), 3) for _ in range(5)] for _ in range(n)]
    references = [rng.sample(phrases, 8) for _ in range(n)]
    return predictions, scores, references


class RandomEncoder:
    """A stand-in for the sentence encoder in the scaling table: a fixed random unit vector
    per string (384-d like all-MiniLM-L6-v2), so the table shows the similarity stage;
    the model's own cost is the "cold" column of the semantic table."""

    def encode(self, texts, **options):
        import numpy as np

        vectors = np.stack([np.random.default_rng(hash(t) % 2**32).standard_normal(384) for t in texts])
        return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def scaling(sizes: list[int], reviews: int) -> None:
    from opinion_metrics import keyword_prf, semantic_keyword_prf, weighted_keyword_prf
    from opinion_metrics.embeddings.encoder import clear_embedding_cache

    print(f"{'scaling (synthetic)':<34}{'examples':>10}{'seconds':>9}{'µs/example':>12}{'peak MiB':>10}")
    for n in sizes:
        predictions, scores, references = synthetic_corpus(n)
        for name, call in (
            ("keyword_prf", functools.partial(keyword_prf, predictions, references)),
            ("weighted_keyword_prf", functools.partial(weighted_keyword_prf, predictions, scores, references)),
        ):
            elapsed, peak = measure(call)
            print(f"{name:<34}{n:>10,}{elapsed:>9.2f}{elapsed / n * 1e6:>12.1f}{peak:>10.0f}")
    # `reviews` (10,000) x 10 distinct predictions (100k) against one shared 10k-keyword gold list.
    gold = [f"gold keyword {i}" for i in range(10_000)]
    predictions = [[f"prediction {i} {j}" for j in range(10)] for i in range(reviews)]
    references = [gold] * len(predictions)
    encoder = RandomEncoder()
    for block_elements in (1_000_000, 4_000_000, 16_000_000):
        call = functools.partial(
            semantic_keyword_prf, predictions, references, model=encoder, block_elements=block_elements
        )
        clear_embedding_cache()
        call()  # encodes (the stand-in encoder); the measured calls hit the cache
        elapsed, peak = measure(call)
        label = f"semantic, blocks of {block_elements // 10**6}M"
        shape = f"{reviews * 10 // 1000}k x 10k"
        print(f"{label:<34}{shape:>10}{elapsed:>9.2f}{elapsed / reviews * 1e6:>12.1f}{peak:>10.0f}")
    print(
        f"Lexical: linear in the number of examples. Semantic: {reviews * 10**5:.0e} similarities (one float32 "
        "matrix would take 4 GB at 10,000 reviews) computed in blocks; the peak follows the block size, not the "
        "input.\n"
    )
