"""Is this version as fast as another on the benchmark's shapes? Library calls timed A/B.

    python scripts/same_speed.py ../v0.3.0/src                # this checkout against another
    python scripts/same_speed.py ../v0.3.0/src --rounds 8 --only substring,token

Each round runs each version in a process of its own (PYTHONPATH: the other's src folder, or
this checkout's), alternating which goes first, and times a fixed list of public calls: the
lexical families on the movie reviews (each match mode, micro top-k, scores, presence,
intervals, Poisson), keyword_diversity without a model, the keyphrase shape (50,000 documents
of their own phrases) and the aspect family on the tourism reviews. Each call is timed cold
(the prepared corpora and relations cleared; best of 3) and warm (best of 5); the table gives
the best over the rounds and the ratio this / other (above 1.05: more than 5% slower).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CALLS = r"""
import csv, json, os, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from benchmarks.common import load_movie_reviews
from benchmarks.keyphrase import keyphrase_corpus
import opinion_metrics as om

try:
    from opinion_metrics.core.corpus_cache import clear_prepared_corpora
    from opinion_metrics.core.relations import clear_lexical_caches
except ImportError:  # 0.3.0's flat layout
    from opinion_metrics.preparation import clear_prepared_corpora
    from opinion_metrics.matching import clear_lexical_caches

data = Path(sys.argv[1])
corpus = load_movie_reviews(data / "movie_reviews", 1)
P, S, R, T = corpus.predictions, corpus.scores, corpus.references, corpus.texts
KP, KR = keyphrase_corpus(50_000)
with open(data / "tourism_reviews_vi" / "train.csv", encoding="utf-8") as lines:
    rows = list(csv.DictReader(lines))
aspects = [name for name in rows[0] if name not in ("Review", "review")]
ratings = [[int(row[name]) for name in aspects] for row in rows]
shifted = [[min(5, rating + 1) if rating else 0 for rating in row] for row in ratings]
intervals = {"confidence_level": 0.95, "n_resamples": 1000}
calls = {
    "movies, keyword_prf exact": lambda: om.keyword_prf(P, R),
    "movies, keyword_prf substring": lambda: om.keyword_prf(P, R, match="substring"),
    "movies, keyword_prf token": lambda: om.keyword_prf(P, R, match="token"),
    "movies, keyword_prf micro top_k=5": lambda: om.keyword_prf(P, R, average="micro", top_k=5),
    "movies, weighted_keyword_prf k=5": lambda: om.weighted_keyword_prf(P, S, R, k=5),
    "movies, presence='present'": lambda: om.keyword_prf(P, R, texts=T, presence="present"),
    "movies, intervals": lambda: om.keyword_prf(P, R, **intervals),
    "movies, Poisson intervals": lambda: om.keyword_prf(P, R, bootstrap="poisson", **intervals),
    "movies, keyword_diversity": lambda: om.keyword_diversity(P, model=None),
    "keyphrase, exact": lambda: om.keyword_prf(KP, KR),
    "keyphrase, substring": lambda: om.keyword_prf(KP, KR, match="substring"),
    "keyphrase, token": lambda: om.keyword_prf(KP, KR, match="token"),
    "tourism, aspect_sentiment_score": lambda: om.aspect_sentiment_score(shifted, ratings, aspects=aspects),
}
only = [part for part in sys.argv[3].split(",") if part]
times = {}
for name, call in calls.items():
    if only and not any(part in name for part in only):
        continue
    cold = []
    for _ in range(3):
        clear_prepared_corpora()
        clear_lexical_caches()
        start = time.perf_counter()
        call()
        cold.append(time.perf_counter() - start)
    warm = []
    for _ in range(5):
        start = time.perf_counter()
        call()
        warm.append(time.perf_counter() - start)
    times[f"{name}, cold"], times[name] = min(cold), min(warm)
print(json.dumps(times))
"""


def timed(pythonpath: str, data: Path, only: str) -> dict[str, float]:
    """One process's best times (seconds) of the calls under `pythonpath`."""
    environment = {**os.environ, "PYTHONPATH": pythonpath, "HF_EVALUATE_OFFLINE": "1"}
    command = [sys.executable, "-c", CALLS, str(data), str(REPO / "scripts"), only]
    result = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
    if result.returncode:
        raise SystemExit(f"the calls failed under PYTHONPATH={pythonpath}:\n{result.stderr}")
    return json.loads(result.stdout.splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", help="the src folder of the other version (its C helper built in place)")
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--rounds", type=int, default=4, help="processes per version, alternating (default 4)")
    parser.add_argument("--only", default="", help="comma-separated parts of call names to time (default: all)")
    args = parser.parse_args(argv)
    paths = {"this": str(REPO / "src"), "other": args.other}
    best: dict[str, dict[str, float]] = {"this": {}, "other": {}}
    for round_ in range(args.rounds):
        for version in ("this", "other") if round_ % 2 == 0 else ("other", "this"):
            for call, seconds in timed(paths[version], args.data, args.only).items():
                best[version][call] = min(seconds, best[version].get(call, seconds))
        print(f"round {round_ + 1} of {args.rounds}", file=sys.stderr, flush=True)
    print(f"{'call (best of ' + str(args.rounds) + ' rounds)':46} {'other ms':>9} {'this ms':>9} {'this/other':>10}")
    for call, seconds in best["this"].items():
        other = best["other"][call]
        print(f"{call:46} {other * 1e3:9.1f} {seconds * 1e3:9.1f} {seconds / other:10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
