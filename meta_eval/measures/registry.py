"""One registry of measures: declared parameters, canonical printed names, trec_eval aliases.

A *family* (``AP``, ``nDCG``, ``GAP`` ...) is a vectorised function ``f(rankings, **params) -> ndarray`` declared once
with its parameters. A :class:`Measure` is a family with bound parameters; its canonical name is printed from the
declaration (``nDCG(gain=exp)@10``, ``GAP(g=0.5,0.5)``), so parsing and printing round-trip.

Name syntax: ``NAME[(param=value,...)][@cutoff]``. A value may itself contain commas (``GAP(g=0.25,0.75)``): a
comma-separated item without ``=`` continues the previous value. trec_eval spellings (``map``, ``P_5``,
``ndcg_cut_10``, ``iprec_at_recall_0.10``, ``ndcg_1=3,2=9``) are aliases with trec_eval's semantics.

The engines that need more of a measure than its values keep their own tables, keyed by the family's name and
built from the measure's own parameter values (:meth:`Measure.arguments_for`): the exact expected value MEM needs
(:func:`meta_eval.statistics.maxent.expectations.declared_form`), the swap deltas LambdaMART needs
(:func:`meta_eval.statistics.learning_to_rank.swap_deltas.closed_form`).

This is the *built-in namespace*: meta-eval's measures and those a user registers in their own process. Names are
case-insensitive and never replace one another (:func:`register` refuses a taken name). Plug-ins loaded from
``file.py:NAME`` or ``module:NAME`` keep their own namespace (:mod:`meta_eval.measures.plugins`): what they
register while they are imported stays with them. Parsing a name here never imports anything.

This module is the bottom of the measures layer and imports nothing else of it. trec_eval's names are data below it
(:mod:`meta_eval.core.trec_eval_names`); the lookup that builds a trec_eval spelling's measure
(:mod:`meta_eval.measures.trec_names`), plug-ins (:mod:`meta_eval.measures.plugins`) and the one entry point from
what a user wrote to measures (:mod:`meta_eval.measures.resolver`: ``resolve``, ``get_measure``) sit above it.
"""

from __future__ import annotations

import inspect
import re
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from meta_eval.core.errors import InputError
from meta_eval.core.params import (Param, parse_value, did_you_mean, format_value, parse_bool,  # noqa: F401
                               parse_floats)  # parse_bool, parse_floats: for the measure modules that import them here
from meta_eval.core.trec_eval_names import is_trec_spelling, known_trec_names
from meta_eval.inputs.tables import MAX_GRADE
from meta_eval.model.rankings import Rankings

MeasureFunction = Callable[..., np.ndarray]


@dataclass(frozen=True)
class Family:
    """A measure family: the function, its parameters, whether it takes ``@cutoff``, how topics are averaged."""

    name: str
    func: MeasureFunction
    params: tuple[Param, ...] = ()
    cutoff: Param | None = None
    # "mean", "gmean" (trec_eval gm_*: exp mean log max(v, 1e-5)), "sum", or f(values, measure, collection)
    aggregate: "str | Callable[..., np.ndarray]" = "mean"
    integer: bool = False  # counts (num_ret ...): printed without decimals in trec_eval's layout
    description: str = ""
    qrels_only: bool = False  # depends on the qrels alone (num_rel): not zeroed for topics a run lacks
    undefined: str = ""  # when the value is NaN (undefined), in words; "" if it never is
    source: str = ""  # a plug-in's file (absolute path) or module; "" for the built-in namespace
    # what the function receives: "rankings" (a Rankings of graded lists) or "preferences" (a PreferenceLists)
    input: str = "rankings"
    empty_list: bool = False  # a topic a run lacks takes the value of an empty list (yaap), not 0

    @property
    def doc(self) -> str:
        return self.func.__doc__ or ""

    @property
    def aliases(self) -> list[str]:
        """Other names of the family (trec_eval spellings: :func:`meta_eval.core.trec_eval_names.trec_spellings`)."""
        return sorted(alias for alias, target in _ALIAS_SPELLING.items() if target == self.name)

    def declared(self) -> tuple[Param, ...]:
        """Every parameter, the cutoff last."""
        return self.params + ((self.cutoff,) if self.cutoff is not None else ())


@dataclass(frozen=True)
class Measure:
    """A family with bound parameters; callable on :class:`Rankings`."""

    family: Family
    params: tuple[tuple[str, Any], ...] = ()
    label: str | None = None  # the spelling the user asked for (used in output); canonical name if None
    # what the measure was made from when its canonical name does not make it again: a trec_eval spelling (``P_5``)
    # or a plug-in's specification (``/abs/path/file.py:NAME``); where it came from, not what it is
    origin: str | None = field(default=None, compare=False)

    @property
    def name(self) -> str:
        """Canonical name: non-default parameters in declaration order, then ``@cutoff``."""
        values = dict(self.params)
        shown = [
            f"{p.name}={format_value(values[p.name])}"
            for p in self.family.params
            if not _same(values.get(p.name, p.default), p.default)
        ]
        text = self.family.name + (f"({','.join(shown)})" if shown else "")
        cut = self.family.cutoff
        if cut is not None and values.get(cut.name) is not None:
            text += f"@{format_value(values[cut.name])}"
        return text

    @property
    def output_name(self) -> str:
        return self.label or self.name

    @property
    def spec(self) -> str:
        """A specification that :func:`meta_eval.measures.resolver.resolve` turns back into this measure in any
        process (how workers rebuild it): where it came from (a trec_eval spelling, ``/abs/path/file.py:NAME`` or
        ``module:NAME`` for a plug-in), else its canonical name."""
        return self.origin if self.origin is not None else self.name

    def __call__(self, rankings: Rankings) -> np.ndarray:
        return np.asarray(self.family.func(rankings, **dict(self.params)), dtype=np.float64)

    def arguments_for(self, builder: Callable[..., Any]) -> dict[str, Any] | None:
        """The measure's parameter values as keyword arguments of ``builder``, or None when ``builder`` does not
        cover this measure.

        An engine's builder for a family (an expected-value form, a swap delta) takes the parameters it covers, by
        their declared names; every other parameter must be at its default, else the builder does not describe
        this measure. A builder with ``**kwargs`` takes every parameter.
        """
        accepted = inspect.signature(builder).parameters
        takes_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values())
        defaults = {p.name: p.default for p in self.family.declared()}
        arguments = {}
        for name, value in self.params:
            if takes_all or name in accepted:
                arguments[name] = value
            elif not _same(value, defaults.get(name)):
                return None
        return arguments

    def __repr__(self) -> str:
        return f"Measure({self.output_name!r})"


class FamilyBuilders(dict):
    """What an engine declares per measure family, by the family's name (case-insensitive: a built-in's, one
    registered with ``meta_eval.register``, or a plug-in's): MEM's expected-value forms
    (:func:`meta_eval.statistics.maxent.expectations.register_expectation`), LambdaMART's closed-form swap deltas
    (:func:`meta_eval.statistics.learning_to_rank.swap_deltas.register_swap_delta`).

    A builder takes the measure's parameters that it covers, by their declared names (:meth:`Measure.arguments_for`);
    :meth:`bound` finds it for a measure with its arguments. The mapping is lower-case name -> builder."""

    def __init__(self) -> None:
        super().__init__()
        self.spellings: dict[str, str] = {}  # lower-case name -> the family's name as declared

    def register(self, family: str) -> Callable[[Callable], Callable]:
        """A decorator declaring the builder of ``family``."""

        def deco(builder: Callable) -> Callable:
            self[family.lower()] = builder
            self.spellings[family.lower()] = family
            return builder

        return deco

    def names(self) -> list[str]:
        """The families with a builder, as declared, sorted."""
        return sorted(self.spellings.get(key, key) for key in self)

    def bound(self, measure: Measure) -> tuple[Callable, dict[str, Any]] | None:
        """(builder, the measure's arguments for it), or None when its family has none or the builder does not
        cover the measure's parameters."""
        builder = self.get(measure.family.name.lower())
        arguments = None if builder is None else measure.arguments_for(builder)
        return None if arguments is None else (builder, arguments)


_FAMILIES: dict[str, Family] = {}
_ALIASES: dict[str, str] = {}
_ALIAS_SPELLING: dict[str, str] = {}  # alias as declared -> family name
# While a plug-in is imported: the families its code registers, with their aliases (kept out of _FAMILIES).
_CAPTURE: ContextVar["list[tuple[Family, tuple[str, ...]]] | None"] = ContextVar("meta_eval_capture", default=None)
PLUGIN_HINTS: dict[str, str] = {}  # lower-case plug-in name -> its spec, for "did you mean" (filled by the loader)
_NAME = re.compile(r"^[^\s()@:,=]+$")


def is_builtin(func: Callable) -> bool:
    """Whether a function is meta-eval's own (its measures are trusted to keep the contract; others are guarded)."""
    return getattr(func, "__module__", None) in ("meta_eval",) or \
        str(getattr(func, "__module__", "")).startswith("meta_eval.")


@contextmanager
def plugin_registrations() -> Iterator[list[tuple[Family, tuple[str, ...]]]]:
    """Inside the block, :func:`register` keeps the families that code outside meta-eval registers in the yielded
    list (each with its aliases) instead of the built-in namespace: how a plug-in's import is isolated."""
    found: list[tuple[Family, tuple[str, ...]]] = []
    token = _CAPTURE.set(found)
    try:
        yield found
    finally:
        _CAPTURE.reset(token)


def name_taken(name: str) -> str | None:
    """What a name already means in the built-in namespace (case-insensitive: canonical names, aliases, trec_eval
    spellings), in words; None if it is free."""
    key = name.strip().lower()
    if key in _FAMILIES:
        return f"the measure {_FAMILIES[key].name}"
    if key in _ALIASES:
        return f"an alias of the measure {_FAMILIES[_ALIASES[key]].name}"
    if is_trec_spelling(name.strip()):
        return "a trec_eval measure name"
    return None


def check_new_name(name: str, what: str) -> None:
    """Raise InputError unless ``name`` can name a new measure: a word without spaces, ``()@:,=``."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise InputError(f"{what}: {name!r} cannot name a measure (a word without spaces or any of ( ) @ : , =)")


def register(
    name: str,
    *,
    params: tuple[Param, ...] = (),
    cutoff: Param | None = None,
    aggregate: "str | Callable[..., np.ndarray]" = "mean",
    integer: bool = False,
    aliases: tuple[str, ...] = (),
    description: str = "",
    qrels_only: bool = False,
    undefined: str = "",
    input: str = "rankings",
    empty_list: bool = False,
    contract: Callable[[MeasureFunction, str, str], MeasureFunction] | None = None,
) -> Callable[[MeasureFunction], MeasureFunction]:
    """Decorator registering a vectorised measure function under ``name`` (and ``aliases``).

    The function receives a :class:`~meta_eval.model.rankings.Rankings` and the declared parameters as keyword arguments
    and returns one value per list (the leading shape of the rankings). Parameters declare their domain
    (:class:`Param`), checked once when a name is parsed; ``undefined`` says in words when the measure is NaN
    (leave empty for a measure that is always defined). ``input="preferences"`` declares a measure of preference
    judgments: it receives a :class:`meta_eval.model.preferences.PreferenceLists` instead. ``qrels_only`` (the value
    depends on the judgments alone) and ``empty_list`` (the value of an empty list is not 0) keep the value of a
    topic a run lacks under ``missing="zero"`` instead of scoring it 0.

    A name (or alias) already taken, case-insensitively and by trec_eval spellings too, is an InputError: a
    measure is never replaced (registering the same function again, as a reloaded module does, is allowed). A
    function from outside meta-eval that joins the built-in namespace is wrapped in ``contract(func, name,
    undefined)``: ``meta_eval.register`` (:func:`meta_eval.measures.plugins.register`) passes the plug-in contract
    (read-only inputs, one finite real value per list). Code imported as a plug-in (``file.py:NAME``,
    ``module:NAME``) registers into its own namespace, never into this one; the loader holds it to the contract.

    Examples
    --------
    >>> @register("Hits", cutoff=Param("k", 10, int, "rank cutoff", within="[1, inf)"),
    ...           description="relevant in the top k")
    ... def hits(r, k):
    ...     return r.count_at(r.cum_relevant(), k)
    """

    def decorate(func: MeasureFunction) -> MeasureFunction:
        if input not in ("rankings", "preferences"):
            raise InputError(f"register({name!r}): input must be 'rankings' or 'preferences', got {input!r}")
        family = Family(name, func, tuple(params), cutoff, aggregate, integer,
                        description or (func.__doc__ or "").strip().split("\n")[0], qrels_only, undefined,
                        input=input, empty_list=empty_list)
        if is_builtin(func):
            _add(family, aliases)
            return func
        for word in (name, *aliases):
            check_new_name(word, f"register({name!r})")
        captured = _CAPTURE.get()
        if captured is not None:  # a plug-in being imported: its measures stay in its own namespace
            captured.append((family, tuple(aliases)))
            return func
        for word in (name, *aliases):
            taken = name_taken(word)
            if taken and not _same_function(_FAMILIES.get(_ALIASES.get(word.lower(), word.lower())), func):
                raise InputError(f"register({name!r}): {word!r} is already {taken}; a measure is never replaced — "
                                 "choose another name")
        _add(family if contract is None else replace(family, func=contract(func, name, undefined)), aliases)
        return func

    return decorate


def _add(family: Family, aliases: Iterable[str]) -> None:
    _FAMILIES[family.name.lower()] = family
    for alias in aliases:
        _ALIASES[alias.lower()] = family.name.lower()
        _ALIAS_SPELLING[alias] = family.name


def _same_function(family: Family | None, func: Callable) -> bool:
    """Whether a registered family is ``func`` again (a module imported twice or reloaded registers it anew)."""
    if family is None:
        return False
    old = inspect.unwrap(family.func)
    return (getattr(old, "__module__", None), getattr(old, "__qualname__", None)) == \
        (getattr(func, "__module__", None), getattr(func, "__qualname__", None))


def families() -> list[Family]:
    """Every registered family (built-in and user-registered)."""
    return list(_FAMILIES.values())


def family(name: str) -> Family:
    """The family registered under ``name`` or one of its aliases (case-insensitive).

    Raises
    ------
    InputError
        Unknown name, with the closest canonical names and trec_eval spellings ("did you mean").
    """
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    if key not in _FAMILIES:
        raise InputError(unknown_measure_message(name))
    return _FAMILIES[key]


def unknown_measure_message(spec: str) -> str:
    """``unknown measure 'nDGC@10'; did you mean nDCG?`` with candidates from the canonical names, their aliases
    and the trec_eval spellings."""
    canonical = [f.name for f in _FAMILIES.values()] + list(_ALIAS_SPELLING)
    base = _CANONICAL.match(spec.strip())
    word = base["name"].strip() if base else spec.strip()
    plugin = PLUGIN_HINTS.get(word.lower())
    if plugin is not None:
        return (f"unknown measure {spec!r}; a plug-in is named by its file or module: did you mean {plugin}? "
                "(plug-ins never join the built-in names)")
    close = did_you_mean(word, canonical) or did_you_mean(spec.strip(), known_trec_names())
    hint = f"; did you mean {close}?" if close else ""
    return (f"unknown measure {spec!r}{hint} (meta-eval measures lists every measure; a plug-in is named "
            "file.py:function or module:function)")


_CANONICAL = re.compile(r"^(?P<name>[^()@]+?)\s*(\((?P<params>.*)\))?\s*(@(?P<cut>[^@()]+))?$")


def split_name(spec: str, what: str = "measure name") -> tuple[str, list[tuple[str, str]], str | None]:
    """The parts of ``NAME(param=value,...)@cutoff`` as text: name, (key, value) pairs, cutoff (or None).

    A comma-separated item without ``=`` continues the previous value (``g=0.25,0.75``).

    Raises
    ------
    InputError
        The text does not have that shape, or a parameter has no name.
    """
    match = _CANONICAL.match(spec.strip())
    if not match:
        shapes = "NAME, NAME(param=value,...) or NAME@k" if what == "measure name" else "NAME or NAME(param=value,...)"
        raise InputError(f"cannot parse {what} {spec!r}; expected {shapes}")
    return match["name"], _split_params(match["params"] or "", spec), match["cut"]


def canonical_measure(spec: str) -> Measure:
    """Parse a canonical measure name of the built-in namespace (``NAME(param=value,...)@cutoff``, an alias for
    NAME) into a :class:`Measure`. trec_eval spellings are read by :func:`meta_eval.measures.resolver.get_measure`.

    Raises
    ------
    InputError
        Unknown measure (with "did you mean" over every name), unknown parameter, bad value, or a cutoff on a
        measure that takes none.
    """
    spec = spec.strip()
    try:
        name, pairs, cut_text = split_name(spec)
    except InputError:
        if "(" not in spec and "@" not in spec:
            raise InputError(unknown_measure_message(spec)) from None
        raise
    try:
        fam = family(name)
    except InputError:
        raise InputError(unknown_measure_message(spec)) from None
    return bind_text(fam, pairs, cut_text, spec)


def bind_text(fam: Family, pairs: list[tuple[str, str]], cut_text: str | None, spec: str) -> Measure:
    """The measure of ``fam`` with parameters and cutoff given as text (the parts :func:`split_name` returns)."""
    where = f"measure {spec}"
    values: dict[str, Any] = {}
    for key, text in pairs:
        param = next((p for p in fam.params if p.name == key), None)
        if param is None:
            raise InputError(_unknown_parameter(fam, key, spec))
        if key in values:
            raise InputError(f"parameter {key} is given twice in measure {spec!r}; give it once")
        values[key] = parse_value(param, text, where)
    if cut_text is not None:
        if fam.cutoff is None:
            raise InputError(f"measure {fam.name} takes no @cutoff (in {spec!r})")
        values[fam.cutoff.name] = parse_value(fam.cutoff, cut_text, where)
    return _bind(fam, values, where=where)


def make_measure(name: str, label: str | None = None, **params: Any) -> Measure:
    """Bind parameters programmatically: ``make_measure("nDCG", gain="exp", k=10)``; each value is checked
    against its declared domain."""
    fam = family(name)
    for key in params:
        if key not in {p.name for p in fam.declared()}:
            raise InputError(_unknown_parameter(fam, key, label or fam.name))
    where = f"measure {label} ({fam.name})" if label and label != fam.name else f"measure {fam.name}"
    return _bind(fam, params, where=where, label=label)


def _bind(fam: Family, given: dict[str, Any], where: str, label: str | None = None) -> Measure:
    """Validate the given values against the declaration; undeclared ones take their defaults."""
    values = {}
    for p in fam.declared():
        values[p.name] = p.validate(given[p.name], where) if p.name in given else p.default
    return Measure(fam, tuple(values.items()), label=label)


def _unknown_parameter(fam: Family, key: str, spec: str) -> str:
    names = [p.name for p in fam.params]
    close = did_you_mean(key, names)
    hint = f" (did you mean {close}?)" if close else ""
    listed = ", ".join(names) if names else "none"
    cut = f"; the cutoff is written @{fam.cutoff.name}" if fam.cutoff is not None and key == fam.cutoff.name else ""
    return f"measure {fam.name} has no parameter {key!r}{hint} in {spec!r}; parameters: {listed}{cut}"


def split_top_level(text: str) -> list[str]:
    """``text`` split at its commas outside parentheses: ``predict=nDCG(gain=1:3,2:9),lists=20`` is two parts (a
    measure's own parameters stay whole)."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]


def _split_params(text: str, spec: str) -> list[tuple[str, str]]:
    items: list[list[str]] = []
    for part in (p.strip() for p in split_top_level(text)) if text.strip() else []:
        if "=" in part:
            key, value = part.split("=", 1)
            items.append([key.strip(), value.strip()])
        elif items:
            items[-1][1] += "," + part
        else:
            raise InputError(f"parameter without a name in {spec!r}; write name=value")
    return [(k, v) for k, v in items]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (tuple, list, np.ndarray)) or isinstance(b, (tuple, list, np.ndarray)):
        return a is not None and b is not None and np.array_equal(np.asarray(a), np.asarray(b))
    return a == b


# --------------------------------------------------------------------------------------------- value parsers


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


def check_gain(gain: Any) -> "str | None":
    """A gain is ``linear``, ``exp`` or a map from grades 0..MAX_GRADE to finite gains."""
    if isinstance(gain, str):
        return None if gain in ("linear", "exp") else "is not linear, exp or a grade:gain map"
    if not isinstance(gain, dict) or not gain:
        return "is not linear, exp or a grade:gain map"
    for grade, value in gain.items():
        if isinstance(grade, bool) or not isinstance(grade, (int, np.integer)) or not 0 <= grade <= MAX_GRADE:
            return f"maps grade {grade!r}, not a grade in 0..{MAX_GRADE}"
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not abs(value) <= MAX_GAIN:
            return f"gives grade {grade} the gain {value!r}, not a number in [-1e100, 1e100]"
    return None


MAX_GAIN = 1e100  # custom gains (and utility coefficients) are bounded so that sums over any list stay finite
GAIN_DOMAIN = f"linear, exp, or a map grade:gain (grades 0..{MAX_GRADE}, gains in [-1e100, 1e100]) like 1:3,2:9"


def check_distribution(values: Any) -> "str | None":
    """Probabilities: non-negative, summing to 1 (to 1e-9)."""
    if not isinstance(values, tuple) or not values:
        return "is not a list of probabilities"
    if not np.isclose(sum(values), 1.0, rtol=0, atol=1e-9):
        return f"does not sum to 1 (sums to {sum(values):g})"
    return None


def gain_table(gain: "str | dict[int, float]", max_grade: int) -> np.ndarray:
    """Per-grade gain table for grades 0..max(max_grade, the map's highest grade)."""
    grades = np.arange(max_grade + 1, dtype=np.float64)
    if gain == "linear":
        return grades
    if gain == "exp":
        return np.exp2(grades) - 1.0
    if isinstance(gain, dict):
        problem = check_gain(gain)
        if problem is not None:
            raise InputError(f"gain map {gain!r} {problem}")
        top = max([max_grade, *gain.keys()])
        table = np.arange(top + 1, dtype=np.float64)  # grades not in the map keep their linear gain (trec_eval)
        for grade, value in gain.items():
            table[grade] = value
        return table
    raise InputError(f"unknown gain {gain!r}; use 'linear', 'exp' or a map like '1:3,2:9'")
