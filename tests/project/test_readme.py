"""The README's and the docs' promises: every code block marked runnable runs, offline, and
gives what it prints; every Python block is marked one way or the other; CI runs exactly the
README's test command.

A block is marked by the HTML comment on the line before its fence: `<!-- runnable -->`,
`<!-- runnable slow -->` (loads a model or a framework) or `<!-- not runnable: reason -->`.
Each block runs alone, in a fresh namespace, from the repository root (so it must define or
import every name it uses). A block with `>>>` prompts runs as a doctest; any other block
runs as a script. Hub names of this project's modules ("opinion-metrics/keyword_prf") load
the checkout's folder (what publishing uploads), since tests never reach the Hub.
"""

from __future__ import annotations

import doctest
import os
import re
from pathlib import Path

import pytest
from conftest import REPO

DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"(?:<!-- (?P<mark>[^>]*?) -->\n)?```(?P<language>[\w-]*)\n(?P<code>.*?)^```", re.S | re.M)


def code_blocks(path: Path) -> list[tuple[str, str, str, int]]:
    """(mark, language, code, line) of every fenced block of a Markdown file."""
    text = path.read_text(encoding="utf-8")
    return [
        (match["mark"] or "", match["language"], match["code"], text.count("\n", 0, match.start("code")) + 1)
        for match in FENCE.finditer(text)
    ]


def runnable_blocks() -> list:
    params = []
    for path in DOCUMENTS:
        for mark, _, code, line in code_blocks(path):
            if mark.startswith("runnable"):
                marks = [pytest.mark.slow] if mark == "runnable slow" else []
                name = f"{path.relative_to(REPO)}:{line}"
                params.append(pytest.param(path, code, line, marks=marks, id=name))
    return params


@pytest.fixture
def offline_hub_names(monkeypatch):
    """evaluate.load("opinion-metrics/<name>") loads metrics/<name> from this checkout."""
    evaluate = pytest.importorskip("evaluate")
    load = evaluate.load

    def load_from_checkout(path: str, *args, **kwargs):
        if path.startswith("opinion-metrics/"):
            path = str(REPO / "metrics" / path.split("/", 1)[1])
        return load(path, *args, **kwargs)

    monkeypatch.setattr(evaluate, "load", load_from_checkout)


@pytest.mark.parametrize(("path", "code", "line"), runnable_blocks())
def test_runnable_block(path: Path, code: str, line: int, monkeypatch, request):
    monkeypatch.setenv("HF_EVALUATE_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(REPO)
    if "evaluate" in code:
        request.getfixturevalue("offline_hub_names")
    name = f"{path.name}:{line}"
    if ">>>" in code:
        test = doctest.DocTestParser().get_doctest(code, {}, name, str(path), line)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        failures: list[str] = []
        runner.run(test, out=failures.append)
        assert test.examples and runner.failures == 0, "".join(failures)
    else:
        exec(compile(code, name, "exec"), {"__name__": "__readme__"})


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda path: str(path.relative_to(REPO)))
def test_every_python_block_is_marked(path: Path):
    """A Python block either runs here or says why not, so an unmarked one cannot rot."""
    unmarked = [
        line
        for mark, language, _, line in code_blocks(path)
        if language == "python" and not mark.startswith(("runnable", "not runnable:"))
    ]
    assert not unmarked, f"{path.name}: Python blocks at lines {unmarked} are neither runnable nor say why not"


def test_most_python_blocks_run():
    blocks = [mark for path in DOCUMENTS for mark, language, _, _ in code_blocks(path) if language == "python"]
    assert sum(mark.startswith("runnable") for mark in blocks) >= 0.75 * len(blocks)


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    command = readme.split("<!-- test-command -->", 1)[1].split("```bash\n", 1)[1].split("\n", 1)[0]
    assert command.endswith("python -m pytest -n 2 --dist loadfile") and "pip install torch==2.13.0" in command
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "<!-- test-command -->" in ci
    # .ci/run's awk takes the second line after the marker (the fence is the first).
    lines = readme.split("<!-- test-command -->", 1)[1].split("\n")
    assert lines[1] == "```bash" and lines[2] == command
    assert os.access(REPO / ".ci" / "run", os.X_OK)
