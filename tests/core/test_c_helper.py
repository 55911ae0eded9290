"""The C helper: loaded where it is required, left out when told to, absent or from another
version; the switch between it and its Python twins; its kernels refuse rows that do not fit.
(Each of its functions against its twin and the definition: tests/core/test_fast_paths_*.py;
whole corpora through every path: tests/core/test_differential_*.py.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import IMPLEMENTATIONS

from opinion_metrics import _native
from opinion_metrics._native import VARIABLE as IMPLEMENTATION
from opinion_metrics._native import helper


def test_the_c_kernels_refuse_rows_that_do_not_fit():
    speedups = helper()
    if speedups is None:
        pytest.skip("the C helper is not built here (no compiler)")
    ids, offsets = np.array([0, 1, 5], dtype=np.int64), np.array([0, 1, 3], dtype=np.int64)
    with pytest.raises(ValueError, match="out of range"):
        speedups.first_occurrences(ids, offsets, 5)
    with pytest.raises(ValueError, match="do not cover"):
        speedups.first_occurrences(ids, offsets[:2], 6)
    with pytest.raises(ValueError, match="decrease"):
        speedups.first_occurrences(ids, np.array([0, 2, 1, 3], dtype=np.int64), 6)
    lists = np.array([0, 3], dtype=np.int64)
    with pytest.raises(ValueError, match="a list is out of range"):
        speedups.exact_hits(ids, offsets, ids, offsets, lists, None, 6)
    with pytest.raises(TypeError, match="native int64"):
        speedups.first_occurrences(ids.astype(np.int32), offsets, 6)
    with pytest.raises(TypeError, match="native int64"):  # float cutoffs are not read as integers
        speedups.exact_hits(ids, offsets, ids, offsets, np.zeros(2, np.int64), np.ones(2), 6)
    with pytest.raises(TypeError, match="native int64"):  # misaligned
        speedups.first_occurrences(np.frombuffer(b"\0" + ids.tobytes(), dtype=np.int64, offset=1), offsets, 6)
    with pytest.raises(ValueError, match="one relation row per id"):
        speedups.related_edges(ids, offsets, ids, offsets, lists[:1] * 0, np.arange(3), np.arange(2), 6, 0)
    with pytest.raises(TypeError):  # None only for the cut-offs
        speedups.first_occurrences(None, offsets, 6)


def test_the_c_helper_is_loaded_where_it_is_required():
    """CI builds it (OPINION_METRICS_REQUIRE_C_HELPER=1): every fast-path test then runs both paths."""
    if os.environ.get("OPINION_METRICS_REQUIRE_C_HELPER") != "1":
        pytest.skip("not required here (set OPINION_METRICS_REQUIRE_C_HELPER=1, as CI does)")
    assert helper() is not None and helper().VERSION == _native.VERSION
    assert IMPLEMENTATIONS == ("c", "python")


def _python(code: str, **environment: str) -> subprocess.CompletedProcess:
    """`code` run by a fresh interpreter, with warnings shown, in this environment changed by
    `environment` (an empty value removes the variable)."""
    changed = {**os.environ, **environment}
    changed = {name: value for name, value in changed.items() if value}
    command = [sys.executable, "-W", "default", "-c", code]
    return subprocess.run(command, capture_output=True, text=True, env=changed, timeout=120)


HELPER_AND_F1 = "import opinion_metrics as om; print(om._native.helper(), om.keyword_prf([['a']], [['A']])['f1'])"


def test_the_library_runs_without_the_c_helper_when_told_to():
    result = _python(HELPER_AND_F1, OPINION_METRICS_IMPLEMENTATION="python")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["None", "1.0"]
    assert result.stderr == ""


def test_the_switch_takes_effect_at_once(monkeypatch):
    monkeypatch.setenv(IMPLEMENTATION, "python")
    assert helper() is None
    monkeypatch.setenv(IMPLEMENTATION, "auto")
    assert helper() is _native._LOADED
    monkeypatch.setenv(IMPLEMENTATION, "C++")
    with pytest.raises(ValueError, match=r"OPINION_METRICS_IMPLEMENTATION must be one of auto, c, python, got 'C\+\+'"):
        helper()


def test_a_required_c_helper_that_is_not_built_is_an_error_at_import(tmp_path):
    package = Path(_native.__file__).parents[1]
    shutil.copytree(
        package, tmp_path / "opinion_metrics", ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__")
    )
    result = _python("import opinion_metrics", PYTHONPATH=str(tmp_path), OPINION_METRICS_IMPLEMENTATION="c")
    assert result.returncode != 0
    assert "OPINION_METRICS_IMPLEMENTATION=c, but the C helper is not built here" in result.stderr


def test_a_package_without_the_c_helper_imports_silently(tmp_path):
    """As installed where no compiler was: the package's files without the helper."""
    package = Path(_native.__file__).parents[1]
    shutil.copytree(
        package, tmp_path / "opinion_metrics", ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__")
    )
    result = _python(HELPER_AND_F1, PYTHONPATH=str(tmp_path), OPINION_METRICS_IMPLEMENTATION="")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["None", "1.0"]
    assert result.stderr == ""  # no warning: a missing helper is the pure-Python package, not a fault


def test_a_c_helper_built_from_another_version_is_left_out_with_a_warning(monkeypatch):
    if helper() is None:
        pytest.skip("the C helper is not built here (no compiler)")
    monkeypatch.setattr(_native, "VERSION", _native.VERSION + 1)
    with pytest.warns(UserWarning, match="the C helper is from another version; reinstall"):
        assert _native._load() is None
