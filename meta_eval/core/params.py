"""Declared parameters: a name, a default, a parser from text, a description and a domain, checked in one place.

One mechanism for every parameter a user gives meta-eval: a measure's (``RBP(p=0.8)``, declared by the family in
:mod:`meta_eval.measures.registry`) and an analysis's (a seed, a number of resamples, a significance level: the
shared vocabulary below). A value outside its domain is an :class:`~meta_eval.core.errors.InputError` naming the
parameter, the value and the allowed values — before any work, never a traceback from inside numpy.
"""

from __future__ import annotations

import collections.abc
import math
import numbers
import re
import sys
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Iterable

from meta_eval.core.errors import InputError

if TYPE_CHECKING:  # numpy is imported where a value needs it: reading the parameters stays light
    import numpy as np


@dataclass(frozen=True)
class Param:
    """A declared measure parameter: name, default, a parser from text, a description and its domain.

    The domain is declared once and checked when a name is parsed (:func:`get_measure`) or a measure is bound
    (:func:`make_measure`), never inside the measure function:

    ``within``
        an interval in mathematical notation, ``"(0, 1)"``, ``"[1, inf)"``, ``"[0, 1]"``: the value (or every
        element of a tuple value) must lie in it; numbers must be finite.
    ``choices``
        the allowed words.
    ``check``
        a callable ``value -> message or None`` for what an interval cannot say (a distribution, a gain map);
        ``domain`` then describes it in words for ``meta-eval measures``.

    A parameter whose default is None may also be None (no cutoff, default collection size).

    Two fields serve the command lines generated from declarations (:mod:`meta_eval.cli.generated`):
    ``many`` (the value is a tuple of such values, given by repeating the option) and ``flags`` (the option's
    spellings, ``("--draws",)``; default ``--name`` with dashes).
    """

    name: str
    default: Any
    parse: Callable[[str], Any] = float
    doc: str = ""
    within: str | None = None
    choices: tuple[str, ...] | None = None
    check: Callable[[Any], "str | None"] | None = None
    domain: str | None = None
    many: bool = False
    flags: tuple[str, ...] = ()

    @property
    def option(self) -> str:
        """The command-line spelling: the first of ``flags``, else ``--name`` with dashes."""
        return self.flags[0] if self.flags else "--" + self.name.replace("_", "-")

    @property
    def domain_text(self) -> str:
        """The allowed values in words: ``"number in (0, 1)"``, ``"integer in [1, inf)"``, ``"one of a, b"``."""
        if self.domain:
            return self.domain
        if self.many:
            return "each " + replace(self, many=False).domain_text
        if self.choices:
            return "one of " + ", ".join(self.choices)
        if self.parse is parse_bool:
            return "true or false (yes/no, 1/0)"
        kind = {int: "integer", float: "number", str: "text"}.get(self.parse, "value")
        if self.within:
            return f"{kind} in {self.within}"
        return kind

    def validate(self, value: Any, where: str, kind: str = "parameter") -> Any:
        """The value, converted to the declared type, or an InputError naming ``where``, the parameter (``kind``
        and name: ``parameter alpha``, or ``option --alpha`` on a command line) and its domain."""
        if value is None and self.default is None:
            return None
        if self.many:
            if isinstance(value, (str, bytes)) or not isinstance(value, collections.abc.Iterable):
                value = (value,)
            one = replace(self, many=False, default=...)
            values = tuple(one.validate(v, where, kind) for v in value)
            if not values:
                raise InputError(f"{where}: {kind} {self.name} is empty; allowed: {self.domain_text}")
            try:  # after parsing: --min-d 0.1 --min-d 0.10 is one value given twice
                return unique(values, self.name, kind)
            except InputError as exc:
                raise InputError(f"{where}: {exc}") from None
        if isinstance(value, str) and self.parse is not str and not self.choices:
            value = parse_value(self, value, where)
        problem = self._problem(value)
        if problem is not None:
            shown = format_value(value) if not isinstance(value, str) else repr(value)
            raise InputError(f"{where}: {kind} {self.name}={shown} {problem}; allowed: {self.domain_text}"
                             + (f" ({self.doc})" if self.doc and not self.domain else ""))
        if self.parse is int and not isinstance(value, bool):
            return int(value)
        if self.parse is float:
            return _as_float(value)
        return value

    def _problem(self, value: Any) -> "str | None":
        if self.choices is not None:
            if value not in self.choices:
                close = did_you_mean(str(value), self.choices)
                return "is not allowed" + (f" (did you mean {close}?)" if close else "")
            return None
        elements = value if isinstance(value, tuple) else (value,)
        if self.parse is str and not all(isinstance(v, str) for v in elements):  # TOML's 5 for a folder's name
            return "is not text"
        if self.parse is parse_bool and not all(isinstance(v, (bool, str)) or type(v).__name__ in ("bool", "bool_")
                                                for v in elements):  # 2 or [] was taken as true
            return "is not true or false"
        if self.parse in (int, float) or self.within:
            for v in elements:
                if isinstance(v, bool) or not isinstance(v, numbers.Real):  # numpy's scalars are numbers.Real too
                    return "is not a number"
                try:
                    x = float(v)
                except OverflowError:
                    return "is too large"
                if not math.isfinite(x):
                    return "is not finite"
                if self.parse is int and (int(v) != v or abs(int(v)) > 2**53):
                    return "is not an integer" if int(v) != v else "is too large (at most 2^53)"
                if self.within and not _in_interval(x, self.within):
                    return "is out of range"
        if self.check is not None:
            return self.check(value)
        return None


_INTERVAL = re.compile(r"^\s*([\[(])\s*(-?inf|[-+0-9.e]+)\s*,\s*(-?inf|[-+0-9.e]+)\s*([\])])\s*$")


def interval(text: str) -> tuple[float, bool, float, bool]:
    """``"[a, b)"`` -> (a, a is included, b, b is included); ``inf`` for an unbounded end."""
    match = _INTERVAL.match(text)
    if match is None:  # pragma: no cover - a malformed declaration is a programming error
        raise ValueError(f"bad interval {text!r}")
    left, a, b, right = match.groups()
    return float(a), left == "[", float(b), right == "]"


def _in_interval(x: float, text: str) -> bool:
    """Whether ``x`` lies in an interval written ``[a, b)``, ``(a, inf)``..."""
    lo, lo_in, hi, hi_in = interval(text)
    return (x > lo or (lo_in and x == lo)) and (x < hi or (hi_in and x == hi))


def did_you_mean(word: str, candidates: Iterable[str], n: int = 3) -> str:
    """The candidates closest to ``word`` (case-insensitive; difflib's ratio), as ``"a, b or c"``; "" if none."""
    import difflib

    by_lower: dict[str, str] = {}
    for c in candidates:
        by_lower.setdefault(c.lower(), c)
    close = difflib.get_close_matches(word.lower(), list(by_lower), n=n, cutoff=0.6)
    names = [by_lower[c] for c in close]
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " or " + names[-1]



# Numbers as C writes them, ASCII only: Python's int() and float() also read "1_000" and other scripts' digits
# ("\u0663" is 3), which no other IR tool reads as a number.
_NUMBER_TEXT = re.compile(r"\s*[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|nan)\s*",
                          re.ASCII | re.IGNORECASE)


def parse_int(text: str) -> int:
    """An integer written in ASCII digits (``int`` reads ``1_000`` and non-ASCII digits too)."""
    if not re.fullmatch(r"\s*[+-]?[0-9]+\s*", text, re.ASCII):
        raise ValueError(f"not an integer: {text!r}")
    return int(text)


def parse_float(text: str) -> float:
    """A number written as C's ``strtod`` reads it, ASCII only."""
    if not _NUMBER_TEXT.fullmatch(text):
        raise ValueError(f"not a number: {text!r}")
    return float(text)


def parse_value(param: Param, text: str, where: str) -> Any:
    if param.choices is not None:
        return text.strip()  # checked against the choices, with a suggestion, by Param.validate
    parse = {int: parse_int, float: parse_float}.get(param.parse, param.parse)
    try:
        return parse(text.strip())
    except (ValueError, TypeError, OverflowError, InputError) as exc:
        reason = {int: "not an integer", float: "not a number"}.get(param.parse, str(exc))
        raise InputError(f"{where}: bad value for parameter {param.name}={text.strip()!r} ({reason}); allowed: "
                         f"{param.domain_text}") from None


def format_value(value: Any) -> str:
    """A parameter value as it is written in a name: ``0.5,0.5``, ``1:3,2:9``, ``true``.

    A real number is written exactly: the shortest text that reads back as the same float (``repr``, without a
    trailing ``.0``: ``1``, ``0.5``, ``0.5000001``, ``1e-07``). Names and the cache keys made of them must never
    round: ``RBP(p=0.5000001)`` printed as ``RBP(p=0.5)`` was one row for two measures."""
    np = sys.modules.get("numpy")  # a numpy object exists only once numpy is imported: no import here
    if isinstance(value, (tuple, list)) or (np is not None and isinstance(value, np.ndarray)):
        return ",".join(format_value(v) for v in value)
    if isinstance(value, dict):
        return ",".join(f"{format_value(k)}:{format_value(v)}" for k, v in value.items())
    if isinstance(value, bool) or (np is not None and isinstance(value, np.bool_)):
        return str(bool(value)).lower()
    if isinstance(value, float) or (np is not None and isinstance(value, np.floating)):
        text = float.__repr__(float(value))  # numpy 2's repr of its scalars is "np.float64(0.5)"
        return text.removesuffix(".0")
    if np is not None and isinstance(value, np.integer):
        return str(int(value))
    return str(value)


def _as_float(value: Any) -> float:
    """A float as written: a narrower numpy float by its shortest text (``np.float32(0.05)`` is 0.05, not
    0.0500000007, which moved discpower's Δ required)."""
    if type(value).__module__ == "numpy" and getattr(value, "itemsize", 8) < 8:
        return float(str(value))
    return float(value)


def unique(values: Iterable[Any], option: str, kind: str = "option") -> tuple[Any, ...]:
    """The values of a repeatable option, each once: a value given twice is refused (``--topic 2 --topic 2`` would
    run a one-topic analysis where one ``--topic 2`` is refused, and ``--fraction 0.5 --fraction 0.5`` would count
    one fraction twice), the same way for every option and analysis."""
    values = tuple(values)
    seen: set = set()
    for v in values:
        key = v if isinstance(v, collections.abc.Hashable) else repr(v)
        if key in seen:
            raise InputError(f"{kind} {option}: {format_value(v)} is given twice")
        seen.add(key)
    return values


def parse_floats(text: str) -> tuple[float, ...]:
    """``"0.5,0.5"`` -> (0.5, 0.5)."""
    values = tuple(parse_float(v) for v in text.split(",") if v.strip())
    if not values:
        raise ValueError("expected comma-separated numbers")
    return values


def parse_bool(text: str) -> bool:
    """``true/false``, ``yes/no``, ``1/0`` (any case)."""
    word = text.strip().lower()
    if word in ("1", "true", "yes"):
        return True
    if word in ("0", "false", "no"):
        return False
    raise ValueError("expected true or false")


def choice(*options: str) -> Callable[[str], str]:
    """Parser accepting one of ``options``."""

    def parse(text: str) -> str:
        if text not in options:
            raise ValueError(f"expected one of {options}")
        return text

    return parse




# --------------------------------------------------------------------------------------------- analysis parameters
# One declaration per concept every analysis shares: the same name, domain and message everywhere (CLI options
# carry the same names with dashes: --seed, --resamples, --alpha, --confidence).

#: Largest integer a parameter takes: every integer up to 2^53 is exact as a float too.
MAX_INT = 2**53
ANALYSIS_PARAMS: dict[str, Param] = {p.name: p for p in (
    Param("seed", 0, int, "seed of every randomised procedure; the same seed gives the same numbers",
          within=f"[0, {MAX_INT}]"),
    Param("n_resamples", 1000, int, "replicates of a randomised procedure (bootstrap, permutations)",
          within=f"[1, {MAX_INT}]", flags=("--resamples", "-B")),
    Param("alpha", 0.05, float, "significance level", within="(0, 1)"),
    Param("confidence", 0.95, float, "confidence level of the intervals", within="(0, 1)"),
    Param("n_splits", 100, int, "random splits per half size", within=f"[1, {MAX_INT}]"),
    Param("n_draws", 20, int, "seeded draws of reduced qrels per fraction", within=f"[1, {MAX_INT}]"),
    Param("threshold", 0.9, float, "tau threshold of a ranking that survives reduced judgments", within="[-1, 1]"),
)}


def check(where: str, **values: Any) -> tuple[Any, ...]:
    """Validate analysis parameters against their declarations in :data:`ANALYSIS_PARAMS`.

    Parameters
    ----------
    where : str
        What takes them (a function or command), for the message.
    **values
        Parameter name -> value; a name ending in a declared name (``n_bootstrap`` is not, ``seed`` is) uses its
        declaration.

    Returns
    -------
    tuple
        The values converted to their declared types, in the order given.

    Raises
    ------
    InputError
        ``"where: parameter seed=-1 is out of range; allowed: integer in [0, 9007199254740992] (...)"``.
    """
    return tuple(ANALYSIS_PARAMS[name].validate(value, where) for name, value in values.items())


def rng(seed: Any, where: str = "seed") -> "np.random.Generator":
    """``numpy.random.default_rng(seed)`` for a seed checked against its declaration (numpy's own error for
    a negative seed is a traceback from inside ``bit_generator``). A sequence of seeds (a draw's ``[seed, d]``)
    is checked element by element; None draws fresh entropy (numbers that cannot be reproduced)."""
    import numpy as np

    if seed is None:  # fresh entropy from the OS: allowed, but the numbers cannot be reproduced
        return np.random.default_rng()
    if isinstance(seed, (list, tuple)):
        for s in seed:
            check(where, seed=s)
        return np.random.default_rng([int(s) for s in seed])
    (seed,) = check(where, seed=seed)
    return np.random.default_rng(seed)


#: The largest score magnitude the analyses take (and the inverse of the smallest nonzero one): they square score
#: differences and sum them over topics, which overflows float64 past about 1.3e154 (and, below 1e-154, falls into
#: its subnormal range, where precision is lost: a variance of 0, a p-value of 0 or 1).
SCORE_MAGNITUDE = 1e150


def out_of_scale(values: "np.ndarray") -> int | None:
    """The flat index of the first score whose magnitude is above :data:`SCORE_MAGNITUDE` or, nonzero, below its
    inverse (NaN is not looked at); None when every score is within."""
    import numpy as np

    size = np.abs(np.asarray(values, dtype=np.float64)).ravel()
    bad = np.flatnonzero((size > SCORE_MAGNITUDE) | ((size > 0) & (size < 1 / SCORE_MAGNITUDE)))
    return int(bad[0]) if bad.size else None


def scale_problem(value: float) -> str:
    """Why a score :func:`out_of_scale` found is refused, and what to do."""
    return (f"{float(value)!r}, out of the scale the analyses can square (magnitudes from 1e-150 to 1e150, or 0): "
            "rescale the scores")
