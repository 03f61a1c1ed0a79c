"""``meta-eval informativeness``: MEM informativeness of metrics (Aslam et al. 2005; GAP paper Sec. 4.1, Figure 2)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from meta_eval.cli.app import app
from meta_eval.core.parallel import connect_scheduler
from meta_eval.cli.common import (CollectionOptions, DpiOpt, FormatOpt, JobsOpt, OutDirOpt, OverwriteOpt, SchedulerOpt,
                                  figure_formats, folder_target, measures_option, reports_errors, with_collection)
from meta_eval.core.errors import InputError


class Protocol(str, Enum):
    recall_changes = "recall-changes"
    pt11 = "11pt"


class Align(str, Enum):
    recall = "recall"
    rank = "rank"


class Counts(str, Enum):
    retrieved = "retrieved"
    qrels = "qrels"

DEFAULT_MEASURES = ("AP", "nDCG(gain=exp)", "nDCG")
ASLAM_MEASURES = ("AP", "Rprec", "P@10", "RR")


def parse_g_grid(values: list[str] | None) -> float | list[tuple[float, ...]] | None:
    """``--g-grid``, checked before any file is read: a step (``0.1`` gives (0, 1), (0.1, 0.9) ... (1, 0); ``0``
    for none), explicit distributions (``--g-grid 0.5,0.5 --g-grid 1,0``: each a valid GAP ``g``), or None for the
    default grid. The step is expanded by :func:`g_grid_for` once the grades are known."""
    from meta_eval.statistics.maxent import g_grid
    from meta_eval.statistics.maxent.pr_inference import gap_measure
    from meta_eval.measures import resolve
    from meta_eval.core.params import parse_float, parse_floats

    if not values:
        return None
    if len(values) == 1 and "," not in values[0]:
        try:
            step = parse_float(values[0])
        except ValueError:
            raise InputError(f"--g-grid: cannot read {values[0]!r}; expected a step like 0.1 (0 for none) or "
                             "pairs like 0.5,0.5") from None
        if step != 0:
            g_grid(step)  # its domain and size, now
        return step
    out = []
    for v in values:
        try:
            g = parse_floats(v)
        except ValueError:
            raise InputError(f"--g-grid: cannot read {v!r}; expected a step like 0.1 or pairs like 0.5,0.5") from None
        resolve(gap_measure(g))  # a distribution GAP accepts, or its error now
        out.append(g)
    return out


def _is_default_gap(g: tuple[float, ...], measures) -> bool:
    """Whether the grid point ``g`` is the GAP already asked for by name: plain ``GAP`` uses uniform g, so
    ``GAP(g=0.5,0.5)`` would be a second row of the same numbers."""
    uniform = all(abs(x - 1 / len(g)) < 1e-12 for x in g)
    return uniform and any(str(m).strip().upper() == "GAP" for m in (measures or ()))


def g_grid_for(grid: float | list[tuple[float, ...]] | None, n_grades: int) -> list[tuple[float, ...]]:
    """The g points of a parsed ``--g-grid`` for qrels with grades 0..n_grades-1 (GAP's g has one value per
    positive grade); the default is the 11-point grid of the GAP paper's Figure 2 where the grades are 0/1/2."""
    from meta_eval.statistics.maxent import g_grid

    if grid is None:
        return g_grid(0.1) if n_grades == 3 else []
    if not isinstance(grid, list):
        if grid == 0:
            return []
        if n_grades != 3:
            raise InputError(f"a g-grid step needs grades 0/1/2; the qrels have grades 0..{n_grades - 1}")
        return g_grid(grid)
    for g in grid:
        if len(g) != n_grades - 1:
            raise InputError(f"--g-grid: {','.join(f'{x:g}' for x in g)} has {len(g)} values; the qrels have "
                             f"{n_grades - 1} positive grades")
    return grid


def _table(console: Console, summary, title: str) -> None:
    t = Table(title=title)
    columns = ("metric", "threshold", "mean_rms", "sem_rms", "n_lists", "n_failed", "reliable", "form")
    for c in columns:
        t.add_column(c, justify="left" if c in ("metric", "form") else "right", no_wrap=True)
    for r in summary.itertuples(index=False):
        method = getattr(r, "method", "declared")
        approx = getattr(r, "approx_error", float("nan"))
        form = f"{method} (approximate, ±{approx:.2g})" if method == "sampled" and approx == approx else method
        t.add_row(r.metric, str(r.threshold), f"{r.mean_rms:.4f}", f"{r.sem_rms:.4f}", str(r.n_lists),
                  str(r.n_failed), "yes" if r.reliable else "NO", form)
    console.print(t)


def default_cache() -> Path:
    """Where solved distributions are cached by default (keyed by everything that determines them)."""
    from meta_eval.statistics.maxent.cache import default_folder

    return default_folder()


MeasuresOpt = measures_option(DEFAULT_MEASURES + ("GAP over --g-grid",), "Metric constrained by MEM")


@app.command()
@reports_errors
@with_collection(exclude=("rel_level",))
def informativeness(
    inputs: CollectionOptions,
    measures: MeasuresOpt = None,
    g_grid: Annotated[Optional[list[str]], typer.Option("--g-grid", help="GAP over its threshold probabilities "
                      "(the GAP paper's Figure 2): a step (0.1 gives (0,1), (0.1,0.9) ... (1,0)) or tuples (repeat: "
                      "--g-grid 0.5,0.5); 0 for none. Default: 0.1 for grades 0/1/2 when no -m is given (the "
                      "paper's experiment), none when metrics are named.")] = None,
    threshold: Annotated[Optional[list[int]], typer.Option("--threshold", "-t", help="Relevance thresholds of the "
                         "PR curves (repeat). Default: every grade.")] = None,
    protocol: Annotated[Protocol, typer.Option(help="PR-curve error: at the points where recall changes (GAP "
                                               "paper) or at the 11 standard recall levels.")]
    = Protocol.recall_changes,
    align: Annotated[Align, typer.Option(help="recall-changes protocol: read the inferred curve at the same "
                                         "recall (default) or the same rank.")] = Align.recall,
    counts: Annotated[Counts, typer.Option(help="Expected grade counts: retrieved by the run or the qrels "
                                           "totals.")] = Counts.retrieved,
    min_relevant: Annotated[int, typer.Option(min=0, help="Keep lists with at least this many relevant (grade >= 1) "
                                              "documents retrieved.")] = 5,
    min_high: Annotated[int, typer.Option(min=0, help="... and this many of the top grade (GAP paper: 5 and 5).")]
    = 5,
    predict: Annotated[Optional[list[str]], typer.Option("--predict", help="Also predict these metrics (repeat) "
                       "from each MEM distribution: prediction.csv with RMS error and Pearson r.")] = None,
    aslam: Annotated[bool, typer.Option(help="Also run Aslam et al.'s binary comparison (AP, Rprec, P@10, RR) "
                                        "with the prediction table.")] = False,
    out: OutDirOpt = Path("informativeness"),
    overwrite: OverwriteOpt = False,
    cache: Annotated[Optional[Path], typer.Option(help="Cache of solved distributions, keyed by the lists, the metric "
                                                  "and its code (a plug-in's module and local imports), the options "
                                                  "and the versions; a rerun resumes from it. Default: "
                                                  "~/.cache/meta-eval/mem.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Solve everything anew.")] = False,
    fmt: FormatOpt = None,
    dpi: DpiOpt = 300,
    figures: Annotated[bool, typer.Option(help="Write the figures to --out.")] = True,
    jobs: JobsOpt = None,
    scheduler: SchedulerOpt = None,
) -> None:
    """Informativeness by the maximum-entropy method, for any metric (a name, module:function or
    file.py:function): for every (run, topic) list and metric, the maximum-entropy distribution of relevance given
    the metric's value and the grade counts, and the RMS error of the PR curves it infers. Metrics are compared on
    the lists where every metric converged. Writes lists.csv (every list, with its status), summary.csv and the
    figures; without -m (or with --g-grid) also the GAP paper's Figure 2 (figure2.csv); with --aslam Aslam et al.'s
    binary comparison."""
    qrels, runs, progress = inputs.qrels, inputs.runs, inputs.progress
    from meta_eval.rendering.figure_style import check_formats
    from meta_eval.statistics.maxent import (aslam_binary, gap_measure, informativeness as run_info, lists_from_collection,
                               qualifying_lists, retrieved_grade_counts)
    from meta_eval.statistics.maxent.cache import MemCache
    from meta_eval.statistics.maxent.forms import check_metric

    console = Console(stderr=True)
    formats = check_formats(figure_formats(fmt))
    target = folder_target(out, "informativeness", overwrite=overwrite, qrels=qrels, runs=runs,
                           measures=[*(measures or ()), *(predict or ())])
    connect_scheduler(scheduler, jobs)  # an unreachable scheduler fails before any work
    for spec in [*(measures or DEFAULT_MEASURES), *(predict or [])]:
        check_metric(spec)  # a bad name or plug-in fails before any file is read
    parsed_grid = parse_g_grid(g_grid)
    # an unusable cache is found now: an error for a folder named with --cache, a warning for the default one
    cache_dir = None if no_cache else MemCache.open(cache if cache is not None else default_cache(),
                                                    required=cache is not None)
    col = inputs.load()
    retrieved = retrieved_grade_counts(col)
    K = retrieved.shape[1]
    # only the lists that pass the filter are built
    sel = lists_from_collection(col, index=qualifying_lists(retrieved, min_relevant, min_high if K > 2 else 0))
    console.print(f"{sel.batch.n_lists} of {len(retrieved)} lists pass the filter "
                  f"(>= {min_relevant} relevant, >= {min_high} of grade {K - 1} retrieved)")
    if sel.batch.n_lists == 0:
        raise InputError("no list passes the filter; lower --min-relevant / --min-high")
    # what was asked, and the paper's g grid only when nothing was (or with --g-grid)
    grid = g_grid_for(parsed_grid if parsed_grid is not None or not measures else 0, K)
    names = list(dict.fromkeys(list(measures or DEFAULT_MEASURES) + [gap_measure(g) for g in grid
                                                                     if not _is_default_gap(g, measures)]))
    levels = list(threshold) if threshold else list(range(1, K))
    common = dict(counts=counts.value, protocol=protocol.value, cache_dir=cache_dir, jobs=jobs, scheduler=scheduler)

    # every metric at once: the workers take all their chunks in one pass (meta_eval.statistics.maxent.solve_mems)
    result = run_info(sel, names, levels, align=align.value, progress=progress, **common)
    lists_df, summary = result.lists, result.summary
    for warning in result.warnings:
        console.print(f"[bold]warning:[/bold] {warning}")
    _table(console, summary, f"Mean RMS error of inferred PR curves ({protocol.value}; {int(summary.n_lists.max())} "
           "lists where every metric converged)")

    pred = None
    if predict:
        from meta_eval.statistics.maxent import prediction_table

        pred = prediction_table(sel, names, list(predict), counts=counts.value, cache_dir=cache_dir, jobs=jobs,
                                scheduler=scheduler)
    f2 = None
    if grid and K == 3:
        from meta_eval.statistics.maxent import gap_figure2

        baselines = [m for m in ("nDCG(gain=exp)", "nDCG") if m in names]
        f2 = gap_figure2(sel, grid, baselines, filter_lists=False, **common)
    a = None
    if aslam:
        a = aslam_binary(sel, ASLAM_MEASURES, filter_lists=False, **common)
        _table(console, a.summary, "Binary MEM (grade >= 1): mean RMS error")
    if out is None:
        return
    with target.open() as tmp:
        lists_df.to_csv(tmp / "lists.csv", index=False)
        summary.to_csv(tmp / "summary.csv", index=False)
        if pred is not None:
            pred.to_csv(tmp / "prediction.csv", index=False)
        if f2 is not None:
            f2.table.to_csv(tmp / "figure2.csv", index=False)
        if a is not None:
            a.summary.to_csv(tmp / "aslam_summary.csv", index=False)
            a.prediction.to_csv(tmp / "aslam_prediction.csv", index=False)
        if figures:
            _figures(tmp, summary, f2, formats, dpi)
        written = len(list(tmp.iterdir()))
    console.print(f"wrote {written} files to {out}")


def _figures(folder: Path, summary, f2, formats, dpi: int) -> None:
    from meta_eval.rendering.figures.informativeness import figure2, rms_bar_figure
    from meta_eval.rendering.figure_style import metric_colors, save_figure

    colors = metric_colors(list(dict.fromkeys(summary.metric)))
    shown = summary[~summary.metric.str.startswith("GAP(") | summary.metric.eq("GAP(g=0.5,0.5)")]
    save_figure(rms_bar_figure(shown, colors=colors), folder / "summary", formats, dpi=dpi)
    if f2 is not None:
        save_figure(figure2(f2.table, title=f"MEM informativeness ({f2.n_lists} lists)", colors=colors),
                    folder / "figure2", formats, dpi=dpi)
