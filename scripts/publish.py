"""Stage each metric family's Space and upload it to the Hugging Face Hub.

A staged Space holds the evaluate module script, its metric card as README.md (whose YAML
header configures the Space), the Gradio app, and requirements.txt. Until opinion-metrics
is released on PyPI, each Space ships the package as a wheel and requirements.txt installs
it from there (the default); `--from-pypi` pins `opinion-metrics==<version>` instead and
refuses when PyPI does not have that version. `evaluate.load("<namespace>/<name>")` then
loads the module from the Space, and the Space runs the demo.

    python scripts/publish.py --dry-run                 # stage into build/spaces only
    HF_TOKEN=hf_... python scripts/publish.py --namespace my-org
    python scripts/publish.py --dry-run --from-pypi     # once the release is on PyPI
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from opinion_metrics.families import FAMILIES

REPO = Path(__file__).resolve().parents[1]
# One Space with an evaluate module per declared family (metric or measurement), in the declared
# order; then every other Space folder with an app (the combined one).
METRICS = tuple(FAMILIES)
SPACES = METRICS + tuple(
    sorted(path.parent.name for path in (REPO / "spaces").glob("*/app.py") if path.parent.name not in METRICS)
)


def version() -> str:
    namespace: dict[str, str] = {}
    init = (REPO / "src" / "opinion_metrics" / "__init__.py").read_text(encoding="utf-8")
    exec(next(line for line in init.splitlines() if line.startswith("__version__")), namespace)
    return namespace["__version__"]


def pinned_requirements(name: str, wheel: Path | None) -> str:
    """The Space's requirements with opinion-metrics pinned (or pointing at the bundled wheel)."""
    lines = []
    for line in (REPO / "spaces" / name / "requirements.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("opinion-metrics"):
            extras = line[len("opinion-metrics") :].split("=")[0].split(">")[0].strip()
            line = f"./{wheel.name}{extras}" if wheel else f"opinion-metrics{extras}=={version()}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def build_wheel(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("opinion_metrics-*.whl"):
        old.unlink()
    subprocess.run(  # without the C helper: one wheel for whichever Python the Space runs
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "--wheel-dir", str(out), str(REPO)],
        check=True,
        capture_output=True,
        env={**os.environ, "OPINION_METRICS_PURE_PYTHON": "1"},
    )
    return next(out.glob("opinion_metrics-*.whl"))


def released(release: str) -> bool:
    """Whether PyPI has opinion-metrics `release` (asks pip; False when PyPI cannot say)."""
    answer = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", "opinion-metrics"],
        capture_output=True,
        text=True,
    )
    available = next((line for line in answer.stdout.splitlines() if "Available versions:" in line), "")
    return release in [item.strip() for item in available.split(":", 1)[-1].split(",")]


def stage(name: str, out: Path, wheel: Path | None = None) -> Path:
    """Copy one Space's files into `out/<name>` and return that folder."""
    folder = out / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    space = REPO / "spaces" / name
    shutil.copyfile(space / "app.py", folder / "app.py")
    shutil.copyfile(space / "README.md", folder / "README.md")  # follows the link to the metric card
    if name in METRICS:
        shutil.copyfile(REPO / "metrics" / name / f"{name}.py", folder / f"{name}.py")
    if wheel is not None:
        shutil.copyfile(wheel, folder / wheel.name)
    (folder / "requirements.txt").write_text(pinned_requirements(name, wheel), encoding="utf-8")
    return folder


def upload(folder: Path, repo_id: str, token: str) -> str:
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repo_id, repo_type="space", space_sdk="gradio", exist_ok=True)
    api.upload_folder(
        folder_path=str(folder),
        repo_id=repo_id,
        repo_type="space",
        commit_message=f"opinion-metrics {version()}",
    )
    return f"https://huggingface.co/spaces/{repo_id}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--namespace", default="opinion-metrics", help="Hub user or organization")
    parser.add_argument("--out", type=Path, default=REPO / "build" / "spaces", help="staging folder")
    parser.add_argument("--only", nargs="+", choices=SPACES, help="publish only these Spaces")
    parser.add_argument("--dry-run", action="store_true", help="stage only; upload nothing")
    parser.add_argument(
        "--from-pypi",
        action="store_true",
        help="pin opinion-metrics==<version> from PyPI instead of shipping a wheel (needs that release)",
    )
    args = parser.parse_args(argv)
    token = os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")
    if not args.dry_run and not token:
        print("set HF_TOKEN to a write token (or pass --dry-run to stage only)", file=sys.stderr)
        return 2
    if args.from_pypi and not released(version()):
        print(
            f"opinion-metrics {version()} is not on PyPI (or PyPI cannot be reached), so a Space pinning it "
            "would fail to start; release it first, or leave out --from-pypi to ship the wheel",
            file=sys.stderr,
        )
        return 2
    wheel = None if args.from_pypi else build_wheel(args.out / "wheel")
    for name in args.only or SPACES:
        folder = stage(name, args.out, wheel)
        if args.dry_run:
            print(f"staged {folder}")
        else:
            print(f"published {upload(folder, f'{args.namespace}/{name}', token)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
