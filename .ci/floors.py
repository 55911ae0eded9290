"""Print the declared minimum versions ("name==floor") of setup.cfg's install_requires and
of the extras named on the command line, for the Python running this script.

    python .ci/floors.py setup.cfg [extra ...]
"""

import configparser
import sys

from packaging.requirements import Requirement


def floors(setup_cfg: str, extras: list[str]) -> list[str]:
    config = configparser.ConfigParser()
    config.read(setup_cfg, encoding="utf-8")
    lines = config["options"]["install_requires"].splitlines()
    for extra in extras:
        lines += config["options.extras_require"][extra].splitlines()
    pins = []
    for line in filter(None, (line.strip() for line in lines)):
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
