"""Two-way ANOVA of system and topic effects, ω² and system-pair effect sizes (Ferro & Silvello, JASIST 2018;
Sakai, *Laboratory Experiments in IR*, 2018).

Model, per metric, on the (S systems × T topics) score matrix without replication (one score per cell)::

    x_st = μ + α_s + β_t + ε_st

Sums of squares (vectorised over metrics; ``statsmodels`` ``anova_lm`` is the reference in the tests)::

    SS_system   = T Σ_s (x̄_s· − x̄)²          df = S − 1
    SS_topic    = S Σ_t (x̄_·t − x̄)²          df = T − 1
    SS_residual = Σ_st (x_st − x̄_s· − x̄_·t + x̄)²    df = (S − 1)(T − 1)
    F = (SS / df) / V_E,  V_E = SS_residual / df_residual,  p = P[F(df, df_residual) ≥ F]

Effect size of a factor: the partial omega squared of Olejnik & Algina (2003), as used by Ferro & Silvello::

    ω²⟨f⟩ = df_f (F_f − 1) / (df_f (F_f − 1) + S T)

(negative estimates, F < 1, are kept as computed). Zero variance, as the t-tests define it
(:func:`meta_eval.statistics.significance.pairs.abs_studentised`: a mean square at most 1e-10 of the squared magnitude of the
scores, which only floating-point rounding produces), is exactly zero: identical systems have SS_system = 0 (their
sums of squares of about 1e-32 gave F = 2.0 and ω² = 0.20); an effect with a non-zero sum of squares over a zero
residual has F = ∞, p = 0 and ω² = 1 (the limit); an effect and a residual both zero have F, p and ω² undefined
(NaN), and so has the effect size of a system pair. Effect size of a system pair (Sakai 2018, §5: the difference
standardised by the residual standard deviation of the two-way ANOVA): ES = (x̄_a − x̄_b) / √V_E; the paired
d_z = mean(d) / sd(d) is reported beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from meta_eval.statistics.significance.pairs import VAR_RTOL
from meta_eval.core.errors import InputError

EFFECTS = ("system", "topic", "residual")


def as_score_stack(scores, systems: Sequence[str] | None = None,
                   min_systems: int = 2, min_topics: int = 2) -> tuple[list[str], np.ndarray, list[str]]:
    """Metric names, an (M, S, T) float64 stack and system names from one (S, T) array or a mapping of them.

    Every value must be finite: these analyses compare metrics on the same complete matrix (a collection loaded
    with ``missing="skip"`` that has topics a run did not retrieve for must be scored with ``missing="zero"`` or
    restricted to complete runs first).
    """
    by_metric = dict(scores) if isinstance(scores, Mapping) else {"metric": scores}
    if not by_metric:
        raise InputError("no metric scores given")
    names = list(by_metric)
    try:
        stack = np.stack([np.asarray(by_metric[n], dtype=np.float64) for n in names])
    except ValueError as exc:
        shapes = {n: np.shape(by_metric[n]) for n in names}
        raise InputError(f"every metric needs a score matrix of the same shape; got {shapes}") from exc
    if stack.ndim != 3:
        raise InputError(f"scores must be (systems x topics) arrays; got shape {stack.shape[1:]}")
    _, n_sys, n_top = stack.shape
    if n_sys < min_systems or n_top < min_topics:
        raise InputError(f"need at least {min_systems} systems and {min_topics} topics; got {n_sys} x {n_top}")
    bad = ~np.isfinite(stack)
    if bad.any():
        m, s, t = np.argwhere(bad)[0]
        raise InputError(f"{int(bad.sum())} scores are not finite (first: metric {names[m]!r}, system {s}, topic "
                         f"{t}); score topics a run lacks as 0 (missing='zero') or leave such runs out")
    if systems is None:
        systems = [f"s{i}" for i in range(n_sys)]
    elif len(systems) != n_sys:
        raise InputError(f"got {len(systems)} system names for {n_sys} systems")
    return names, stack, list(systems)


@dataclass(frozen=True, eq=False)
class Anova:
    """Two-way ANOVA without replication of each metric (result of :func:`two_way_anova`).

    Attributes
    ----------
    table : DataFrame
        One row per (metric, effect): ``metric, effect`` (system, topic, residual), ``df, sum_sq, F, p_value,
        omega_sq`` (F, p and ω² are NaN on the residual row).
    residual_variance : dict
        V_E per metric: the within-system variance estimate of the two-way model (Sakai IRJ 2016).
    one_way_variance : dict
        V_E1 per metric: the residual variance of the one-way (system only) model, Σ_st (x_st − x̄_s)² / (S (T − 1)).
    systems : list of str
    """

    table: pd.DataFrame
    residual_variance: dict[str, float]
    one_way_variance: dict[str, float]
    systems: list[str]
    _stack: np.ndarray
    _metrics: list[str]

    def omega_sq(self, effect: str = "system") -> pd.Series:
        """ω² of one effect per metric."""
        rows = self.table[self.table["effect"] == effect]
        return pd.Series(rows["omega_sq"].to_numpy(), index=rows["metric"].to_numpy(), name=f"omega_sq_{effect}")

    def pairs(self) -> pd.DataFrame:
        """Effect sizes of every system pair (a < b) per metric: ``metric, system_a, system_b, difference``
        (x̄_a − x̄_b), ``effect_size`` (difference / √V_E, Sakai 2018) and ``d_z`` (paired mean / sd of the
        per-topic differences; NaN when the differences are constant)."""
        a, b = np.triu_indices(len(self.systems), 1)
        names = np.asarray(self.systems, dtype=object)
        frames = []
        for i, metric in enumerate(self._metrics):
            x = self._stack[i]
            d = x[a] - x[b]
            mean = d.mean(axis=1)
            sd = d.std(axis=1, ddof=1)
            ve = self.residual_variance[metric]
            with np.errstate(divide="ignore", invalid="ignore"):
                dz = np.where(sd > 0, mean / sd, np.nan)
                es = mean / np.sqrt(ve) if ve > 0 else np.full(mean.shape, np.nan)
            frames.append(pd.DataFrame({"metric": metric, "system_a": names[a], "system_b": names[b],
                                        "difference": mean, "effect_size": es, "d_z": dz}))
        return pd.concat(frames, ignore_index=True)


def two_way_anova(scores, systems: Sequence[str] | None = None) -> Anova:
    """Two-way ANOVA (system + topic, no interaction) of each metric's (S, T) score matrix; formulas in the
    module docstring.

    Parameters
    ----------
    scores : array (S, T) or mapping metric -> array (S, T)
        Complete score matrices (finite values), one per metric, all of the same shape.
    systems : sequence of str, optional

    Returns
    -------
    Anova

    Examples
    --------
    >>> res = two_way_anova({"AP": [[0.1, 0.3, 0.2], [0.4, 0.5, 0.6]]})
    >>> res.table[["effect", "df"]].to_numpy().tolist()
    [['system', 1], ['topic', 2], ['residual', 2]]
    """
    from scipy import stats

    metrics, x, systems = as_score_stack(scores, systems)
    _, n_sys, n_top = x.shape
    grand = x.mean(axis=(1, 2), keepdims=True)
    sys_mean = x.mean(axis=2, keepdims=True)
    top_mean = x.mean(axis=1, keepdims=True)
    ss_sys = n_top * ((sys_mean - grand) ** 2).sum(axis=(1, 2))
    ss_top = n_sys * ((top_mean - grand) ** 2).sum(axis=(1, 2))
    ss_res = ((x - sys_mean - top_mean + grand) ** 2).sum(axis=(1, 2))
    n_obs = n_sys * n_top
    # zero within rounding, as the t-tests' s.d. = 0 rule: a mean square below VAR_RTOL x (max |score|)^2
    floor = VAR_RTOL * np.abs(x).max(axis=(1, 2)) ** 2 * n_obs
    ss_sys, ss_top, ss_res = (np.where(ss <= floor, 0.0, ss) for ss in (ss_sys, ss_top, ss_res))
    df = np.array([n_sys - 1, n_top - 1, (n_sys - 1) * (n_top - 1)])
    ve = ss_res / df[2]
    f_sys, f_top = _f_ratio(ss_sys / df[0], ve), _f_ratio(ss_top / df[1], ve)
    rows = []
    for i, metric in enumerate(metrics):
        for effect, dfi, ss, f in (("system", df[0], ss_sys[i], f_sys[i]), ("topic", df[1], ss_top[i], f_top[i])):
            p = float(stats.f.sf(f, dfi, df[2])) if not np.isnan(f) else np.nan
            omega = 1.0 if f == np.inf else dfi * (f - 1) / (dfi * (f - 1) + n_obs)
            rows.append((metric, effect, int(dfi), float(ss), float(f), p, float(omega)))
        rows.append((metric, "residual", int(df[2]), float(ss_res[i]), np.nan, np.nan, np.nan))
    table = pd.DataFrame(rows, columns=["metric", "effect", "df", "sum_sq", "F", "p_value", "omega_sq"])
    one_way = (ss_top + ss_res) / (n_sys * (n_top - 1))
    return Anova(table, dict(zip(metrics, ve.tolist())), dict(zip(metrics, one_way.tolist())), systems, x, metrics)


def _f_ratio(effect_ms: np.ndarray, residual_ms: np.ndarray) -> np.ndarray:
    """F = MS_effect / MS_residual with zero variance made explicit: ∞ for a non-zero effect over a zero residual,
    NaN (undefined) for zero over zero."""
    with np.errstate(divide="ignore", invalid="ignore"):
        f = effect_ms / residual_ms
    return np.where(residual_ms == 0, np.where(effect_ms > 0, np.inf, np.nan), f)
