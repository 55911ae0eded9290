"""Stage each metric family's Space and upload it to the Hugging Face Hub.

A staged Space holds the evaluate module script, its metric card as README.md (whose YAML
header configures the Space: Gradio SDK, Python 3.11), the Gradio app, and
requirements.txt, which pins `opinion-metrics[...]==<version>` from PyPI: publish after the
release (the upload refuses a version PyPI does not have). `evaluate.load("<namespace>/<name>")`
then loads the module from the Space, and the Space runs the demo.

`--bundle-wheel` ships a pure wheel of this checkout inside each Space instead and installs it
from the Space's own files on the Hub (pip fetches `.../resolve/main/wheels/<wheel>` while
Hugging Face builds the Space; only requirements.txt is there at that point): for trying
unreleased code in a public Space.

    python scripts/publish.py --dry-run                    # stage into build/spaces only
    HF_TOKEN=hf_... python scripts/publish.py --namespace my-org   # after the PyPI release
    HF_TOKEN=hf_... python scripts/publish.py --namespace my-org --bundle-wheel
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from opinion_metrics.families.registry import FAMILIES

REPO = Path(__file__).resolve().parents[1]
# One Space with an evaluate module per declared family (metric or measurement) that has a Space, in
# the declared order; then every other Space folder with an app (the combined one).
METRICS = tuple(name for name in FAMILIES if (REPO / "spaces" / name / "app.py").is_file())
SPACES = METRICS + tuple(
    sorted(path.parent.name for path in (REPO / "spaces").glob("*/app.py") if path.parent.name not in METRICS)
)


def version() -> str:
    namespace: dict[str, str] = {}
    init = (REPO / "src" / "opinion_metrics" / "__init__.py").read_text(encoding="utf-8")
    exec(next(line for line in init.splitlines() if line.startswith("__version__")), namespace)
    return namespace["__version__"]


def pinned_requirements(name: str, requirement: str) -> str:
    """The Space's requirements, with opinion-metrics[<its extras>] installed as `requirement`
    says: "==<version>" (from PyPI) or " @ <url of a wheel>"."""
    lines = []
    for line in (REPO / "spaces" / name / "requirements.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("opinion-metrics"):
            extras = line[len("opinion-metrics") :].split("=")[0].split(">")[0].strip()
            line = f"opinion-metrics{extras}{requirement}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def wheel_url(repo_id: str, wheel: Path) -> str:
    """Where pip finds a wheel uploaded into a Space's `wheels/` folder while Hugging Face
    builds that Space (a public Space's files are served at this address)."""
    return f"https://huggingface.co/spaces/{repo_id}/resolve/main/wheels/{wheel.name}"


def build_wheel(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("opinion_metrics-*.whl"):
        old.unlink()
    subprocess.run(  # without the C helper: one wheel for whichever Python the Space runs
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "--wheel-dir", str(out), str(REPO)],
        check=True,
        capture_output=True,
        env={**os.environ, "OPINION_METRICS_PURE_PYTHON": "1", "OPINION_METRICS_REQUIRE_C_HELPER": ""},
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


def stage(name: str, out: Path, repo_id: str, wheel: Path | None = None) -> Path:
    """Copy one Space's files into `out/<name>` and return that folder; with `wheel`, the
    Space ships it and installs it from its own files on the Hub (`repo_id`)."""
    folder = out / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    space = REPO / "spaces" / name
    shutil.copyfile(space / "app.py", folder / "app.py")
    shutil.copyfile(space / "README.md", folder / "README.md")  # follows the link to the metric card
    if name in METRICS:
        shutil.copyfile(REPO / "metrics" / name / f"{name}.py", folder / f"{name}.py")
    requirement = f"=={version()}"
    if wheel is not None:
        (folder / "wheels").mkdir()
        shutil.copyfile(wheel, folder / "wheels" / wheel.name)
        requirement = f" @ {wheel_url(repo_id, wheel)}"
    (folder / "requirements.txt").write_text(pinned_requirements(name, requirement), encoding="utf-8")
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
        "--bundle-wheel",
        action="store_true",
        help="ship a wheel of this checkout in each Space and install it from there (unreleased code, public Spaces)",
    )
    args = parser.parse_args(argv)
    token = os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")
    if not args.dry_run and not token:
        print("set HF_TOKEN to a write token (or pass --dry-run to stage only)", file=sys.stderr)
        return 2
    if not args.dry_run and not args.bundle_wheel and not released(version()):
        print(
            f"opinion-metrics {version()} is not on PyPI (or PyPI cannot be reached), so a Space pinning it "
            "would fail to build; release it first, or pass --bundle-wheel to ship a wheel of this checkout",
            file=sys.stderr,
        )
        return 2
    wheel = build_wheel(args.out / "wheel") if args.bundle_wheel else None
    for name in args.only or SPACES:
        repo_id = f"{args.namespace}/{name}"
        folder = stage(name, args.out, repo_id, wheel)
        if args.dry_run:
            print(f"staged {folder}")
        else:
            print(f"published {upload(folder, repo_id, token)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
