"""sentiment_tuple_prf against ABSA-QUAD's scoring loop, in the same run: the ASQP quads of
rest15 and rest16 (every split) replicated to 1,000,000 gold tuples, predictions perturbed from
them (dropped, another sentiment, repeated, spurious). Every timed run gets a fresh copy of the
corpus, read from its JSON Lines as a file's parser gives it (each string its own object, no
hash cached), so that neither side profits from the other's work."""

from __future__ import annotations

import ast
import gc
import json
import math
import random
import time
from pathlib import Path

ELEMENTS = "asqp"  # the data's order: aspect, category, sentiment, opinion


def load_quads(directory: Path) -> list[list[list[str]]]:
    """Every sentence's gold quads of rest15 and rest16 (train, dev and test)."""
    examples = []
    for name in ("rest15", "rest16"):
        for split in ("train", "dev", "test"):
            for line in (directory / "asqp" / name / f"{split}.txt").read_text(encoding="utf-8").splitlines():
                examples.append(ast.literal_eval(line.split("####")[1]))
    return examples


def perturbed(examples: list[list[list[str]]], seed: int = 0) -> list[list[list[str]]]:
    """Predictions from the gold quads: 10% dropped, 10% another sentiment, 5% repeated, and a
    spurious quad (another sentence's) in 10% of the sentences."""
    rng = random.Random(seed)
    pool = [quad for example in examples for quad in example]
    predictions = []
    for example in examples:
        found = []
        for quad in example:
            draw = rng.random()
            if draw < 0.1:
                continue
            quad = (
                list(quad)
                if draw >= 0.2
                else [quad[0], quad[1], rng.choice(["positive", "negative", "neutral"]), quad[3]]
            )
            found.append(quad)
            if rng.random() < 0.05:
                found.append(list(quad))
        if rng.random() < 0.1:
            found.append(list(rng.choice(pool)))
        predictions.append(found)
    return predictions


def field_loop(predictions: list, references: list) -> dict[str, float]:
    """ABSA-QUAD's compute_f1_scores, from its rule: a predicted tuple is a hit when it is in its
    sentence's gold list (each repeat counts); pooled precision, recall and F1."""
    hits = predicted = gold = 0
    for tuples, gold_tuples in zip(predictions, references):
        predicted += len(tuples)
        gold += len(gold_tuples)
        for item in tuples:
            if item in gold_tuples:
                hits += 1
    precision = hits / predicted if predicted else 0.0
    recall = hits / gold if gold else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": 2 * precision * recall / (precision + recall) if hits else 0.0,
    }


def replicated(examples: list, predictions: list, size: int) -> list[str]:
    """The corpus repeated until it holds `size` gold tuples, one JSON line per sentence."""
    copies = math.ceil(size / sum(map(len, examples)))
    lines = [json.dumps([p, g]) for p, g in zip(predictions, examples)]
    return lines * copies


def fresh(lines: list[str]) -> tuple[list, list]:
    """(predictions, references) read from the lines: new objects, as a file's parser makes them."""
    rows = [json.loads(line) for line in lines]
    return [row[0] for row in rows], [row[1] for row in rows]


def tuples_shape(directory: Path, size: int, repeat: int) -> None:
    from opinion_metrics import sentiment_tuple_prf

    examples = load_quads(directory)
    predictions = perturbed(examples)
    lines = replicated(examples, predictions, size)
    runs = {
        "ABSA-QUAD's loop (compute_f1_scores' rule)": field_loop,
        'library, counting="membership"': lambda p, g: sentiment_tuple_prf(
            p, g, elements=ELEMENTS, counting="membership"
        ),
        "library, default (exact, one to one, 3 projections)": lambda p, g: sentiment_tuple_prf(
            p, g, elements=ELEMENTS
        ),
        'library, match="overlap"': lambda p, g: sentiment_tuple_prf(p, g, elements=ELEMENTS, match="overlap"),
    }
    best: dict[str, float] = {}
    results = {}
    for _ in range(repeat):  # interleaved: each contestant meets the machine as the others do
        for label, run in runs.items():
            corpus = fresh(lines)
            gc.collect()
            start = time.perf_counter()
            results[label] = run(*corpus)
            best[label] = min(best.get(label, math.inf), time.perf_counter() - start)
            del corpus
    loop, membership = results[next(iter(runs))], results['library, counting="membership"']
    for key in ("precision", "recall", "f1"):  # the same numbers: the ratios compare equal work
        assert math.isclose(loop[key], membership[key], rel_tol=1e-12), (key, loop[key], membership[key])
    sentences, tuples = len(lines), len(lines) // len(examples) * sum(map(len, examples))
    baseline = best[next(iter(runs))]
    print(f"{'sentiment_tuple_prf (ASQP rest15 + rest16)':<54}{'seconds':>9}{'/loop':>8}")
    for label, seconds in best.items():
        print(f"{label:<54}{seconds:>9.3f}{seconds / baseline:>7.2f}x")
    print(
        f"{sentences:,} sentences, {tuples:,} gold tuples (the {len(examples):,} sentences repeated), best of "
        f"{repeat}, each run on a fresh copy read from JSON Lines. Targets: membership <= 1x the loop, the default "
        f"<= 3x. membership == the loop's values (asserted: P {loop['precision']:.4f}, R {loop['recall']:.4f}).\n"
    )
