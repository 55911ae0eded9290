"""The Spaces as scripts/publish.py stages them for the Hub: valid metadata and pinned
requirements, a bundled wheel named by its Hub address, no release PyPI does not have, the
staged evaluate modules; one staged Space installed in a fresh virtualenv and served."""

import importlib.util
import os
import re
import sys

import pytest
from conftest import REPO
from packaging.version import Version
from space_apps import table

gradio = pytest.importorskip("gradio")
gradio_client = pytest.importorskip("gradio_client")

from opinion_metrics import keyword_prf  # noqa: E402
from opinion_metrics.demo.controls import FAMILIES  # noqa: E402
from opinion_metrics.demo.parsing import parse_keyword_lines  # noqa: E402


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("publish", REPO / "scripts" / "publish.py")
    publish = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(publish)
    out = tmp_path_factory.mktemp("spaces")
    assert publish.main(["--dry-run", "--out", str(out)]) == 0
    return publish, out


@pytest.mark.parametrize("name", [*FAMILIES, "opinion_metrics"])
def test_staged_space_has_valid_metadata_and_pinned_requirements(staged, name):
    from huggingface_hub import RepoCard

    publish, out = staged
    folder = out / name
    card = RepoCard.load(folder / "README.md")
    assert card.data.sdk == "gradio" and card.data.app_file == "app.py"
    # A current Gradio 6 release, not newer than the one the apps are tested with.
    declared, installed = Version(card.data.sdk_version), Version(gradio.__version__)
    assert declared.major == installed.major == 6 and declared <= installed
    assert "evaluate" in card.data.tags and {"metric", "measurement"} & set(card.data.tags)
    assert card.data.python_version == "3.11"  # not Hugging Face's default Python
    assert (folder / "app.py").exists()
    # The release from PyPI, pinned: the version this checkout is.
    requirement = (folder / "requirements.txt").read_text().splitlines()[0]
    assert re.fullmatch(rf"opinion-metrics\[[a-z,-]+\]=={re.escape(publish.version())}", requirement)
    assert not (folder / "wheels").exists()


def test_publishing_refuses_a_version_pypi_does_not_have(staged, tmp_path, monkeypatch, capsys):
    publish, _ = staged
    monkeypatch.setattr(publish, "released", lambda release: False)
    monkeypatch.setenv("HF_TOKEN", "hf_not_used")
    assert publish.main(["--out", str(tmp_path)]) == 2
    assert f"opinion-metrics {publish.version()} is not on PyPI" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_a_bundled_wheel_is_installed_from_the_spaces_own_files_on_the_hub(staged, tmp_path):
    """Hugging Face installs requirements.txt before the Space's other files are there, so a
    bundled wheel is named by its address on the Hub, never by a local path."""
    publish, _ = staged
    assert publish.main(["--dry-run", "--bundle-wheel", "--namespace", "me", "--out", str(tmp_path)]) == 0
    for name in ("keyword_prf", "opinion_metrics"):
        (wheel,) = (tmp_path / name / "wheels").glob("*.whl")
        assert wheel.name == f"opinion_metrics-{publish.version()}-py3-none-any.whl"
        requirement = (tmp_path / name / "requirements.txt").read_text().splitlines()[0]
        url = f"https://huggingface.co/spaces/me/{name}/resolve/main/wheels/{wheel.name}"
        assert re.fullmatch(rf"opinion-metrics\[[a-z,-]+\] @ {re.escape(url)}", requirement)


@pytest.mark.parametrize("name", ["keyword_prf", "weighted_keyword_prf", "aspect_sentiment_score"])
def test_staged_module_loads_and_computes(staged, name):
    evaluate = pytest.importorskip("evaluate")
    _, out = staged
    module = evaluate.load(str(out / name))
    inputs = {
        "keyword_prf": {"predictions": [["a", "b"]], "references": [["a"]]},
        "weighted_keyword_prf": {"predictions": [["a", "b"]], "scores": [[0.5, 0.5]], "references": [["a"]]},
        "aspect_sentiment_score": {"predictions": [[0, 1]], "references": [[0, 1]], "aspects": ["x", "y"]},
    }[name]
    result = module.compute(**inputs)
    assert result and all(0.0 <= value <= 1.0 for value in result.values())


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_a_staged_space_installs_from_its_own_requirements_and_serves(tmp_path):
    """The keyword_prf Space as publish.py stages it, installed into a fresh virtualenv
    from its requirements.txt alone (no torch), with this checkout's wheel standing for the
    PyPI release it pins (`--find-links`), started with `python app.py` and driven over
    HTTP; its evaluate module loads there too."""
    import subprocess
    import time
    import urllib.request

    spec = importlib.util.spec_from_file_location("publish", REPO / "scripts" / "publish.py")
    publish = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(publish)
    assert publish.main(["--dry-run", "--only", "keyword_prf", "--out", str(tmp_path / "staged")]) == 0
    folder = tmp_path / "staged" / "keyword_prf"
    release = publish.build_wheel(tmp_path / "release")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    pin = tmp_path / "torch.txt"
    pin.write_text("torch==2.13.0\n")  # should anything pull torch, never another build
    constraints = " ".join(filter(None, [os.environ.get("PIP_CONSTRAINT"), str(pin)]))
    environment = {**os.environ, "PIP_CONSTRAINT": constraints}
    installed = subprocess.run(
        [python, "-m", "pip", "install", "-q", "--find-links", str(release.parent), "-r", "requirements.txt"],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    loaded = subprocess.run(
        [
            python,
            "-c",
            "import evaluate; module = evaluate.load('keyword_prf.py'); "
            "print(module.compute(predictions=[['a', 'b']], references=[['a']]))",
        ],
        cwd=folder,
        env={**environment, "HF_EVALUATE_OFFLINE": "1", "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
    )
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    assert loaded.stdout.strip().splitlines()[-1] == str(keyword_prf([["a", "b"]], [["a"]]))
    port = _free_port()
    server = subprocess.Popen(
        [python, "app.py"],
        cwd=folder,
        env={
            **environment,
            "GRADIO_SERVER_PORT": str(port),
            "GRADIO_ANALYTICS_ENABLED": "False",
            "HF_HUB_OFFLINE": "1",
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        for _ in range(240):  # wait for the server to answer
            try:
                urllib.request.urlopen(url, timeout=5)
                break
            except OSError:
                assert server.poll() is None, server.stderr.read()[-3000:]
                time.sleep(0.5)
        family = FAMILIES["keyword_prf"]
        client = gradio_client.Client(url, verbose=False)
        status, summary, _, _ = client.predict(
            *family.example, None, *(o.default for o in family.options), api_name="/compute"
        )
        predictions, references = (parse_keyword_lines(text)[0] for text in family.example[:2])
        expected = keyword_prf(predictions, references)
        assert status.startswith("Computed on the text boxes: 2 examples · presence all · match substring")
        assert table(summary) == pytest.approx({k: round(v, 4) for k, v in expected.items()})
        assert all("<small>" in row[0] for row in summary["data"][1:])  # each value with its meaning
    finally:
        server.terminate()
        server.wait(timeout=30)
