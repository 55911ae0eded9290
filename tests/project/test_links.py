"""What ships points only at what ships: every link and path named in the README, the docs,
the metric cards, the Space READMEs, CHANGELOG, CONTRIBUTING, the library's docstrings and
`--help` exists in this repository (and every #anchor into a Markdown file is one of its
headings). Files that render on the Hub or on PyPI (README, cards, Space READMEs) link with
absolute URLs; nothing mentions the contributors' specification or their data folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REPO

from opinion_metrics import DEFINITIONS_URL
from opinion_metrics.cli.parser import build_parser

GITHUB = "https://github.com/opinion-metrics/opinion-metrics/"
HUB_SPACES = "https://huggingface.co/spaces/opinion-metrics/"
# Rendered away from the repository (PyPI, the Hub): relative links would break there.
RENDERED_ELSEWHERE = [
    REPO / "README.md",
    *sorted(REPO.glob("metrics/*/README.md")),
    *sorted(REPO.glob("spaces/*/README.md")),
]
MARKDOWN = [
    *RENDERED_ELSEWHERE,
    *sorted((REPO / "docs").rglob("*.md")),
    *[REPO / name for name in ("CHANGELOG.md", "CONTRIBUTING.md") if (REPO / name).exists()],
]
PYTHON = [
    *sorted((REPO / "src").rglob("*.py")),
    *sorted(REPO.glob("metrics/*/*.py")),
    *sorted(REPO.glob("spaces/*/app.py")),
]
FORBIDDEN = re.compile(r"\bSPEC\b|SPEC\.md|\.\./shared")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)|href=\"([^\"]+)\"")
URL = re.compile(r"https://[^\s)\"'`>\]}]+")
TOP_LEVEL = ("src/", "metrics/", "spaces/", "scripts/", "examples/", "docs/", "tests/", ".ci/", ".github/")
SECTION_REFERENCE = re.compile(r"docs/definitions\.md,? section (\d+)")


def ids(paths):
    return [str(path.relative_to(REPO)) for path in paths]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    return {slug(line.lstrip("#")) for line in text.splitlines() if re.match(r"#{1,6} ", line)}


def problem(target: str, source: Path) -> str | None:
    """Why `target` (a link found in `source`) does not resolve in this repository, or None."""
    if target.startswith(GITHUB):
        match = re.match(r"(?:blob|tree)/main/([^#?]*)(?:#(.*))?$", target[len(GITHUB) :])
        if not match:
            return "not a blob/tree link to main"
        relative, anchor = match[1], match[2]
        path = REPO / relative
    elif target.startswith(HUB_SPACES):
        name = target[len(HUB_SPACES) :].strip("/")
        return None if (REPO / "spaces" / name / "app.py").is_file() else f"no spaces/{name}/app.py"
    elif re.match(r"[a-z]+:", target):
        return None  # another site (pytorch.org, papers): not this repository's business
    else:
        relative, _, anchor = target.partition("#")
        path = (source.parent / relative).resolve() if relative else source
        if not str(path).startswith(str(REPO)):
            return "outside the repository"
    if not path.exists():
        return "no such file"
    if anchor and path.suffix == ".md" and anchor not in anchors(path):
        return f"no heading #{anchor} in {path.relative_to(REPO)}"
    return None


@pytest.mark.parametrize("path", MARKDOWN, ids=ids(MARKDOWN))
def test_markdown_links_resolve(path: Path):
    text = path.read_text(encoding="utf-8")
    targets = [a or b for a, b in LINK.findall(text)] + [url for url in URL.findall(text) if url.startswith(GITHUB)]
    broken = {target: why for target in targets if (why := problem(target, path))}
    assert not broken, f"{path.relative_to(REPO)}: {broken}"


@pytest.mark.parametrize("path", RENDERED_ELSEWHERE, ids=ids(RENDERED_ELSEWHERE))
def test_files_rendered_on_pypi_or_the_hub_link_absolutely(path: Path):
    relative = [a or b for a, b in LINK.findall(path.read_text(encoding="utf-8")) if not re.match(r"[a-z]+:", a or b)]
    assert not relative, f"{path.relative_to(REPO)}: relative links break on the Hub and PyPI: {relative}"


@pytest.mark.parametrize("path", MARKDOWN + PYTHON, ids=ids(MARKDOWN + PYTHON))
def test_nothing_points_outside_the_repository(path: Path):
    text = path.read_text(encoding="utf-8")
    found = sorted({match[0] for match in FORBIDDEN.finditer(text)})
    assert not found, f"{path.relative_to(REPO)} mentions {found}: link docs/definitions.md instead"


@pytest.mark.parametrize("path", MARKDOWN, ids=ids(MARKDOWN))
def test_repository_paths_in_code_spans_exist(path: Path):
    """`examples/reviews.jsonl`, `scripts/benchmark.py`, `.ci/run`: named files are there."""
    spans = re.findall(r"`([^`\s]+)`", path.read_text(encoding="utf-8"))
    named = [span for span in spans if span.startswith(TOP_LEVEL) and not re.search(r"[<>*{}]", span)]
    missing = [span for span in named if not (REPO / span.rstrip("/")).exists()]
    assert not missing, f"{path.relative_to(REPO)} names files that are not in the repository: {missing}"


@pytest.mark.parametrize("path", PYTHON, ids=ids(PYTHON))
def test_docstrings_cite_sections_that_exist(path: Path):
    definitions = (REPO / "docs" / "definitions.md").read_text(encoding="utf-8")
    sections = set(re.findall(r"^## (\d+)\. ", definitions, flags=re.M))
    text = path.read_text(encoding="utf-8")
    cited = set(SECTION_REFERENCE.findall(text))
    assert cited <= sections, f"{path.relative_to(REPO)} cites sections {sorted(cited - sections)}"
    for url in URL.findall(text):
        if url.startswith((GITHUB, HUB_SPACES)):
            assert problem(url, path) is None, f"{path.relative_to(REPO)}: {url}"


def test_help_and_spaces_link_the_definitions():
    assert problem(DEFINITIONS_URL, REPO / "README.md") is None
    help_text = build_parser().format_help()
    assert DEFINITIONS_URL in " ".join(help_text.split()) and not FORBIDDEN.search(help_text)
    demo = REPO / "src" / "opinion_metrics" / "demo"
    for app in ("ui.py", "combined.py"):  # the family Spaces' and the combined Space's introduction
        assert (demo / app).read_text(encoding="utf-8").count("({DEFINITIONS_URL})") == 1, app
    unlinked = [path for path in RENDERED_ELSEWHERE if DEFINITIONS_URL not in path.read_text(encoding="utf-8")]
    assert not unlinked, f"the README, every card and every Space README link the definitions: {unlinked}"


def test_the_link_checker_catches_what_it_should(tmp_path):
    source = REPO / "README.md"
    assert problem(GITHUB + "blob/main/docs/definitions.md#1-keyword-preparation", source) is None
    assert problem(GITHUB + "blob/main/docs/definitions.md#no-such-heading", source).startswith("no heading")
    assert problem(GITHUB + "blob/main/docs/missing.md", source) == "no such file"
    assert problem("../shared/SPEC.md", source) == "outside the repository"
    assert problem("docs/definitions.md", source) is None
    assert problem(HUB_SPACES + "keyword_prf", source) is None and problem(HUB_SPACES + "nope", source)
    assert slug("7. Family 5: aspect presence F1 × rating R2 (`aspect_sentiment_score`)") == (
        "7-family-5-aspect-presence-f1--rating-r2-aspect_sentiment_score"
    )
