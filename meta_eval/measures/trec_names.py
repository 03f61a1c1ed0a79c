"""trec_eval's measures as meta-eval measures: a spelling's measure with trec_eval's semantics, a command line's
measures in trec_eval's print order.

The names, their kinds and trec_eval's sets are data (:mod:`meta_eval.core.trec_eval_names`); this module binds
them. A spelling (``P_5``, ``ndcg_rel_1=3,2=9``, ``set_F_0.5``, ``rbp_resid_p=0.95``) is an alias: it resolves to the
family with trec_eval's semantics bound and prints back as typed. Where trec_eval's definition departs from the
textbook one, the alias binds the parameter that reproduces it and the canonical name keeps the textbook form:
``rbp`` is ``RBP(p=0.9,graded=true,max=topic)``, ``rbp_resid`` is ``RBP_resid(p=0.9,fully_judged=zero)``,
``num_rel`` is ``NumRel(summary=trec_eval)``, ``set_F_x`` is ``SetF(beta2=x)`` (trec_eval weighs with x = β²).
The ``*_avgjg`` measures are their plain families: averaging over judgment groups is what a collection of
judgment groups does with every measure (:mod:`meta_eval.model.judgment_groups`); ``runid``, ``num_q`` and ``relstring``
are printed by trec_eval's layout (:mod:`meta_eval.rendering.trec_layout`), not computed as numbers.

:func:`from_trec_name` is a spelling's measure; :func:`trec_eval_selection` reads a whole trec_eval command line's
``-m`` arguments as trec_eval does (print order, the first parameters given for a measure win, ``official``
without any).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from meta_eval.core.errors import InputError
from meta_eval.core.params import did_you_mean
from meta_eval.core.trec_eval_names import (BY_NAME, NICKNAMES, TREC_MEASURES, TrecMeasure, cut_text, cutoffs,
                                           c_atof, parse_spelling)
from meta_eval.measures.registry import Measure, make_measure

# --------------------------------------------------------------------------------------------- building measures


def measures_of(m: TrecMeasure, params: str | None) -> list[Measure]:
    """The measures trec_eval computes for ``m`` with the ``-m`` parameter text ``params`` (None: its
    defaults), labelled with the names trec_eval prints.

    Raises
    ------
    InputError
        Parameters trec_eval refuses (a cutoff <= 0, a cutoff given twice, malformed pairs) or that meta-eval
        refuses (outside a parameter's domain, a pair name that is neither a grade nor ``p``).
    """
    if m.kind in ("long_cuts", "double_cuts"):
        return [_bound(m, f"{m.name}_{cut_text(m, cut)}", k=cut) for cut in cutoffs(m, params)]
    if m.kind == "doubles":
        return [_doubles(m, params)]
    if m.kind == "pairs":
        return [_pairs(m, params)]
    return [_bound(m, m.name)]


def _bound(m: TrecMeasure, label: str, **params) -> Measure:
    """The measure of ``m`` with ``params``, printed as its trec_eval spelling ``label``, which also rebuilds it in
    any process (its ``origin``)."""
    return replace(make_measure(m.family, label=label, **(dict(m.fixed) | params)), origin=label)


def _doubles(m: TrecMeasure, params: str | None) -> Measure:
    values = list(m.defaults) if params is None else [c_atof(text) for text in params.split(",")]
    label = m.name if params is None else f"{m.name}_{params}"
    if m.name == "utility":
        if len(values) != 4:
            raise InputError(f"measure {label}: utility takes 4 coefficients (a,b,c,d), got {len(values)}")
        return _bound(m, label, **dict(zip("abcd", values)))
    if m.name == "11pt_avg":
        return _bound(m, label, levels=tuple(values))
    return _bound(m, label, beta2=values[0])  # set_F: trec_eval uses the first number


_PAIR = re.compile(r"^([^=,]+)=([^=,]*)$")
_GRADE = re.compile(r"^[+-]?[0-9]+$")


def _pairs(m: TrecMeasure, params: str | None) -> Measure:
    """``grade=gain`` pairs (a gain map; grades not listed keep their gain) and, for rbp and rbp_resid,
    ``p=persistence``; printed as typed. A name given twice is refused: trec_eval 10 reads a repeated grade as no
    gain map (``ndcg.2=9,2=1`` prints a value neither 2=9 nor 2=1 gives), and meta-eval took the last value."""
    if params is None:
        return _bound(m, m.name)
    label = f"{m.name}_{params}"
    gains: dict[int, float] = {}
    extra: dict[str, object] = {}
    for item in params.split(","):
        match = _PAIR.match(item)
        if match is None:
            raise InputError(f"measure {label}: malformed pair parameters {params!r}; write name=value,...")
        key, value = match[1], c_atof(match[2])
        if (int(key) in gains) if _GRADE.match(key) else (key in extra):
            raise InputError(f"measure {label}: {'grade ' if _GRADE.match(key) else ''}{key} is given twice; give "
                             "each once")
        if _GRADE.match(key):
            gains[int(key)] = value
        elif key == "p" and m.name in ("rbp", "rbp_resid"):
            extra["p"] = value
        else:
            names = "a grade or p" if m.name in ("rbp", "rbp_resid") else "a grade"
            raise InputError(f"measure {label}: parameter {key!r} is not {names}")
    if gains and m.name != "rbp_resid":  # rbp_resid reads p only (trec_eval ignores its gains)
        extra["gain"] = gains
    return _bound(m, label, **extra)


def from_trec_name(name: str) -> Measure | None:
    """The measure a trec_eval spelling denotes, labelled with that spelling; None if it is not one.

    Raises
    ------
    InputError
        A trec_eval spelling with a parameter outside its domain (``P_0``, ``iprec_at_recall_1.5``).
    """
    found = parse_spelling(name)
    if found is None:
        return None
    m, params = found
    if params is not None and m.kind in ("long_cuts", "double_cuts"):
        return _bound(m, name, k=(int if m.kind == "long_cuts" else float)(params))
    return measures_of(m, params)[0]


# --------------------------------------------------------------------------------------------- a command line


class UnknownTrecMeasure(InputError):
    """A ``-m`` argument that names no trec_eval measure or set (trec_eval: "illegal measure", status 1)."""


@dataclass(frozen=True)
class Selected:
    """A measure a trec_eval command line asks for, with the measures printing its values (in order)."""

    measure: TrecMeasure
    values: tuple[Measure, ...]
    params: str | None = None


def trec_eval_selection(args: list[str]) -> list[Selected]:
    """The measures of trec_eval's ``-m`` arguments, as trec_eval reads them (``mark_measure``, ``init_meas``):
    in print order whatever the order given, a measure once, the first parameters given for it (``-m P.5
    -m P.10`` is ``P_5``), a set's members with their defaults, ``official`` without any ``-m``.

    Raises
    ------
    UnknownTrecMeasure
        A name that is no trec_eval measure or set, or an empty parameter list (``P.``).
    InputError
        Parameters trec_eval or meta-eval refuses (:func:`measures_of`).
    """
    marked: set[str] = set()
    params: dict[str, str] = {}
    for arg in args or ["official"]:
        name, dot, text = arg.partition(".")
        if dot:
            if not text:
                raise UnknownTrecMeasure(f"illegal measure {arg!r}: an empty parameter list")
            params.setdefault(name, text)
        if name in NICKNAMES:
            marked.update(NICKNAMES[name])
        elif name in BY_NAME:
            marked.add(name)
        else:
            raise UnknownTrecMeasure(f"illegal measure {arg!r}" + _hint(name))
    out = []
    for m in TREC_MEASURES:
        if m.name not in marked:
            continue
        text = params.get(m.name) if m.parameterised or m.kind == "relstring" else None
        values = () if m.family is None else tuple(measures_of(m, text))
        out.append(Selected(m, values, text))
    return out


def _hint(name: str) -> str:
    close = did_you_mean(name, [*BY_NAME, *NICKNAMES])
    return f"; did you mean {close}?" if close else ""
