"""The optional C helper (src/opinion_metrics/_speedups.c); the metadata is in pyproject.toml.

The helper uses only Python 3.11's limited API, so one `cp311-abi3` wheel per platform
serves every later Python. Where it cannot be built (no compiler, no Python headers, a
free-threaded Python), the build goes on without it and makes a pure `py3-none-any`
wheel: the library runs the helper's twins in Python and numpy.

    OPINION_METRICS_PURE_PYTHON=1      leave the helper out (a pure wheel)
    OPINION_METRICS_REQUIRE_C_HELPER=1 a failed build is an error (CI, release wheels)
"""

import os
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

PURE = os.environ.get("OPINION_METRICS_PURE_PYTHON") == "1"
REQUIRED = os.environ.get("OPINION_METRICS_REQUIRE_C_HELPER") == "1"
if PURE and REQUIRED:
    sys.exit("OPINION_METRICS_PURE_PYTHON=1 and OPINION_METRICS_REQUIRE_C_HELPER=1 contradict each other: unset one")
FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))  # the limited API needs the GIL


class BuildFailed(Exception):
    pass


class OptionalBuildExt(build_ext):
    """build_ext whose failures (no compiler, no headers, a compile or link error) raise
    BuildFailed, so that setup is run again without the helper."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as error:  # distutils' platform and exec errors have no common base
            raise BuildFailed(error) from error

    def build_extension(self, extension: Extension) -> None:
        try:
            super().build_extension(extension)
        except Exception as error:
            raise BuildFailed(error) from error


def run_setup(with_helper: bool) -> None:
    if not with_helper:
        setup()
        return
    helper = Extension("opinion_metrics._speedups", ["src/opinion_metrics/_speedups.c"], py_limited_api=True)
    setup(
        ext_modules=[helper],
        cmdclass={"build_ext": OptionalBuildExt},
        options={"bdist_wheel": {"py_limited_api": "cp311"}},
    )


if PURE or (FREE_THREADED and not REQUIRED):
    run_setup(with_helper=False)
else:
    try:
        run_setup(with_helper=True)
    except BuildFailed as error:
        if REQUIRED:
            raise SystemExit(f"the C helper did not build (OPINION_METRICS_REQUIRE_C_HELPER=1): {error}") from error
        print(
            f"opinion-metrics: the C helper did not build ({error}); building the pure-Python package", file=sys.stderr
        )
        run_setup(with_helper=False)
