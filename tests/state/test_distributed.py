"""evaluate's own distributed mechanism: 2 real processes add half the data each; process
0 returns the single-process result, the other None."""

import json
import subprocess
import sys
import uuid

import pytest
from conftest import REPO
from module_cases import CASES

pytestmark = pytest.mark.slow

evaluate = pytest.importorskip("evaluate")


@pytest.mark.parametrize("name", sorted(CASES))
def test_two_processes_equal_one(name, tmp_path):
    if name == "semantic_keyword_prf":
        pytest.importorskip("sentence_transformers")
    if name == "sentiment_appropriateness":
        pytest.importorskip("vaderSentiment")
    columns, options = CASES[name]
    module_dir = str(REPO / "metrics" / name)
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps({"columns": columns, "options": options}))
    experiment_id = f"test-{uuid.uuid4().hex}"
    worker = str(REPO / "tests" / "distributed_worker.py")
    outputs = [tmp_path / f"out{i}.json" for i in range(2)]
    processes = [
        subprocess.Popen(
            [sys.executable, worker, module_dir, str(i), "2", experiment_id, str(inputs), str(outputs[i])],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in range(2)
    ]
    logs = [process.communicate(timeout=300)[0] for process in processes]
    assert [process.returncode for process in processes] == [0, 0], logs
    results = [json.loads(output.read_text()) for output in outputs]
    single = evaluate.load(module_dir).compute(**columns, **options)
    assert results[1] is None
    if name == "semantic_keyword_prf":
        # Another process's float32 forward pass (its own thread count) moves cosines by
        # their rounding (about 1e-8 here): decisions equal, soft values within it.
        assert results[0].keys() == single.keys()
        assert results[0] == {key: pytest.approx(value, rel=1e-6) for key, value in single.items()}
        assert {k: v for k, v in results[0].items() if not k.startswith("soft")} == {
            k: v for k, v in single.items() if not k.startswith("soft")
        }
    else:
        assert results[0] == single
