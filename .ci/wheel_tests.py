#!/usr/bin/env python3
"""Run the library's fast tests against the installed opinion-metrics (a wheel installed
alone in a fresh virtualenv), never against the checkout's src/: the test files are copied
to a temporary folder and run from there. Used by the release workflow (cibuildwheel's
test-command) and by tests/test_packaging.py.

    python .ci/wheel_tests.py REPOSITORY
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# The library's own tests (no evaluate, Spaces, docs or engines): the C helper against its
# twins and the definitions, every family, states and resampling.
TESTS = (
    "test_preparation.py",
    "test_keyword_prf.py",
    "test_weighted_keyword_prf.py",
    "test_matching.py",
    "test_fast_paths.py",
    "test_differential.py",
    "test_relation_cache.py",
    "test_aspects.py",
    "test_resampling.py",
)
HELPERS = ("conftest.py", "reference_impl.py")


def main(repository: Path) -> int:
    with tempfile.TemporaryDirectory() as folder:
        tests = Path(folder) / "tests"
        tests.mkdir()
        for name in TESTS + HELPERS:
            shutil.copyfile(repository / "tests" / name, tests / name)
        check = (
            "import os, opinion_metrics, opinion_metrics.preparation as p; "
            "print('testing', opinion_metrics.__version__, 'from', os.path.dirname(opinion_metrics.__file__), "
            "'with the C helper' if p._speedups else 'without the C helper'); "
            "assert 'site-packages' in opinion_metrics.__file__; "
            "assert p._speedups or os.environ.get('OPINION_METRICS_REQUIRE_C_HELPER') != '1'"
        )
        subprocess.run([sys.executable, "-c", check], cwd=folder, check=True)
        command = [sys.executable, "-m", "pytest", "-q", "-m", "not slow", "-p", "no:cacheprovider", "-o", "addopts="]
        return subprocess.run(
            [*command, *TESTS], cwd=tests, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        ).returncode


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]).resolve()))
