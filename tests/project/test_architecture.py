"""The layout of the package (docs/architecture.md): layers imported only downward, no circles,
small rooms, a module per family, and one call of keyword_prf going down its stages once."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from conftest import REPO

from opinion_metrics import keyword_prf
from opinion_metrics.families.registry import FAMILIES

MAX_LINES = 650


@pytest.fixture(scope="module")
def layers():
    spec = importlib.util.spec_from_file_location("architecture_script", REPO / "scripts" / "architecture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_import_runs_up_the_layers(layers):
    assert layers.upward_imports() == []


def test_no_modules_import_each_other_in_a_circle(layers):
    assert layers.import_cycles() == []


def test_the_checks_catch_an_import_up_and_a_circle(layers, tmp_path, monkeypatch):
    package = tmp_path / "opinion_metrics"
    for name, text in {
        "__init__.py": "",
        "core/__init__.py": "",
        "core/low.py": "from .high import B\n",
        "core/high.py": "from .low import A\n",
        "io/__init__.py": "",
        "io/reader.py": "from ..families.keyword_prf import keyword_prf\n",
        "families/__init__.py": "",
        "families/keyword_prf.py": "",
    }.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    monkeypatch.setattr(layers, "PACKAGE", package)
    assert layers.upward_imports() == [
        "io.reader imports families.keyword_prf (keyword_prf): up from 'io'",
    ]
    assert layers.import_cycles() == [["core.high", "core.low", "core.high"]]


def test_the_documented_diagram_is_the_codes(layers):
    assert layers.documented_diagram() == layers.mermaid(), "run python scripts/architecture.py"
    assert "docs/architecture.md" in (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")


def test_no_room_is_over_650_lines():
    files = [
        path
        for folder in ("src", "scripts", "tests", "metrics", "spaces")
        for pattern in ("*.py", "*.c", "*.h")
        for path in (REPO / folder).rglob(pattern)
        if "build" not in path.relative_to(REPO).parts
    ]
    assert files
    long = {str(path.relative_to(REPO)): n for path in files if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long


def test_sub_packages_and_a_module_per_family_named_as_the_family():
    package = REPO / "src" / "opinion_metrics"
    sub_packages = [path.parent.name for path in package.glob("*/__init__.py")]
    assert len(sub_packages) >= 6
    for name in FAMILIES:
        assert (package / "families" / f"{name}.py").is_file(), name
        assert FAMILIES[name].function.__module__ == f"opinion_metrics.families.{name}"


STAGES = {"core.validation": 0, "core.pairs": 1, "core.matching": 2, "families.averaging": 3}


def calls_out_of_the_family(*args, **options):
    """The calls `keyword_prf` makes from its own module into the package's other modules, in
    order (module, function), and the calls from elsewhere back into it."""
    family = "opinion_metrics.families.keyword_prf"
    down, back = [], []

    def profile(frame, event, arg):
        if event != "call" or frame.f_back is None:
            return
        callee, caller = frame.f_globals.get("__name__", ""), frame.f_back.f_globals.get("__name__", "")
        if caller == family and callee.startswith("opinion_metrics.") and callee != family:
            down.append((callee.removeprefix("opinion_metrics."), frame.f_code.co_name))
        elif callee == family and caller.startswith("opinion_metrics.") and caller != family:
            back.append(caller)

    sys.setprofile(profile)
    try:
        keyword_prf(*args, **options)
    finally:
        sys.setprofile(None)
    return down, back


@pytest.mark.parametrize(
    "inputs",
    [
        {},  # documents of their own gold lists: the per-document path
        {"references": [["satire", "neo noir", "family", "a"]] * 2},  # a shared gold list: the corpus path
        {"texts": ["social satire of a neo noir family", "a b c"], "presence": "present"},
        {"stemmer": "porter", "top_k": 1, "match": "exact"},
    ],
    ids=["documents", "shared_gold", "presence", "stemmed_exact"],
)
def test_keyword_prf_goes_down_its_stages_once(inputs):
    arguments = {"predictions": [["social satire", "neo-noir"], ["a b", "c"]]}
    arguments["references"] = [["satire", "neo noir", "family"], ["a", "b c"]]
    arguments.update(inputs)
    down, back = calls_out_of_the_family(arguments.pop("predictions"), arguments.pop("references"), **arguments)
    assert len(down) <= 8, down
    assert not back, back
    stages = [STAGES[module] for module, _ in down]
    assert stages == sorted(stages), down  # validation, then the pairs, the count, the averages
    assert set(stages) == set(STAGES.values())
