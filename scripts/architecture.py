"""The layers of src/opinion_metrics as the code has them: which sub-package imports which.

    python scripts/architecture.py            # the diagram of docs/architecture.md (Mermaid)
    python scripts/architecture.py --check    # exit 1 if an import runs up the layers or the
                                              # diagram in docs/architecture.md is out of date

`LAYERS` is the order, lowest first; a module may import its own layer and those below it.
tests/project/test_architecture.py runs the same checks.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "opinion_metrics"
DOC = REPO / "docs" / "architecture.md"
# Lowest first. The top-level modules are the surfaces' adapters (public paths); "" is the
# package's __init__ (the public names).
LAYERS = (
    "_native",
    "io",
    "core",
    "stats",
    "embeddings",
    "families",
    "state",
    "analysis",
    "engines",
    "view",
    "cli",
    "demo",
    "evaluate_support",
    "trainer",
    "ray",
    "spark",
    "",
)
ROOT_CONSTANTS = {"DEFINITIONS_URL", "__version__"}  # the package's own metadata, importable from anywhere


def modules() -> dict[str, Path]:
    """Every module of the package by its dotted name within it ("core.matching"; "" the package)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def layer(module: str) -> str:
    return module.split(".")[0]


def imports(module: str, path: Path) -> list[tuple[str, list[str], bool]]:
    """(imported module within the package, names, when the module is imported?) of every
    relative import of `module`: an import inside a function, or under `if TYPE_CHECKING:`,
    does not run when the module is imported."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for node in ast.walk(block)
    }
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    package = [part for part in package if part]
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
        target = ".".join(base + ([node.module] if node.module else []))
        names = [alias.name for alias in node.names]
        found.append((target, names, node.col_offset == 0 and id(node) not in typing_only))
    return found


def upward_imports() -> list[str]:
    """Every import from a lower layer into a higher one (the package's constants aside)."""
    problems = []
    for module, path in modules().items():
        here = LAYERS.index(layer(module))
        for target, names, _ in imports(module, path):
            targets = [f"{target}.{name}" if target else name for name in names] if target in ("",) else [target]
            if target == "" and set(names) <= ROOT_CONSTANTS:
                continue
            for imported in targets:
                if LAYERS.index(layer(imported)) > here:
                    problems.append(f"{module} imports {imported} ({', '.join(names)}): up from {layer(module)!r}")
    return problems


def import_cycles() -> list[list[str]]:
    """Cycles among the imports that run when a module is imported, each as a list of modules."""
    known = modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in known.items():
        for target, names, at_import in imports(module, path):
            if at_import:
                submodules = [f"{target}.{name}".strip(".") for name in names]
                graph[module].update(name for name in submodules if name in known and name != module)
                if not all(name in known for name in submodules) and target != module:
                    graph[module].add(target)
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
    return cycles


def mermaid() -> str:
    """The sub-packages as a Mermaid graph, each arrow an import between them, layers top-down."""
    edges = set()
    for module, path in modules().items():
        for target, names, _ in imports(module, path):
            for imported in [target] if target else names:
                a, b = layer(module) or "opinion_metrics", layer(imported) or "opinion_metrics"
                if a != b and not (b == "opinion_metrics" and set(names) <= ROOT_CONSTANTS):
                    edges.add((a, b))
    names = {name: name or "opinion_metrics" for name in LAYERS}
    lines = ["```mermaid", "flowchart BT"]
    lines += [
        f"    {names[low]} --> {names[high]}" for high in LAYERS for low in LAYERS if (names[high], names[low]) in edges
    ]
    lines.append("```")
    return "\n".join(lines)


def documented_diagram() -> str | None:
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    found = re.search(r"```mermaid\n.*?```", text, flags=re.S)
    return found.group(0) if found else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="check the layers and the documented diagram")
    args = parser.parse_args(argv)
    if not args.check:
        print(mermaid())
        return 0
    problems = upward_imports() + [" -> ".join(cycle) for cycle in import_cycles()]
    if documented_diagram() != mermaid():
        problems.append("docs/architecture.md: its diagram is not the code's (python scripts/architecture.py)")
    print("\n".join(problems) or "the layers hold")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
