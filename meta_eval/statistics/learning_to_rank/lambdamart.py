"""LambdaMART for any metric: LightGBM's booster with a custom objective whose lambdas are RankNet gradients scaled
by |ΔM|, the change of the metric M when two documents swap (Burges et al. 2006; Wu et al. 2010; the GAP paper's
"LambdaRank-GAP" is M = GAP).

The lambda and hessian of a pair follow LightGBM's built-in ``lambdarank`` (``src/objective/rank_objective.hpp``)
term for term, with its ΔNDCG replaced by |ΔM| (:mod:`meta_eval.statistics.learning_to_rank.swap_deltas`):

- documents sorted by score (stable: ties keep file order); pairs (i, j) of sorted positions with i <
  ``lambdarank_truncation_level`` and different labels; "high" is the better-labelled document;
- ρ = 1 / (1 + exp(σ (s_high − s_low))), read from LightGBM's 2^20-bin table over [−25/σ, 25/σ] (reproduced);
- with ``lambdarank_norm``: |ΔM| / (0.01 + |s_high − s_low|) (when the query's scores are not all equal) and, per
  query, every lambda and hessian times log2(1 + Σ) / Σ, Σ = Σ_pairs 2 σ ρ |ΔM|;
- λ_high −= σ ρ |ΔM|, λ_low += σ ρ |ΔM|, both hessians += σ² ρ (1 − ρ) |ΔM|.

Queries whose labels are all equal (e.g. no relevant document) have no pair and get zero gradients, as in
LightGBM. With M = ``nDCG(gain=exp)`` (LightGBM's default ``label_gain`` 2^l − 1) and a truncation level at least
the longest query, ΔM equals LightGBM's ΔNDCG (whose ideal DCG is cut at the truncation level) and the boosters
agree: same split features, predictions equal to ~1e-7 (LightGBM adds lambdas in float32, we add in float64 and
round once), on the demo set and the MSLR sample (``tests/test_ltr_lambdamart.py``). At a shorter truncation
level LightGBM's ΔNDCG is not the swap delta of any nDCG (full-list ΔDCG over the ideal DCG@level); passing that
normaliser through ``deltas`` reproduces it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from meta_eval.core.errors import InputError
from meta_eval.inputs.letor import Fold, LTRSet
from meta_eval.statistics.learning_to_rank.swap_deltas import pair_deltas
from meta_eval.statistics.learning_to_rank.groups import blocks, query_counts, ranked_rankings
from meta_eval.measures.resolver import resolve_one
from meta_eval.model.rankings import PAD

__all__ = ["DEFAULT_PARAMS", "MetricObjective", "lightgbm_sigmoid", "train_lambdamart"]

#: LightGBM parameters of the experiment (LightGBM's own defaults for everything not named here).
DEFAULT_PARAMS = {
    "learning_rate": 0.05,
    "num_leaves": 31,
    "min_data_in_leaf": 20,
    "deterministic": True,
    "force_row_wise": True,
    "verbosity": -1,
    # Keep every feature: the pre-filter drops those no split could use at min_data_in_leaf, and with all dropped
    # (a small fold) LightGBM stops ("num_features() > 0") instead of training a model without splits. The trees
    # are the same either way: a dropped feature is never split on.
    "feature_pre_filter": False,
    # One thread: on LTR sets of this size OpenMP's busy-waiting costs more than it saves, and on a shared
    # 2-core machine it made a boosting round 13x slower (measured); pass num_threads for large sets.
    "num_threads": 1,
}

_BINS = 1024 * 1024
_FLOAT32_001 = float(np.float32(0.01))  # LightGBM writes 0.01f, promoted to double


def lightgbm_sigmoid(x: np.ndarray, sigmoid: float = 1.0) -> np.ndarray:
    """LightGBM's tabulated 1 / (1 + exp(σ x)): the value at the left edge of x's bin, 2^20 bins over
    [−25/σ, 25/σ]."""
    lo = -50.0 / sigmoid / 2.0
    factor = _BINS / (-lo - lo)
    x = np.asarray(x, dtype=np.float64)
    idx = np.clip(np.floor((np.clip(x, lo, -lo) - lo) * factor), 0, _BINS - 1)
    return 1.0 / (1.0 + np.exp((idx / factor + lo) * sigmoid))


@dataclass(eq=False)
class MetricObjective:
    """A LightGBM custom objective ``(preds, dataset) -> (grad, hess)`` training for ``measure``.

    Parameters
    ----------
    measure : str or Measure
        Any measure meta-eval can score (closed-form swap deltas for nDCG, AP, GAP; batched scoring otherwise).
    data : LTRSet
        The training set (its query boundaries and labels).
    max_label : int
        Grade scale 0..max_label (GAP's default g is uniform over 1..max_label).
    rel_level : int
        Binary relevance threshold of binary measures.
    sigmoid, norm, truncation_level
        LightGBM's ``sigmoid``, ``lambdarank_norm`` and ``lambdarank_truncation_level`` (same defaults).
    deltas : callable, optional
        ``(grades, counts, top) -> (B, top, n)`` replacing :func:`~meta_eval.statistics.learning_to_rank.swap_deltas.pair_deltas` (e.g.
        LightGBM's own ΔNDCG, whose ideal DCG is cut at the truncation level, in the tests).
    """

    measure: object
    data: LTRSet
    max_label: int
    rel_level: int = 1
    sigmoid: float = 1.0
    norm: bool = True
    truncation_level: int = 30
    deltas: Callable | None = None

    def __post_init__(self) -> None:
        self.measure = resolve_one(self.measure)
        if self.sigmoid <= 0:
            raise InputError(f"sigmoid must be > 0, got {self.sigmoid}")
        if self.truncation_level < 1:
            raise InputError(f"truncation_level must be >= 1, got {self.truncation_level}")
        self._blocks = blocks(self.data.bounds)
        counts = query_counts(self.data.y, self.data.bounds, self.max_label)
        self._counts = [counts[b.queries] for b in self._blocks]
        self._labels = [np.where(b.valid, self.data.y[b.rows], PAD).astype(np.int16) for b in self._blocks]

    def __call__(self, preds: np.ndarray, dataset=None) -> tuple[np.ndarray, np.ndarray]:
        return self.gradients(preds)

    def gradients(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lambdas (gradients) and hessians of every training row for the current ``scores``."""
        scores = np.asarray(scores, dtype=np.float64)
        grad = np.zeros(len(scores))
        hess = np.zeros(len(scores))
        for block, labels, counts in zip(self._blocks, self._labels, self._counts):
            g, h, order = self._block(scores, block, labels, counts)
            rows = np.take_along_axis(block.rows, order, axis=1)
            valid = np.take_along_axis(block.valid, order, axis=1)
            grad[rows[valid]] = g[valid]
            hess[rows[valid]] = h[valid]
        return grad, hess

    def _block(self, scores, block, labels, counts):
        """Lambdas of one block, by sorted position: pairs (i, j), i < j, i < truncation level, as (B, top, n)."""
        s = np.where(block.valid, scores[block.rows], -np.inf)
        order = np.argsort(-s, axis=1, kind="stable")
        s = np.take_along_axis(s, order, axis=1)
        lab = np.take_along_axis(labels, order, axis=1)
        n = s.shape[1]
        top = min(self.truncation_level, n)
        if self.deltas is not None:
            delta = np.abs(self.deltas(lab, counts, top))
        else:
            delta = np.abs(pair_deltas(self.measure, lab, counts, self.rel_level, top=top))
        valid = lab >= 0
        s = np.where(valid, s, 0.0)
        pair = (valid[:, :top, None] & valid[:, None, :] & (lab[:, :top, None] != lab[:, None, :])
                & (np.arange(top)[:, None] < np.arange(n)[None, :]))
        sign = np.where(lab[:, :top, None] > lab[:, None, :], 1.0, -1.0)  # +1: the upper document is "high"
        ds = np.where(pair, sign * (s[:, :top, None] - s[:, None, :]), 0.0)  # s_high − s_low
        if self.norm:
            worst = s[np.arange(len(s)), np.maximum(valid.sum(1) - 1, 0)]
            spread = (s[:, 0] != worst)[:, None, None]
            delta = np.where(spread, delta / (_FLOAT32_001 + np.abs(ds)), delta)
        rho = lightgbm_sigmoid(ds, self.sigmoid)
        lam = np.where(pair, rho * (-self.sigmoid * delta), 0.0)  # λ of the high document (<= 0)
        hes = np.where(pair, rho * (1.0 - rho) * self.sigmoid**2 * delta, 0.0)
        signed = sign * lam
        g = -signed.sum(1)
        g[:, :top] += signed.sum(2)
        h = hes.sum(1)
        h[:, :top] += hes.sum(2)
        if self.norm:
            total = -2.0 * lam.sum((1, 2))  # Σ_pairs 2 σ ρ |ΔM|
            factor = np.where(total > 0, np.log2(1.0 + total) / np.where(total > 0, total, 1.0), 1.0)
            g, h = g * factor[:, None], h * factor[:, None]
        return g, h, order

    def evaluator(self, data: LTRSet, name: str | None = None):
        """A LightGBM ``feval`` scoring ``data`` with the trained-for measure (early stopping on validation)."""
        label = name or self.measure.output_name

        def feval(preds, dataset):
            r = ranked_rankings(preds, data.y, data.bounds, self.max_label, self.rel_level)
            return label, float(np.mean(self.measure(r))), True

        return feval


def train_lambdamart(fold: Fold, measure, *, params: dict | None = None, num_boost_round: int = 500,
                     early_stopping_rounds: int | None = 50, seed: int = 0, rel_level: int = 1,
                     max_label: int | None = None):
    """Train a LambdaMART model for ``measure`` on ``fold.train``, stopping early on ``fold.vali``.

    Early stopping watches the trained-for measure on the validation queries (the model is selected by the
    metric it is trained for); the booster keeps the best iteration (``booster.best_iteration``).

    Parameters
    ----------
    params : dict, optional
        LightGBM parameters over :data:`DEFAULT_PARAMS`; ``sigmoid``, ``lambdarank_norm`` and
        ``lambdarank_truncation_level`` set the objective as they set LightGBM's ``lambdarank``.
    """
    try:
        import lightgbm as lgb
    except ImportError:  # pragma: no cover - depends on the installation
        raise InputError('LambdaMART needs LightGBM: pip install "meta-eval[ltr]"') from None

    params = {**DEFAULT_PARAMS, **(params or {}), "seed": seed, "metric": "None"}
    max_label = fold.max_label if max_label is None else max_label
    objective = MetricObjective(measure, fold.train, max_label, rel_level,
                                sigmoid=float(params.pop("sigmoid", 1.0)),
                                norm=bool(params.pop("lambdarank_norm", True)),
                                truncation_level=int(params.pop("lambdarank_truncation_level", 30)))
    params["objective"] = objective
    train = lgb.Dataset(fold.train.X, fold.train.y, group=fold.train.sizes, free_raw_data=False)
    vali = lgb.Dataset(fold.vali.X, fold.vali.y, group=fold.vali.sizes, reference=train)
    callbacks = []
    if early_stopping_rounds:
        callbacks.append(lgb.early_stopping(early_stopping_rounds, first_metric_only=True, verbose=False))
    return lgb.train(params, train, num_boost_round=num_boost_round, valid_sets=[vali], valid_names=["vali"],
                     feval=objective.evaluator(fold.vali), callbacks=callbacks)
