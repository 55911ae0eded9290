"""The GitHub Actions workflows (they cannot run here: they are parsed and checked): CI runs
what `.ci/run` runs on every supported Python; a tag builds, tests and publishes the release
by trusted publishing; every action is pinned to a commit."""

import configparser
import os
import re
import subprocess
import sys
import tomllib

import pytest
import yaml
from conftest import REPO

WORKFLOWS = REPO / ".github" / "workflows"
# The release's runners, each building its own architecture: (runner, cibuildwheel arch).
RELEASE_RUNNERS = {
    ("ubuntu-latest", "x86_64"): "linux",
    ("ubuntu-24.04-arm", "aarch64"): "linux",
    ("macos-15-intel", "x86_64"): "macos",
    ("macos-15", "arm64"): "macos",
    ("windows-latest", "AMD64"): "windows",
    ("windows-11-arm", "ARM64"): "windows",
}


def workflow(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))


def triggers(name: str) -> dict:
    loaded = workflow(name)
    return loaded.get("on", loaded.get(True))  # YAML 1.1 reads a bare `on` as True


def project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def setup_cfg() -> configparser.ConfigParser:
    """The package's declarative configuration (its metadata and options)."""
    config = configparser.ConfigParser(interpolation=None)
    config.read(REPO / "setup.cfg", encoding="utf-8")
    return config


def supported_pythons() -> list[str]:
    """From python_requires's floor to the newest Python the classifiers name."""
    floor = re.fullmatch(r">=3\.(\d+)", setup_cfg()["options"]["python_requires"])
    classifiers = setup_cfg()["metadata"]["classifiers"].strip().splitlines()
    named = [int(c.rsplit(".", 1)[1]) for c in classifiers if re.search(r":: 3\.\d+$", c)]
    assert named == list(range(int(floor[1]), max(named) + 1)), "a classifier per supported Python"
    return [f"3.{minor}" for minor in named]


def test_ci_runs_on_pushes_and_pull_requests():
    assert {"push", "pull_request"} <= set(triggers("ci.yml"))


def test_ci_runs_every_supported_python_on_linux():
    (job,) = workflow("ci.yml")["jobs"].values()
    versions = job["strategy"]["matrix"]["python-version"]
    assert versions == supported_pythons() == ["3.11", "3.12", "3.13", "3.14"]
    assert all(isinstance(version, str) for version in versions)  # an unquoted 3.10 would be 3.1
    assert job["runs-on"].startswith("ubuntu")
    # Debian with only Python, as .ci/run expects (it installs Debian's Chromium itself).
    assert job["container"] == "python:${{ matrix.python-version }}-bookworm"
    assert job["env"]["MIN_PYTHON"] == "python${{ matrix.python-version }}"


def test_ci_steps_are_ci_run_in_a_fresh_virtualenv():
    (job,) = workflow("ci.yml")["jobs"].values()
    steps = job["steps"]
    assert steps[0]["uses"].startswith("actions/checkout@")
    assert [step["run"].strip() for step in steps if "run" in step] == [".ci/run"]
    ci_run = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "<!-- test-command -->" in ci_run and ".ci/min-versions" in ci_run
    assert re.search(r'"\$python" -m venv "\$work/venv"\n.*\n\. "\$work/venv/bin/activate"', ci_run)
    assert (REPO / ".ci" / "min-versions").is_file()


def test_workflows_read_only_and_actions_pinned_to_commits():
    for path in WORKFLOWS.glob("*.yml"):
        assert workflow(path.name)["permissions"] == {"contents": "read"}, path.name
        text = path.read_text(encoding="utf-8")
        uses = re.findall(r"uses: (\S+)(.*)", text)
        assert uses, path.name
        for action, comment in uses:
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", action), f"{path.name}: {action} is not pinned"
            assert re.fullmatch(r"\s+# v\d+(\.\d+)*", comment), f"{path.name}: {action} names no version"
        assert "persist-credentials: false" in text


def test_release_is_tag_triggered_tested_and_published_by_trusted_publishing():
    assert triggers("release.yml") == {"push": {"tags": ["v*"]}}
    jobs = workflow("release.yml")["jobs"]
    assert set(jobs) == {"sdist", "wheels", "publish"}
    sdist_runs = [step.get("run", "") for step in jobs["sdist"]["steps"]]
    assert 'python .ci/release_version.py "$GITHUB_REF_NAME"' in sdist_runs
    assert any("twine check --strict" in run for run in sdist_runs)
    wheels = jobs["wheels"]
    assert wheels["needs"] == "sdist"
    runners = {(entry["os"], entry["arch"]) for entry in wheels["strategy"]["matrix"]["include"]}
    assert runners == set(RELEASE_RUNNERS)
    (build,) = [step for step in wheels["steps"] if "cibuildwheel --output-dir" in step.get("run", "")]
    assert build["env"] == {"CIBW_ARCHS": "${{ matrix.arch }}"}  # each runner its own architecture, named
    publish = jobs["publish"]
    assert publish["needs"] == ["sdist", "wheels"]
    assert publish["permissions"] == {"id-token": "write"}
    assert publish["environment"]["name"] == "pypi"
    assert publish["steps"][-1]["uses"].startswith("pypa/gh-action-pypi-publish@")
    assert "with" not in publish["steps"][-1]  # no password or token: trusted publishing
    assert not re.search(r"secrets\.|password|api[_-]token", (WORKFLOWS / "release.yml").read_text(), flags=re.I)


def test_cibuildwheel_builds_one_abi3_wheel_and_tests_it_on_every_python():
    config = project()["tool"]["cibuildwheel"]
    assert config["build"].split() == [f"cp{version.replace('.', '')}-*" for version in supported_pythons()]
    assert config["environment"] == {"OPINION_METRICS_REQUIRE_C_HELPER": "1"}
    assert config["test-command"] == "python {project}/.ci/wheel_tests.py {project}"
    assert (REPO / ".ci" / "wheel_tests.py").is_file()
    listed = (REPO / ".ci" / "wheel_tests.py").read_text(encoding="utf-8")
    for name in re.findall(r"(?:\w+/)?test_\w+\.py|conftest\.py|reference_impl\.py|\w+_cases\.py", listed):
        assert (REPO / "tests" / name).is_file(), name
    assert "py_limited_api" in (REPO / "setup.py").read_text() and "0x030B0000" in (  # (abi3audit: test_packaging)
        REPO / "src" / "opinion_metrics" / "_native" / "common.h"  # (each C file includes it first)
    ).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("version", "heading", "unreleased", "tag", "accepted"),
    [
        ("0.3.0", "## [0.3.0] - 2026-11-27", "", "v0.3.0", True),
        ("0.3.0", "## [0.3.0] - 2026-11-27", "", "v0.3.1", False),  # not the code's version
        ("0.3.1", "## [0.3.0] - 2026-11-27", "", "v0.3.1", False),  # not the changelog's
        ("0.3.0", "## [0.3.0] - 2026-11-27", "### Fixed\n- something\n", "v0.3.0", False),  # unreleased entries
    ],
)
def test_release_version_checks_the_tag_against_code_and_changelog(
    tmp_path, version, heading, unreleased, tag, accepted
):
    (tmp_path / "src" / "opinion_metrics").mkdir(parents=True)
    (tmp_path / "src" / "opinion_metrics" / "__init__.py").write_text(f'__version__ = "{version}"\n')
    (tmp_path / "CHANGELOG.md").write_text(f"# Changelog\n\n## [Unreleased]\n{unreleased}\n{heading}\n\n- first\n")
    command = [sys.executable, str(REPO / ".ci" / "release_version.py"), tag, "--repo", str(tmp_path)]
    result = subprocess.run(command, capture_output=True, text=True)
    assert (result.returncode == 0) == accepted, result.stderr


@pytest.mark.parametrize(("runner", "arch"), list(RELEASE_RUNNERS))
def test_cibuildwheel_reads_the_configuration_and_builds_every_python_on_each_runner(runner, arch):
    """cibuildwheel itself validates pyproject's options and lists what each runner builds:
    cp311 to cp314 (the later ones reuse the cp311 abi3 wheel, tested), manylinux and
    musllinux on Linux, each on the runner's own architecture."""
    pytest.importorskip("cibuildwheel")
    platform = RELEASE_RUNNERS[runner, arch]
    command = [sys.executable, "-m", "cibuildwheel", "--print-build-identifiers", "--platform", platform]
    environment = {**os.environ, "CIBW_ARCHS": arch}
    listed = subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=environment, timeout=120)
    assert listed.returncode == 0, listed.stderr
    identifiers = set(listed.stdout.split())
    suffix = {"linux": [f"manylinux_{arch}", f"musllinux_{arch}"], "macos": [f"macosx_{arch}"]}.get(
        platform, ["win_amd64" if arch == "AMD64" else "win_arm64"]
    )
    expected = {f"cp{version.replace('.', '')}-{tag}" for version in supported_pythons() for tag in suffix}
    assert identifiers == expected
