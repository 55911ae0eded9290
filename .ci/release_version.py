#!/usr/bin/env python3
"""Check that a release tag names the version of the code and of the changelog:

    python .ci/release_version.py v0.3.0 [--repo PATH]

passes when src/opinion_metrics/__init__.py says __version__ = "0.3.0", the newest release
heading of CHANGELOG.md is "## [0.3.0] - <date>" and its "Unreleased" section is empty.
"""

import argparse
import re
import sys
from pathlib import Path


def problems(tag: str, repo: Path) -> list[str]:
    init = (repo / "src" / "opinion_metrics" / "__init__.py").read_text(encoding="utf-8")
    version = re.search(r'^__version__ = "([^"]+)"$', init, flags=re.M)
    changelog = (repo / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## \[(\d[^\]]*)\] - \d{4}-\d{2}-\d{2}$", changelog, flags=re.M)
    unreleased = re.search(r"^## \[Unreleased\]\n(.*?)(?=^## \[)", changelog, flags=re.M | re.S)
    found = []
    if version is None:
        found.append("src/opinion_metrics/__init__.py has no __version__ line")
    elif tag != f"v{version[1]}":
        found.append(f"the tag {tag} is not v + __version__ ({version[1]})")
    if not releases or tag != f"v{releases[0]}":
        found.append(f"the tag {tag} is not v + CHANGELOG.md's newest release ({releases[0] if releases else 'none'})")
    if unreleased and unreleased[1].strip():
        found.append("CHANGELOG.md's Unreleased section is not empty: move its entries under the release")
    return found


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tag")
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    found = problems(args.tag, args.repo)
    for problem in found:
        print(f"release_version: {problem}", file=sys.stderr)
    sys.exit(1 if found else 0)
