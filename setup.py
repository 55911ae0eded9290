"""The optional C helper (src/opinion_metrics/_speedups.c); everything else is in setup.cfg.
Without a compiler the build goes on without it, and the library does the same in Python.
OPINION_METRICS_PURE_PYTHON=1 leaves it out (a wheel for any platform and Python: the Spaces
ship one); OPINION_METRICS_REQUIRE_C_HELPER=1 (CI) makes a failed build an error."""

import os

from setuptools import Extension, setup

required = os.environ.get("OPINION_METRICS_REQUIRE_C_HELPER") == "1"
helper = Extension("opinion_metrics._speedups", ["src/opinion_metrics/_speedups.c"], optional=not required)
setup(ext_modules=[] if os.environ.get("OPINION_METRICS_PURE_PYTHON") == "1" else [helper])
