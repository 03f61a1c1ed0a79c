"""The trained-for × tested-on experiment of the GAP paper's Tables 1-2: one ranker per objective metric (same folds,
same seeds, early stopping on validation), every test query scored with meta-eval's own metrics, and each row
tested against the best row of its algorithm and test metric.

Conventions:

- A query's "qrels" are its labelled documents (ideal list and R_i from its labels); its documents are ranked by
  descending model score, ties in file order (:mod:`meta_eval.statistics.learning_to_rank.groups`).
- Test queries without a relevant document (none labelled >= max(1, rel_level)) are not scored by any test metric
  (every binary metric would be 0 for them whatever the ranker, so one subset of queries serves every column);
  their number is reported (``LTRResult.skipped``). In training they
  contribute nothing (no pair with different labels), as in LightGBM's ``lambdarank``.
- Significance: a paired test over the test queries of all folds (each query is tested in exactly one fold) of
  every row against the best row of its (algorithm, test measure), by
  :func:`meta_eval.statistics.significance.classical_test` (Student's paired t-test by default).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from meta_eval.model.demo import demo_ltr_data
from meta_eval.core.errors import InputError
from meta_eval.inputs.letor import Fold, load_folds
from meta_eval.statistics.learning_to_rank.groups import ranked_rankings
from meta_eval.measures.resolver import resolve

__all__ = ["ALGORITHMS", "LTRResult", "ltr_stage_table", "run_ltr"]

ALGORITHMS = ("lambdamart", "softrank")
RESULT_COLUMNS = ["algorithm", "trained_for", "test_measure", "mean", "sem", "p_value", "best"]


@dataclass(eq=False)
class LTRResult:
    """Result of :func:`run_ltr`.

    Attributes
    ----------
    table : pandas.DataFrame
        ``algorithm, trained_for, test_measure, mean, sem, p_value, best`` (``p_value``: paired test against the
        best row of the same algorithm and test measure; NaN for the best row itself).
    per_query : pandas.DataFrame
        ``algorithm, trained_for, fold, query, test_measure, value`` for every scored test query.
    skipped : int
        Test queries not scored (no relevant document).
    settings : dict
        Data, folds, seeds and hyper-parameters, for the record.
    """

    table: object
    per_query: object
    skipped: int
    settings: dict = field(default_factory=dict)


def run_ltr(data: str | Path | Sequence[Fold] | None = None, train_for: Sequence[str] = ("nDCG", "GAP", "AP"),
            test: Sequence[str] = ("nDCG@10", "AP", "P@10"), algorithms: Sequence[str] = ("lambdamart",), *,
            k: int = 5, max_folds: int | None = None, seed: int = 0, rel_level: int = 1, significance: str = "ttest",
            lambdamart: Mapping | None = None, softrank: Mapping | None = None,
            progress: bool = True, jobs: int | None = 1, scheduler: str | None = None) -> LTRResult:
    """Train one ranker per (algorithm, objective) on every fold and score the test queries with every test measure.

    Parameters
    ----------
    data : path or list of Fold, optional
        LETOR file (split into ``k`` folds over queries), folder of train/vali/test files, ``Fold*`` tree, or folds
        already loaded. Default: the demo set.
    train_for, test : sequence of str
        Measure specifications (``NAME``, ``module:function``, ``file.py:function``): objectives and test metrics.
    algorithms : sequence of {"lambdamart", "softrank"}
    k, max_folds, seed
        Folds of a single file, how many folds to use, and the seed of splits and training.
    rel_level : int
        Binary relevance threshold of binary measures (labels >= rel_level are relevant).
    significance : {"ttest", "wilcoxon", "sign"}
        Paired test of each row against the best (:func:`meta_eval.statistics.significance.classical_test`).
    lambdamart, softrank : mapping, optional
        Keyword arguments of :func:`~meta_eval.statistics.learning_to_rank.lambdamart.train_lambdamart` (e.g. ``params``,
        ``num_boost_round``) and :func:`~meta_eval.statistics.learning_to_rank.softrank.train_softrank` (e.g. ``model``, ``sigma``).
    jobs, scheduler
        Workers training the models, one (fold, algorithm, objective) each (:func:`meta_eval.core.parallel.parallel_map`:
        processes, or a Dask cluster; every trainer runs on one thread). The result does not depend on them.
    """
    import pandas as pd

    from meta_eval.core.parallel import parallel_map

    unknown = [a for a in algorithms if a not in ALGORITHMS]
    if unknown or not algorithms:
        raise InputError(f"unknown algorithm(s) {unknown}; choose from {', '.join(ALGORITHMS)}")
    objectives, tests = resolve(train_for), resolve(test)
    if not objectives or not tests:
        raise InputError("name at least one objective (--train-for) and one test measure (--test)")
    if "softrank" in algorithms:
        from meta_eval.statistics.learning_to_rank.softrank import smooth_form

        for m in objectives:
            smooth_form(m)
    source = data if data is not None and not isinstance(data, (str, Path)) else None
    folds = list(source) if source is not None else load_folds(data or demo_ltr_data(), k=k, seed=seed,
                                                               max_folds=max_folds)
    max_label = max(f.max_label for f in folds)
    models = [(f, algorithm, o) for f in range(len(folds)) for algorithm in algorithms for o in range(len(objectives))]
    # the workers rebuild the objectives from their specifications (a measure object need not pickle)
    predictions = parallel_map(_train_task, models, common=dict(
        folds=folds, train_for=list(train_for), seed=seed, rel_level=rel_level, max_label=max_label,
        lambdamart=lambdamart, softrank=softrank), jobs=jobs, scheduler=scheduler, desc="ltr: training",
        unit="model", progress=progress)
    scored_by_fold = [_scored_queries(fold, rel_level) for fold in folds]
    records = []
    for (f, algorithm, o), scores in zip(models, predictions):
        fold, scored = folds[f], scored_by_fold[f]
        r = ranked_rankings(scores, fold.test.y, fold.test.bounds, max_label, rel_level)
        for measure in tests:
            records.append(pd.DataFrame({
                "algorithm": algorithm, "trained_for": objectives[o].output_name, "fold": fold.name,
                "query": fold.test.queries[scored], "test_measure": measure.output_name,
                "value": measure(r)[scored]}))
    skipped = sum(int((~scored).sum()) for scored in scored_by_fold)
    n_test = sum(int(scored.sum()) for scored in scored_by_fold)
    per_query = pd.concat(records, ignore_index=True)
    table = _significance(per_query, significance)
    settings = {"data": str(data) if source is None else "<folds>", "folds": len(folds),
                "fold_names": [f.name for f in folds], "algorithms": list(algorithms),
                "train_for": [m.output_name for m in objectives], "significance": significance,
                "test_measures": [m.output_name for m in tests], "seed": seed, "rel_level": rel_level,
                "max_label": max_label, "n_test_queries": n_test, "skipped_queries": skipped,
                "lambdamart": dict(lambdamart or {}), "softrank": dict(softrank or {})}
    return LTRResult(table, per_query, skipped, settings)


def _scored_queries(fold: Fold, rel_level: int) -> np.ndarray:
    """Test queries with at least one document labelled >= max(1, rel_level)."""
    relevant = fold.test.y >= max(1, rel_level)
    return np.add.reduceat(relevant.astype(np.int64), fold.test.bounds[:-1]) > 0 if len(relevant) else np.zeros(0, bool)


def _train_task(model: tuple[int, str, int], *, folds, train_for, seed, rel_level, max_label, lambdamart,
                softrank) -> np.ndarray:
    """Train one (fold, algorithm, objective index) model and score its fold's test documents (a worker's task)."""
    f, algorithm, o = model
    objective = resolve(train_for)[o]
    return _train_and_predict(folds[f], algorithm, objective, seed, rel_level, max_label, lambdamart, softrank)


def _train_and_predict(fold, algorithm, objective, seed, rel_level, max_label, lambdamart, softrank):
    if algorithm == "lambdamart":
        from meta_eval.statistics.learning_to_rank.lambdamart import train_lambdamart

        booster = train_lambdamart(fold, objective, seed=seed, rel_level=rel_level, max_label=max_label,
                                   **dict(lambdamart or {}))
        return booster.predict(fold.test.X, num_iteration=booster.best_iteration or None)
    from meta_eval.statistics.learning_to_rank.softrank import train_softrank

    model = train_softrank(fold, objective, seed=seed, rel_level=rel_level, max_label=max_label,
                           **dict(softrank or {}))
    return model.predict(fold.test.X)


def _significance(per_query, test: str):
    """Mean, SEM and the paired p-value of every row against the best row of its (algorithm, test measure)."""
    import pandas as pd

    from meta_eval.statistics.significance.classical import classical_test

    rows = []
    for (algorithm, measure), part in per_query.groupby(["algorithm", "test_measure"], sort=False):
        wide = part.pivot_table(index="trained_for", columns=["fold", "query"], values="value", sort=False)
        x = wide.to_numpy()
        means = x.mean(1)
        best = int(np.argmax(means))
        p = np.full(len(x), np.nan)
        if len(x) > 1:
            result = classical_test(x, [str(s) for s in wide.index], test=test)
            for a, b, asl in zip(result.pair_a, result.pair_b, result.asl):
                if best in (a, b):
                    p[b if a == best else a] = asl
        sem = x.std(1, ddof=1) / np.sqrt(x.shape[1]) if x.shape[1] > 1 else np.full(len(x), np.nan)
        for i, trained in enumerate(wide.index):
            rows.append({"algorithm": algorithm, "trained_for": trained, "test_measure": measure,
                         "mean": means[i], "sem": sem[i], "p_value": p[i], "best": i == best})
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)


def ltr_stage_table(result: LTRResult, informativeness: Mapping[str, float] | None = None):
    """Effectiveness when trained for a metric, beside that metric's informativeness (the study's LTR stage).

    One row per (algorithm, trained-for metric): the mean test score on every test measure and, when
    ``informativeness`` maps metric names to a value (e.g. the MEM study's mean RMS error or information score),
    that value in column ``informativeness``. The GAP paper's claim is that the more informative metric is the
    better objective; the table puts the two side by side without asserting it.
    """
    t = result.table
    wide = t.pivot_table(index=["algorithm", "trained_for"], columns="test_measure", values="mean", sort=False)
    wide.columns = [f"test {c}" for c in wide.columns]
    wide = wide.reset_index()
    if informativeness is not None:
        wide.insert(2, "informativeness", wide["trained_for"].map(lambda m: informativeness.get(m, np.nan)))
    return wide
