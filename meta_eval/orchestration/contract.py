"""The contract every extension keeps, stated once as checks (as scikit-learn's ``check_estimator`` states what an
estimator must do): :func:`check_analysis` for an analysis, :func:`check_measure` for a measure family. The test
suite runs them over every built-in analysis and measure; run them over your own plug-ins the same way::

    from meta_eval.orchestration.contract import check_analysis, check_measure
    check_analysis("my_analysis.py:top_heavy")        # its declaration, then a run on the demo collection
    check_measure("my_metric.py:grbp")

Each check raises :class:`ContractError` naming the extension and the rule it breaks.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import numpy as np

from meta_eval.core.errors import MetaEvalError

__all__ = ["ContractError", "check_analysis", "check_measure"]


class ContractError(MetaEvalError, AssertionError):
    """An extension breaks the contract; the message names it and the rule."""


def _require(condition: bool, who: str, rule: str) -> None:
    if not condition:
        raise ContractError(f"{who}: {rule}")


# --------------------------------------------------------------------------------------------- analyses


def check_analysis(spec, data=None, **params: Any):
    """Check an analysis's declaration, run it, and check its result; returns the result.

    The declaration: a name (a word) and title, parameters that are :class:`~meta_eval.core.params.Param` with distinct
    names whose defaults lie in their domains, a ``run(data, **params)`` that takes every parameter as a keyword,
    dependencies that name what exists. The result (on ``data``, default the demo collection with AP, nDCG@10 and
    P@10, and the analysis's ``quick`` parameters updated by ``params``): a :class:`~meta_eval.analyses.Result` with a method text; tables
    with distinct file-safe stems, a caption, a DataFrame with columns, and at least one compact table that renders
    in every format; figures that draw; findings whose every fact is the cell its table shows and whose every
    number is a fact, a parameter, a measure, or a row or column label of its tables; the same numbers when run
    again.
    """
    import pandas as pd

    from meta_eval.analyses import Analysis, AnalysisData, Result, parse_analysis
    from meta_eval.core.params import Param
    from meta_eval.rendering.findings import Finding

    decl, given = parse_analysis(spec)
    who = f"analysis {decl.name}"
    _check_declaration(decl, who, Analysis, Param)
    if data is None:
        from meta_eval.model.demo import demo_collection

        measures = ("AP", "nDCG@10", "P@10")
        data = AnalysisData.from_measures(measures) if decl.needs == "measures" else \
            AnalysisData.from_collection(demo_collection(), measures)
    values = decl.bind({**decl.quick, **given, **params})  # its own quick budgets, unless others are given
    data.results = {**data.results, **_requirements(decl, data)}
    result = decl(data, **values)
    _require(isinstance(result, Result), who, "run() returns a meta_eval.analyses.Result")
    _require(isinstance(result.text, str) and result.text.strip() != "", who, "the result has a method text")
    tables = result.tables()
    _require(isinstance(tables, list) and tables, who, "tables() is a non-empty list")
    stems = [t.stem for t in tables]
    _require(len(set(stems)) == len(stems), who, f"table stems are distinct ({stems})")
    for t in tables:
        _require(re.fullmatch(r"[A-Za-z0-9._-]+", t.stem) is not None, who, f"table stem {t.stem!r} is file-safe")
        _require(isinstance(t.frame, pd.DataFrame) and len(t.frame.columns) > 0, who,
                 f"table {t.stem} holds a DataFrame with columns")
        _require(bool(t.caption), who, f"table {t.stem} has a caption")
    compact = [t for t in tables if t.compact is not None]
    _require(bool(compact), who, "at least one table has a compact form (the paper's table)")
    for t in compact:
        for render in (t.compact.to_markdown, t.compact.to_html, lambda: t.compact.to_latex(label=t.stem)):
            _require(isinstance(render(), str), who, f"table {t.stem} renders")
    _require(result.to_frame() is tables[0].frame or result.to_frame().equals(tables[0].frame), who,
             "to_frame() is the first table's frame")
    _require(result.table() is not None, who, "table() gives the compact table")
    _check_figures(result, who)
    found = result.findings()
    _require(isinstance(found, list) and all(isinstance(f, Finding) for f in found), who,
             "findings() is a list of meta_eval.rendering.findings.Finding")
    for finding in found:
        _check_finding(finding, result, data, who)
    again = decl(data, **values)
    for a, b in zip(tables, again.tables()):
        _require(a.frame.equals(b.frame), who, f"table {a.stem} has the same numbers when run again")
    return result


def _check_declaration(decl, who: str, Analysis, Param) -> None:
    from meta_eval.analyses import NEEDS, builtin_names

    _require(isinstance(decl, Analysis), who, "is declared with meta_eval.analyses.analysis")
    _require(re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", decl.name) is not None, who, "its name is a word")
    _require(bool(decl.title) and bool(decl.summary), who, "it has a title and a summary")
    names = [p.name for p in decl.params]
    _require(all(isinstance(p, Param) for p in decl.params), who, "its parameters are meta_eval.core.params.Param")
    _require(len(set(names)) == len(names) and "data" not in names, who, "its parameter names are distinct")
    for p in decl.params:
        if p.default is not None:
            try:
                p.validate(p.default, who)
            except MetaEvalError as exc:
                raise ContractError(f"{who}: the default of {p.name} lies outside its domain ({exc})") from None
        _require(bool(p.doc), who, f"parameter {p.name} says what it is (doc)")
    accepts = inspect.signature(decl.run).parameters
    has_kwargs = any(q.kind is inspect.Parameter.VAR_KEYWORD for q in accepts.values())
    _require(has_kwargs or all(n in accepts for n in names), who, "run() takes every parameter as a keyword")
    known = set(builtin_names())
    for dep in (*decl.requires, *decl.after):
        _require(dep in known, who, f"it depends on an analysis that exists ({dep!r})")
    _require(decl.needs in NEEDS, who, f"it reads one of {', '.join(NEEDS)}")
    _require(set(decl.files) <= set(names), who, "files names declared parameters")


def _requirements(decl, data) -> dict:
    """Results of the analyses ``decl`` requires, run with their defaults."""
    from meta_eval.analyses import get_analysis

    out = {}
    for name in decl.requires:
        if name not in data.results:
            dep = get_analysis(name)
            out[name] = dep(data)
    return out


def _check_figures(result, who: str) -> None:
    import matplotlib.pyplot as plt

    from meta_eval.analyses import FigureOutput

    figures = result.figures()
    _require(isinstance(figures, list) and all(isinstance(f, FigureOutput) for f in figures), who,
             "figures() is a list of meta_eval.analyses.FigureOutput")
    stems = [f.stem for f in figures]
    _require(len(set(stems)) == len(stems), who, f"figure stems are distinct ({stems})")
    for f in figures:
        fig = f.draw()
        _require(hasattr(fig, "axes") and len(fig.axes) > 0, who, f"figure {f.stem} draws a figure with axes")
        _require(bool(f.caption), who, f"figure {f.stem} has a caption")
        plt.close(fig)


def _check_finding(finding, result, data, who: str) -> None:
    tables = result.compact
    labels: list[str] = [*data.raw, *finding.params.values()]
    for fact in finding.facts:
        _require(fact.table in tables, who, f"a finding quotes the compact table {fact.table!r}")
        table = tables[fact.table]
        shown = table.text(fact.row, fact.column) if fact.part == "value" else table.interval(fact.row, fact.column)
        _require(fact.text == shown, who, f"a finding quotes {fact.table}[{fact.row}, {fact.column}] as "
                 f"{fact.text!r} but the table shows {shown!r}")
        _require(fact.text in finding.sentence, who, f"the quoted {fact.text!r} is in the sentence")
        labels += [fact.text]
    for table in tables.values():
        labels += [str(r) for r in table.values.index] + [str(c) for c in table.values.columns]
    rest = finding.sentence
    for text in sorted(set(labels), key=len, reverse=True):  # longest first: "0" is not "100"'s
        rest = rest.replace(text, "")
    _require(not re.search(r"\d", rest), who, f"every number of a finding comes from its tables or parameters: "
             f"{finding.sentence!r} has {re.findall(r'[0-9.]+', rest)} from elsewhere")


# --------------------------------------------------------------------------------------------- measures


def check_measure(spec, *, seed: int = 0):
    """Check a measure family's declaration and values; returns the measure checked.

    The declaration: a name (a word), a description, parameters and cutoff that are Params whose defaults lie in
    their domains; a built-in's canonical name parses back to the same measure. The values, on random ranked lists
    (unjudged documents, padding, empty lists, topics without relevant documents): one float per list, finite
    unless the family declares when it is undefined, the inputs left unchanged, the same on a second call. What
    the engines declare for its family, when they do: MEM's expected-value form takes the measure's value on every
    list (the point mass of the list), and LambdaMART's closed-form swap delta equals the change of the measure
    when the two documents are swapped.
    """
    from meta_eval.measures.registry import Family, Measure, is_builtin, make_measure
    from meta_eval.measures.resolver import get_measure, resolve_one

    if isinstance(spec, Family):
        measure = make_measure(spec.name) if not spec.source else Measure(spec)
    else:
        measure = resolve_one(spec)
    fam = measure.family
    who = f"measure {fam.name}"
    _require(re.fullmatch(r"[^\s()@:,=]+", fam.name) is not None, who, "its name is a word")
    _require(bool(fam.description), who, "it has a description")
    for p in fam.declared():
        if p.default is not None:
            try:
                p.validate(p.default, who)
            except MetaEvalError as exc:
                raise ContractError(f"{who}: the default of {p.name} lies outside its domain ({exc})") from None
    if not fam.source and is_builtin(fam.func):
        _require(get_measure(measure.name).params == measure.params, who,
                 f"its canonical name {measure.name!r} parses back to the same measure")
    if getattr(fam, "input", "rankings") != "rankings":
        return measure  # a measure of other judgments (preferences) is not scored on graded lists here
    r = _random_rankings(seed)
    before = (r.grades.copy(), r.n_ret.copy(), r.counts.copy())
    values = measure(r)
    _require(values.shape == r.shape and values.dtype == np.float64, who, f"one float per list (shape {r.shape})")
    finite = np.isfinite(values)
    _require(finite.all() or (bool(fam.undefined) and not np.isinf(values).any()), who,
             "its values are finite (NaN only where it declares when it is undefined)")
    _require(all(np.array_equal(a, b) for a, b in zip(before, (r.grades, r.n_ret, r.counts))), who,
             "it leaves its inputs unchanged")
    _require(np.array_equal(values, measure(r), equal_nan=True), who, "the same lists give the same values")
    _check_expectation(measure, r, values, who)
    _check_swap_delta(measure, r, who)
    return measure


def _random_rankings(seed: int):
    """Lists of random lengths (0..12) over grades 0..2 with unjudged documents, some topics without a relevant
    document, padded to a common depth."""
    from meta_eval.model.rankings import PAD, UNJUDGED, Rankings

    rng = np.random.default_rng(seed)
    n_lists, depth = 24, 12
    n_ret = rng.integers(0, depth + 1, n_lists)
    n_ret[:2] = (0, depth)
    grades = rng.choice([0, 0, 0, 1, 2, UNJUDGED], size=(n_lists, depth)).astype(np.int8)
    grades[np.arange(depth)[None, :] >= n_ret[:, None]] = PAD
    counts = np.column_stack([rng.integers(5, 30, n_lists), rng.integers(0, 6, n_lists), rng.integers(0, 4, n_lists)])
    counts[2] = (20, 0, 0)  # no relevant document
    grades[2][grades[2] > 0] = 0
    judged = np.where(grades > 0, grades, 0)
    for g in (1, 2):  # the qrels hold at least the relevant documents retrieved
        counts[:, g] = np.maximum(counts[:, g], (judged == g).sum(1))
    return Rankings(grades, n_ret, counts.astype(np.int64))


def _check_expectation(measure, r, values, who: str) -> None:
    from meta_eval.statistics.maxent.batch import ListBatch
    from meta_eval.statistics.maxent.expectations import declared_form

    build = declared_form(measure, 1)
    if build is None:
        return

    # MEM's lists: something retrieved, a relevant document in the qrels (the form is undefined without one)
    keep = np.flatnonzero(np.isfinite(values) & (r.n_ret > 0) & (r.counts[:, 1:].sum(1) > 0))
    batch = ListBatch.from_rankings(r).subset(keep)
    try:
        form = build(batch)
    except MetaEvalError:
        return  # parameters the form does not cover: MEM derives one instead
    expected = form.value(batch.onehot())
    _require(np.allclose(expected, values[keep], rtol=1e-9, atol=1e-12), who,
             "its expectation form takes the measure's value on every list (largest difference "
             f"{np.max(np.abs(expected - values[keep])):.3g})")


def _check_swap_delta(measure, r, who: str) -> None:
    from meta_eval.model.rankings import UNJUDGED
    from meta_eval.statistics.learning_to_rank.swap_deltas import closed_form, general_pair_deltas

    delta = closed_form(measure)
    if delta is None:
        return

    grades = np.where(r.grades == UNJUDGED, 0, r.grades)
    closed = delta(grades, r.counts, 1, grades.shape[1])
    brute = general_pair_deltas(measure, grades, r.counts, 1)
    valid = grades >= 0
    mask = valid[:, :, None] & valid[:, None, :] & np.triu(np.ones(closed.shape[1:], dtype=bool), 1)[None]
    _require(np.allclose(np.where(mask, closed, 0), brute, atol=1e-12), who,
             "its swap delta equals the change of the measure when two documents trade places")
