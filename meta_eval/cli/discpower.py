"""``meta-eval discpower``: discriminative power of metrics (Sakai's bootstrap, Tukey HSD, classical tests), the
ASL-curve figure, and the GAP paper's best-systems inset."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from meta_eval.cli.app import app
from meta_eval.report import slug
from meta_eval.cli.common import (DepthOpt, LevelOpt, Missing, MissingOpt, QrelsOpt, RunsArg, Unjudged, UnjudgedOpt,
                                  collection_from_cli, reports_errors)

DEFAULT_MEASURES = ("GAP", "nDCG", "AP")


def _print_summary(console: Console, frame, title: str) -> None:
    t = Table(title=title)
    t.add_column("metric", no_wrap=True, min_width=max([6, *(len(m) for m in frame["metric"])]))
    t.add_column("method", no_wrap=True)
    for col in ("pairs", "significant", "proportion", "diff_required"):
        t.add_column(col, justify="right")
    for r in frame.itertuples(index=False):
        diff = "-" if r.diff_required != r.diff_required else f"{r.diff_required:.4f}"
        t.add_row(r.metric, r.method, str(r.pairs), str(r.significant), f"{r.proportion:.3f}", diff)
    console.print(t)


@app.command()
@reports_errors
def discpower(
    runs: RunsArg = None,
    qrels: QrelsOpt = None,
    measures: Annotated[Optional[list[str]], typer.Option("--measure", "-m", help="Measure (repeat). Default: "
                                                          f"{', '.join(DEFAULT_MEASURES)}.")] = None,
    method: Annotated[Optional[list[str]], typer.Option("--method", help="Test (repeat): bootstrap, "
                      "unpaired-bootstrap, tukey, ttest, wilcoxon, sign, and e.g. ttest-holm, wilcoxon-bh. "
                      "Default: bootstrap.")] = None,
    resamples: Annotated[Optional[int], typer.Option("--B", "-B", min=1, help="Replicates of the randomised tests "
                         "(default 1000 for the bootstraps, 5000 for Tukey HSD).")] = None,
    alpha: Annotated[float, typer.Option(help="Significance level: pairs with ASL < alpha are told apart.")] = 0.05,
    top: Annotated[int, typer.Option(help="Also analyse the top-k systems by every metric (GAP paper, Fig. 3 "
                                     "inset); 0 to skip.")] = 15,
    system: Annotated[Optional[list[str]], typer.Option("--system", help="Analyse only these systems (repeat).")]
    = None,
    topic: Annotated[Optional[list[str]], typer.Option("--topic", help="Analyse only these topics (repeat).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the replicate matrix and permutations (shared by all "
                                      "metrics).")] = 0,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Directory for summary.csv, asl.csv and the "
                                                "ASL-curve figure.")] = None,
    depth: DepthOpt = None,
    rel_level: LevelOpt = 1,
    missing: MissingOpt = Missing.zero,
    unjudged: UnjudgedOpt = Unjudged.nonrel,
    figures: Annotated[bool, typer.Option(help="Write the ASL-curve figure to --out.")] = True,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """Discriminative power: how many system pairs each metric tells apart (ASL < alpha), with the estimated
    difference required; Sakai's (2006) paired bootstrap by default, one replicate matrix shared by all metrics."""
    import numpy as np

    import meta_eval as me
    from meta_eval.discpower import best_systems, discriminative_power

    console = Console()
    names = list(measures or DEFAULT_MEASURES)
    methods = list(method or ["bootstrap"])
    col = collection_from_cli(qrels, runs, depth, rel_level, missing, unjudged, progress=progress)
    scores = me.score(col, names)
    if not isinstance(scores, dict):
        scores = {names[0]: scores}
    systems = list(col.systems)
    topics = None
    if topic:
        where = {t: i for i, t in enumerate(col.topics)}
        unknown = [t for t in topic if t not in where]
        if unknown:
            raise me.InputError(f"unknown topics {unknown[:5]}; the qrels have e.g. {list(col.topics)[:5]}")
        topics = np.array([where[t] for t in topic])
    common = dict(methods=methods, alpha=alpha, n_resamples=resamples, seed=seed, topics=topics,
                  progress=progress)
    result = discriminative_power(scores, systems, subset=system, **common)
    chosen = list(system) if system else systems
    top_result, best = None, []
    if 0 < top < len(chosen):
        sub = {m: s[[systems.index(n) for n in chosen]] for m, s in scores.items()}
        best = best_systems(sub, chosen, top)
        top_result = discriminative_power(scores, systems, subset=best, **common)

    n_top = len(topics) if topics is not None else len(col.topics)
    console.print(f"{len(chosen)} systems × {n_top} topics; measures: {', '.join(scores)}; alpha = {alpha:g}")
    _print_summary(console, result.summary(), f"Discriminative power, all {len(chosen)} systems")
    if top_result is not None:
        _print_summary(console, top_result.summary(), f"Discriminative power, top {top} systems by every metric")

    if out is None:
        return
    out.mkdir(parents=True, exist_ok=True)
    result.summary().to_csv(out / "summary.csv", index=False)
    result.asl_table().to_csv(out / "asl.csv", index=False)
    written = ["summary.csv", "asl.csv"]
    if top_result is not None:
        top_result.summary().to_csv(out / "summary_top.csv", index=False)
        top_result.asl_table().to_csv(out / "asl_top.csv", index=False)
        (out / "top_systems.txt").write_text("\n".join(best) + "\n")
        written += ["summary_top.csv", "asl_top.csv", "top_systems.txt"]
    if figures:
        from meta_eval.figures.asl import asl_curve_figure

        for m in methods:
            fname = "asl_curve.png" if len(methods) == 1 else f"asl_curve_{slug(m)}.png"
            fig = asl_curve_figure(result, top=top_result, method=m, title=f"Discriminative power ({m})",
                                   top_label=f"top {top} systems" if top_result is not None else None)
            fig.savefig(out / fname, dpi=120)
            written.append(fname)
    console.print(f"wrote {', '.join(written)} to {out}")
