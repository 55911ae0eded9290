"""Do two versions of opinion-metrics give the same values, bit for bit, on the benchmark's shapes?

    python scripts/same_values.py ../other-checkout/src          # this checkout against another
    python scripts/same_values.py ../other/src --data ../shared/data --sample 3

Each version runs in its own process (PYTHONPATH: the other's src folder, or this checkout's)
and prints every value of a fixed list of calls through the public API
(`from opinion_metrics import ...`): every family on the movie reviews (each match mode,
averaging, top-k, presence, intervals, per-example values; the embedding families on a part,
with the default model), the keyphrase shape (documents with
their own gold lists) and the aspect family on the tourism reviews. Floats are compared by
their exact representation (`float.hex`). Exit status 0: equal; 1: the first calls that differ
are listed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

CALLS = r"""
import csv, json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from benchmarks.common import load_movie_reviews
from benchmarks.keyphrase import keyphrase_corpus
import opinion_metrics as om

data, sample = Path(sys.argv[1]), int(sys.argv[2])
corpus = load_movie_reviews(data / "movie_reviews", sample)
predictions, scores, references, texts = corpus.predictions, corpus.scores, corpus.references, corpus.texts
keyphrase_predictions, keyphrase_references = keyphrase_corpus(20_000 // sample)
intervals = {"confidence_level": 0.95, "n_resamples": 200}


def exact(value):
    if isinstance(value, float):
        return value.hex()
    if isinstance(value, dict):
        return {key: exact(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [exact(item) for item in value]
    return value


out = {}
for match in ("exact", "substring", "token"):
    for average in ("macro", "micro"):
        for top_k in (None, 5, "O"):
            out[f"keyword_prf {match} {average} {top_k}"] = om.keyword_prf(
                predictions, references, match=match, average=average, top_k=top_k
            )
    out[f"keyword_prf {match} stemmed"] = om.keyword_prf(predictions, references, match=match, stemmer="porter")
    out[f"keyword_prf {match} keyphrase"] = om.keyword_prf(keyphrase_predictions, keyphrase_references, match=match)
    for presence in ("present", "absent"):
        out[f"keyword_prf {match} {presence}"] = om.keyword_prf(
            predictions, references, texts=texts, presence=presence, match=match, return_per_example=True
        )
    out[f"weighted_keyword_prf {match}"] = om.weighted_keyword_prf(
        predictions, scores, references, match=match, return_per_example=True
    )
out["keyword_prf intervals"] = om.keyword_prf(predictions, references, **intervals)
out["keyword_prf poisson"] = om.keyword_prf(predictions, references, bootstrap="poisson", **intervals)
out["keyword_prf per example"] = om.keyword_prf(predictions, references, return_per_example=True)
out["weighted_keyword_prf intervals"] = om.weighted_keyword_prf(predictions, scores, references, k=10, **intervals)
out["sentiment_appropriateness"] = om.sentiment_appropriateness(
    predictions[: 4000 // sample], references[: 4000 // sample], texts=texts[: 4000 // sample], **intervals
)
out["keyword_diversity"] = om.keyword_diversity(predictions, model=None, **intervals)
few = slice(0, 2000 // sample)  # the models: embeddings of a few thousand distinct keywords
out["semantic_keyword_prf"] = om.semantic_keyword_prf(predictions[few], references[few], return_per_example=True)
out["keyword_diversity with a model"] = om.keyword_diversity(predictions[few])
quarter = len(predictions) // 4  # the first two models' predictions of the same reviews
out["compare_systems"] = om.compare_systems(
    "keyword_prf", predictions[:quarter], predictions[quarter : 2 * quarter], references[:quarter], **intervals
)
state = om.MetricState("keyword_prf", bootstrap="poisson", **intervals)
state.update(predictions=predictions, references=references)
out["state"] = state.compute()
with open(data / "tourism_reviews_vi" / "train.csv", encoding="utf-8") as lines:
    rows = list(csv.DictReader(lines))
aspects = [name for name in rows[0] if name not in ("Review", "review")]
ratings = [[int(row[name]) for name in aspects] for row in rows]
shifted = [[min(5, rating + 1) if rating else 0 for rating in row] for row in ratings]
out["aspect_sentiment_score"] = om.aspect_sentiment_score(shifted, ratings, aspects=aspects, **intervals)
print(json.dumps(exact(out)))
"""


def values(pythonpath: str | None, data: Path, sample: int) -> dict:
    """The calls' values under `pythonpath` (None: this checkout's src)."""
    environment = {**os.environ, "PYTHONPATH": pythonpath or str(REPO / "src")}
    result = subprocess.run(
        [sys.executable, "-c", CALLS, str(data), str(sample), str(REPO / "scripts")],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )
    if result.returncode:
        raise SystemExit(f"the calls failed under PYTHONPATH={pythonpath}:\n{result.stderr}")
    return json.loads(result.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", help="the src folder of the other version (its C helper built in place)")
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--sample", type=int, default=1, help="every n-th review (default 1: all)")
    args = parser.parse_args(argv)
    this, other = values(None, args.data, args.sample), values(args.other, args.data, args.sample)
    differing = [call for call in this if this[call] != other.get(call)] + [call for call in other if call not in this]
    print(f"{len(this)} calls, {len(differing)} differ" + "".join(f"\n  {call}" for call in differing[:20]))
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
