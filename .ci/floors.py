"""Print the declared minimum versions ("name==floor") of pyproject.toml's dependencies and
of the extras named on the command line, for the Python running this script.

    python .ci/floors.py pyproject.toml [extra ...]
"""

import sys
import tomllib

from packaging.requirements import Requirement


def floors(pyproject: str, extras: list[str]) -> list[str]:
    with open(pyproject, "rb") as file:
        project = tomllib.load(file)["project"]
    lines = list(project["dependencies"])
    for extra in extras:
        lines += project["optional-dependencies"][extra]
    pins = []
    for line in lines:
        requirement = Requirement(line)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        minimum = [spec.version for spec in requirement.specifier if spec.operator == ">="]
        if not minimum:
            raise SystemExit(f"{pyproject}: {line!r} states no floor")
        pins.append(f"{requirement.name}=={minimum[0]}")
    return pins


if __name__ == "__main__":
    print(" ".join(floors(sys.argv[1], sys.argv[2:])))
