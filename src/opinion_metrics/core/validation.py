"""Every check of inputs and options, in one place: each returns the value it accepts (as
the type the library uses) or raises a `ValueError` that names the option, the example
and the value. The library, the evaluate glue, the CLI and the Spaces all call these, so
one mistake has one message on every surface (which then speaks its own vocabulary)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ..io.rows import python_values

AVERAGES = ("macro", "micro")
MATCH_RELATIONS = ("exact", "substring", "token")
RELEVANCES = ("graded", "binary")
PRESENCES = ("all", "present", "absent")
BOOTSTRAPS = ("multinomial", "poisson")
TopK = int | str | None


def describe(value: Any, limit: int = 60) -> str:
    """Short `type value` description of a bad input for error messages."""
    text = repr(value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{type(value).__name__} {text}"


FLAT_LIST_HINT = "expected a list of keyword lists per example, such as [['war', 'jedi'], ['fraud']]"
FLAT_SCORES_HINT = "expected a list of score lists per example, such as [[0.9, 0.4], [0.7]]"
# The inputs holding one number per keyword (a flat list of numbers is one example's, not the corpus's).
NUMBER_SIDES = ("scores", "prediction_sentiments")


def check_keyword_list(value: Any, side: str, index: int, items: str = "keywords (str)") -> Sequence[Any]:
    """Check that one example's entry is a list of `items` (not a bare string, not None).

    A 1-d numpy array or torch tensor, a pandas or polars Series and an Arrow array are read
    by position."""
    if isinstance(value, (list, tuple)):
        return value
    if isinstance(value, str):
        hint = f"; {FLAT_LIST_HINT}" if items.startswith("keywords") else ""
        raise ValueError(f"{side}: example {index} must be a list of {items}, got {describe(value)}{hint}")
    if isinstance(value, np.ndarray):
        if value.ndim == 1:
            return value.tolist()
    elif not isinstance(value, (bytes, Mapping)):
        if isinstance(value, Sequence):
            return value
        # pandas, polars, Arrow; torch (tolist)
        to_list = getattr(value, "to_list", None) or getattr(value, "to_pylist", None) or getattr(value, "tolist", None)
        if callable(to_list) and hasattr(value, "__len__") and getattr(value, "ndim", 1) == 1:
            listed = to_list()
            if isinstance(listed, list):
                return listed
    raise ValueError(f"{side}: example {index} must be a list of {items}, got {describe(value)}")


def lone_surrogate(text: str) -> str | None:
    """Why `text` is not valid Unicode (a lone surrogate, such as the half of a truncated
    emoji "\\ud83d"), or None. Such a string cannot be written as UTF-8 (Arrow, files)."""
    if str.isascii(text):  # (str's own methods: a subclass may override them)
        return None
    try:
        str.encode(text, "utf-8")
    except UnicodeEncodeError as error:
        return (
            f"holds a lone surrogate {text[error.start]!r} at character {error.start}, which is not valid Unicode "
            "(a truncated emoji?)"
        )
    return None


def any_lone_surrogate(texts: Sequence[str]) -> bool:
    """Whether a lone surrogate is in any of `texts` (`lone_surrogate`), in one pass (UTF-8
    never pairs two surrogates of a str, so joining them hides none)."""
    joined = "".join(texts)
    if joined.isascii():
        return False
    try:
        joined.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check_keyword(value: Any, side: str, index: int, position: int) -> None:
    """Every keyword must be a str of valid Unicode."""
    if not issubclass(type(value), str):  # (an object claiming str as its __class__ is not one)
        raise ValueError(f"{side}: example {index}, keyword {position} must be a str, got {describe(value)}")
    problem = lone_surrogate(value)
    if problem:
        raise ValueError(f"{side}: example {index}, keyword {position} {describe(value)} {problem}")


def check_text(value: Any, side: str, index: int, allow_none: bool) -> None:
    """One text: a str of valid Unicode (or None, with `allow_none`)."""
    if value is None and allow_none:
        return
    if not isinstance(value, str):
        raise ValueError(
            f"{side}: example {index} must be {'a str (or None)' if allow_none else 'a str'}, got {describe(value)}"
        )
    problem = lone_surrogate(value)
    if problem:
        raise ValueError(f"{side}: example {index} ({describe(value)}) {problem}")


def check_corpus(value: Any, side: str) -> Sequence[Any]:
    """Check that a corpus-level input is a sequence with one entry per example and return
    it as a list or tuple, read by position: a pandas Series with any index, a numpy array
    and an Arrow column are read in order, never by label."""
    if isinstance(value, (list, tuple)):
        return value
    if isinstance(value, Iterator) and not hasattr(value, "__len__"):  # a generator: read once, in order
        return list(value)
    if (
        value is None
        or isinstance(value, (str, bytes, dict))
        or hasattr(value, "columns")  # a DataFrame iterates over its column labels
        or not hasattr(value, "__len__")
        or not hasattr(value, "__iter__")
        or (isinstance(value, np.ndarray) and value.ndim == 0)
    ):
        raise ValueError(f"{side} must be a list with one entry per example, got {describe(value)}")
    if callable(getattr(value, "to_pylist", None)):  # Arrow arrays and chunked arrays
        return python_values(value)
    return list(value)


def check_same_length(keyword_sides: Sequence[str] = ("predictions", "references"), **corpora: Sequence[Any]) -> int:
    """Check that all corpus-level inputs have one entry per example; return that count.

    Keywords (the `keyword_sides`) given as a flat list of strings (one example's list, not
    one list per example) are named as such, rather than as a length mismatch."""
    for name in keyword_sides:
        corpus = corpora.get(name)
        if corpus is not None and len(corpus) and isinstance(corpus[0], str):
            raise ValueError(f"{name}: {FLAT_LIST_HINT}; got a flat list of str starting with {corpus[0]!r}")
    for name in NUMBER_SIDES:
        corpus = corpora.get(name)
        if corpus is not None and len(corpus) and _number(corpus[0]):
            hint = FLAT_SCORES_HINT.replace("score", "sentiment") if name != "scores" else FLAT_SCORES_HINT
            first = as_number(corpus[0].item() if isinstance(corpus[0], np.generic) else corpus[0])
            raise ValueError(f"{name}: {hint}; got a flat list of {name.replace('_', ' ')} starting with {first!r}")
    lengths = {name: len(corpus) for name, corpus in corpora.items()}
    if len(set(lengths.values())) > 1:
        described = ", ".join(f"{name} has {n}" for name, n in lengths.items())
        shortest = min(lengths, key=lengths.get)
        raise ValueError(
            f"inputs must have one entry per example, but {described} (example {lengths[shortest]} has no {shortest})"
        )
    n = next(iter(lengths.values()))
    if n == 0:
        raise ValueError("cannot evaluate an empty corpus (0 examples)")
    return n


def _number(value: Any) -> bool:
    """A number (a numpy or 0-d array one too), not a bool: a score where a list of scores belongs."""
    value = as_number(value)
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def check_score(value: Any, side: str, index: int, position: int, keyword: Any, clip: bool) -> float:
    """Validate one score (finite, in [0, 1] unless clipped) and return it as a float
    (`keyword`, when not None, is named in the message)."""
    where = f"{side}: example {index}, keyword {position}" + ("" if keyword is None else f" ({keyword!r})")
    value = as_number(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{where}: score must be a number in [0, 1], got {describe(value)}")
    score = float(value)
    if not math.isfinite(score):
        raise ValueError(f"{where}: score must be finite, got {score!r}")
    if 0.0 <= score <= 1.0:
        return score
    if clip:
        return min(max(score, 0.0), 1.0)
    hint = "; pass clip_scores=True to clip scores such as negative cosine similarities into [0, 1]"
    raise ValueError(f"{where}: score {score!r} is outside [0, 1]" + (hint if side == "scores" else ""))


def as_number(value: Any) -> Any:
    """A numeric 0-d array (numpy, torch) as its Python number; anything else as is."""
    if (
        getattr(value, "ndim", None) == 0
        and callable(getattr(value, "item", None))
        and not isinstance(value, np.generic)
    ):
        number = value.item()
        if isinstance(number, numbers.Real) and not isinstance(number, bool):
            return number
    return value


def check_average(average: str) -> str:
    if average not in AVERAGES:
        raise ValueError(f"average must be one of {AVERAGES}, got {average!r}")
    return average


def check_zero_division(zero_division: Any) -> float:
    if isinstance(zero_division, bool) or not isinstance(zero_division, numbers.Real):
        raise ValueError(f"zero_division must be a number in [0, 1], got {zero_division!r}")
    value = float(zero_division)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"zero_division must be a number in [0, 1], got {zero_division!r}")
    return value


def check_flag(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


# The largest count an option may give (a rank cut-off, a batch size): exact in float64, where
# precision divides by it.
MAX_COUNT = 2**53


def check_positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if value > MAX_COUNT:
        raise ValueError(f"{name} must be at most 2**53 = {MAX_COUNT:,}, got {short_number(value)}")
    return int(value)


def short_number(value: int) -> str:
    """An integer as its digits, or a huge one by its size (str() refuses past 4,300 digits)."""
    bits = int(value).bit_length()
    if bits <= 128:
        return str(int(value))
    return f"{'a negative' if value < 0 else 'an'} integer of about {int(bits * math.log10(2)) + 1} digits"


def check_top_k(top_k: TopK) -> TopK:
    """`None` or "M" (all predictions), "O" (as many as gold keywords), or a positive int."""
    if top_k is None or top_k == "M":
        return None
    if top_k == "O":
        return "O"
    if isinstance(top_k, str):
        raise ValueError(f"top_k must be None, 'M', 'O' or a positive integer, got {top_k!r}")
    return check_positive_int(top_k, "top_k")


def parse_top_k(text: str) -> TopK:
    """`top_k` typed as text (a command-line flag, a Space's box): "M" or "" (all), "O", or a
    positive integer, checked as `check_top_k` checks it. Case does not matter."""
    value = str(text).strip()
    if value.upper() in ("", "M"):
        return None
    if value.upper() == "O":
        return "O"
    if not value.lstrip("+").isascii() or not value.lstrip("+").isdigit():  # "5²" is a digit to isdigit
        raise ValueError(f"top_k must be M, O or a positive integer, got {value!r}")
    if len(value.lstrip("+")) > 30:  # (int() refuses 4,300 digits and more with a message of its own)
        raise ValueError(
            f"top_k must be at most 2**53 = {MAX_COUNT:,}, got a number of {len(value.lstrip('+'))} digits"
        )
    return check_top_k(int(value))


def check_match(match: str) -> str:
    if match not in MATCH_RELATIONS:
        raise ValueError(f"match must be one of {MATCH_RELATIONS}, got {match!r}")
    return match


def check_count_options(
    match: Any, one_to_one: Any, average: Any, top_k: Any, zero_division: Any
) -> tuple[str, bool, str, TopK, float]:
    """The options of a count-based keyword family, checked in this order and returned checked."""
    return (
        check_match(match),
        check_flag(one_to_one, "one_to_one"),
        check_average(average),
        check_top_k(top_k),
        check_zero_division(zero_division),
    )


def check_relevance(relevance: str) -> str:
    if relevance not in RELEVANCES:
        raise ValueError(f"relevance must be one of {RELEVANCES}, got {relevance!r}")
    return relevance


def check_threshold(threshold: Any) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real) or not -1.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be a number in [-1, 1] (a cosine similarity), got {threshold!r}")
    return float(threshold)


def check_presence(presence: Any) -> str:
    if presence not in PRESENCES:
        raise ValueError(f"presence must be one of {PRESENCES}, got {presence!r}")
    return presence


def check_texts(texts: Any, n: int, option: str = "presence", allow_none: bool = False) -> list[str | None]:
    """One `str` per example (or None, with `allow_none`); anything else is an error naming
    the example."""
    if texts is None:
        raise ValueError(f"{option} needs texts: one document (review) per example")
    texts = check_corpus(texts, "texts")
    if len(texts) != n:
        raise ValueError(f"inputs must have one entry per example, but predictions has {n}, texts has {len(texts)}")
    for index, text in enumerate(texts):
        check_text(text, "texts", index, allow_none)
    return list(texts)


def check_aspects(aspects: Any) -> tuple[str, ...]:
    if isinstance(aspects, np.ndarray) and aspects.ndim == 1:
        aspects = aspects.tolist()
    if isinstance(aspects, str) or not isinstance(aspects, Sequence) or not aspects:
        raise ValueError(f"aspects must be a non-empty list of names, got {describe(aspects)}")
    names = tuple(aspects)
    if not all(isinstance(name, str) and name for name in names) or len(set(names)) != len(names):
        raise ValueError(f"aspects must be distinct non-empty strings, got {names!r}")
    for name in names:
        if lone_surrogate(name):
            raise ValueError(f"aspects: the name {name!r} {lone_surrogate(name)}")
    return names


def check_rating_range(min_rating: Any, max_rating: Any) -> tuple[int, int]:
    for name, value in (("min_rating", min_rating), ("max_rating", max_rating)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ValueError(f"{name} must be an integer, got {describe(value)}")
    if not 1 <= min_rating < max_rating:
        shown = f"{short_number(min_rating)} and {short_number(max_rating)}"
        raise ValueError(f"need 1 <= min_rating < max_rating (0 means absent), got {shown}")
    if max_rating > MAX_COUNT:
        raise ValueError(f"max_rating must be at most 2**53 = {MAX_COUNT:,}, got {short_number(max_rating)}")
    return int(min_rating), int(max_rating)


def check_confidence_level(confidence_level: Any) -> float:
    """A number strictly between 0 and 1 (e.g. 0.95)."""
    if (
        isinstance(confidence_level, bool)
        or not isinstance(confidence_level, numbers.Real)
        or not 0.0 < float(confidence_level) < 1.0
    ):
        raise ValueError(f"confidence_level must be a number strictly between 0 and 1, got {confidence_level!r}")
    return float(confidence_level)


# More resamples move a percentile interval by less than its printed digits, and would run for
# hours (a count read from a state's bytes cannot make compute() run forever).
MAX_RESAMPLES = 1_000_000


def check_n_resamples(n_resamples: Any) -> int:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, numbers.Integral) or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    if n_resamples > MAX_RESAMPLES:
        raise ValueError(f"n_resamples must be at most {MAX_RESAMPLES:,}, got {n_resamples:,}")
    return int(n_resamples)


def check_random_state(random_state: Any) -> np.random.Generator:
    """`None` (fresh randomness), a non-negative int seed, or a `numpy.random.Generator`."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None:
        return np.random.default_rng()
    return np.random.default_rng(_checked_seed(random_state))


def _checked_seed(random_state: Any) -> int:
    if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral) or random_state < 0:
        raise ValueError(
            f"random_state must be None, a non-negative integer or a numpy.random.Generator, got {random_state!r}"
        )
    return int(random_state)


def check_bootstrap(bootstrap: Any) -> str:
    """ "multinomial" (docs/definitions.md section 11) or "poisson" (docs/definitions.md section 12)."""
    if bootstrap not in BOOTSTRAPS:
        raise ValueError(f"bootstrap must be one of {BOOTSTRAPS}, got {bootstrap!r}")
    return bootstrap


def check_interval_options(
    confidence_level: Any, n_resamples: Any, random_state: Any, bootstrap: Any = "multinomial"
) -> dict[str, Any]:
    """Validate a family's interval options up front; return them as the keyword arguments of
    `summarize` / `bootstrap_intervals` (`confidence_level` None: intervals off)."""
    check_n_resamples(n_resamples)
    check_bootstrap(bootstrap)
    if random_state is not None and not isinstance(random_state, np.random.Generator):
        _checked_seed(random_state)  # (a generator is made only where intervals are drawn)
    level = None if confidence_level is None else check_confidence_level(confidence_level)
    return {"confidence_level": level, "n_resamples": n_resamples, "random_state": random_state, "bootstrap": bootstrap}


def outside_range(number: int, min_rating: int, max_rating: int) -> str:
    shown = short_number(number)  # a 301-digit rating by its size
    shown = shown if shown.lstrip("-").isdigit() else f"({shown})"
    return f"rating {shown} is outside {{0}} ∪ [{min_rating}, {max_rating}] (0 means the aspect is absent)"


def rating_problem(value: Any, min_rating: int | None = None, max_rating: int | None = None) -> str | None:
    """Why one entry is not a valid rating, or None: it must be an integer (4.0 counts, a bool
    does not) and, when a range is given, 0 (absent) or within [min_rating, max_rating]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return f"rating must be an integer, got {describe(value)}"
    if isinstance(value, numbers.Integral) or math.isfinite(value) and float(value).is_integer():
        number = int(value)
    else:
        return f"rating must be an integer, got {describe(value)}"
    if min_rating is not None and max_rating is not None and number != 0 and not min_rating <= number <= max_rating:
        return outside_range(number, min_rating, max_rating)
    return None


def check_device(device: Any) -> str | None:
    """None (CUDA when available), or a device PyTorch knows and can see here ("cpu",
    "cuda", "cuda:1", "mps"); checked before any model loads or any data is consumed."""
    if device is None:
        return None
    if not isinstance(device, str):
        if type(device).__name__ != "device":  # a torch.device
            raise ValueError(f"device must be a str such as 'cpu', 'cuda' or 'mps' (or None), got {describe(device)}")
        device = str(device)
    import torch

    known = "'cpu', 'cuda', 'cuda:N' or 'mps' (or None: CUDA when available)"
    try:
        parsed = torch.device(device)
    except (RuntimeError, ValueError):
        raise ValueError(f"device must be {known}, got {device!r}: not a device PyTorch knows") from None
    visible = f"device must be one PyTorch can see here, got {device!r}"
    if parsed.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                f"{visible}: it sees no CUDA GPU (torch.cuda.is_available() is False); use 'cpu', or leave it unset "
                "to pick what is available"
            )
        if parsed.index is not None and parsed.index >= torch.cuda.device_count():
            raise ValueError(f"{visible}: it sees {torch.cuda.device_count()} CUDA GPU(s)")
    elif parsed.type == "mps":
        if not (getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()):
            raise ValueError(f"{visible}: it sees no Apple MPS device; use 'cpu'")
    elif parsed.type != "cpu":
        raise ValueError(f"device must be {known}, got {device!r}: the metrics run models on these only")
    return device


def check_model(model: Any) -> Any:
    """None (no model, where that is allowed), a model name or path, or an object with `.encode`."""
    if isinstance(model, str):  # (a str has an `encode` method too)
        if model.strip():
            return model
        raise ValueError(
            f"the model name is empty ({model!r}): give a sentence-transformers model name (such as "
            "sentence-transformers/all-MiniLM-L6-v2), a path or a model object with .encode"
        )
    elif model is None or (not isinstance(model, type) and callable(getattr(model, "encode", None))):
        return model
    raise ValueError(
        "model must be a sentence-transformers model name, a path or a model object with .encode, "
        f"got {describe(model)}"
    )


def check_sentiment(sentiment: Any) -> Callable[[str], Any] | None:
    """None (VADER) or a callable str -> number in [0, 1]."""
    if sentiment is not None and not callable(sentiment):
        raise ValueError(
            f"sentiment must be None (VADER) or a callable str -> float in [0, 1], got {describe(sentiment)}"
        )
    return sentiment


NORMALIZE_PROBE = "Star Wars: the Empire's fall"


def check_normalize_callable(normalize: Callable[[str], Any]) -> None:
    """A custom `normalize` must return a str: it is tried on a fixed keyword up front, so a
    wrong one fails before any data is read (or consumed by evaluate)."""
    try:
        result = normalize(NORMALIZE_PROBE)
    except Exception as error:  # noqa: BLE001 - reported with the option's name
        raise ValueError(
            f"normalize raised {type(error).__name__}: {error} on the keyword {NORMALIZE_PROBE!r}; it must map any "
            "str to a str"
        ) from error
    if not isinstance(result, str):
        raise ValueError(
            f"normalize returned {describe(result)} for the keyword {NORMALIZE_PROBE!r}; it must return a str"
        )
