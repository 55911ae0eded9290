"""The optional C helper and the one switch between it and its pure-Python twins.

setup.py compiles the C files beside this one into one extension, `_speedups`, on Python
3.11's limited API (one abi3 wheel per platform). Each C function has a twin in Python and
numpy next to its caller (`core.encoding`, `core.relations`, `core.containment`,
`core.documents`, `core.corpus_cache`, `core.tuple_matching`); both give the same results (tests/core).

The switch, read at every call of `helper()`, so that setting it takes effect at once:

    OPINION_METRICS_IMPLEMENTATION=python  the twins, even where the helper is built
    OPINION_METRICS_IMPLEMENTATION=c       the helper; an ImportError where it is not built
    unset or "auto"                        the helper where it is built and loads, else the twins

The tests force each side with it (`monkeypatch.setenv`), never by patching a module.
"""

from __future__ import annotations

import importlib
import os
import sysconfig
import warnings
from types import ModuleType

VARIABLE = "OPINION_METRICS_IMPLEMENTATION"
CHOICES = ("auto", "c", "python")
VERSION = 7  # the VERSION of the C files that the twins' callers expect


def _choice() -> str:
    choice = os.environ.get(VARIABLE) or "auto"
    if choice not in CHOICES:
        raise ValueError(f"{VARIABLE} must be one of {', '.join(CHOICES)}, got {choice!r}")
    return choice


def _load() -> ModuleType | None:
    """The built helper, or None: where it was not built (no compiler), on a free-threaded
    Python (it relies on the GIL), and (with a warning) where it fails to load or was built
    from another version of its source."""
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        return None
    try:  # (`from . import` would report a missing helper as a circular import)
        speedups = importlib.import_module(f"{__name__}._speedups")
    except ModuleNotFoundError:
        return None
    except ImportError as error:
        warnings.warn(f"opinion_metrics: the C helper did not load ({error}); running without it", stacklevel=2)
        return None
    if getattr(speedups, "VERSION", None) != VERSION:
        warnings.warn("opinion_metrics: the C helper is from another version; reinstall to rebuild it", stacklevel=2)
        return None
    return speedups


_LOADED = _load()


def helper() -> ModuleType | None:
    """The C helper, or None where the twins run (see the module's docstring)."""
    choice = _choice()
    if choice == "python":
        return None
    if choice == "c" and _LOADED is None:
        raise ImportError(
            f"{VARIABLE}=c, but the C helper is not built here (reinstall with a C compiler and the Python "
            "headers, or unset it)"
        )
    return _LOADED


helper()  # a wrong or unmet choice is an error at import
