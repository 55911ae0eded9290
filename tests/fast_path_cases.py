"""What the fast-path tests share: Hypothesis strategies of text with the characters each
normalization treats specially, and `encode_lists` as its docstring defines it."""

from __future__ import annotations

from hypothesis import strategies as st

# ASCII-heavy text with the characters each normalization treats specially: punctuation,
# symbols, every ASCII white space (\x1c-\x1f split in str but not in bytes), NUL (the batch
# separator), and non-ASCII look-alikes (NFKC, casefold, format characters, surrogates).
ASCII = "aZ09 _-!.,#$+<=>^`|~\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x00\x7f"
UNICODE = "ßİéＡﬁ\u00a0\u200b\ufeff\u3000ς\u0301\ud800"
any_text = st.text(alphabet=ASCII + UNICODE, max_size=12) | st.text(max_size=8)


def _encoded_by_definition(lists):
    """`encode_lists` as its docstring defines it, one keyword at a time."""
    if not all(type(row) in (list, tuple) for row in lists):
        return None
    if not all(type(keyword) is str for row in lists for keyword in row):
        return None
    table: dict[str, int] = {}
    codes = [table.setdefault(keyword, len(table)) for row in lists for keyword in row]
    return [len(row) for row in lists], codes, list(table)
