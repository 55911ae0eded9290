"""The CPUs this process may use (worker pools size themselves by it)."""

from __future__ import annotations

import os


def available_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1
