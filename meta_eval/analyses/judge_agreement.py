"""Judge agreement: how each measure's system ranking moves when the qrels come from another judge.

A second set of relevance labels for the same topics — another assessor, or a large language model prompted to
judge — is compared with the collection's qrels (the reference judge) in two ways:

* the labels themselves: Cohen's κ over the documents both judged, on the graded labels (optionally weighted) and
  on binary relevance (grade ≥ the collection's relevance level), with the confusion matrix;
* what the labels do to an evaluation: every run scored under each set of qrels, and for each measure the
  agreement of the two system rankings (Kendall's τ_b; τ_AP with the reference judge's ranking as the truth),
  the system pairs the two rankings order oppositely (with whether a paired t-test separates them under each set
  of qrels) and each system's change of rank.

This is the analysis many 2024–2026 papers on LLM relevance judgments compute by hand (e.g. Thomas et al., SIGIR
2024; Faggioli et al., ICTIR 2023; Upadhyay et al., 2024). The whole analysis is this one module: its declaration,
result object, table, figure and findings.

References
----------
Cohen, J. (1960). A coefficient of agreement for nominal scales. *Educational and Psychological Measurement* 20.
Cohen, J. (1968). Weighted kappa. *Psychological Bulletin* 70(4).
Voorhees, E. M. (2000). Variations in relevance judgments and the measurement of retrieval effectiveness. *IP&M*
36(5) — the same question asked of two human assessors.
Yilmaz, E., Aslam, J. A. & Robertson, S. (2008). A new rank correlation coefficient for information retrieval.
*SIGIR*.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from meta_eval.analyses._base import AnalysisData
from meta_eval.analyses._result import FigureOutput, Result, TableOutput
from meta_eval.analyses._registry import analysis
from meta_eval.core.errors import InputError
from meta_eval.core.params import ANALYSIS_PARAMS, Param

WEIGHTS = ("none", "linear", "quadratic")


def cohen_kappa(a, b, weights: str = "none", labels=None) -> float:
    """Cohen's κ between two raters' labels of the same items.

    With O the observed and E the expected (independent raters with the observed marginals) proportion of items
    in each pair of categories (i, j), and disagreement weights w_ij (0 on the diagonal):

        κ_w = 1 − Σ w_ij O_ij / Σ w_ij E_ij,   w_ij = [i ≠ j] (Cohen 1960), |i − j| (linear) or (i − j)²
        (quadratic; Cohen 1968),

    which for 0/1 weights is the familiar κ = (p_o − p_e) / (1 − p_e). The weighted forms weigh a disagreement by
    the distance of the two grades (scikit-learn's ``cohen_kappa_score`` by the distance of their positions among
    the labels seen: the same when every grade in between is among ``labels``).

    Parameters
    ----------
    a, b : array_like of int
        One label per item and rater.
    weights : {"none", "linear", "quadratic"}
    labels : sequence of int, optional
        The categories (default: every value in ``a`` or ``b``).

    Returns
    -------
    float
        κ; NaN when the expected disagreement is 0 (both raters give every item the same single label).

    Examples
    --------
    >>> cohen_kappa([0, 1, 1, 2], [0, 1, 2, 2])
    0.6363636363636364
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.ndim != 1:
        raise InputError(f"cohen_kappa: two label vectors of the same length are needed; got {a.shape}, {b.shape}")
    if weights not in WEIGHTS:
        raise InputError(f"cohen_kappa: weights must be one of {', '.join(WEIGHTS)}; got {weights!r}")
    cats = np.unique(np.concatenate([a, b])) if labels is None else np.asarray(labels)
    observed = confusion(a, b, cats) / max(a.size, 1)
    expected = np.outer(observed.sum(1), observed.sum(0))
    i, j = np.meshgrid(cats, cats, indexing="ij")
    w = {"none": (i != j).astype(float), "linear": np.abs(i - j).astype(float),
         "quadratic": ((i - j) ** 2).astype(float)}[weights]
    disagreement = float((w * expected).sum())
    return float("nan") if disagreement == 0 else 1.0 - float((w * observed).sum()) / disagreement


def confusion(a, b, labels) -> np.ndarray:
    """Counts of items labelled ``labels[i]`` by the first rater and ``labels[j]`` by the second."""
    labels = np.asarray(labels)
    ia, ib = np.searchsorted(labels, a), np.searchsorted(labels, b)
    out = np.zeros((labels.size, labels.size), dtype=np.int64)
    np.add.at(out, (ia, ib), 1)
    return out


# --------------------------------------------------------------------------------------------- the result


@dataclass
class JudgeAgreement(Result):
    """``rankings``: one row per measure (τ_b, τ_AP, swaps); ``kappa``: one row per label scheme; ``confusion``,
    ``ranks`` (per measure and system) and ``swaps`` (per measure and swapped pair) in full."""

    rankings: pd.DataFrame
    kappa: pd.DataFrame
    confusion: pd.DataFrame
    ranks: pd.DataFrame
    swaps: pd.DataFrame
    other: str
    alpha: float
    colors: dict | None = None

    def tables(self) -> list[TableOutput]:
        from meta_eval.rendering.paper_table import PaperTable, best_mask

        r = self.rankings.set_index("measure")
        values = pd.DataFrame({
            "τ_b": r["kendall_tau_b"], "τ_AP": r["tau_ap"], "pairs": r["pairs"].astype(int),
            "swapped": r["swaps"].astype(int), "significant": r["swaps_significant"].astype(int),
            "largest rank change": r["largest_rank_change"].astype(int), "system": r["most_moved"]})
        digits = {"τ_b": 3, "τ_AP": 3}
        ranking_table = PaperTable(values, decimals=digits,
                                   bold=best_mask(values, {"τ_b": "max", "τ_AP": "max", "swapped": "min"}, digits),
                                   note=f"τ_AP takes the reference judge's ranking as the truth; significant: swapped "
                                   f"pairs a paired t-test separates (p < {self.alpha:g}) under the reference qrels.")
        k = self.kappa.set_index("labels")
        kappa_values = pd.DataFrame({"documents": k["documents"].astype(int), "% agreement": 100 * k["agreement"],
                                     "κ": k["kappa"]})
        kappa_table = PaperTable(kappa_values, decimals={"% agreement": 1, "κ": 3},
                                 note="Documents judged by both; κ: Cohen's kappa (weighted as the row says).")
        return [
            TableOutput("judge_agreement", f"System rankings under the reference qrels and under {self.other}: "
                        "rank correlation, system pairs swapped, largest change of rank", self.rankings,
                        ranking_table),
            TableOutput("judge_kappa", f"Agreement of the labels of {self.other} with the reference qrels",
                        self.kappa, kappa_table),
            TableOutput("judge_confusion", "Documents by reference grade and other grade", self.confusion),
            TableOutput("judge_ranks", "Each system's score and rank under both sets of qrels", self.ranks),
            TableOutput("judge_swaps", "System pairs ordered oppositely under the two sets of qrels", self.swaps)]

    def figures(self) -> list[FigureOutput]:
        return [FigureOutput("judge_ranks", f"System ranks (1 = best) under the reference qrels (x) and under "
                             f"{self.other} (y), per measure; the dashed diagonal is 'same rank'",
                             lambda: rank_change_figure(self.ranks, colors=self.colors))]

    def findings(self):
        from meta_eval.rendering.findings import Quoter, joined, ranked, tied

        q = Quoter(self.compact)
        kappa = self.compact["judge_kappa"]
        rows = [str(r) for r in kappa.values.index]
        out = []
        if rows:
            graded, binary = rows[0], rows[-1]
            sentence = (f"The labels of {self.other} agree with the reference qrels on "
                        f"{q('judge_kappa', graded, '% agreement')} % of the {q('judge_kappa', graded, 'documents')} "
                        f"documents both judged (Cohen's κ = {q('judge_kappa', graded, 'κ')}, {graded})")
            if binary != graded:
                sentence += f"; κ = {q('judge_kappa', binary, 'κ')} on {binary}"
            out.append(q.finding(sentence + "."))
        table = self.compact["judge_agreement"]
        order = ranked(table, "τ_b")
        if order:
            best, worst = order[0], order[-1]
            name = "judge_agreement"
            lead = f"Under {self.other} the system ranking"
            if len(order) == 1 or table.text(best, "τ_b") == table.text(worst, "τ_b"):
                sentence = (f"{lead} keeps τ_b = {q(name, best, 'τ_b')} (τ_AP = {q(name, best, 'τ_AP')}) under "
                            f"{'every measure' if len(order) > 1 else best}")
            else:
                least, most = tied(table, "τ_b", order), tied(table, "τ_b", order[::-1])[::-1]
                sentence = (f"{lead} moves least under {joined(least)} (τ_b = {q(name, best, 'τ_b')}"
                            + (f", τ_AP = {q(name, best, 'τ_AP')}" if len(least) == 1 else "") + f") and most under "
                            f"{joined(most)} (τ_b = {q(name, worst, 'τ_b')}"
                            + (f", τ_AP = {q(name, worst, 'τ_AP')}" if len(most) == 1 else "") + ")")
            sentence += (f"; under {worst}, {q(name, worst, 'swapped')} of {q(name, worst, 'pairs')} system pairs "
                         f"swap, {q(name, worst, 'significant')} of them significant under the reference qrels, and "
                         f"{q(name, worst, 'system')} moves {q(name, worst, 'largest rank change')} places.")
            out.append(q.finding(sentence))
        return out


# --------------------------------------------------------------------------------------------- the analysis


def _existing(value: Any) -> str | None:
    return None if str(value) == "demo" or Path(value).is_file() else "is not a file (a qrels file, or 'demo')"


@analysis("judge-agreement", quick=dict(other_qrels="demo"),
          summary="How each measure's system ranking moves under another judge's qrels.",
          title="Agreement with another judge", order=95,
          params=(Param("other_qrels", None, str, "the other judge's qrels (e.g. an LLM's labels); 'demo': the demo "
                        "collection's synthetic LLM labels", check=_existing, domain="a qrels file, or demo"),
                  Param("weights", "none", str, "weights of Cohen's κ on the graded labels: none (Cohen 1960), "
                        "linear or quadratic (Cohen 1968)", choices=WEIGHTS),
                  Param("other_name", "the other judge", str, "how the report names the other judge (e.g. 'the "
                        "LLM')", domain="text"),
                  ANALYSIS_PARAMS["alpha"]),
          enabled=lambda params: params.get("other_qrels") is not None,
          files=("other_qrels",))
def run(data: AnalysisData, *, other_qrels: str | None, weights: str, other_name: str,
        alpha: float) -> JudgeAgreement:
    """Cohen's κ of the two judges' labels; each measure's system ranking under both sets of qrels (τ_b, τ_AP, the
    pairs that swap, each system's change of rank), on the topics both judged."""
    from meta_eval.model.demo import demo_llm_qrels
    from meta_eval.inputs.trec import read_qrels

    if other_qrels is None:
        raise InputError("analysis judge-agreement: parameter other_qrels is needed (the other judge's qrels file)")
    path = demo_llm_qrels() if str(other_qrels) == "demo" else Path(other_qrels)
    labels = read_qrels(path)
    reference, other = _collections(data.collection, path)
    kappa, matrix = _label_agreement(data.collection, labels, weights)
    rankings, ranks, swaps = _ranking_agreement(data, reference, other, alpha)
    text = (f"The {len(other.topics)} topics judged in both sets of qrels; {kappa['documents'].iloc[0]} documents "
            f"judged by both (the reference qrels: {data.collection.options.get('qrels')}; the other: {path}). "
            f"Labels: Cohen's κ over the documents both judged, on the grades ({_weighting(weights)}; Cohen 1960, "
            f"1968) and on binary relevance (grade ≥ {data.collection.rel_level}). Rankings: every run scored under "
            "each set of qrels, systems ranked by their mean; Kendall's τ_b between the two rankings and τ_AP "
            "(Yilmaz et al. 2008) with the reference ranking as the truth; a swapped pair is ordered oppositely by "
            f"the two rankings, significant when a paired t-test separates it (p < {alpha:g}) under the reference "
            "qrels. Raw scores (not standardised).")
    return JudgeAgreement(rankings, kappa, matrix, ranks, swaps, other_name, alpha, data.colors, text=text)


def _weighting(weights: str) -> str:
    return "unweighted" if weights == "none" else f"{weights} weights"


def _collections(collection, path: Path):
    """The runs under the reference and the other qrels, on the topics both judged."""
    from meta_eval.model.collection import load_collection

    runs = collection.options.get("runs") or []
    if not runs or not all(Path(r).is_file() for r in runs):
        raise InputError("analysis judge-agreement: the runs must be files (the collection was built from tables); "
                         "load the collection from run files")
    options = {k: collection.options[k] for k in ("depth", "rel_level", "missing", "unjudged", "ties",
                                                  "score_precision") if k in collection.options}
    other = load_collection(path, runs, **options)
    common = [t for t in collection.topics if t in set(other.topics)]
    if len(common) < 1:
        raise InputError(f"analysis judge-agreement: {path} judges none of the collection's topics")
    # the other qrels judge the same runs, read again from their files: cut them as the collection was cut
    return collection.subset(topics=common), other.subset(systems=collection.systems, topics=common)


def _label_agreement(collection, labels, weights: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """κ per label scheme and the confusion counts, over the (topic, document) pairs both judged."""
    j = collection.judgments
    mine = pd.DataFrame({"topic": np.asarray(collection.topics, dtype=object)[j.topic],
                         "docid": np.asarray(collection.doc_names.to_pylist(), dtype=object)[j.doc],
                         "reference": j.grade})
    theirs = pd.DataFrame({"topic": labels.topic.to_pylist(), "docid": labels.docid.to_pylist(), "other": labels.grade})
    both = mine.merge(theirs, on=["topic", "docid"], how="inner")
    if both.empty:
        raise InputError("analysis judge-agreement: no document is judged in both sets of qrels")
    a, b = both["reference"].to_numpy(), both["other"].to_numpy()
    level = collection.rel_level
    cats = np.unique(np.concatenate([a, b]))
    rows = [(f"graded labels ({_weighting(weights)})", a, b, weights),
            (f"binary (grade ≥ {level})", (a >= level).astype(int), (b >= level).astype(int), "none")]
    kappa = pd.DataFrame([{"labels": name, "documents": len(x), "agreement": float(np.mean(x == y)),
                           "kappa": cohen_kappa(x, y, w)} for name, x, y, w in rows])
    counts = confusion(a, b, cats)
    i, k = np.nonzero(np.ones_like(counts, dtype=bool))
    matrix = pd.DataFrame({"reference": cats[i], "other": cats[k], "documents": counts[i, k]})
    return kappa, matrix


def _ranking_agreement(data: AnalysisData, reference, other, alpha: float):
    """Per measure: τ_b, τ_AP, swaps (with paired t-tests under both qrels) and every system's rank change."""
    from scipy.stats import rankdata

    from meta_eval.measures.scoring import aggregate, per_topic
    from meta_eval.statistics.correlation.agreement import ranking_swaps
    from meta_eval.statistics.correlation.rank import kendall_tau_b, tau_ap
    from meta_eval.statistics.significance.classical import classical_test

    systems = list(reference.systems)
    rows, ranks, swaps = [], [], []
    for m in data.measures:
        x, y = np.asarray(per_topic(reference, m)), np.asarray(per_topic(other, m))
        mx, my = np.asarray(aggregate(x, m), dtype=float), np.asarray(aggregate(y, m), dtype=float)
        # means that differ by float noise are ties (as ranking_swaps counts them), for the ranks and the τs alike:
        # an order of summation must not decide a tie
        qx, qy = np.round(mx, 12), np.round(my, 12)
        rx, ry = rankdata(-qx, method="min"), rankdata(-qy, method="min")
        px = classical_test(x, systems, test="ttest", alpha=alpha).asl
        py = classical_test(y, systems, test="ttest", alpha=alpha).asl
        sw = ranking_swaps(x, y, p_x=px, p_y=py, alpha=alpha, systems=systems, names=("reference", "other"))
        change = (ry - rx).astype(int)
        moved = int(np.argmax(np.abs(change)))
        rows.append({"measure": m.output_name, "kendall_tau_b": float(kendall_tau_b(qx, qy)),
                     "tau_ap": float(tau_ap(qx, qy)), "pairs": sw.n_pairs, "swaps": sw.n_swaps,
                     "swaps_significant": sw.n_swaps_significant_x, "largest_rank_change": int(abs(change[moved])),
                     "most_moved": systems[moved]})
        ranks.append(pd.DataFrame({"measure": m.output_name, "system": systems, "score_reference": mx,
                                   "score_other": my, "rank_reference": rx.astype(int),
                                   "rank_other": ry.astype(int), "rank_change": change}))
        swaps.append(sw.pairs.rename(columns={"diff_x": "diff_reference", "diff_y": "diff_other",
                                              "p_x": "p_reference", "p_y": "p_other"}).assign(measure=m.output_name))
    swap_frame = pd.concat(swaps, ignore_index=True)
    swap_frame = swap_frame[["measure", *[c for c in swap_frame.columns if c != "measure"]]]
    return pd.DataFrame(rows), pd.concat(ranks, ignore_index=True), swap_frame


def rank_change_figure(ranks: pd.DataFrame, colors=None):
    """Rank under the reference qrels (x) against rank under the other qrels (y), one panel per measure."""
    from meta_eval.rendering.figure_style import COLUMN_WIDTH, FULL_WIDTH, colors_for, styled

    @styled
    def draw():
        import matplotlib.pyplot as plt

        measures = list(dict.fromkeys(ranks["measure"]))
        n = len(measures)
        cols = min(n, 4)
        rows = -(-n // cols)
        width = FULL_WIDTH if cols > 1 else COLUMN_WIDTH
        fig, axes = plt.subplots(rows, cols, figsize=(width, width / cols * rows + 0.3), squeeze=False,
                                 sharex=True, sharey=True)
        palette = colors_for(measures, colors)
        top = int(ranks[["rank_reference", "rank_other"]].to_numpy().max())
        for ax, m in zip(axes.flat, measures):
            f = ranks[ranks["measure"] == m]
            ax.plot([1, top], [1, top], ls="--", lw=0.8, color="0.6")
            ax.scatter(f["rank_reference"], f["rank_other"], s=12, color=palette[m])
            ax.set_title(m)
            ax.invert_xaxis()
            ax.invert_yaxis()
        for ax in axes.flat[n:]:
            ax.set_visible(False)
        fig.supxlabel("rank under the reference qrels")
        fig.supylabel("rank under the other qrels")
        fig.tight_layout()
        return fig

    return draw()
