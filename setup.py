"""The optional C helper (src/opinion_metrics/_speedups.c); everything else is in setup.cfg.
Without a compiler the build goes on without it, and the library does the same in Python."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("opinion_metrics._speedups", ["src/opinion_metrics/_speedups.c"], optional=True)])
