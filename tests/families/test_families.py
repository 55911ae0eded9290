"""Every surface agrees with the family declarations in `opinion_metrics.families`: the library
signatures, the evaluate modules (signature, docstring, card), the CLI, the Spaces and the
publish list. A difference anywhere fails here."""

import importlib.util
import inspect
import re
import sys
from pathlib import Path

import pytest

from opinion_metrics.families.registry import FAMILIES

REPO = Path(__file__).resolve().parents[2]
NAMES = list(FAMILIES)
# Families whose Space is still to be built: every other surface of theirs is checked here.
WITHOUT_A_SPACE = set()
WITH_A_SPACE = [name for name in NAMES if name not in WITHOUT_A_SPACE]
# Options that only the library and `compute` take (objects, tuning of one run's resources).
NOT_ON_THE_COMMAND_LINE = {"sentiment", "return_per_example", "block_elements", "show_progress", "batch_size"}
NOT_IN_THE_SPACES = NOT_ON_THE_COMMAND_LINE | {
    "device",
    "workers",
    "n_resamples",
    "random_state",
    "bootstrap",
    "aspects",
}


def key_stem(key: str) -> str:
    """The literal part of an output key pattern ("ndcg@{k}" -> "ndcg@", "f1_{aspect}" -> "f1_")."""
    return key.split("{")[0]


def module_class(name: str):
    path = REPO / "metrics" / name / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_declared_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module, next(
        value
        for value in vars(module).values()
        if inspect.isclass(value) and value.__module__ == module.__name__ and hasattr(value, "_compute")
    )


@pytest.mark.parametrize("name", NAMES)
def test_library_signature_is_the_declaration(name):
    family = FAMILIES[name]
    parameters = list(inspect.signature(family.function).parameters)
    declared = [i.name for i in family.inputs] + [o.name for o in family.options]
    assert sorted(parameters) == sorted(declared)


@pytest.mark.parametrize("name", NAMES)
def test_module_compute_signature_docstring_and_card(name):
    pytest.importorskip("evaluate")
    family = FAMILIES[name]
    module, metric = module_class(name)
    parameters = inspect.signature(metric._compute).parameters
    options = {n: p.default for n, p in parameters.items() if n not in ("self", *(i.name for i in family.inputs))}
    assert sorted(options) == sorted(o.name for o in family.options)
    for option, default in options.items():
        expected = family.defaults[option]
        assert default == expected or (isinstance(expected, tuple) and list(default) == list(expected)), option
    documents = {"docstring": module._KWARGS_DESCRIPTION, "card": (REPO / "metrics" / name / "README.md").read_text()}
    for where, text in documents.items():
        for option in family.options:
            assert re.search(rf"\b{option.name}\b", text), f"{where} of {name} does not describe {option.name}"
        for output in family.outputs:
            assert key_stem(output.key) in text, f"{where} of {name} does not describe {output.key}"
        for item in family.inputs:
            assert re.search(rf"\b{item.name}\b", text), f"{where} of {name} does not describe input {item.name}"


def test_command_line_has_a_flag_for_every_option():
    from opinion_metrics.cli.parser import build_parser

    flags = {option for action in build_parser()._actions for option in action.option_strings}
    for family in FAMILIES.values():
        for option in family.options:
            if option.name not in NOT_ON_THE_COMMAND_LINE:
                assert f"--{option.name.replace('_', '-')}" in flags, f"{family.name}: no flag for {option.name}"


def test_spaces_offer_the_declared_options_with_the_library_defaults():
    pytest.importorskip("gradio")
    from opinion_metrics.demo import controls as demo

    assert list(demo.FAMILIES) == WITH_A_SPACE
    assert {name for name in NAMES if not (REPO / "spaces" / name / "app.py").exists()} == WITHOUT_A_SPACE
    for name in WITH_A_SPACE:
        family = FAMILIES[name]
        controls = {option.name: option for option in demo.FAMILIES[name].options}
        declared = {option.name for option in family.options} - NOT_IN_THE_SPACES
        assert set(controls) == declared, name


def test_publish_list_is_the_families():
    spec = importlib.util.spec_from_file_location("_publish", REPO / "scripts" / "publish.py")
    publish = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(publish)
    assert list(publish.METRICS) == WITH_A_SPACE
