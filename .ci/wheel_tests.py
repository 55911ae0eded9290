#!/usr/bin/env python3
"""Run the library's fast tests against the installed opinion-metrics (a wheel installed
alone in a fresh virtualenv), never against the checkout's src/: the test files are copied
to a temporary folder and run from there. Used by the release workflow (cibuildwheel's
test-command) and by tests/project/test_packaging.py.

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
    "core/test_preparation.py",
    "families/test_keyword_prf.py",
    "families/test_weighted_keyword_prf.py",
    "core/test_matching.py",
    "core/test_fast_paths_normalization.py",
    "core/test_fast_paths_encoding.py",
    "core/test_fast_paths_matching.py",
    "core/test_fast_paths_relations.py",
    "core/test_fast_paths_documents.py",
    "core/test_kept_corpora.py",
    "core/test_c_helper.py",
    "core/test_differential_options.py",
    "core/test_differential_shapes.py",
    "core/test_differential_white_space.py",
    "core/test_relation_cache.py",
    "core/test_long_documents.py",
    "families/test_aspects.py",
    "stats/test_resampling.py",
)
# What they import from the root of tests/ (next to conftest.py, importable from every test).
HELPERS = ("conftest.py", "reference_impl.py", "fast_path_cases.py", "differential_cases.py")


def main(repository: Path) -> int:
    with tempfile.TemporaryDirectory() as folder:
        tests = Path(folder) / "tests"
        for name in TESTS + HELPERS:
            (tests / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(repository / "tests" / name, tests / name)
        check = (
            "import os, opinion_metrics; from opinion_metrics._native import helper; "
            "print('testing', opinion_metrics.__version__, 'from', os.path.dirname(opinion_metrics.__file__), "
            "'with the C helper' if helper() else 'without the C helper'); "
            "assert 'site-packages' in opinion_metrics.__file__; "
            "assert helper() or os.environ.get('OPINION_METRICS_REQUIRE_C_HELPER') != '1'"
        )
        subprocess.run([sys.executable, "-c", check], cwd=folder, check=True)
        command = [sys.executable, "-m", "pytest", "-q", "-m", "not slow", "-p", "no:cacheprovider", "-o", "addopts="]
        return subprocess.run(
            [*command, *TESTS], cwd=tests, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        ).returncode


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]).resolve()))
