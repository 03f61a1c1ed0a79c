"""Deprecated: the battery's stage functions, now thin wrappers of the analyses' declarations.

Each ``*_stage`` function runs the analysis of :mod:`meta_eval.analyses` of the same name and hands back its
:class:`~meta_eval.analyses.Result` in the old :class:`StageOutput` shape (``result``, ``text``, ``finding``,
``tables``, ``figures``); ``finding`` now joins the result's findings, whose every number is quoted from its tables.
Use the analyses instead::

    from meta_eval.analyses import AnalysisData, get_analysis
    result = get_analysis("anova")(AnalysisData.from_scores(scores, systems), alpha=0.05)
    result.table(), result.findings(), result.figures()
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from meta_eval.collection import Collection
from meta_eval.errors import MetaEvalDeprecation

__all__ = ["StageOutput", "anova_stage", "incomplete_judgments_stage", "intuitiveness_stage", "reusability_stage",
           "split_half_stage"]


@dataclass
class StageOutput:
    """What a stage handed to the report (deprecated: an analysis returns a :class:`~meta_eval.analyses.Result`).

    Attributes
    ----------
    result : object
        The engine's result (e.g. :class:`~meta_eval.meta.IncompleteJudgments`).
    text : str
        How the numbers were obtained (method, parameters, seed).
    finding : str
        The analysis's findings, joined.
    tables : list of (stem, caption, DataFrame)
    figures : list of (stem, caption, Figure)
    """

    result: Any
    text: str
    finding: str
    tables: list[tuple[str, str, pd.DataFrame]] = field(default_factory=list)
    figures: list[tuple[str, str, Any]] = field(default_factory=list)


def _stage(name: str, data, result_of, **params) -> StageOutput:
    from meta_eval.analyses import get_analysis

    warnings.warn(f"meta_eval.meta.stages.{name.replace('-', '_')}_stage is deprecated; run the analysis "
                  f"meta_eval.analyses.get_analysis({name!r}) (a Result with table(), figures(), findings())",
                  MetaEvalDeprecation, stacklevel=3)
    result = get_analysis(name)(data, **params)
    return StageOutput(result_of(result), result.text, " ".join(f.sentence for f in result.findings()),
                       tables=[(t.stem, t.caption, t.frame) for t in result.outputs],
                       figures=[(f.stem, f.caption, f.draw()) for f in result.figures()])


def _data(collection: Collection | None, metrics, scores=None, systems=None, **how):
    from meta_eval.analyses import AnalysisData

    if scores is not None:
        return AnalysisData.from_scores(scores, systems, **how)
    return AnalysisData.from_collection(collection, list(metrics), **how)


def incomplete_judgments_stage(
    collection: Collection,
    metrics: Sequence[str],
    *,
    fractions: Sequence[float] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
    n_draws: int = 20,
    sampling: str = "uniform",
    forms: Sequence[str] = ("standard", "condensed"),
    alpha: float = 0.05,
    threshold: float = 0.9,
    reference: str = "same",
    seed: int = 0,
    n_jobs: int | None = 1,
    scheduler: str | None = None,
    standardise: str | None = None,
    colors: Mapping[str, object] | None = None,
    progress: bool = False,
) -> StageOutput:
    """Deprecated: the ``incomplete-judgments`` analysis (:mod:`meta_eval.analyses.incomplete_judgments`)."""
    data = _data(collection, metrics, standardise=standardise, jobs=n_jobs, scheduler=scheduler, progress=progress)
    data.colors = dict(colors) if colors is not None else data.colors
    return _stage("incomplete-judgments", data, lambda r: r.result, fractions=tuple(fractions), n_draws=n_draws,
                  sampling=sampling, forms=tuple(forms), alpha=alpha, threshold=threshold, reference=reference,
                  seed=seed)


def reusability_stage(
    collection: Collection,
    metrics: Sequence[str],
    *,
    groups: None | str | Mapping[str, str] = None,
    depth: int = 100,
    forms: Sequence[str] = ("standard",),
    standardise: str | None = None,
    colors: Mapping[str, object] | None = None,
) -> StageOutput:
    """Deprecated: the ``reusability`` analysis (:mod:`meta_eval.analyses.reusability`); ``groups`` as
    ``group_by`` (``"prefix"``, a file of ``run group`` lines or a run -> group mapping)."""
    data = _data(collection, metrics, standardise=standardise)
    data.colors = dict(colors) if colors is not None else data.colors
    return _stage("reusability", data, lambda r: r.result, pool_depth=depth, group_by=groups, forms=tuple(forms))


def anova_stage(
    scores: Mapping[str, np.ndarray],
    systems: Sequence[str],
    *,
    min_d: Sequence[float] | None = None,
    alpha: float = 0.05,
    beta: float = 0.2,
    n_systems: Sequence[int] = (2, 10),
    variance: str = "two-way",
    standardise: str | None = None,
    colors: Mapping[str, object] | None = None,
) -> StageOutput:
    """Deprecated: the ``anova`` analysis (:mod:`meta_eval.analyses.anova`); ``beta`` as ``power = 1 - beta``."""
    data = _data(None, (), scores, systems, standardise=standardise)
    data.colors = dict(colors) if colors is not None else data.colors
    return _stage("anova", data, lambda r: (r.anova, r.design), min_d=None if min_d is None else tuple(min_d),
                  alpha=alpha, power=1.0 - beta, n_systems=tuple(n_systems), variance=variance)


def intuitiveness_stage(
    collection: Collection,
    scores: Mapping[str, np.ndarray],
    *,
    gold: str = "P@10",
    gold_label: str | None = None,
) -> StageOutput:
    """Deprecated: the ``intuitiveness`` analysis (:mod:`meta_eval.analyses.intuitiveness`)."""
    from meta_eval.analyses import AnalysisData

    data = AnalysisData(collection, [], {k: np.asarray(v) for k, v in scores.items()})
    return _stage("intuitiveness", data, lambda r: r.result, gold=gold)


def split_half_stage(
    scores: Mapping[str, np.ndarray],
    systems: Sequence[str],
    *,
    sizes: Sequence[int] | None = None,
    n_splits: int = 100,
    seed: int = 0,
    standardise: str | None = None,
    colors: Mapping[str, object] | None = None,
) -> StageOutput:
    """Deprecated: the ``split-half`` analysis (:mod:`meta_eval.analyses.split_half`)."""
    data = _data(None, (), scores, systems, standardise=standardise)
    data.colors = dict(colors) if colors is not None else data.colors
    return _stage("split-half", data, lambda r: r.summary, sizes=tuple(sizes) if sizes is not None else None,
                  n_splits=n_splits, seed=seed)
