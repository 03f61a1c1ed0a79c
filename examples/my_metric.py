"""A metric template: copy this file, rename the metric, change the formula.

The example metric is *graded reciprocal rank* (GRR): the reciprocal rank of the first document the user finds
relevant, averaged over the user's relevance threshold — GAP's user model (Robertson, Kanoulas & Yilmaz, SIGIR 2010,
§2.2) applied to RR, with every threshold grade 1..c equally likely::

    GRR@k = (1 / c) · Σ_{j=1..c} 1 / min{ rank r ≤ k : grade_r ≥ j }      (a term is 0 when no such rank exists)

On binary qrels (c = 1) GRR is RR. A list (2, 0, 1) under grades 0..2 scores (1/1 + 1/1) / 2 = 1; a list (1, 0, 2)
scores (1/1 + 1/3) / 2 = 2/3.

Two ways to write a metric, both named ``file.py:NAME`` wherever meta-eval takes a measure:

``GRR`` (vectorised, registered)
    A function of :class:`meta_eval.Rankings` (every list of the collection at once: ``r.grades`` has shape
    ``r.shape + (depth,)``) returning one value per list, declared with :func:`meta_eval.register`: its name, its
    parameters with their domains (checked before any work: ``GRR@0`` is refused), its description. Fast: numpy
    over all lists at once. Named ``examples/my_metric.py:GRR`` or ``examples/my_metric.py:GRR@10``.
``grr_per_list`` (one list at a time)
    ``@meta_eval.per_list``: a function of one list's grades (rank order, no padding; -1 unjudged, -2 judged
    negative) and the topic's judged documents per grade. The simple alternative: exact, but a Python loop over the
    lists, so slower. Named ``examples/my_metric.py:grr_per_list``.

Use it::

    meta-eval measures examples/my_metric.py:GRR                       # the declaration, as meta-eval reads it
    meta-eval evaluate -m examples/my_metric.py:GRR@10 -m RR -m AP      # scores on the demo collection
    meta-eval study -m examples/my_metric.py:GRR -a AP -a GAP -a nDCG   # the whole meta-evaluation, a report

and check it against the contract every measure passes::

    python -c "from meta_eval.orchestration.contract import check_measure; check_measure('examples/my_metric.py:GRR')"
"""

from __future__ import annotations

import numpy as np

import meta_eval as me


@me.register("GRR", cutoff=me.Param("k", None, int, "rank cutoff (none: the whole list)", within="[1, inf)"),
             description="graded reciprocal rank: RR averaged over a uniform relevance threshold grade")
def grr(r: me.Rankings, k: int | None = None) -> np.ndarray:
    """Graded reciprocal rank: (1/c) Σ_j 1 / (rank of the first document of grade >= j in the top k).

    GAP's user model (Robertson, Kanoulas & Yilmaz 2010, §2.2) with a uniform threshold, applied to RR.
    """
    depth = r.depth if k is None else min(k, r.depth)
    values = np.zeros(r.shape)
    for level in range(1, r.max_grade + 1):  # a loop over the few grades, never over lists or documents
        hit = r.relevant(level)[..., :depth]
        first = hit.argmax(axis=-1)  # index of the first hit (0 when there is none: masked below)
        values += np.where(hit.any(axis=-1), 1.0 / (first + 1), 0.0)
    return values / max(r.max_grade, 1)


@me.per_list
def grr_per_list(grades: np.ndarray, counts: np.ndarray) -> float:
    """Graded reciprocal rank of one list (no cutoff): the same number as ``GRR``, one list at a time."""
    top = len(counts) - 1
    total = 0.0
    for level in range(1, top + 1):
        hits = np.flatnonzero(grades >= level)
        total += 1.0 / (hits[0] + 1) if len(hits) else 0.0
    return total / max(top, 1)
