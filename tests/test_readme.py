"""The README's promises: its >>> examples run, and CI runs exactly its test command."""

import doctest
import sys

from conftest import REPO


def test_readme_examples_run():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = [block.split("```", 1)[0] for block in readme.split("```python")[1:]]
    test = doctest.DocTestParser().get_doctest("\n".join(b for b in blocks if ">>>" in b), {}, "README", None, 0)
    runner = doctest.DocTestRunner()
    runner.run(test, out=sys.stdout.write)
    assert test.examples and runner.failures == 0


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    command = readme.split("<!-- test-command -->", 1)[1].split("```bash\n", 1)[1].split("\n", 1)[0]
    assert command.endswith("python -m pytest") and "pip install torch==2.13.0" in command
    assert "<!-- test-command -->" in (REPO / ".ci" / "run").read_text(encoding="utf-8")
