"""The document pairs' similarities (`opinion_metrics.cosines`): decisions at the threshold
are the same on every path (numpy float64 blocks, torch float32 blocks as on a GPU), equal
gold lists are found, and blocks stay within `block_elements`. SPEC values on random corpora
are checked in test_differential_semantic.py."""

import numpy as np
import pytest

from opinion_metrics import explain
from opinion_metrics.embeddings import cosines
from opinion_metrics.embeddings.encoder import KeywordEncoder
from opinion_metrics.embeddings.forward import unit_rows
from opinion_metrics.families.semantic_keyword_prf import semantic_keyword_prf

torch = pytest.importorskip("torch")


class FixedModel:
    def __init__(self, vectors):
        self.vectors = vectors

    def encode(self, texts, **options):
        return np.array([self.vectors[text] for text in texts], dtype=np.float32)


def unit(rng, dimension=384):
    vector = rng.standard_normal(dimension).astype(np.float32)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def pair_below_its_exact_cosine(computed):
    """Unit float32 vectors a, b whose exact cosine (`exact_cosines`) is above what `computed`
    gives for them, and that exact cosine."""
    for seed in range(1000):
        rng = np.random.default_rng(seed)
        stored, _ = unit_rows(np.stack([unit(rng), unit(rng)]))  # what the embedding cache holds
        exact = cosines.exact_cosines(stored, np.array([0, 1]), np.array([0]), np.array([1]))[0]
        if computed(*stored) < exact:
            return *stored, exact
    raise AssertionError("no such pair")


@pytest.mark.parametrize("path", ["numpy", "torch"])
@pytest.mark.parametrize("one_to_one", [False, True])
def test_a_similarity_at_the_threshold_is_decided_by_its_exact_value(monkeypatch, path, one_to_one):
    # The products the path computes fall just below the exact cosine: compared as they are,
    # the pair would miss a threshold equal to its exact cosine.
    if path == "numpy":
        device = None

        def computed(a, b):  # as a block computes it: float64 matrix products
            return (a.astype(np.float64)[None, None, :] @ b.astype(np.float64)[None, :, None])[0, 0, 0]
    else:
        device = torch.device("cpu")

        def computed(a, b):  # float32 products, as on a GPU
            return float(torch.bmm(torch.from_numpy(a)[None, None, :], torch.from_numpy(b)[None, :, None]))

    monkeypatch.setattr(KeywordEncoder, "pair_device", lambda self: device)
    a, b, exact = pair_below_its_exact_cosine(computed)
    model = FixedModel({"war": a, "peace": b})
    at = semantic_keyword_prf([["war"]], [["peace"]], model=model, threshold=exact, one_to_one=one_to_one)
    assert (at["semantic_precision"], at["semantic_recall"]) == (1.0, 1.0)
    above = np.nextafter(exact, 2.0)
    past = semantic_keyword_prf([["war"]], [["peace"]], model=model, threshold=above, one_to_one=one_to_one)
    assert (past["semantic_precision"], past["semantic_recall"]) == (0.0, 0.0)
    assert at["soft_precision"] == pytest.approx(max(exact, 0.0), abs=1e-7)


def test_torch_blocks_equal_numpy_blocks_to_float32_rounding(monkeypatch):
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(60)]
    model = FixedModel({word: unit(rng, 48) for word in words})
    predictions = [list(rng.choice(words, size=int(rng.integers(0, 7)), replace=False)) for _ in range(200)]
    references = [list(rng.choice(words, size=int(rng.integers(0, 12)), replace=False)) for _ in range(200)]
    results = {}
    for name, device in (("numpy", None), ("torch", torch.device("cpu"))):
        monkeypatch.setattr(KeywordEncoder, "pair_device", lambda self, device=device: device)
        results[name] = semantic_keyword_prf(
            predictions, references, model=model, threshold=0.2, return_per_example=True, block_elements=5000
        )
    numpy_result, torch_result = results["numpy"], results["torch"]
    for key in ("semantic_precision", "semantic_recall"):
        assert torch_result["per_example"][key] == numpy_result["per_example"][key]
    for key in ("soft_precision", "soft_recall"):
        assert torch_result["per_example"][key] == pytest.approx(numpy_result["per_example"][key], abs=1e-6)


def test_equal_gold_lists_are_found():
    rng = np.random.default_rng(0)
    pool = [tuple(rng.integers(0, 5, size=int(rng.integers(0, 4)))) for _ in range(12)]
    lists = [pool[int(rng.integers(len(pool)))] for _ in range(300)]
    offsets = np.concatenate([[0], np.cumsum([len(ids) for ids in lists])])
    flat = np.array([i for ids in lists for i in ids], dtype=np.int64)
    groups = cosines._list_groups(flat, offsets)
    first: dict[tuple, int] = {}
    expected = [first.setdefault(ids, index) for index, ids in enumerate(lists)]
    assert groups[[i for i, ids in enumerate(lists) if ids]].tolist() == [e for e, ids in zip(expected, lists) if ids]


@pytest.mark.parametrize("block_elements", [1, 1000, 50_000, 4_000_000])
def test_blocks_hold_at_most_block_elements_values(block_elements):
    for width, gold_width, gathered in ((5, 20, True), (5, 400, False), (1, 1, True), (30, 3000, True)):
        rows = cosines.block_rows(width, gold_width, gathered, 384, block_elements)
        per_example = width * gold_width + (width + (gold_width if gathered else 0)) * 384
        assert rows >= 1 and (rows == 1 or rows * per_example <= block_elements)
        assert rows == 1 or (rows + 1) * per_example > block_elements  # as many as fit


@pytest.mark.parametrize("path", ["numpy", "torch"])
def test_two_strings_the_model_cannot_tell_apart_match_at_threshold_one(monkeypatch, path):
    """Equal embeddings (MiniLM's tokenizer strips accents: "café" and "cafe") have cosine 1,
    which a threshold of 1.0 accepts, as the cosine of model.encode's vectors does."""
    device = None if path == "numpy" else torch.device("cpu")
    monkeypatch.setattr(KeywordEncoder, "pair_device", lambda self: device)
    rng = np.random.default_rng(0)
    for trial in range(20):
        same, other = unit(rng), unit(rng)
        model = FixedModel({"café": same, "cafe": same, "bistro": other})
        result = semantic_keyword_prf([["café", "bistro"]], [["cafe"]], model=model, threshold=1.0)
        assert (result["semantic_precision"], result["semantic_recall"]) == (0.5, 1.0), trial


class HalfModel(FixedModel):
    """Vectors moved a little, as half precision moves them; `in_float32()` gives the model's
    float32 vectors and records what it is asked to embed."""

    def __init__(self, vectors, moved):
        super().__init__(moved)
        self.float32 = FixedModel(vectors)
        self.float32.calls = []
        encode = self.float32.encode
        self.float32.encode = lambda texts, **options: self.float32.calls.append(list(texts)) or encode(texts)

    def in_float32(self):
        return self.float32


@pytest.mark.parametrize("path", ["numpy", "torch"])
@pytest.mark.parametrize("one_to_one", [False, True])
def test_under_half_precision_the_pairs_near_the_threshold_take_float32s_cosines(monkeypatch, path, one_to_one):
    """Every decision is float32's; a pair far from the threshold keeps the half-precision
    cosine (the soft sums show it); only the strings of the pairs near the threshold are
    embedded in float32, in one call."""
    from opinion_metrics.embeddings.encoder import HALF_PRECISION_NEAR

    monkeypatch.setattr(KeywordEncoder, "pair_device", lambda self: None if path == "numpy" else torch.device("cpu"))
    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in range(80)]
    vectors = {word: unit(rng, 48) for word in words}
    moved = {word: (vector + 0.003 * rng.standard_normal(48)).astype(np.float32) for word, vector in vectors.items()}
    predictions = [list(rng.choice(words, size=int(rng.integers(0, 7)), replace=False)) for _ in range(300)]
    references = [list(rng.choice(words, size=int(rng.integers(0, 12)), replace=False)) for _ in range(300)]
    threshold, band = 0.2, HALF_PRECISION_NEAR["bfloat16"]

    def cosine(table, p, g):
        a, b = (table[w].astype(np.float64) / np.linalg.norm(table[w].astype(np.float64)) for w in (p, g))
        return 1.0 if p == g else float(a @ b)

    pairs = {(p, g) for ps, gs in zip(predictions, references) for p in ps for g in gs}
    changes = [cosine(moved, *pair) - cosine(vectors, *pair) for pair in pairs]
    assert 1e-3 < max(map(abs, changes)) < band  # moved as half precision moves cosines
    flipped = sum((cosine(moved, *pair) >= threshold) != (cosine(vectors, *pair) >= threshold) for pair in pairs)
    assert flipped > 0  # compared as they are, some decisions would differ from float32's

    model = HalfModel(vectors, moved)
    options = {"threshold": threshold, "one_to_one": one_to_one, "return_per_example": True}
    half = semantic_keyword_prf(predictions, references, model=model, precision="bfloat16", **options)
    float32 = semantic_keyword_prf(predictions, references, model=FixedModel(vectors), **options)
    for key in ("semantic_precision", "semantic_recall", "semantic_f1"):
        assert half["per_example"][key] == float32["per_example"][key], key
    assert half["soft_f1"] != float32["soft_f1"]  # the pairs far from the threshold keep their moved cosines

    def near(margin):  # the strings of the pairs within the band (+ margin) of the threshold
        return {w for pair in pairs if abs(cosine(moved, *pair) - threshold) <= band + margin for w in pair}

    [asked] = model.float32.calls
    assert near(-1e-6) <= set(asked) <= near(1e-6) and len(asked) == len(set(asked))
    # explain: the same matches as float32's, the strings near the threshold embedded in one call
    model = HalfModel(vectors, moved)
    explain_options = {"threshold": threshold, "one_to_one": one_to_one}
    half, full = (
        explain("semantic_keyword_prf", predictions, references, model=m, precision=p, **explain_options)
        for m, p in ((model, "bfloat16"), (FixedModel(vectors), "float32"))
    )
    assert [[(m["prediction"], m["reference"]) for m in r["matches"]] for r in half] == [
        [(m["prediction"], m["reference"]) for m in r["matches"]] for r in full
    ]
    [asked] = model.float32.calls
    assert near(-1e-6) <= set(asked) <= near(1e-6)
    ignored = semantic_keyword_prf(predictions, references, model=FixedModel(moved), precision="bfloat16", **options)
    assert (
        ignored["semantic_f1"]
        == semantic_keyword_prf(predictions, references, model=FixedModel(moved), **options)["semantic_f1"]
    )  # an object without in_float32 returns its own vectors in every precision: nothing to recompute
