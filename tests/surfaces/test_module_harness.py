"""The modules checked the way evaluate checks its own (huggingface/evaluate's
tests/test_metric_common.py and tests/test_metric.py): docstring examples run as doctests
with `evaluate.load("<name>")` resolved to the local `metrics/<name>` folder, no
`**kwargs` in `_compute`, `compute` == `add_batch` + `compute` == `add` + `compute`; the
metric cards' examples through the Hub id; loading from evaluate's Hub module cache
offline; and the evaluate internals `opinion_metrics.evaluate_support` relies on."""

from __future__ import annotations

import doctest
import hashlib
import importlib
import inspect
import json
import os
import subprocess
import sys
import textwrap
from unittest.mock import patch

import pytest
from conftest import REPO
from module_cases import CASES

evaluate = pytest.importorskip("evaluate")
datasets = pytest.importorskip("datasets")

HUB_NAMESPACE = "opinion-metrics"  # scripts/publish.py's default
MODULES = sorted(path.name for path in (REPO / "metrics").iterdir() if (path / f"{path.name}.py").exists())
NEEDS = {
    "semantic_keyword_prf": "sentence_transformers",
    "sentiment_appropriateness": "vaderSentiment",
    "keyword_diversity": "sentence_transformers",  # its second example embeds
}
_load = evaluate.load
SINGULAR = {"predictions": "prediction", "references": "reference"}  # add()'s names


def load_local(path: str, *args, **kwargs):
    """`evaluate.load` with "<name>" and "opinion-metrics/<name>" resolved to metrics/<name>."""
    name = path[len(HUB_NAMESPACE) + 1 :] if path.startswith(f"{HUB_NAMESPACE}/") else path
    if name in MODULES:
        path = str(REPO / "metrics" / name)
    return _load(path, *args, **kwargs)


def require(name: str) -> None:
    if name in NEEDS:
        pytest.importorskip(NEEDS[name])


def test_every_module_is_covered():
    assert sorted(CASES) == MODULES


@pytest.mark.parametrize("name", MODULES)
def test_load_and_doctests_as_evaluate_harness(name):
    require(name)
    module_path = evaluate.loading.evaluation_module_factory(str(REPO / "metrics" / name), module_type="metric")
    module = importlib.import_module(module_path.module_path)
    metric_class = evaluate.loading.import_main_class(module.__name__)
    parameters = inspect.signature(metric_class._compute).parameters.values()
    assert all(parameter.kind != parameter.VAR_KEYWORD for parameter in parameters)  # no **kwargs
    with patch("evaluate.load", side_effect=load_local):
        try:
            results = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE, raise_on_error=True)
        except doctest.UnexpectedException as error:
            raise error.exc_info[1] from None
    assert results.failed == 0
    assert results.attempted > 1


@pytest.mark.parametrize("name", MODULES)
def test_compute_equals_add_batch_equals_add(name):
    require(name)
    columns, options = CASES[name]
    module = evaluate.load(str(REPO / "metrics" / name))
    direct = module.compute(**columns, **options)
    module.add_batch(**columns)
    assert module.compute(**options) == direct
    for i in range(len(columns["predictions"])):
        module.add(**{SINGULAR.get(key, key): column[i] for key, column in columns.items()})
    assert module.compute(**options) == direct


def card_blocks(name: str) -> tuple[str, str]:
    """(the first "How to Use" code block, the >>> examples) of a metric card."""
    card = (REPO / "metrics" / name / "README.md").read_text(encoding="utf-8")
    usage = card.split("## How to Use", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    blocks = [block.split("```", 1)[0] for block in card.split("```python")[1:]]
    return usage, "\n".join(block for block in blocks if ">>>" in block)


@pytest.mark.parametrize("name", MODULES)
def test_metric_card_examples_load_by_hub_id(name):
    require(name)
    usage, examples = card_blocks(name)
    assert f'evaluate.load("{HUB_NAMESPACE}/{name}")' in usage
    with patch("evaluate.load", side_effect=load_local):
        namespace: dict = {}
        exec(usage, namespace)
        test = doctest.DocTestParser().get_doctest(examples, namespace, name, None, 0)
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
        runner.run(test, out=sys.stdout.write)
    assert test.examples and runner.failures == 0


def test_load_from_the_hub_module_cache_offline(tmp_path):
    """A module placed where evaluate caches a downloaded Hub module
    (HF_MODULES_CACHE/evaluate_modules/metrics/<namespace>--<name>/<64-hex hash>/<name>.py)
    loads by its Hub id offline; of two cached versions, the latest modified one wins."""
    name = "keyword_prf"
    modules = tmp_path / "modules"
    folder = modules / "evaluate_modules" / "metrics" / f"{HUB_NAMESPACE}--{name}"
    script = (REPO / "metrics" / name / f"{name}.py").read_bytes()
    stale = b"raise ImportError('the stale cached version was loaded')\n"
    for version, text in enumerate((stale, script)):
        directory = folder / hashlib.sha256(text).hexdigest()
        directory.mkdir(parents=True)
        (directory / f"{name}.py").write_bytes(text)
        os.utime(directory / f"{name}.py", (1_000_000 + version, 1_000_000 + version))
    for directory in (modules / "evaluate_modules", folder.parent, folder, *folder.iterdir()):
        (directory / "__init__.py").touch()
    code = textwrap.dedent(
        f"""
        import json, evaluate
        module = evaluate.load("{HUB_NAMESPACE}/{name}")
        print(json.dumps([type(module).__module__, module.compute(predictions=[["a", "x"]], references=[["a"]])]))
        """
    )
    environment = {
        **os.environ,
        "HF_HOME": str(tmp_path / "home"),
        "HF_MODULES_CACHE": str(modules),
        "HF_EVALUATE_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
    }
    result = subprocess.run(
        [sys.executable, "-c", code], env=environment, cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    module_name, value = json.loads(result.stdout.strip().splitlines()[-1])
    assert module_name.startswith(
        f"evaluate_modules.metrics.{HUB_NAMESPACE}--{name}.{hashlib.sha256(script).hexdigest()}"
    )
    assert value == {"precision": 0.5, "recall": 1.0, "f1": 2 / 3}


def evaluate_internal(name: str, condition: bool, what: str) -> None:
    """Fail naming the evaluate internal that the modules and their glue rely on."""
    assert condition, (
        f"evaluate {evaluate.__version__} changed the internal `{name}` that metrics/*/*.py and "
        f"opinion_metrics/evaluate_support.py rely on: {what}. Adapt them before raising the `evaluate<0.5` "
        "bound in setup.cfg."
    )


def test_the_evaluate_internals_the_glue_relies_on():
    module_class = evaluate.EvaluationModule
    evaluate_internal("datasets.List", hasattr(datasets, "List"), "the modules' list features (datasets >= 4.0)")
    decorate = getattr(evaluate.utils.file_utils, "add_start_docstrings", None)
    evaluate_internal("evaluate.utils.file_utils.add_start_docstrings", callable(decorate), "no longer exists")
    evaluate_internal(
        "add_start_docstrings",
        decorate("A", "B")(type("Probe", (), {"__doc__": "C"})).__doc__.startswith("AB"),
        "it no longer prepends the docstrings",
    )
    for method, parameters in {
        "_infer_feature_from_batch": ["self", "batch"],
        "_init_writer": ["self", "timeout"],
        "_feature_names": ["self"],
        "_finalize": ["self"],
    }.items():
        function = getattr(module_class, method, None)
        evaluate_internal(f"EvaluationModule.{method}", callable(function), "no longer exists")
        found = list(inspect.signature(function).parameters)
        evaluate_internal(f"EvaluationModule.{method}", found == parameters, f"parameters {found}, not {parameters}")
    evaluate_internal(
        "EvaluationModuleInfo.format", "format" in evaluate.MetricInfo.__dataclass_fields__, "the field is gone"
    )

    module = evaluate.load(str(REPO / "metrics" / "keyword_prf"), keep_in_memory=True)  # writes no cache file
    for attribute in ("writer", "selected_feature_format"):
        evaluate_internal(
            f"EvaluationModule.{attribute}", getattr(module, attribute, "absent") is None, "not None before add_batch"
        )
    evaluate_internal("EvaluationModule.num_process", module.num_process == 1, "not 1 by default")
    columns = {"predictions": [["a", "b"]], "references": [["a"]]}
    features = module._infer_feature_from_batch(columns)
    evaluate_internal(
        "EvaluationModule._infer_feature_from_batch",
        features == module.info.features and [field.name for field in features.arrow_schema] == list(features),
        f"returned {features!r}, not the module's features with an arrow_schema",
    )
    module.selected_feature_format = features
    module._init_writer()
    evaluate_internal(
        "EvaluationModule._init_writer",
        callable(getattr(module.writer, "write_table", None)),
        f"module.writer is {module.writer!r}, without write_table",
    )
    module = evaluate.load(str(REPO / "metrics" / "keyword_prf"))
    seen = {}

    def spy(**inputs):
        seen.update({name: type(value).__module__.split(".")[0] for name, value in inputs.items()})
        return {}

    module._compute = spy
    module.add_batch(**columns)  # writes through module.writer, then evaluate's compute reads it back
    module.compute()
    evaluate_internal(
        "EvaluationModule.compute / info.format",
        seen == dict.fromkeys(module.info.features, "pyarrow"),
        f"_compute received {seen} after add_batch, not Arrow arrays in the 'arrow' format",
    )
