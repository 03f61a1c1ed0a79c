"""Discriminative power of several metrics under several tests in one call, with one shared replicate matrix."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from meta_eval.statistics.significance.pairs import PairwiseTest, check_alpha, check_resamples, check_scores
from meta_eval.statistics.significance.bootstrap import paired_bootstrap, unpaired_bootstrap
from meta_eval.statistics.significance.classical import CORRECTIONS, TESTS, classical_test
from meta_eval.statistics.best_systems import select_systems, select_topics
from meta_eval.statistics.significance.tukey import tukey_hsd
from meta_eval.core.errors import InputError
from meta_eval.core.resampling import bootstrap_indices

METHODS = (
    "bootstrap",
    "unpaired-bootstrap",
    "tukey",
    *TESTS,
    *(f"{t}-{c}" for t in TESTS for c in CORRECTIONS),
)
#: Default number of replicates per randomised method (Sakai 2006; MATTERS).
DEFAULT_RESAMPLES = {"bootstrap": 1000, "unpaired-bootstrap": 1000, "tukey": 5000}


@dataclass(frozen=True, eq=False)
class PairTests:
    """The tests of every system pair under each metric and method (result of :func:`discriminative_power`).

    Attributes
    ----------
    tests : dict
        ``(metric, method) -> PairwiseTest``, in the order metrics x methods.
    alpha : float
    """

    tests: dict[tuple[str, str], PairwiseTest]
    alpha: float

    def summary(self) -> pd.DataFrame:
        """One row per (metric, method): ``metric, method, pairs, significant, proportion, diff_required``."""
        rows = [
            {
                "metric": metric,
                "method": method,
                "pairs": t.n_pairs,
                "significant": t.n_significant(),
                "proportion": t.proportion(),
                "diff_required": t.diff_required,
            }
            for (metric, method), t in self.tests.items()
        ]
        return pd.DataFrame(rows, columns=["metric", "method", "pairs", "significant", "proportion", "diff_required"])

    def asl_table(self) -> pd.DataFrame:
        """One row per (metric, method, pair): ``metric, method, system_a, system_b, asl``."""
        frames = []
        for (metric, method), t in self.tests.items():
            f = t.to_frame()[["system_a", "system_b", "asl"]]
            f.insert(0, "method", method)
            f.insert(0, "metric", metric)
            frames.append(f)
        return pd.concat(frames, ignore_index=True)

    def curves(self) -> pd.DataFrame:
        """ASL curves in long form: ``metric, method, rank`` (1..P, pairs sorted by ASL), ``asl``."""
        frames = [
            pd.DataFrame(
                {"metric": metric, "method": method, "rank": np.arange(1, t.n_pairs + 1), "asl": t.asl_curve()}
            )
            for (metric, method), t in self.tests.items()
        ]
        return pd.concat(frames, ignore_index=True)


def discriminative_power(
    scores: np.ndarray | Mapping[str, np.ndarray],
    systems: Sequence[str] | None = None,
    *,
    methods: str | Sequence[str] = ("bootstrap",),
    alpha: float = 0.05,
    n_resamples: int | None = None,
    seed: int | None = 0,
    subset: Sequence[str] | None = None,
    topics=None,
    progress: bool = False,
    jobs: int | None = 1,
    scheduler: str | None = None,
) -> PairTests:
    """Test every pair of systems under each metric and method, and count the pairs told apart.

    Parameters
    ----------
    scores : ndarray (S, T) or mapping metric name -> ndarray (S, T)
        Per-topic scores; a bare array is named ``metric``. All matrices must share systems and topics.
    systems : sequence of str, optional
        The S system names (default ``s0..``).
    methods : str or sequence of str
        Any of ``bootstrap`` (paired, Sakai 2006), ``unpaired-bootstrap``, ``tukey`` (randomised Tukey HSD),
        ``ttest``, ``wilcoxon``, ``sign`` and their ``-holm`` / ``-bh`` corrected forms.
    alpha : float
        Significance level (default 0.05): pairs with ASL < alpha count as discriminated.
    n_resamples : int, optional
        B for the randomised methods (default 1000 for the bootstraps, 5000 for Tukey HSD).
    seed : int or None
        One seed for everything: every metric uses the same bootstrap replicate matrix and the same Tukey
        permutations, so the comparisons across metrics are paired.
    subset : sequence of str, optional
        Run on these systems only (e.g. :func:`~meta_eval.statistics.best_systems.best_systems`).
    topics : array of int or bool mask, optional
        Run on these topics only (positions into the T columns).
    progress : bool
        Show progress (:func:`meta_eval.core.progress.progress`).
    jobs, scheduler
        Run the (metric, method) tests in parallel through :func:`meta_eval.core.parallel.parallel_map`: ``jobs``
        worker processes (default 1: this process; None: every core), or a Dask cluster (``scheduler="local"`` or
        ``"tcp://HOST:PORT"``). Every test uses the same replicates whatever the engine, so the numbers do not
        change.

    Returns
    -------
    PairTests
        ``.summary()``, ``.asl_table()``, ``.curves()`` and ``.tests[(metric, method)]``.
    """
    alpha = check_alpha(alpha)
    by_metric = dict(scores) if isinstance(scores, Mapping) else {"metric": scores}
    if not by_metric:
        raise InputError("no metric scores given")
    method_list = [methods] if isinstance(methods, str) else list(methods)
    unknown = [m for m in method_list if m not in METHODS]
    if unknown or not method_list:
        raise InputError(f"unknown method(s) {unknown}; expected some of {METHODS}")
    if n_resamples is not None:
        check_resamples(n_resamples)
    prepared = {}
    shape = None
    for name, mat in by_metric.items():
        x, names = check_scores(mat, systems)
        if shape is not None and x.shape != shape:
            raise InputError(f"metric {name!r} has scores of shape {x.shape}; the others have {shape}")
        shape = x.shape
        if subset is not None:
            x, names = select_systems(x, names, subset)
        if topics is not None:
            x = select_topics(x, topics)
        prepared[name] = check_scores(x, names)
    n_top = next(iter(prepared.values()))[0].shape[1]
    replicates = {}

    def indices_for(method: str) -> np.ndarray:
        b = n_resamples or DEFAULT_RESAMPLES[method]
        cols = 2 * b if method == "unpaired-bootstrap" else b
        if cols not in replicates:
            replicates[cols] = bootstrap_indices(n_top, cols, seed)
        return replicates[cols]

    from meta_eval.core.parallel import parallel_map

    keys = [(name, method) for name in prepared for method in method_list]
    indices = {method: indices_for(method) for method in method_list if method.endswith("bootstrap")}
    # Each (metric, method) test is a task; the scores and the shared replicate matrices go to each worker once.
    results = parallel_map(_one_test, keys, common=dict(prepared=prepared, indices=indices, alpha=alpha,
                                                         n_resamples=n_resamples, seed=seed),
                           jobs=jobs if len(keys) > 1 else 1, scheduler=scheduler, desc="discriminative power",
                           unit="test", progress=progress)
    tests: dict[tuple[str, str], PairwiseTest] = dict(zip(keys, results))
    return PairTests(tests=tests, alpha=alpha)


def _one_test(key: tuple[str, str], *, prepared, indices, alpha, n_resamples, seed) -> PairwiseTest:
    """One metric under one method (a task of :func:`discriminative_power`)."""
    name, method = key
    x, names = prepared[name]
    if method == "bootstrap":
        return paired_bootstrap(x, names, indices=indices[method], alpha=alpha)
    if method == "unpaired-bootstrap":
        return unpaired_bootstrap(x, names, indices=indices[method], alpha=alpha)
    if method == "tukey":
        return tukey_hsd(x, names, n_resamples=n_resamples or DEFAULT_RESAMPLES["tukey"], seed=seed, alpha=alpha)
    test, _, corr = method.partition("-")
    return classical_test(x, names, test=test, correction=corr or None, alpha=alpha)
