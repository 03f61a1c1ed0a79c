"""A newly found relevant document (Kishida 2005, §3.2, Eq. 15–17, Table 1).

When a relevant document that the pool missed is found at rank j, R becomes R + 1 and AP changes by (Eq. 16)

    Δ̃v(j) = (1/(R+1)) ( (1/j) Σ_{k<=j} x_k + Σ_{t=j+1..n} x_t / t ) − v/(R+1),

x_j = 1 in the first sum and v the AP before the discovery. When no relevant document lies below j the first sum
is R + 1 and the second 0, so (Eq. 17) Δ̃v(j) = 1/j − v/(R+1): negative when v·j > R + 1 (the report prints
"v_j > R + 1", a typesetting slip for the product v·j).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from meta_eval.core.errors import InputError
from meta_eval.measures import get_measure
from meta_eval.model.rankings import Rankings

__all__ = ["new_relevant_change", "new_relevant_simple", "new_relevant_table"]


def new_relevant_change(rankings: Rankings) -> np.ndarray:
    """Kishida Eq. 16 at every rank j, in closed form: ``(..., D)``, NaN where rank j is already relevant or past
    the list. Equals ``metric_increment("AP", rankings, count="add")`` (tested)."""
    R = rankings.num_rel().astype(np.float64)[..., None]
    v = get_measure("AP")(rankings)[..., None]
    r = rankings
    rel = r.relevant()
    cum_before = r.cum_relevant() - rel
    below = np.cumsum((rel / r.ranks)[..., ::-1], axis=-1)[..., ::-1] - rel / r.ranks
    bracket = (cum_before + 1) / r.ranks + below
    out = (bracket - v) / (R + 1)
    return np.where(~rel & r.valid(), out, np.nan)


def new_relevant_simple(j, R, v) -> np.ndarray:
    """Kishida Eq. 17: Δ̃v(j) = 1/j − v/(R + 1), valid when no relevant document lies below rank j.

    All arguments broadcast (j >= 1, R >= 0, 0 <= v <= 1).
    """
    j, R, v = (np.asarray(a, dtype=np.float64) for a in (j, R, v))
    if np.any(j < 1) or np.any(R < 0) or np.any((v < 0) | (v > 1)):
        raise InputError("expected j >= 1, R >= 0 and 0 <= v <= 1")
    return 1.0 / j - v / (R + 1.0)


def new_relevant_table(j: int = 101, R: Sequence[int] = (10, 50, 100),
                       v: Sequence[float] = (0.1, 0.3, 0.5)) -> pd.DataFrame:
    """Kishida's Table 1: Eq. 17 for each R (rows) and original AP v (columns), at rank j."""
    R_arr = np.asarray(R)[:, None]
    values = new_relevant_simple(j, R_arr, np.asarray(v)[None, :])
    return pd.DataFrame(values, index=pd.Index(list(R), name="R"), columns=pd.Index(list(v), name="v"))
