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

__all__ = ["ALGORITHMS", "LTRResult", "check_features", "ltr_stage_table", "run_ltr"]

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
    check_features(folds, algorithms, lambdamart)
    scored_by_fold = [_scored_queries(fold, rel_level) for fold in folds]
    if not any(scored.any() for scored in scored_by_fold):  # nothing to score: an empty table, or a traceback
        raise InputError(f"no test query has a relevant document (label >= {rel_level}): every test metric is "
                         "undefined; check the labels (or --rel-level)")
    max_label = max(f.max_label for f in folds)
    models = [(f, algorithm, o) for f in range(len(folds)) for algorithm in algorithms for o in range(len(objectives))]
    # the workers rebuild the objectives from their specifications (a measure object need not pickle)
    predictions = parallel_map(_train_task, models, common=dict(
        folds=folds, train_for=list(train_for), seed=seed, rel_level=rel_level, max_label=max_label,
        lambdamart=lambdamart, softrank=softrank), jobs=jobs, scheduler=scheduler, desc="ltr: training",
        unit="model", progress=progress)
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


#: LightGBM's memory per feature column of a data set, whether the column holds values or not (measured about
#: 0.8 kB a column from 10^5 to 4·10^6 columns, LightGBM 4); the number of columns is the highest feature index.
LIGHTGBM_BYTES_PER_FEATURE = 1024


def check_features(folds: Sequence[Fold], algorithms: Sequence[str], lambdamart: Mapping | None = None) -> None:
    """Refuse, before any model is built, what the learners cannot train on, and say what they can only train on
    to no effect.

    * The memory the feature columns need: LETOR numbers features 1..N and N is the highest index in the files
      (``2000000000:0.5`` declares two billion columns: LightGBM died of ``std::bad_alloc``); LightGBM takes
      :data:`LIGHTGBM_BYTES_PER_FEATURE` per column, SoftRank a dense copy of the training documents (three
      arrays of 8-byte numbers: the features, their standardised form, the network's input).
    * A fold whose training documents vary in no feature (none given, or each constant): a ranker has nothing to
      learn from (LightGBM stopped with "Check failed: num_features() > 0").
    * A LambdaMART training set smaller than twice ``min_data_in_leaf`` cannot be split: its model scores every
      document alike (trained, with a warning; LightGBM's feature pre-filter made it the same failure).

    Raises
    ------
    InputError
        The memory estimate exceeds what is available (:func:`meta_eval.core.memory_budget.require`), or a fold's
        training documents vary in no feature.
    """
    import warnings

    from meta_eval.core.errors import MetaEvalWarning
    from meta_eval.core.memory_budget import require

    width = max(f.train.X.shape[1] for f in folds)
    rows = max(f.train.X.shape[0] for f in folds)
    need = (LIGHTGBM_BYTES_PER_FEATURE * float(width) if "lambdamart" in algorithms else 0.0) + \
        (3 * 8 * float(rows) * width if "softrank" in algorithms else 0.0)
    require(need, f"learning to rank on {width:,} feature columns (LETOR numbers features 1..N, N the highest "
                  f"feature index in the files) and up to {rows:,} training documents", "the feature indices")
    from meta_eval.statistics.learning_to_rank.lambdamart import DEFAULT_PARAMS

    min_leaf = int({**DEFAULT_PARAMS, **dict((lambdamart or {}).get("params") or {})}.get("min_data_in_leaf", 20))
    for fold in folds:
        if not _any_feature_varies(fold.train.X):
            raise InputError(f"no feature varies across the {fold.train.X.shape[0]:,} training documents of "
                             f"{fold.name} (each is absent or constant): a ranker has nothing to learn from",
                             fold.train.source)
    small = [f for f in folds if f.train.X.shape[0] < 2 * min_leaf] if "lambdamart" in algorithms else []
    if small:
        warnings.warn(f"LambdaMART on {', '.join(f.name for f in small)}: fewer training documents "
                      f"({min(f.train.X.shape[0] for f in small)} at least) than twice min_data_in_leaf = {min_leaf}: "
                      "no tree can split, the models score every document alike", MetaEvalWarning, stacklevel=3)


def _any_feature_varies(X) -> bool:
    """Whether some column of a sparse matrix takes two different values (an absent entry is 0). Computed on the
    stored entries only: a column-wise reduction would allocate one number per column, billions for a wide file."""
    coo = X.tocoo()
    nonzero = coo.data != 0
    cols, values = coo.col[nonzero], coo.data[nonzero]
    if cols.size == 0:
        return False
    order = np.lexsort((values, cols))
    cols, values = cols[order], values[order]
    starts = np.flatnonzero(np.r_[True, cols[1:] != cols[:-1]])
    counts = np.diff(np.r_[starts, cols.size])
    ends = np.r_[starts[1:], cols.size] - 1
    return bool(np.any((counts < X.shape[0]) | (values[starts] != values[ends])))


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
