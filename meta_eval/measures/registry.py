"""One registry of measures: declared parameters, canonical printed names, trec_eval aliases.

A *family* (``AP``, ``nDCG``, ``GAP`` ...) is a vectorised function ``f(rankings, **params) -> ndarray`` declared once
with its parameters. A :class:`Measure` is a family with bound parameters; its canonical name is printed from the
declaration (``nDCG(gain=exp)@10``, ``GAP(g=0.5,0.5)``), so parsing and printing round-trip.

Name syntax: ``NAME[(param=value,...)][@cutoff]``. A value may itself contain commas (``GAP(g=0.25,0.75)``): a
comma-separated item without ``=`` continues the previous value. trec_eval spellings (``map``, ``P_5``,
``ndcg_cut_10``, ``iprec_at_recall_0.10``, ``ndcg_1=3,2=9``) are aliases with trec_eval's semantics.

A family may also declare optional *slots*, callables other parts of meta-eval use when present, in the family's
own parameter vocabulary (each is called with the measure's bound parameters and returns a callable, or None when
it does not cover them):

``expectation(rel_level=1, **params) -> builder(index, batch)``
    the exact expected value under a distribution over lists, which informativeness needs (MEM,
    :mod:`meta_eval.statistics.maxent.expectations`; otherwise MEM derives or samples one);
``swap_delta(**params) -> delta(grades, counts, rel_level, top)``
    the change of the measure when two documents trade places, which LambdaMART needs
    (:mod:`meta_eval.statistics.learning_to_rank.swap_deltas`; otherwise every swapped list is scored).

meta-eval's modules that provide them register them for the built-in families (:func:`register_slot`); a user's
family declares them with :func:`register` (``expectation=``, ``swap_delta=``).

This is the *built-in namespace*: meta-eval's measures and those a user registers in their own process. Names are
case-insensitive and never replace one another (:func:`register` refuses a taken name). Plug-ins loaded from
``file.py:NAME`` or ``module:NAME`` keep their own namespace (:mod:`meta_eval.measures.plugins`): what they
register while they are imported stays with them. Parsing a name here never imports anything.
"""

from __future__ import annotations

import math
import re
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from meta_eval.core.errors import InputError
from meta_eval.core.params import (Param, parse_value, choice, did_you_mean, format_value, parse_bool,  # noqa: F401
                               parse_floats)
from meta_eval.model.rankings import MAX_GRADE, Rankings

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
    expectation: Callable[..., Any] | None = None  # optional slot (module docstring)
    swap_delta: Callable[..., Any] | None = None  # optional slot (module docstring)

    def slot(self, name: str) -> Callable[..., Any] | None:
        """The family's ``expectation`` or ``swap_delta`` slot: declared with it, or registered for a built-in
        family by the module that provides it (:func:`register_slot`); None without one."""
        if name not in SLOTS:
            raise InputError(f"unknown slot {name!r}; slots: {', '.join(SLOTS)}")
        own = getattr(self, name)
        if own is not None or self.source:
            return own
        return _SLOTS.get((name, self.name.lower()))

    @property
    def doc(self) -> str:
        return self.func.__doc__ or ""

    @property
    def aliases(self) -> list[str]:
        """Other names of the family (trec_eval spellings are listed by :func:`trec_spellings`)."""
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
        """A specification that :func:`meta_eval.measures.resolve` turns back into this measure in any process (how
        workers rebuild it): ``/abs/path/file.py:NAME`` or ``module:NAME`` for a plug-in, else its trec_eval
        spelling or canonical name."""
        if self.family.source:
            return f"{self.family.source}:{self.name}"
        if self.label is not None:
            from meta_eval.measures.trec_names import from_trec_name  # local: the alias table imports this module

            try:
                if from_trec_name(self.label) == self:
                    return self.label
            except InputError:
                pass
        return self.name

    def __call__(self, rankings: Rankings) -> np.ndarray:
        return np.asarray(self.family.func(rankings, **dict(self.params)), dtype=np.float64)

    def expectation(self, rel_level: int = 1) -> Callable[..., Any] | None:
        """The builder of this measure's expected-value form (its family's ``expectation`` slot with its
        parameters), or None when the family has none or it does not cover these parameters."""
        slot = self.family.slot("expectation")
        return None if slot is None else slot(rel_level=rel_level, **dict(self.params))

    def swap_delta(self) -> Callable[..., Any] | None:
        """The closed-form swap delta of this measure (its family's ``swap_delta`` slot with its parameters), or
        None when the family has none or it does not cover these parameters."""
        slot = self.family.slot("swap_delta")
        return None if slot is None else slot(**dict(self.params))

    def __reduce__(self):
        """A plug-in or built-in measure travels to a worker process as its specification (the worker loads the
        plug-in itself); one registered in this process only, by value."""
        if self.family.source or is_builtin(self.family.func):
            return _rebuild, (self.spec, self.label)
        return Measure, (self.family, self.params, self.label)

    def __repr__(self) -> str:
        return f"Measure({self.output_name!r})"


def _rebuild(spec: str, label: str | None) -> Measure:
    from meta_eval.measures.resolver import resolve  # local: the resolver imports this module

    (measure,) = resolve(spec)
    return measure if label is None else replace(measure, label=label)


#: The optional slots a family may fill (module docstring).
SLOTS = ("expectation", "swap_delta")
_SLOTS: dict[tuple[str, str], Callable[..., Any]] = {}
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
    from meta_eval.measures.trec_names import is_trec_spelling  # local: the alias table imports this module

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
    expectation: Callable[..., Any] | None = None,
    swap_delta: Callable[..., Any] | None = None,
) -> Callable[[MeasureFunction], MeasureFunction]:
    """Decorator registering a vectorised measure function under ``name`` (and ``aliases``).

    The function receives a :class:`~meta_eval.model.rankings.Rankings` and the declared parameters as keyword arguments
    and returns one value per list (the leading shape of the rankings). Parameters declare their domain
    (:class:`Param`), checked once when a name is parsed; ``undefined`` says in words when the measure is NaN
    (leave empty for a measure that is always defined). ``input="preferences"`` declares a measure of preference
    judgments: it receives a :class:`meta_eval.model.preferences.PreferenceLists` instead. ``qrels_only`` (the value
    depends on the judgments alone) and ``empty_list`` (the value of an empty list is not 0) keep the value of a
    topic a run lacks under ``missing="zero"`` instead of scoring it 0. ``expectation`` and ``swap_delta``
    fill the family's optional slots (module docstring).

    A name (or alias) already taken, case-insensitively and by trec_eval spellings too, is an InputError: a
    measure is never replaced (registering the same function again, as a reloaded module does, is allowed). A
    function from outside meta-eval is held to the plug-in contract (:func:`meta_eval.measures.plugins.guarded`:
    read-only inputs, one finite real value per list). Code imported as a plug-in (``file.py:NAME``,
    ``module:NAME``) registers into its own namespace, never into this one.

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
                        input=input, empty_list=empty_list, expectation=expectation, swap_delta=swap_delta)
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
        from meta_eval.measures.plugins import guarded  # local: the plug-in module imports this one

        _add(replace(family, func=guarded(func, name, undefined)), aliases)
        return func

    return decorate


def register_slot(name: str, slot: str, provider: Callable[..., Any]) -> None:
    """Fill the optional ``slot`` of the built-in family ``name`` (module docstring): how the modules providing
    MEM's expectation forms and LTR's swap deltas attach them to the measures they belong to.

    Raises
    ------
    InputError
        An unknown slot or family.
    """
    if slot not in SLOTS:
        raise InputError(f"unknown slot {slot!r}; slots: {', '.join(SLOTS)}")
    _SLOTS[(slot, family(name).name.lower())] = provider


def _add(family: Family, aliases: Iterable[str]) -> None:
    _FAMILIES[family.name.lower()] = family
    for alias in aliases:
        _ALIASES[alias.lower()] = family.name.lower()
        _ALIAS_SPELLING[alias] = family.name


def _same_function(family: Family | None, func: Callable) -> bool:
    """Whether a registered family is ``func`` again (a module imported twice or reloaded registers it anew)."""
    import inspect

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
    from meta_eval.measures.trec_names import known_trec_names  # local: the alias table imports this module

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
