"""Pool reusability (Zobel, SIGIR 1998; Büttcher, Clarke, Yeung & Soboroff, SIGIR 2007): would a run that did
not contribute to the pool be scored fairly?

Leave-one-run-out (or leave-one-group-out): for each run r of group g, remove from the qrels the judged documents
that *only* group g contributed to the pool, i.e. that some run of g retrieved in its top ``depth`` for the topic
and no run of another group did. Those documents become unjudged for r (the others keep the full qrels), r is
re-scored, and its mean score and rank are compared with the official ones::

    score_change = mean_t M_reduced(r, t) − mean_t M_full(r, t)
    rank         = 1 + #{other runs whose full-qrels mean is higher}  (with r's full or reduced mean)
    rank_change  = rank_reduced − rank_full     (> 0: the run drops when it is left out of the pool)

Every run is processed at once: run r is scored with its own group's reduced qrels in one vectorised pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from meta_eval.model.collection import Collection
from meta_eval.core.errors import InputError
from meta_eval.measures import Measure
from meta_eval.statistics.rejudge import Rejudger, check_forms, resolve_measures

DEFAULT_DEPTH = 100


def prefix_groups(systems: Sequence[str], length: int | None = None) -> dict[str, str]:
    """Groups from run names: the first ``length`` characters, or (default) the name without a trailing run
    number and separators (``BBGhelani1`` and ``BBGhelani2`` -> ``BBGhelani``; ``uog_run-3`` -> ``uog_run``)."""
    if length is not None:
        if length < 1:
            raise InputError(f"prefix length must be positive; got {length}")
        return {s: s[:length] for s in systems}
    return {s: re.sub(r"[\W_]*\d*$", "", s) or s for s in systems}


def _group_index(systems: Sequence[str], groups) -> tuple[np.ndarray, list[str]]:
    if groups is None:
        mapping = {s: s for s in systems}
    elif groups == "prefix":
        mapping = prefix_groups(systems)
    elif isinstance(groups, Mapping):
        missing = [s for s in systems if s not in groups]
        if missing:
            raise InputError(f"the group mapping lacks {len(missing)} run(s), e.g. {missing[:5]}")
        mapping = {s: str(groups[s]) for s in systems}
    else:
        raise InputError("groups must be None (leave-one-run-out), 'prefix' or a mapping run -> group")
    names = list(dict.fromkeys(mapping[s] for s in systems))
    where = {g: i for i, g in enumerate(names)}
    return np.array([where[mapping[s]] for s in systems], dtype=np.int64), names


def unique_contributions(rejudger: Rejudger, group: np.ndarray, n_groups: int, depth: int) -> np.ndarray:
    """(J,) the group that alone contributed each judged document to the depth-``depth`` pool; -1 when no group
    or several groups did."""
    pairs = []
    for b in rejudger.blocks:
        top = b.jidx[:, :, :depth]
        s, t, d = np.nonzero(top >= 0)
        pairs.append(group[s + b.systems.start] * rejudger.n_judgments + top[s, t, d])
    code = np.unique(np.concatenate(pairs)) if pairs else np.zeros(0, dtype=np.int64)
    judgment, owner = code % max(rejudger.n_judgments, 1), code // max(rejudger.n_judgments, 1)
    contributors = np.bincount(judgment, minlength=rejudger.n_judgments)
    out = np.full(rejudger.n_judgments, -1, dtype=np.int64)
    single = contributors[judgment] == 1
    out[judgment[single]] = owner[single]
    return out


@dataclass(frozen=True, eq=False)
class Reusability:
    """Result of :func:`reusability`.

    Attributes
    ----------
    runs : DataFrame
        One row per (metric, form, run): ``metric, form, run, group, removed`` (judgments only its group
        contributed), ``removed_relevant, score_full, score_reduced, score_change, rank_full, rank_reduced,
        rank_change``.
    summary : DataFrame
        One row per (metric, form): ``runs, mean_score_change, min_score_change`` (the largest drop),
        ``mean_abs_rank_change, max_rank_change, runs_dropping`` (runs whose rank falls).
    depth : int
    """

    runs: pd.DataFrame
    summary: pd.DataFrame
    depth: int


def reusability(
    collection: Collection,
    measures: Sequence[str | Measure],
    *,
    groups: None | str | Mapping[str, str] = None,
    depth: int = DEFAULT_DEPTH,
    forms: Sequence[str] = ("standard",),
    standardise: str | None = None,
) -> Reusability:
    """Leave-one-run-out (``groups=None``) or leave-one-group-out pool reusability (module docstring).

    Parameters
    ----------
    collection : Collection
    measures : sequence of str or Measure
    groups : None, "prefix" or mapping run -> group
        Runs of one group (e.g. one participant) are left out together: ``"prefix"`` groups runs by name
        (:func:`prefix_groups`).
    depth : int
        Pool depth k: a document counts as contributed by a run when it is in the run's top k for the topic.
    forms : sequence of {"standard", "condensed"}
        Score forms; each is compared with the same form under the full qrels.
    standardise : {None, "z", "cdf"}
        Compare means of per-topic standardised scores; the reference (per-topic means and s.d.) is fitted on the
        full-qrels scores of all runs, and the left-out run is standardised against it (Webber et al. 2008).
    """
    from meta_eval.measures.scoring import aggregate
    from meta_eval.statistics.standardise import check_method, fit_standardisation

    check_method(standardise)
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1:
        raise InputError(f"depth must be a positive integer; got {depth!r}")
    ms = resolve_measures(measures)
    forms = check_forms(forms, collection)
    systems = list(collection.systems)
    group, group_names = _group_index(systems, groups)
    if len(group_names) < 2:
        raise InputError("leaving a group out needs at least two groups of runs")
    rejudger = Rejudger(collection)
    owner = unique_contributions(rejudger, group, len(group_names), int(depth))
    keep = np.concatenate([owner[None, :] != np.arange(len(group_names))[:, None],
                           np.ones((1, rejudger.n_judgments), dtype=bool)])  # one mask per group, then full
    which = np.stack([group, np.full(len(systems), len(group_names))])  # combo 0: own group's qrels; 1: full
    out = rejudger.all_scores(ms, keep, which, forms)
    removed = np.bincount(owner[owner >= 0], minlength=len(group_names))
    relevant = np.asarray(collection.judgments.grade) >= collection.rel_level
    removed_rel = np.bincount(owner[(owner >= 0) & relevant], minlength=len(group_names))
    frames = []
    for m in ms:
        for form in forms:
            reduced, full = out[(m.output_name, form)]
            if standardise is not None:
                ref = fit_standardisation(full, standardise)
                reduced, full = ref(reduced), ref(full)
                mean_full, mean_red = np.nanmean(full, axis=-1), np.nanmean(reduced, axis=-1)
            else:
                mean_full, mean_red = aggregate(full, m), aggregate(reduced, m)
            others = ~np.eye(len(systems), dtype=bool)
            rank_full = 1 + ((mean_full[None, :] > mean_full[:, None]) & others).sum(axis=1)
            rank_red = 1 + ((mean_full[None, :] > mean_red[:, None]) & others).sum(axis=1)
            frames.append(pd.DataFrame({
                "metric": m.output_name, "form": form, "run": systems,
                "group": np.asarray(group_names, dtype=object)[group], "removed": removed[group],
                "removed_relevant": removed_rel[group], "score_full": mean_full, "score_reduced": mean_red,
                "score_change": mean_red - mean_full, "rank_full": rank_full, "rank_reduced": rank_red,
                "rank_change": rank_red - rank_full}))
    runs = pd.concat(frames, ignore_index=True)
    grouped = runs.groupby(["metric", "form"], sort=False)
    summary = pd.DataFrame({
        "runs": grouped.size(),
        "mean_score_change": grouped["score_change"].mean(),
        "min_score_change": grouped["score_change"].min(),
        "mean_abs_rank_change": grouped["rank_change"].apply(lambda v: v.abs().mean()),
        "max_rank_change": grouped["rank_change"].max(),
        "runs_dropping": grouped["rank_change"].apply(lambda v: int((v > 0).sum())),
    }).reset_index()
    return Reusability(runs, summary, int(depth))
