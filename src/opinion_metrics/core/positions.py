"""The library's own position in its messages ("example N"), which the CLI, the worker
processes, states and the Spaces rewrite (a line of the file, a position in the whole corpus,
a dataset row, a line of a text box), and nothing else: a keyword or a text that reads
"example 0" is quoted, and never taken for one."""

from __future__ import annotations

import re
from collections.abc import Callable

_POSITION = re.compile(r"\bexample (\d+)\b")
_QUOTE = re.compile(r"(?<!\w)['\"]")  # the opening quote of a repr (an apostrophe follows a letter)
# A value quoted in a message ('example 0', "it's"): a whole repr of a str.
_QUOTED = re.compile(r"""(?<!\w)'(?:[^'\\\n]|\\.)*'(?!\w)|(?<!\w)"(?:[^"\\\n]|\\.)*"(?!\w)""")


def example_position(message: str) -> re.Match[str] | None:
    """The library's own position in one of its messages, "example N": the first before any
    quoted value. Keywords and texts are shown quoted (repr), so "example 0" inside one is
    never taken for a position."""
    quote = _QUOTE.search(message)
    return _POSITION.search(message, 0, quote.start() if quote else len(message))


def rename_example(message: str, name: Callable[[int], str]) -> str:
    """`message` with its position (`example_position`) replaced by `name(N)`: a row of a
    file, an example of the whole corpus rather than of a chunk."""
    found = example_position(message)
    if found is None:
        return message
    return message[: found.start()] + name(int(found.group(1))) + message[found.end() :]


def rename_examples(message: str, name: Callable[[int], str]) -> str:
    """`message` with every "example N" outside its quoted values replaced by `name(N)` (a
    message naming several examples, as a Space shows it)."""
    return outside_quotes(message, lambda text: _POSITION.sub(lambda found: name(int(found.group(1))), text))


def outside_quotes(message: str, rewrite: Callable[[str], str]) -> str:
    """`message` with `rewrite` applied to its text between quoted values, which are kept as
    they are."""
    parts, end = [], 0
    for quoted in _QUOTED.finditer(message):
        parts += [rewrite(message[end : quoted.start()]), quoted[0]]
        end = quoted.end()
    parts.append(rewrite(message[end:]))
    return "".join(parts)
