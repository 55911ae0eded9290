"""Bounded memory (issue 10 items 11 and 12): peak Python allocations, measured with
tracemalloc, stay under stated bounds whatever `k` is and however long a gold keyword is.

Each case runs in a fresh interpreter whose address space is capped (RLIMIT_AS), so that a
regression fails with a MemoryError there instead of exhausting the machine; the inputs are
built before tracing starts, so only the metric's own allocations count.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow

resource = pytest.importorskip("resource")  # POSIX only

MB = 2**20
ADDRESS_SPACE = 3 * 2**29  # 1.5 GB; the interpreter with numpy and scipy takes about 0.3 GB

HUGE_K = """
from opinion_metrics import map_at_k, ndcg_at_k, weighted_keyword_prf
predictions = [["fraud", "scam", "war"], ["poverty"]]
references = [["fraud", "poverty", "scam"], ["war"]]
scores = [[0.9, 0.5, 0.1], [1.0]]
def run():
    weighted_keyword_prf(predictions, scores, references, k=10**9, return_per_example=True)
    weighted_keyword_prf(predictions, scores, references, k=10**9, relevance="binary")
    ndcg_at_k(predictions, references, k=10**9)
    map_at_k(predictions, references, k=10**9)
"""

LONG_GOLD = """
import random
from opinion_metrics import keyword_prf
rng = random.Random(0)
words = ["social", "satire", "war", "family", "poverty", "acting", "plot", "scam", "fraud", "music"]
text, size = [], 0
while size < {megabytes} * 2**20:
    text.append(rng.choice(words) + str(rng.randrange(100)))
    size += len(text[-1]) + 1
gold = " ".join(text)
# 2,000 distinct predictions of 1 to 20 characters, half of them cut from the gold keyword:
# the lookup strategy would hash every substring of the gold keyword of each of 20 lengths.
chosen = set()
while len(chosen) < 2000:
    width = rng.randint(1, 20)
    if rng.random() < 0.5:
        start = rng.randrange(len(gold) - width)
        chosen.add(gold[start : start + width].strip() or "x")
    else:
        chosen.add("".join(rng.choice("abcdefghij") for _ in range(width)))
predictions = sorted(chosen)
assert len(predictions) == 2000
def run():
    keyword_prf([predictions], [[gold]], match="substring")
    keyword_prf([[p] for p in predictions], [[gold]] * len(predictions), match="token")
"""

MEASURE = """
import json, resource, tracemalloc
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
{setup}
tracemalloc.start()
try:
    run()
except MemoryError:
    print(json.dumps({{"peak": None}}))
else:
    print(json.dumps({{"peak": tracemalloc.get_traced_memory()[1]}}))
"""


def peak_allocations(setup: str) -> int | None:
    """Peak traced bytes of `run()` defined by `setup`, or None after a MemoryError."""
    code = MEASURE.format(limit=ADDRESS_SPACE, setup=textwrap.dedent(setup))
    # One BLAS thread: thread pools reserve address space in proportion to the cores.
    threads = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    environment = {**os.environ, **threads}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, env=environment)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])["peak"]


def test_huge_k_costs_what_the_data_costs():
    """nDCG@k and MAP@k with k = 10**9 on two tiny examples: under 20 MB (a list of k
    discounts would be 8 GB)."""
    peak = peak_allocations(HUGE_K)
    assert peak is not None, "MemoryError"
    print(f"peak {peak / MB:.1f} MB")
    assert peak < 20 * MB, f"peak {peak / MB:.1f} MB"


@pytest.mark.parametrize("megabytes", [1, 3])
def test_long_gold_keyword_memory_is_bounded(megabytes):
    """2,000 predictions against one gold keyword of 1 MB (3 MB), in one example (substring
    matching) or in 2,000 sharing the gold list (token matching): under 100 MB (the gold keyword
    itself is 1 (3) MB; issue 10 measured 828 MB at 1 MB and a MemoryError at 3 MB)."""
    peak = peak_allocations(LONG_GOLD.format(megabytes=megabytes))
    assert peak is not None, f"MemoryError with the address space capped at {ADDRESS_SPACE / 2**30:.1f} GB"
    print(f"peak {peak / MB:.1f} MB")
    assert peak < 100 * MB, f"peak {peak / MB:.1f} MB"
