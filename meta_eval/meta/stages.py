"""Study stages of the meta-evaluation battery: one function per analysis, each returning the result object, the
tables for its CSVs, its figures and a few sentences of findings computed from the numbers.

The study driver (:mod:`meta_eval.study`) writes ``tables`` with ``Report.table`` (file stem, caption, frame),
``figures`` with ``Report.figure`` and puts ``text`` and ``finding`` in the section. Score-based stages take the
(S, T) score arrays the study has already computed; the two that re-judge the collection take the collection.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from meta_eval.collection import Collection
from meta_eval.meta.standardise import standardise_all

__all__ = ["StageOutput", "anova_stage", "incomplete_judgments_stage", "intuitiveness_stage", "reusability_stage",
           "split_half_stage"]


@dataclass
class StageOutput:
    """What a stage hands to the report.

    Attributes
    ----------
    result : object
        The analysis result (e.g. :class:`~meta_eval.meta.IncompleteJudgments`).
    text : str
        How the numbers were obtained (method, parameters, seed).
    finding : str
        What the numbers say, in a few sentences.
    tables : list of (stem, caption, DataFrame)
        ``stem``.csv files; the first is the one the issue names (``incomplete_judgments.csv`` ...).
    figures : list of (stem, caption, Figure)
    """

    result: Any
    text: str
    finding: str
    tables: list[tuple[str, str, pd.DataFrame]] = field(default_factory=list)
    figures: list[tuple[str, str, Any]] = field(default_factory=list)


def _pct(f: float) -> str:
    return f"{100 * f:.0f} %"


def _standardise_note(standardise: str | None) -> str:
    if standardise is None:
        return ""
    how = "z-scores" if standardise == "z" else "normal-CDF standardised scores (Φ of the z-scores)"
    return f" Scores are per-topic {how} over the systems (Webber, Moffat & Zobel 2008; Urbano et al. 2019)."


# --------------------------------------------------------------------------------------------- incomplete judgments


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
    """Robustness to incomplete judgments (:func:`~meta_eval.meta.incomplete_judgments`); ``n_draws`` and
    ``fractions`` are the budget (cost grows with their product)."""
    from meta_eval.figures.meta import incomplete_judgments_figure
    from meta_eval.meta.judgments import incomplete_judgments
    from meta_eval.params import check

    check("incomplete judgments", threshold=threshold)  # before the work, not when the finding is written
    res = incomplete_judgments(collection, metrics, fractions=fractions, n_draws=n_draws, sampling=sampling,
                               forms=forms, alpha=alpha, reference=reference, seed=seed, n_jobs=n_jobs,
                               scheduler=scheduler,
                               standardise=standardise, progress=progress)
    against = "the same form" if reference == "same" else "the standard form"
    text = (f"Reduced qrels: {sampling} sampling of {', '.join(_pct(f) for f in fractions)} of the "
            f"{len(collection.judgments)} judgments, {n_draws} seeded draws each (seed {seed}); every run re-scored "
            f"in the {' and '.join(forms)} form{'s' if len(forms) > 1 else ''} (condensed: unjudged documents "
            f"removed, Sakai 2007) and its system ranking compared with {against} under the full qrels (Kendall's "
            f"τ_b, τ_AP). Discriminative power: share of system pairs a paired t-test separates at α = {alpha:g}. "
            "Intervals: 2.5 and 97.5 percentiles over draws." + _standardise_note(standardise))
    return StageOutput(
        res, text, _judgments_finding(res, threshold),
        tables=[("incomplete_judgments", "Agreement with the full-qrels ranking, by fraction of judgments kept",
                 res.summary),
                ("incomplete_judgments_draws", "Every draw", res.draws)],
        figures=[("incomplete_judgments", "Ranking agreement and discriminative power against the fraction of "
                  "judgments kept (standard: solid; condensed: dashed)",
                  incomplete_judgments_figure(res.summary, threshold=threshold, colors=colors))],
    )


def _judgments_finding(res, threshold: float) -> str:
    table = res.min_fraction(threshold)
    parts = []
    for form, grp in table.groupby("form", sort=False):
        grp = grp.sort_values("min_fraction", na_position="last")
        items = [f"{r.metric} down to {_pct(r.min_fraction)}" if r.min_fraction == r.min_fraction
                 else f"{r.metric} not even at {_pct(res.summary['fraction'].max())}" for r in grp.itertuples()]
        parts.append(f"{form} form: " + "; ".join(items))
    out = f"Mean τ_b ≥ {threshold:g} with the full-qrels ranking — " + ". ".join(parts) + "."
    s = res.summary
    mid = s[np.isclose(s["fraction"], s["fraction"].median())]
    if len(mid):
        f = float(mid["fraction"].iloc[0])
        power = "; ".join(f"{r.metric} ({r.form}) {r.discpower:.2f} vs {r.discpower_full:.2f}"
                          for r in mid.itertuples())
        out += f" Share of pairs significant with {_pct(f)} of the judgments, against the full qrels: {power}."
    return out


# --------------------------------------------------------------------------------------------- reusability


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
    """Pool reusability, leave-one-run-out or leave-one-group-out (:func:`~meta_eval.meta.reusability`)."""
    from meta_eval.figures.meta import reusability_figure
    from meta_eval.meta.reusability import reusability

    res = reusability(collection, metrics, groups=groups, depth=depth, forms=forms, standardise=standardise)
    unit = "run" if groups is None else "group"
    text = (f"Leave-one-{unit}-out (Zobel 1998; Büttcher et al. 2007): the judged documents that only the {unit} "
            f"contributed to the depth-{depth} pool are removed for its runs, which are re-scored and ranked among "
            "the other runs' official scores." + _standardise_note(standardise))
    s = res.summary
    rows = []
    for r in s.itertuples():
        lost = int(r.max_rank_change)
        rows.append(f"{r.metric} ({r.form}): mean score change {r.mean_score_change:+.4f} (most negative "
                    f"{r.min_score_change:+.4f}), mean |rank change| {r.mean_abs_rank_change:.2f}; "
                    + (f"{int(r.runs_dropping)} of {int(r.runs)} runs lose places (at most {lost})" if lost > 0
                       else "no run loses a place"))
    removed = res.runs.drop_duplicates("run")["removed"]
    finding = (f"Unique contributions per {unit}: {removed.mean():.0f} judgments on average (max {removed.max()}). "
               + "; ".join(rows) + ".")
    figures = [(f"reusability_{form}", f"Rank change of each run left out of the pool ({form} form)",
                reusability_figure(res.runs, form=form, colors=colors)) for form in dict.fromkeys(res.runs["form"])]
    return StageOutput(res, text, finding,
                       tables=[("reusability", "Score and rank change of each run left out of the pool", res.runs),
                               ("reusability_summary", "Per metric", s)],
                       figures=figures)


# --------------------------------------------------------------------------------------------- ANOVA


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
    """Two-way ANOVA, ω², pair effect sizes and Sakai's topic-set-size design from each metric's residual
    variance (:func:`~meta_eval.meta.two_way_anova`, :func:`~meta_eval.meta.topic_set_size`)."""
    from meta_eval.errors import InputError
    from meta_eval.figures.meta import omega_figure, topic_set_size_figure
    from meta_eval.meta.anova import two_way_anova
    from meta_eval.meta.topicsize import DEFAULT_MIN_D, topic_set_size

    x = standardise_all(scores, standardise)
    res = two_way_anova(x, systems)
    if variance not in ("two-way", "one-way"):
        raise InputError(f"variance must be 'two-way' or 'one-way'; got {variance!r}")
    var = res.residual_variance if variance == "two-way" else res.one_way_variance
    if min_d is None:  # raw scores: the default grid; standardised scores: the same grid in residual s.d. units
        min_d = DEFAULT_MIN_D if standardise is None else tuple(np.round(np.arange(0.1, 1.01, 0.05), 2))
    tss = topic_set_size(var, min_d=min_d, alpha=alpha, beta=beta, n_systems=n_systems)
    n_top = next(iter(x.values())).shape[1]
    text = ("Two-way ANOVA without replication, score = system + topic + error, per metric (Ferro & Silvello 2018); "
            "ω² is the partial omega squared (Olejnik & Algina 2003). Effect size of a system pair: mean difference "
            "over the residual s.d. √V_E (Sakai 2018). Topic-set size (Sakai IRJ 2016): the fewest topics for which "
            f"a paired t-test, or a one-way ANOVA of m systems, has power {1 - beta:g} at α = {alpha:g} for a true "
            f"difference minD, with σ² = the {variance} ANOVA residual variance." + _standardise_note(standardise))
    sys_omega = res.omega_sq("system").sort_values(ascending=False)
    top_omega = res.omega_sq("topic")
    finding = ("System effect ω²: " + ", ".join(f"{m} {_defined(v, '.2f')}" for m, v in sys_omega.items())
               + "; topic effect ω²: " + ", ".join(f"{m} {_defined(v, '.2f')}" for m, v in top_omega.items()) + ".")
    grid = np.asarray(list(min_d), dtype=float)
    d = float(grid[np.argmin(np.abs(grid - (0.05 if standardise is None else 0.5)))])
    need = tss.at(d).sort_values()
    finding += (f" To detect minD = {d:g} with a paired t-test (power {1 - beta:g}, α = {alpha:g}): "
                + ", ".join(f"{m} {_defined(n, 'd')}" for m, n in need.items())
                + f" topics (this collection has {n_top}).")
    return StageOutput(
        (res, tss), text, finding,
        tables=[("anova", "Two-way ANOVA per metric", res.table),
                ("topic_set_size", "Topics needed per metric, design and minimum detectable difference", tss.table),
                ("effect_sizes", "Effect sizes of every system pair", res.pairs())],
        figures=[("anova_omega", "Partial ω² of the system and topic effects",
                  omega_figure(res.table, colors=colors)),
                 ("topic_set_size", "Topics needed against the minimum detectable difference",
                  topic_set_size_figure(tss.table, colors=colors))],
    )


def _defined(value, spec: str) -> str:
    """A number for a finding, or "undefined (no variance)" where it is missing (identical systems)."""
    return "undefined (no variance)" if pd.isna(value) else format(int(value) if spec == "d" else value, spec)


# --------------------------------------------------------------------------------------------- intuitiveness


def intuitiveness_stage(
    collection: Collection,
    scores: Mapping[str, np.ndarray],
    *,
    gold: str = "P@10",
    gold_label: str | None = None,
) -> StageOutput:
    """Sakai's intuitiveness of every metric pair against a gold criterion (default P@10: the number of relevant
    documents in the top 10), :func:`~meta_eval.meta.intuitiveness`."""
    from meta_eval.evaluate import score
    from meta_eval.figures.meta import intuitiveness_figure
    from meta_eval.meta.intuitiveness import intuitiveness

    metrics = {k: v for k, v in scores.items() if k != gold}
    label = gold_label or (f"{gold} (relevant documents in the top {gold.split('@')[1]})"
                           if gold.startswith("P@") else gold)
    res = intuitiveness(metrics, score(collection, gold), gold_name=gold)
    text = (f"Concordance test (Sakai 2012): for every topic and system pair on which two metrics prefer different "
            f"systems, the share of those disagreements on which the gold criterion {label} strictly prefers the "
            "system each metric prefers (gold ties count for neither).")
    rows = []
    for r in res.table.itertuples():
        if r.disagreements:
            better = r.metric_x if r.intuitiveness_x > r.intuitiveness_y else r.metric_y
            rows.append(f"{r.metric_x} vs {r.metric_y}: {r.intuitiveness_x:.2f} vs {r.intuitiveness_y:.2f} over "
                        f"{r.disagreements} disagreements ({better} more intuitive)")
    matrix = res.matrix()
    wins = (matrix > matrix.T).sum(axis=1).sort_values(ascending=False)
    finding = (f"Against {gold}: " + "; ".join(rows) + "." if rows else f"No two metrics disagree against {gold}.")
    if rows:
        finding += f" Most intuitive overall: {wins.index[0]} (more intuitive than {int(wins.iloc[0])} of " \
                   f"{len(matrix) - 1} other metrics)."
    return StageOutput(res, text, finding,
                       tables=[("intuitiveness", f"Intuitiveness against {gold}", res.table)],
                       figures=[("intuitiveness", f"Intuitiveness matrix against {gold}",
                                 intuitiveness_figure(matrix, gold=gold))])


# --------------------------------------------------------------------------------------------- split-half


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
    """Voorhees' split-half stability of each metric (:func:`meta_eval.discpower.split_half`); the same splits for
    every metric (one seed)."""
    from meta_eval.discpower.stability import split_half
    from meta_eval.figures.meta import split_half_figure

    x = standardise_all(scores, standardise)
    frames = []
    for name, values in x.items():
        res = split_half(values, systems, sizes=sizes, n_splits=n_splits, seed=seed)
        frames.append(res.summary.assign(metric=name))
    summary = pd.concat(frames, ignore_index=True)[["metric", "size", "coefficient", "mean", "ci_low", "ci_high",
                                                     "splits"]]
    n_top = next(iter(x.values())).shape[1]
    text = (f"Split-half stability (Voorhees 2009): {n_splits} random splits (seed {seed}) of the topics into two "
            "disjoint halves of n topics; systems ranked by their mean over each half; Kendall's τ_b and τ_AP-b "
            "between the two rankings, with 2.5-97.5 percentile intervals over splits."
            + _standardise_note(standardise))
    largest = summary[(summary["size"] == summary["size"].max()) & (summary["coefficient"] == "kendall_tau_b")]
    largest = largest.sort_values("mean", ascending=False)
    finding = (f"With halves of {int(summary['size'].max())} topics (of {n_top}), mean τ_b between the halves' "
               "rankings: " + ", ".join(f"{r.metric} {r.mean:.2f} [{r.ci_low:.2f}, {r.ci_high:.2f}]"
                                        for r in largest.itertuples()) + ".")
    return StageOutput(summary, text, finding,
                       tables=[("split_half", "τ between the rankings of disjoint topic halves", summary)],
                       figures=[("split_half", "Split-half stability against topic-set size",
                                 split_half_figure(summary, colors=colors))])
