"""One registry of measures: declared parameters, canonical printed names, trec_eval aliases, user plug-ins.

A *family* (``AP``, ``nDCG``, ``GAP`` ...) is a vectorised function ``f(rankings, **params) -> ndarray`` declared once
with its parameters. A :class:`Measure` is a family with bound parameters; its canonical name is printed from the
declaration (``nDCG(gain=exp)@10``, ``GAP(g=0.5,0.5)``), so parsing and printing round-trip.

Name syntax: ``NAME[(param=value,...)][@cutoff]``. A value may itself contain commas (``GAP(g=0.25,0.75)``): a
comma-separated item without ``=`` continues the previous value. trec_eval spellings (``map``, ``P_5``,
``ndcg_cut_10``, ``iprec_at_recall_0.10``, ``ndcg_1=3,2=9``) are aliases with trec_eval's semantics.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from meta_eval.errors import InputError
from meta_eval.rankings import Rankings

MeasureFunction = Callable[..., np.ndarray]


@dataclass(frozen=True)
class Param:
    """A declared measure parameter: name, default, a parser from text, and a description."""

    name: str
    default: Any
    parse: Callable[[str], Any] = float
    doc: str = ""


@dataclass(frozen=True)
class Family:
    """A measure family: the function, its parameters, whether it takes ``@cutoff``, how topics are averaged."""

    name: str
    func: MeasureFunction
    params: tuple[Param, ...] = ()
    cutoff: Param | None = None
    aggregate: str = "mean"  # "mean", "gmean" (trec_eval gm_*: exp mean log max(v, 1e-5)) or "sum"
    integer: bool = False  # counts (num_ret ...): printed without decimals in trec_eval's layout
    description: str = ""
    qrels_only: bool = False  # depends on the qrels alone (num_rel): not zeroed for topics a run lacks

    @property
    def doc(self) -> str:
        return self.func.__doc__ or ""


@dataclass(frozen=True)
class Measure:
    """A family with bound parameters; callable on :class:`Rankings`."""

    family: Family
    params: tuple[tuple[str, Any], ...] = ()
    label: str | None = None  # the spelling the user asked for (used in output); canonical name if None

    @property
    def name(self) -> str:
        """Canonical name: non-default parameters in declaration order, then ``@cutoff``."""
        values = dict(self.params)
        shown = [
            f"{p.name}={_format(values[p.name])}"
            for p in self.family.params
            if not _same(values.get(p.name, p.default), p.default)
        ]
        text = self.family.name + (f"({','.join(shown)})" if shown else "")
        cut = self.family.cutoff
        if cut is not None and values.get(cut.name) is not None:
            text += f"@{_format(values[cut.name])}"
        return text

    @property
    def output_name(self) -> str:
        return self.label or self.name

    def __call__(self, rankings: Rankings) -> np.ndarray:
        return np.asarray(self.family.func(rankings, **dict(self.params)), dtype=np.float64)

    def __repr__(self) -> str:
        return f"Measure({self.output_name!r})"


_FAMILIES: dict[str, Family] = {}
_ALIASES: dict[str, str] = {}


def register(
    name: str,
    *,
    params: tuple[Param, ...] = (),
    cutoff: Param | None = None,
    aggregate: str = "mean",
    integer: bool = False,
    aliases: tuple[str, ...] = (),
    description: str = "",
    qrels_only: bool = False,
) -> Callable[[MeasureFunction], MeasureFunction]:
    """Decorator registering a vectorised measure function under ``name`` (and ``aliases``).

    The function receives a :class:`~meta_eval.rankings.Rankings` and the declared parameters as keyword arguments
    and returns one value per list (the leading shape of the rankings).

    Examples
    --------
    >>> @register("Hits", cutoff=Param("k", 10, int, "rank cutoff"), description="relevant in the top k")
    ... def hits(r, k):
    ...     return r.count_at(r.cum_relevant(), k)
    """

    def decorate(func: MeasureFunction) -> MeasureFunction:
        family = Family(name, func, tuple(params), cutoff, aggregate, integer,
                        description or (func.__doc__ or "").strip().split("\n")[0], qrels_only)
        _FAMILIES[name.lower()] = family
        for alias in aliases:
            _ALIASES[alias.lower()] = name.lower()
        return func

    return decorate


def families() -> list[Family]:
    """Every registered family (built-in and user-registered)."""
    return list(_FAMILIES.values())


def family(name: str) -> Family:
    key = name.lower()
    key = _ALIASES.get(key, key)
    if key not in _FAMILIES:
        known = ", ".join(sorted(f.name for f in _FAMILIES.values()))
        raise InputError(f"unknown measure {name!r}; known measures: {known}")
    return _FAMILIES[key]


_CANONICAL = re.compile(r"^(?P<name>[^()@]+?)\s*(\((?P<params>.*)\))?\s*(@(?P<cut>[^@()]+))?$")


def split_name(spec: str) -> tuple[str, list[tuple[str, str]], str | None]:
    """The parts of ``NAME(param=value,...)@cutoff`` as text: name, (key, value) pairs, cutoff (or None).

    A comma-separated item without ``=`` continues the previous value (``g=0.25,0.75``).

    Raises
    ------
    InputError
        The text does not have that shape, or a parameter has no name.
    """
    match = _CANONICAL.match(spec.strip())
    if not match:
        raise InputError(f"cannot parse measure name {spec!r}; expected NAME, NAME(param=value,...) or NAME@k")
    return match["name"], _split_params(match["params"] or "", spec), match["cut"]


def get_measure(spec: "str | Measure") -> Measure:
    """Parse a measure name (canonical or trec_eval spelling) into a :class:`Measure`.

    Raises
    ------
    InputError
        Unknown measure, unknown parameter, bad value, or a cutoff on a measure that takes none.
    """
    if isinstance(spec, Measure):
        return spec
    spec = spec.strip()
    from meta_eval.measures.trec_names import from_trec_name  # local: the alias table imports this module

    trec = from_trec_name(spec)
    if trec is not None:
        return trec
    name, pairs, cut_text = split_name(spec)
    fam = family(name)
    values = {p.name: p.default for p in fam.params}
    for key, text in pairs:
        param = next((p for p in fam.params if p.name == key), None)
        if param is None:
            names = [p.name for p in fam.params] or ["(none)"]
            raise InputError(f"measure {fam.name} has no parameter {key!r}; parameters: {', '.join(names)}")
        values[key] = _parse_value(param, text, spec)
    if fam.cutoff is not None:
        values[fam.cutoff.name] = fam.cutoff.default
    if cut_text is not None:
        if fam.cutoff is None:
            raise InputError(f"measure {fam.name} takes no @cutoff (in {spec!r})")
        values[fam.cutoff.name] = _parse_value(fam.cutoff, cut_text, spec)
    return Measure(fam, tuple(values.items()))


def make_measure(name: str, label: str | None = None, **params: Any) -> Measure:
    """Bind parameters programmatically: ``make_measure("nDCG", gain="exp", k=10)``."""
    fam = family(name)
    declared = {p.name: p for p in fam.params}
    if fam.cutoff is not None:
        declared[fam.cutoff.name] = fam.cutoff
    unknown = set(params) - set(declared)
    if unknown:
        raise InputError(f"measure {fam.name} has no parameter(s) {sorted(unknown)}")
    values = {key: params.get(key, p.default) for key, p in declared.items()}
    return Measure(fam, tuple(values.items()), label=label)


def _split_params(text: str, spec: str) -> list[tuple[str, str]]:
    items: list[list[str]] = []
    for part in (p.strip() for p in text.split(",")) if text.strip() else []:
        if "=" in part:
            key, value = part.split("=", 1)
            items.append([key.strip(), value.strip()])
        elif items:
            items[-1][1] += "," + part
        else:
            raise InputError(f"parameter without a name in {spec!r}; write name=value")
    return [(k, v) for k, v in items]


def _parse_value(param: Param, text: str, spec: str) -> Any:
    try:
        return param.parse(text)
    except (ValueError, TypeError, InputError) as exc:
        raise InputError(f"bad value {text!r} for parameter {param.name!r} in {spec!r}: {exc}") from None


def _format(value: Any) -> str:
    if isinstance(value, (tuple, list, np.ndarray)):
        return ",".join(_format(v) for v in value)
    if isinstance(value, dict):
        return ",".join(f"{_format(k)}:{_format(v)}" for k, v in value.items())
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (tuple, list, np.ndarray)) or isinstance(b, (tuple, list, np.ndarray)):
        return a is not None and b is not None and np.array_equal(np.asarray(a), np.asarray(b))
    return a == b


# --------------------------------------------------------------------------------------------- value parsers


def parse_floats(text: str) -> tuple[float, ...]:
    """``"0.5,0.5"`` -> (0.5, 0.5)."""
    values = tuple(float(v) for v in text.split(",") if v.strip())
    if not values:
        raise ValueError("expected comma-separated numbers")
    return values


def parse_gain_map(text: str) -> dict[int, float]:
    """``"1:3,2:9"`` (or trec_eval's ``"1=3,2=9"``) -> {1: 3.0, 2: 9.0}."""
    out: dict[int, float] = {}
    for item in text.split(","):
        key, sep, value = item.replace("=", ":").partition(":")
        if not sep:
            raise ValueError("expected grade:gain pairs")
        out[int(key)] = float(value)
    return out


def parse_gain(text: str) -> "str | dict[int, float]":
    """Gain: ``linear`` (g), ``exp`` (2^g - 1) or a custom map ``1:3,2:9``."""
    text = text.strip()
    if text in ("linear", "exp"):
        return text
    return parse_gain_map(text)


def choice(*options: str) -> Callable[[str], str]:
    """Parser accepting one of ``options``."""

    def parse(text: str) -> str:
        if text not in options:
            raise ValueError(f"expected one of {options}")
        return text

    return parse


def gain_table(gain: "str | dict[int, float]", max_grade: int) -> np.ndarray:
    """Per-grade gain table for grades 0..max_grade."""
    grades = np.arange(max_grade + 1, dtype=np.float64)
    if gain == "linear":
        return grades
    if gain == "exp":
        return np.exp2(grades) - 1.0
    if isinstance(gain, dict):
        table = grades.copy()  # grades not in the map keep their linear gain, as trec_eval's ndcg.<level>=<gain>
        top = max([max_grade, *gain.keys()])
        if top > max_grade:
            table = np.arange(top + 1, dtype=np.float64)
        for grade, value in gain.items():
            if grade < 0:
                raise InputError(f"gain map grade must be >= 0, got {grade}")
            table[grade] = value
        return table
    raise InputError(f"unknown gain {gain!r}; use 'linear', 'exp' or a map like '1:3,2:9'")

