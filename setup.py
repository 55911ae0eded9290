"""The optional C helper (the C files of src/opinion_metrics/_native/); the metadata is in setup.cfg.

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
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_ext import build_ext

PURE = os.environ.get("OPINION_METRICS_PURE_PYTHON") == "1"
REQUIRED = os.environ.get("OPINION_METRICS_REQUIRE_C_HELPER") == "1"
if PURE and REQUIRED:
    sys.exit("OPINION_METRICS_PURE_PYTHON=1 and OPINION_METRICS_REQUIRE_C_HELPER=1 contradict each other: unset one")
FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))  # the limited API needs the GIL
WITH_HELPER = not PURE and (REQUIRED or not FREE_THREADED)


class OptionalBuildExt(build_ext):
    """build_ext that, where the helper cannot be built, goes on without it (an error with
    OPINION_METRICS_REQUIRE_C_HELPER=1)."""

    failed = False

    def run(self) -> None:
        try:
            super().run()
        except Exception as error:  # distutils' platform and exec errors have no common base
            self._without_helper(error)

    def build_extension(self, extension: Extension) -> None:
        if self.compiler.compiler_type == "unix":  # gcc, clang: a call outside the limited API is an error
            extension.extra_compile_args = [*extension.extra_compile_args, "-Werror=implicit-function-declaration"]
        try:
            super().build_extension(extension)
        except Exception as error:
            self._without_helper(error)

    @staticmethod
    def _without_helper(error: Exception) -> None:
        if REQUIRED:
            raise SystemExit(f"the C helper did not build (OPINION_METRICS_REQUIRE_C_HELPER=1): {error}") from error
        print(f"opinion-metrics: the C helper did not build ({error}); building without it", file=sys.stderr)
        OptionalBuildExt.failed = True


class WheelWithOrWithoutHelper(bdist_wheel):
    """A cp311-abi3 wheel with the helper, a pure py3-none-any one without it."""

    def run(self) -> None:
        if not self.skip_build:
            self.run_command("build")
        if OptionalBuildExt.failed:
            self.distribution.ext_modules = []
            self.root_is_pure, self.py_limited_api = True, False
        super().run()


NATIVE = "src/opinion_metrics/_native"
SOURCES = ["module", "common", "interning", "edges", "documents", "normalization", "containment", "snapshot", "tuple_matching", "tuples"]
helper = Extension(
    "opinion_metrics._native._speedups",
    [f"{NATIVE}/{name}.c" for name in SOURCES],
    depends=[f"{NATIVE}/common.h", f"{NATIVE}/documents.h"],
    py_limited_api=True,
)
setup(
    ext_modules=[helper] if WITH_HELPER else [],
    cmdclass={"build_ext": OptionalBuildExt, "bdist_wheel": WheelWithOrWithoutHelper},
    options={"bdist_wheel": {"py_limited_api": "cp311"}} if WITH_HELPER else {},
)
