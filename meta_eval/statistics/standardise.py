"""Score standardisation per topic (Webber, Moffat & Zobel 2008; Urbano, Lima & Hanjalic 2019).

Each topic's scores are centred and scaled by the mean and standard deviation of the *reference* systems on that
topic, so that easy and hard topics weigh alike:

    z_st = (x_st - mean_t) / sd_t                      (method "z")
    u_st = Φ(z_st)                                     (method "cdf", the standard normal CDF: scores in (0, 1))

The per-topic means and s.d. are kept in a :class:`Standardisation`, which standardises new runs against the same
reference (a new system is then comparable with the reference systems, as Webber et al. intend).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from meta_eval.core.errors import InputError

METHODS = ("z", "cdf")


@dataclass(frozen=True, eq=False)
class Standardisation:
    """Per-topic reference of a standardisation (result of :func:`fit_standardisation`).

    Attributes
    ----------
    method : {"z", "cdf"}
    mean, sd : numpy.ndarray
        (T,) mean and standard deviation of the reference systems' scores on each topic.
    ddof : int
        Delta degrees of freedom of ``sd`` (1: the sample s.d., as R's ``sd`` in Urbano et al.'s code).
    topics : tuple of str or None
    """

    method: str
    mean: np.ndarray  # (..., T)
    sd: np.ndarray  # (..., T)
    ddof: int = 1
    topics: tuple[str, ...] | None = None

    @property
    def constant_topics(self) -> np.ndarray:
        """Indices of the topics on which every reference system scored the same (sd = 0): their standardised
        score is 0 (z) or 0.5 (cdf) for every run, since no run can be told from the reference mean there."""
        return np.flatnonzero(~(self.sd > 0))

    def __call__(self, scores) -> np.ndarray:
        """Standardise an (..., S', T) score array (any runs, the same topics) against this reference."""
        x = np.asarray(scores, dtype=np.float64)
        if x.ndim < 1 or x.shape[-1] != self.mean.shape[-1]:
            raise InputError(f"scores must have {self.mean.shape[-1]} topics (last axis); got shape {x.shape}")
        mean, sd = self.mean[..., None, :], self.sd[..., None, :]
        ok = sd > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(ok, (x - mean) / np.where(ok, sd, 1.0), 0.0)
        z = np.where(np.isnan(x), np.nan, z)
        if self.method == "z":
            return z
        from scipy.special import ndtr

        return ndtr(z)

    def to_frame(self) -> pd.DataFrame:
        """One row per topic: ``topic, mean, sd`` (the reference to standardise new runs with)."""
        if self.mean.ndim != 1:
            raise InputError("to_frame needs a single reference (mean of shape (T,))")
        topics = self.topics if self.topics is not None else range(len(self.mean))
        return pd.DataFrame({"topic": list(topics), "mean": self.mean, "sd": self.sd})


def check_method(method: str | None) -> str | None:
    """``None`` (no standardisation), ``"z"`` or ``"cdf"``."""
    if method is not None and method not in METHODS:
        raise InputError(f"standardise must be one of {METHODS} or None; got {method!r}")
    return method


def fit_standardisation(scores, method: str = "z", *, ddof: int = 1,
                        topics: Sequence[str] | None = None) -> Standardisation:
    """The per-topic reference (mean and s.d. over the systems) of an (S, T) score array.

    Parameters
    ----------
    scores : array_like, shape (..., S, T)
        Scores of the reference systems (leading axes: independent references, e.g. resampled qrels); NaN (a
        topic a run did not retrieve for, ``missing="skip"``) are left out of that topic's mean and s.d.
    method : {"z", "cdf"}
        z-scores, or their standard normal CDF (Webber et al. 2008 map z through Φ to get scores in (0, 1)).
    ddof : int
        s.d. divisor S - ddof (default 1, the sample s.d.).
    topics : sequence of str, optional

    Raises
    ------
    InputError
        Not a 2-D array, fewer than ``ddof + 1`` systems with a score on some topic, or an unknown method.
    """
    method = check_method(method)
    if method is None:
        raise InputError("fit_standardisation needs a method ('z' or 'cdf')")
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim < 2:
        raise InputError(f"scores must be a (systems x topics) array; got shape {x.shape}")
    counts = np.sum(~np.isnan(x), axis=-2)
    if counts.size and counts.min() <= ddof:
        t = int(np.unravel_index(np.argmin(counts), counts.shape)[-1])
        raise InputError(f"topic {topics[t] if topics else t} has {counts.min()} scored systems; standardisation "
                         f"needs more than ddof={ddof}")
    with np.errstate(invalid="ignore"):
        mean = np.nanmean(x, axis=-2) if x.size else np.zeros(x.shape[:-2] + x.shape[-1:])
        sd = np.nanstd(x, axis=-2, ddof=ddof) if x.size else np.zeros(x.shape[:-2] + x.shape[-1:])
    if topics is not None and len(topics) != x.shape[-1]:
        raise InputError(f"got {len(topics)} topic names for {x.shape[-1]} topics")
    return Standardisation(method, mean, sd, int(ddof), tuple(topics) if topics is not None else None)


def standardise(scores, method: str = "z", *, ddof: int = 1) -> tuple[np.ndarray, Standardisation]:
    """Standardise an (S, T) score array against itself: the standardised array and its reference.

    Examples
    --------
    >>> z, ref = standardise([[0.2, 0.9], [0.4, 0.5]])
    >>> z.round(4).tolist()
    [[-0.7071, 0.7071], [0.7071, -0.7071]]
    """
    ref = fit_standardisation(scores, method, ddof=ddof)
    return ref(scores), ref


def describe(method: str | None, analyses: str = "discriminative power, split-half stability, ANOVA, correlation, "
             "incomplete judgments and reusability") -> str:
    """The sentence a report gives a standardisation (empty for raw scores): the formula, its sources and the
    analyses it feeds."""
    if check_method(method) is None:
        return ""
    how = ("z-scores: (score − topic mean) / topic s.d." if method == "z"
           else "normal-CDF standardised scores: Φ((score − topic mean) / topic s.d.)")
    return (f"Scores standardised per topic over the systems ({how}; Webber, Moffat & Zobel 2008; Urbano, Lima & "
            f"Hanjalic 2019) before {analyses}.")


def note(method: str | None) -> str:
    """The sentence a method text gives a standardisation, with a leading space (empty for raw scores)."""
    if check_method(method) is None:
        return ""
    how = "z-scores" if method == "z" else "normal-CDF standardised scores (Φ of the z-scores)"
    return f" Scores are per-topic {how} over the systems (Webber, Moffat & Zobel 2008; Urbano et al. 2019)."


def standardise_all(scores: Mapping[str, np.ndarray], method: str | None, *,
                    ddof: int = 1) -> dict[str, np.ndarray]:
    """Standardise every metric's (S, T) array against itself; ``method=None`` returns the scores unchanged.

    This is how an analysis applies the ``--standardise`` option to its inputs.
    """
    if check_method(method) is None:
        return dict(scores)
    return {name: standardise(x, method, ddof=ddof)[0] for name, x in scores.items()}
