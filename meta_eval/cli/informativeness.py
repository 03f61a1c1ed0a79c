"""``meta-eval informativeness``: MEM informativeness of metrics (Aslam et al. 2005; GAP paper Sec. 4.1, Figure 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from meta_eval.cli.app import app
from meta_eval.cli.common import (DepthOpt, Missing, MissingOpt, QrelsOpt, RunsArg, Unjudged, UnjudgedOpt,
                                  collection_from_cli, reports_errors)
from meta_eval.errors import InputError

DEFAULT_MEASURES = ("AP", "nDCG(gain=exp)", "nDCG")
ASLAM_MEASURES = ("AP", "Rprec", "P@10", "RR")


def parse_g_grid(values: list[str] | None, n_grades: int) -> list[tuple[float, ...]]:
    """``--g-grid 0.1`` (a step: (0, 1) ... (1, 0)) or explicit tuples ``--g-grid 0.5,0.5 --g-grid 1,0``."""
    from meta_eval.mem import g_grid

    if not values:
        return g_grid(0.1) if n_grades == 3 else []
    if len(values) == 1 and "," not in values[0]:
        step = float(values[0])
        if step <= 0:
            return []
        if n_grades != 3:
            raise InputError(f"a g-grid step needs grades 0/1/2; the qrels have grades 0..{n_grades - 1}")
        return g_grid(step)
    out = []
    for v in values:
        try:
            g = tuple(float(x) for x in v.split(","))
        except ValueError:
            raise InputError(f"--g-grid: cannot read {v!r}; expected a step like 0.1 or pairs like 0.5,0.5") from None
        if len(g) != n_grades - 1:
            raise InputError(f"--g-grid: {v!r} has {len(g)} values; the qrels have {n_grades - 1} positive grades")
        out.append(g)
    return out


def _table(console: Console, summary, title: str) -> None:
    t = Table(title=title)
    for c in ("metric", "threshold", "mean_rms", "sem_rms", "n_lists", "n_failed"):
        t.add_column(c, justify="left" if c == "metric" else "right", no_wrap=True)
    for r in summary.itertuples(index=False):
        t.add_row(r.metric, str(r.threshold), f"{r.mean_rms:.4f}", f"{r.sem_rms:.4f}", str(r.n_lists),
                  str(r.n_failed))
    console.print(t)


@app.command()
@reports_errors
def informativeness(
    runs: RunsArg = None,
    qrels: QrelsOpt = None,
    metric: Annotated[Optional[list[str]], typer.Option("--metric", "-m", help="Metric constrained by MEM (repeat). "
                      f"Default: {', '.join(DEFAULT_MEASURES)} plus GAP over --g-grid.")] = None,
    g_grid: Annotated[Optional[list[str]], typer.Option("--g-grid", help="GAP threshold probabilities: a step "
                      "(0.1 gives (0,1), (0.1,0.9) ... (1,0)) or tuples (repeat: --g-grid 0.5,0.5). 0 for none. "
                      "Default 0.1 for grades 0/1/2.")] = None,
    threshold: Annotated[Optional[list[int]], typer.Option("--threshold", "-t", help="Relevance thresholds of the "
                         "PR curves (repeat). Default: every grade.")] = None,
    protocol: Annotated[str, typer.Option(help="PR-curve error: 'recall-changes' (GAP paper) or '11pt'.")]
    = "recall-changes",
    align: Annotated[str, typer.Option(help="recall-changes protocol: read the inferred curve at the same "
                                       "'recall' (default) or the same 'rank'.")] = "recall",
    counts: Annotated[str, typer.Option(help="Expected grade counts: 'retrieved' by the run or the 'qrels' "
                                        "totals.")] = "retrieved",
    min_relevant: Annotated[int, typer.Option(help="Keep lists with at least this many relevant (grade >= 1) "
                                              "documents retrieved.")] = 5,
    min_high: Annotated[int, typer.Option(help="... and this many of the top grade (GAP paper: 5 and 5).")] = 5,
    predict: Annotated[Optional[list[str]], typer.Option("--predict", help="Also predict these metrics (repeat) "
                       "from each MEM distribution: prediction.csv with RMS error and Pearson r.")] = None,
    aslam: Annotated[bool, typer.Option(help="Also run Aslam et al.'s binary comparison (AP, Rprec, P@10, RR) "
                                        "with the prediction table.")] = True,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory (lists.csv, summary.csv, figure2.csv, "
                                      "figures, cache/).")] = Path("informativeness"),
    cache: Annotated[Optional[Path], typer.Option(help="Cache of solved distributions (default OUT/cache); "
                                                  "a rerun resumes from it.")] = None,
    depth: DepthOpt = None,
    missing: MissingOpt = Missing.zero,
    unjudged: UnjudgedOpt = Unjudged.nonrel,
    figures: Annotated[bool, typer.Option(help="Write the figures (PNG) to --out.")] = True,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """Informativeness by the maximum-entropy method: for every (run, topic) list and metric, the maximum-entropy
    distribution of relevance given the metric's value and the grade counts, and the RMS error of the PR curves
    it infers. Writes lists.csv and summary.csv; with grades 0/1/2 also the GAP paper's Figure 2 (figure2.csv)."""
    import pandas as pd
    from tqdm.auto import tqdm

    from meta_eval.mem import (aslam_binary, gap_measure, informativeness as run_info, lists_from_collection,
                               select_lists)
    from meta_eval.mem.study import summarise

    console = Console(stderr=True)
    col = collection_from_cli(qrels, runs, depth, 1, missing, unjudged, progress=progress)
    lists = lists_from_collection(col)
    K = lists.batch.n_grades
    sel = select_lists(lists, min_relevant=min_relevant, min_high=min_high if K > 2 else 0)
    console.print(f"{sel.batch.n_lists} of {lists.batch.n_lists} lists pass the filter "
                  f"(>= {min_relevant} relevant, >= {min_high} of grade {K - 1} retrieved)")
    if sel.batch.n_lists == 0:
        raise InputError("no list passes the filter; lower --min-relevant / --min-high")
    grid = parse_g_grid(g_grid, K)
    names = list(metric or DEFAULT_MEASURES) + [gap_measure(g) for g in grid]
    names = list(dict.fromkeys(names))
    levels = list(threshold) if threshold else list(range(1, K))
    out.mkdir(parents=True, exist_ok=True)
    cache_dir = cache if cache is not None else out / "cache"

    frames = []
    bar = tqdm(names, desc="MEM", unit="metric", disable=not progress)
    for name in bar:
        bar.set_postfix_str(name)
        res = run_info(sel, [name], levels, counts=counts, protocol=protocol, align=align, cache_dir=cache_dir,
                       progress=False)
        frames.append(res.lists)
    lists_df = pd.concat(frames, ignore_index=True)
    summary = summarise(lists_df)
    cols = ["run", "topic", "metric", "threshold", "n", "entropy", "max_residual", "rms_error", "status"]
    lists_df[cols].to_csv(out / "lists.csv", index=False)
    summary.to_csv(out / "summary.csv", index=False)
    _table(console, summary, f"Mean RMS error of inferred PR curves ({protocol})")

    if predict:
        from meta_eval.mem import prediction_table

        pred = prediction_table(sel, names, list(predict), counts=counts, cache_dir=cache_dir)
        pred.to_csv(out / "prediction.csv", index=False)
    if grid and K == 3:
        from meta_eval.mem import gap_figure2

        baselines = [m for m in ("nDCG(gain=exp)", "nDCG") if m in names]
        f2 = gap_figure2(sel, grid, baselines, filter_lists=False, protocol=protocol, counts=counts,
                         cache_dir=cache_dir)
        f2.table.to_csv(out / "figure2.csv", index=False)
        if figures:
            from meta_eval.figures.informativeness import figure2

            figure2(f2.table, title=f"MEM informativeness ({f2.n_lists} lists)").savefig(out / "figure2.png",
                                                                                         dpi=150)
    if aslam:
        a = aslam_binary(sel, ASLAM_MEASURES, filter_lists=False, protocol=protocol, counts=counts,
                         cache_dir=cache_dir)
        a.summary.to_csv(out / "aslam_summary.csv", index=False)
        a.prediction.to_csv(out / "aslam_prediction.csv", index=False)
        _table(console, a.summary, "Binary MEM (grade >= 1): mean RMS error")
    if figures:
        from meta_eval.figures.informativeness import rms_bar_figure

        rms_bar_figure(summary[~summary.metric.str.startswith("GAP(") | summary.metric.eq("GAP(g=0.5,0.5)")]
                       ).savefig(out / "summary.png", dpi=150)
    console.print(f"wrote {out}/lists.csv, summary.csv" + (", figure2.csv" if grid and K == 3 else ""))
