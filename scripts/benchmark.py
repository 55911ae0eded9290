"""Speed of opinion-metrics against naive loops and against resampling baselines, measured in one run.

The data is ../shared/data/movie_reviews: every review of 5 movies, the keywords of 4
models (33,384 examples), each review scored against its movie's gold list (272-449
keywords). The naive baselines are written the way the source notebooks evaluate: per
review, normalize both lists, then test every (prediction, gold) pair; they compute the
same defined values (asserted), so the ratios compare equal work. Fast paths are timed best
of --repeat (the machine may be shared); the slow baselines run once.

    python scripts/benchmark.py                        # everything (about 40 minutes)
    python scripts/benchmark.py --families lexical     # the lexical families only
    python scripts/benchmark.py --families intervals presence interactive aspects
    python scripts/benchmark.py --sample 10            # a quick look: every 10th review, synthetic sizes / 10
    python scripts/benchmark.py --families engines --rows 200000   # processes, Ray Data, Spark (2M rows default)
    python scripts/benchmark.py --families long        # a long document, and a few among short ones
    python scripts/benchmark.py --families realshaped --engine-data /tmp/real   # 1M real-shaped rows, every engine
    python scripts/benchmark.py --families tuples      # sentiment tuples: 1M ASQP quads against ABSA-QUAD's loop
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")

from benchmarks.aspects import aspects
from benchmarks.common import MODELS, REPO, load_movie_reviews
from benchmarks.diversity import diversity
from benchmarks.engines import engine_run, engines
from benchmarks.interactive import interactive
from benchmarks.intervals import intervals
from benchmarks.keyphrase import diverse_shape, keyphrase_shape
from benchmarks.kpeval import kpeval_conventions
from benchmarks.lexical import lexical
from benchmarks.long_documents import long_documents
from benchmarks.notebooks import notebooks
from benchmarks.presence import presence
from benchmarks.realshaped import real_run, real_shaped
from benchmarks.scaling import scaling
from benchmarks.semantic import semantic, semantic_diverse
from benchmarks.sentiment import sentiment
from benchmarks.tuples import tuples_shape

FAMILIES = (
    "lexical",
    "intervals",
    "presence",
    "interactive",
    "aspects",
    "diversity",
    "semantic",
    "sentiment",
    "scaling",
    "keyphrase",
    "long",
    "notebooks",
    "kpeval",
    "engines",
    "realshaped",
    "tuples",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "movie_reviews")
    parser.add_argument("--sample", type=int, default=1, help="keep every n-th review (default: all)")
    parser.add_argument("--repeat", type=int, default=3, help="best of n for the fast paths (default 3)")
    parser.add_argument(
        "--families",
        nargs="+",
        default=list(FAMILIES),
        choices=FAMILIES,
        help="what to time (default: all; semantic's naive loop takes ~15 minutes on 2 CPU cores)",
    )
    parser.add_argument(
        "--baseline-resamples",
        type=int,
        default=3,
        help="resamples of the scipy bootstrap baseline actually timed, then scaled to 1,000 (default 3)",
    )
    parser.add_argument("--movie", default="IndianaJones", help="the movie of 'interactive' (default IndianaJones)")
    parser.add_argument("--model", default="base", choices=MODELS, help="the model of 'interactive' (default base)")
    parser.add_argument("--profile", action="store_true", help="'interactive': also print a cProfile of the library")
    parser.add_argument("--aspect-examples", type=int, help="rows of the aspect arrays (default 1,000,000 / --sample)")
    parser.add_argument(
        "--scaling-sizes", type=int, nargs="+", help="lexical scaling sizes (default 10^4, 10^5, 10^6, / --sample)"
    )
    parser.add_argument(
        "--keyphrase-sizes",
        type=int,
        nargs="+",
        help="keyphrase: documents of the diverse shape (default 12,500 to 200,000, doubling, / --sample)",
    )
    parser.add_argument(
        "--long-predictions",
        type=int,
        help="long: predictions of the long document (default 100,000 / --sample; gold keywords: a seventh)",
    )
    parser.add_argument(
        "--semantic-shapes",
        nargs="+",
        default=["movies", "diverse"],
        choices=["movies", "diverse"],
        help="semantic: the movie data against seed 000's loop, and/or the diverse keyphrase shape",
    )
    parser.add_argument(
        "--semantic-documents", type=int, help="semantic: diverse documents (default 50,000 / --sample)"
    )
    parser.add_argument("--device", default="cpu", help="semantic, diverse shape: where the model runs (cpu, cuda)")
    parser.add_argument(
        "--precisions", nargs="+", default=["float32"], help="semantic, diverse shape: precisions of the library"
    )
    parser.add_argument(
        "--loop-documents", type=int, default=500, help="semantic: documents the per-document loop times"
    )
    parser.add_argument("--rows", type=int, help="engines: synthetic rows (default 2,000,000 / --sample)")
    parser.add_argument("--workers", type=int, default=2, help="engines: processes / CPUs per engine (default 2)")
    parser.add_argument("--engine-data", type=Path, help="engines: reuse (or write) the Parquet corpus in this folder")
    parser.add_argument(
        "--engine-intervals", action="store_true", help="engines: with 1,000 Poisson resamples (default: point values)"
    )
    parser.add_argument(
        "--without-c-helper",
        action="store_true",
        help="time the library as installed without a C compiler (the helper's Python and numpy twins)",
    )
    parser.add_argument(
        "--replicas", type=int, default=30, help="realshaped: copies of the 33,384 rows (default 30: 1,001,520 rows)"
    )
    parser.add_argument("--real-runs", nargs="+", help="realshaped: only these runs (cli-file, ray, spark, dask, ...)")
    parser.add_argument(
        "--absa-data", type=Path, default=REPO.parent / "shared" / "data" / "absa", help="tuples: the ABSA data folder"
    )
    parser.add_argument("--tuple-count", type=int, help="tuples: gold tuples (default 1,000,000 / --sample)")
    parser.add_argument("--engine-run", help=argparse.SUPPRESS)  # internal: one engine, timed in a fresh process
    parser.add_argument("--engine-real-run", help=argparse.SUPPRESS)  # internal: one real-shaped run
    args = parser.parse_args(argv)
    if args.without_c_helper:  # here and in the processes it starts (--workers, engines)
        os.environ["OPINION_METRICS_IMPLEMENTATION"] = "python"
    if args.engine_real_run:
        print(json.dumps(real_run(args.engine_real_run, args.engine_data, args.workers)))
        return 0
    if args.engine_run:
        report = engine_run(args.engine_run, args.engine_data, args.workers, args.engine_intervals)
        print(json.dumps(report))
        return 0
    if args.rows is None:
        args.rows = 2_000_000 // args.sample
    if args.tuple_count is None:
        args.tuple_count = 1_000_000 // args.sample
    if args.aspect_examples is None:
        args.aspect_examples = 1_000_000 // args.sample
    if args.scaling_sizes is None:
        args.scaling_sizes = [size // args.sample for size in (10_000, 100_000, 1_000_000)]
    if args.long_predictions is None:
        args.long_predictions = 100_000 // args.sample
    if args.keyphrase_sizes is None:
        args.keyphrase_sizes = [size // args.sample for size in (12_500, 25_000, 50_000, 100_000, 200_000)]
    families = [family for family in FAMILIES if family in args.families]
    if set(families) - {"scaling", "aspects", "engines", "realshaped", "long", "tuples"} and not args.data.exists():
        print(f"movie reviews not found at {args.data}; pass --data", file=sys.stderr)
        return 2
    if set(families) - {"scaling", "aspects", "keyphrase", "engines", "realshaped", "long", "tuples"}:
        corpus = load_movie_reviews(args.data, args.sample)
        print(f"{len(corpus.predictions)} examples (5 movies x 4 models), gold lists of 272-449 keywords\n")
    for family in families:
        if family == "lexical":
            lexical(corpus, args.repeat)
        elif family == "intervals":
            intervals(corpus, args.repeat, args.baseline_resamples)
        elif family == "presence":
            presence(corpus, args.repeat)
        elif family == "interactive":
            interactive(corpus, args.repeat, args.movie, args.model, args.profile)
        elif family == "aspects":
            aspects(args.aspect_examples, args.repeat)
        elif family == "diversity":
            diversity(corpus, args.repeat)
        elif family == "semantic":
            if "movies" in args.semantic_shapes:
                semantic(corpus.predictions, corpus.references)
            if "diverse" in args.semantic_shapes:
                semantic_diverse(
                    args.data,
                    args.semantic_documents or 50_000 // args.sample,
                    args.repeat,
                    args.device,
                    args.precisions,
                    args.loop_documents,
                )
        elif family == "sentiment":
            sentiment(corpus.predictions, corpus.references, corpus.texts)
        elif family == "keyphrase":
            keyphrase_shape(100_000 // args.sample, args.repeat)
            diverse_shape(args.keyphrase_sizes, args.repeat, args.data)
        elif family == "long":
            long_documents(args.long_predictions, 50_000 // args.sample, 5, 20_000 // args.sample, args.repeat)
        elif family == "notebooks":
            notebooks(corpus, args.repeat, args.movie, args.model)
        elif family == "kpeval":
            kpeval_conventions(corpus, args.repeat, args.movie, args.model)
        elif family == "scaling":
            scaling(args.scaling_sizes, 10_000 // args.sample)
        elif family == "tuples":
            if not (args.absa_data / "asqp").exists():
                print(f"ABSA data not found at {args.absa_data}; pass --absa-data", file=sys.stderr)
                return 2
            tuples_shape(args.absa_data, args.tuple_count, args.repeat)
        elif family == "realshaped":
            real_shaped(args.data, args.engine_data, args.replicas, args.workers, args.real_runs)
        else:
            engines(args.rows, args.workers, args.engine_data, args.engine_intervals)
    return 0


if __name__ == "__main__":
    sys.exit(main())
