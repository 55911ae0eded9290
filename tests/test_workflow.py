"""The GitHub Actions workflow runs what `.ci/run` runs, on Linux, for every supported Python
(it cannot run here: it is parsed and its steps checked)."""

import configparser
import re

import yaml
from conftest import REPO


def workflow() -> dict:
    return yaml.safe_load((REPO / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8"))


def supported_pythons() -> list[str]:
    """3.9 (setup.cfg's python_requires floor) up to 3.13."""
    setup = configparser.ConfigParser()
    setup.read(REPO / "setup.cfg", encoding="utf-8")
    floor = re.fullmatch(r">=3\.(\d+)", setup["options"]["python_requires"].strip())
    return [f"3.{minor}" for minor in range(int(floor[1]), 14)]


def test_the_workflow_runs_on_pushes_and_pull_requests():
    triggers = workflow().get("on", workflow().get(True))  # YAML 1.1 reads a bare `on` as True
    assert {"push", "pull_request"} <= set(triggers)


def test_every_supported_python_on_linux():
    (job,) = workflow()["jobs"].values()
    versions = job["strategy"]["matrix"]["python-version"]
    assert versions == supported_pythons() == ["3.9", "3.10", "3.11", "3.12", "3.13"]
    assert all(isinstance(version, str) for version in versions)  # an unquoted 3.10 would be 3.1
    assert job["runs-on"].startswith("ubuntu")
    # Debian with only Python, as .ci/run expects (it installs Debian's Chromium itself).
    assert job["container"] == "python:${{ matrix.python-version }}-bookworm"
    assert job["env"]["MIN_PYTHON"] == "python${{ matrix.python-version }}"


def test_the_steps_are_ci_run():
    (job,) = workflow()["jobs"].values()
    steps = job["steps"]
    assert steps[0]["uses"].startswith("actions/checkout@")
    runs = [step["run"].strip() for step in steps if "run" in step]
    assert runs == [".ci/run"]
    ci_run = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "<!-- test-command -->" in ci_run and ".ci/min-versions" in ci_run
    assert (REPO / ".ci" / "min-versions").is_file()
