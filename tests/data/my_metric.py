"""An example of a new metric, as a researcher would write it: graded RBP under GAP's user model.

GRBP = Σ_j g_j · RBP^(j): the expected rank-biased precision when the user's relevance threshold is grade j with
probability g_j (uniform here). Written vectorised over meta-eval's Rankings.
"""

import numpy as np

import meta_eval as me


def grbp(r: me.Rankings) -> np.ndarray:
    """Graded RBP (p = 0.8) averaged over a uniform threshold grade."""
    weights = 0.2 * 0.8 ** (r.ranks - 1)
    levels = range(1, r.max_grade + 1)
    return np.mean([(r.relevant(j) * weights).sum(-1) for j in levels], axis=0)


@me.per_list
def top_grade_rank(grades, counts):
    """1 / rank of the first document of the highest grade the qrels hold (0 if none)."""
    top = len(counts) - 1
    hits = np.flatnonzero(np.asarray(grades) == top)
    return 1.0 / (hits[0] + 1) if len(hits) else 0.0
