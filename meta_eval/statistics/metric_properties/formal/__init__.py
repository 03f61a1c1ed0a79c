"""Formal properties of any metric, decided by exhaustive enumeration of small cases and a seeded random search.

Before any experiment, a metric's proposer should say what kind of number it is. :func:`formal_properties` answers
for any measure — a built-in by name (``AP``, ``RBP(p=0.8)``, ``GAP(g=0.2,0.8)``), a plug-in (``file.py:function``)
or a function of :class:`~meta_eval.model.rankings.Rankings` — with a verdict per property: held (no counterexample in
the space searched, which the result states), violated (with the smallest counterexample found: rankings, qrels,
values, to check by hand) or undefined.

The cases
    A case is a ranked list of judged documents (grades 0..c, top first) and its topic's qrels as the number of
    judged documents of each grade (:mod:`~meta_eval.statistics.metric_properties.formal.cases`). Two spaces are searched: binary
    (c = 1) and graded (c = ``grades``). In each, exhaustively: every list of up to ``length`` documents
    (``binary_length`` for binary) with every qrels composition of up to ``length + unretrieved`` judged
    documents holding it; then ``random_cases`` random lists of the lengths beyond, up to ``random_length``, each
    with up to ``unretrieved`` unretrieved judged documents per grade (seeded); and the probes some properties
    need. A metric is scored on each batch in one vectorised call.
The properties (each function's docstring gives its source and the exact test)
    Moffat (AIRS 2013, "Seven numeric properties of effectiveness metrics"):
    :func:`~meta_eval.statistics.metric_properties.formal.probes.bounded`,
    :func:`~meta_eval.statistics.metric_properties.formal.comparisons.monotone`,
    :func:`~meta_eval.statistics.metric_properties.formal.comparisons.convergent`,
    :func:`~meta_eval.statistics.metric_properties.formal.comparisons.top_weighted`,
    :func:`~meta_eval.statistics.metric_properties.formal.comparisons.localised`,
    :func:`~meta_eval.statistics.metric_properties.formal.probes.complete`,
    :func:`~meta_eval.statistics.metric_properties.formal.probes.realisable`.
    Amigó, Gonzalo & Verdejo (SIGIR 2013, "A general evaluation measure for document organization tasks"; restated
    by Amigó, Spina & Carrillo-de-Albornoz, SIGIR 2018), the ranking constraints:
    :func:`~meta_eval.statistics.metric_properties.formal.comparisons.priority`,
    :func:`~meta_eval.statistics.metric_properties.formal.comparisons.deepness`,
    :func:`~meta_eval.statistics.metric_properties.formal.probes.deepness_threshold`,
    :func:`~meta_eval.statistics.metric_properties.formal.probes.closeness_threshold`,
    :func:`~meta_eval.statistics.metric_properties.formal.comparisons.confidence`.
    Kishida (NII 2005, "Property of average precision and its generalization"):
    :func:`~meta_eval.statistics.metric_properties.formal.comparisons.top_heavy` (sensitivity by rank, Eq. 11) and
    :func:`~meta_eval.statistics.metric_properties.formal.comparisons.new_relevant` (a newly found relevant document, Eq. 15–17).
    Ferrante, Ferro & Pontarollo (IEEE TKDE 2019, "A general theory of IR evaluation measures") and Ferrante, Ferro
    & Fuhr (SIGIR 2021, "Towards meaningful statements in IR evaluation"): :func:`~meta_eval.statistics.metric_properties.formal.
    probes.interval`, equally spaced values on the rankings of each length.
Depth
    A metric with a cutoff k (``P@10``) is evaluated at depth k, as Moffat's properties are stated: "the top k"
    are its first k ranks. A metric without one (and any plain function) is a function of the whole list, whose
    "outside" is the judged documents it did not retrieve.
Conventions
    "Never smaller" and "equal" allow rounding (1e-12 of the value); "strictly greater" takes any increase of the
    computed value, so a response below double precision (the deepest ranks of ERR, or of RBP with a small p)
    counts as none. meta-eval's AP, nDCG and GAP score 0 when a topic has no relevant document (trec_eval's
    convention), which makes them complete.
"""

from meta_eval.statistics.metric_properties.formal.engine import CONSTRAINTS, MOFFAT, PROPERTIES, formal_properties, metrics_of
from meta_eval.statistics.metric_properties.formal.result import (HELD, SPACES, UNDEFINED, VIOLATED, Case, FormalProperties,
                                                SearchSizes, Verdict)

__all__ = ["CONSTRAINTS", "Case", "FormalProperties", "HELD", "MOFFAT", "PROPERTIES", "SPACES", "SearchSizes",
           "UNDEFINED", "VIOLATED", "Verdict", "formal_properties", "metrics_of"]
