"""Print the declared minimum versions ("name==floor") of setup.cfg's install_requires and
of the extras named on the command line, for the Python running this script.

    python .ci/floors.py setup.cfg [extra ...]
"""

import configparser
import sys

from packaging.requirements import Requirement


def requirements(value: str) -> list[str]:
    """A requirement list of setup.cfg: one a line (configparser drops the comment lines)."""
    return [line.strip() for line in value.splitlines() if line.strip()]


def floors(setup_cfg: str, extras: list[str]) -> list[str]:
    config = configparser.ConfigParser(interpolation=None)
    with open(setup_cfg, encoding="utf-8") as file:
        config.read_file(file)
    lines = requirements(config["options"]["install_requires"])
    for extra in extras:
        lines += requirements(config["options.extras_require"][extra])
    pins = []
    for line in lines:
        requirement = Requirement(line)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        minimum = [spec.version for spec in requirement.specifier if spec.operator == ">="]
        if not minimum:
            raise SystemExit(f"{setup_cfg}: {line!r} states no floor")
        pins.append(f"{requirement.name}=={minimum[0]}")
    return pins


if __name__ == "__main__":
    print(" ".join(floors(sys.argv[1], sys.argv[2:])))
