"""Figures: one style (colour-blind palette, one colour per metric, TrueType fonts), files in every requested format,
and the redesigned figures draw what they claim (ASL curves zoomed on α with the top-k panel beside, scatter plots
without a diagonal but with error bars, rank-rank plots on 1..S, grids of small multiples)."""

from __future__ import annotations

import functools
import re

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from scipy import stats

from meta_eval.statistics.best_systems import best_systems
from meta_eval.statistics.significance.discriminative_power import discriminative_power
from meta_eval.core.errors import InputError
from meta_eval.rendering.figure_style import PALETTE, metric_colors, save_figure


def _scores(n_sys: int = 10, n_top: int = 15, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    base = np.linspace(0.2, 0.7, n_sys)[:, None] + rng.normal(0, 0.15, (n_sys, n_top))
    base = np.clip(base, 0, 1)
    return {"A": base, "B": np.sqrt(base), "C": np.clip(base + rng.normal(0, 0.1, base.shape), 0, 1),
            "D": base**2}


def test_metric_colors_are_stable_and_distinct():
    colors = metric_colors(["AP", "nDCG@10", "Q", "ERR", "GAP", "nDCG"])
    assert list(colors.values()) == list(PALETTE[:6]) and len(set(colors.values())) == 6
    assert metric_colors(["AP", "GAP"], fixed={"GAP": "#000000"}) == {"AP": PALETTE[0], "GAP": "#000000"}


def test_save_figure_writes_every_format_with_truetype_fonts(tmp_path):
    from meta_eval.analyses.correlation import rank_rank

    s = _scores()
    fig = rank_rank(s["A"], s["B"], name_x="A", name_y="B")
    paths = save_figure(fig, tmp_path / "f", ("pdf", "svg"), dpi=200, preview_dpi=80)
    assert [p.name for p in paths] == ["f.pdf", "f.svg", "f.png"]
    pdf = (tmp_path / "f.pdf").read_bytes()
    assert pdf.startswith(b"%PDF") and b"/FontFile2" in pdf and b"/Type3" not in pdf
    assert b"<svg" in (tmp_path / "f.svg").read_bytes()[:500]
    assert (tmp_path / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in save_figure(fig, tmp_path / "g", "png", dpi=100, preview_dpi=80)] == ["g.png"]
    with pytest.raises(InputError, match="figure format"):
        save_figure(fig, tmp_path / "h", ("gif",))
    with pytest.raises(InputError, match="dpi"):
        save_figure(fig, tmp_path / "h", ("png",), dpi=10)


def test_asl_curves_two_panels_zoomed_on_alpha():
    from meta_eval.analyses.discpower import asl_curve_figure

    s = _scores(n_sys=8, n_top=20)
    names = [f"r{i}" for i in range(8)]
    dp = discriminative_power(s, names, n_resamples=200)
    top = discriminative_power(s, names, subset=best_systems(s, names, 4), n_resamples=200)
    colors = metric_colors(["D", "C", "B", "A"])
    fig = asl_curve_figure(dp, top=top, colors=colors)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    ax, ax_top = fig.axes
    curves = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == 28]
    assert len(curves) == 4
    for ln, name in zip(curves, s):
        np.testing.assert_allclose(ln.get_ydata(), np.sort(dp.tests[(name, "bootstrap")].asl))
        assert ln.get_color().lower() == colors[name].lower()  # the study's colour, not the palette order
    assert any(np.allclose(ln.get_ydata(), 0.05) for ln in ax.get_lines())  # the alpha line
    assert ax.get_ylim() == pytest.approx((0, 0.2))
    assert sum(len(ln.get_xdata()) == 6 for ln in ax_top.get_lines()) == 4
    assert "28 pairs" in ax.get_title() and "6 pairs" in ax_top.get_title()
    # one x axis, the percentage of each panel's pairs from 0: a curve crosses α at the metric's % discriminated
    assert ax.get_xlim() == ax_top.get_xlim() == (0, 100) and ax.get_shared_x_axes().joined(ax, ax_top)
    for axis, res in ((ax, dp), (ax_top, top)):
        told = res.summary().set_index("metric")["proportion"]
        dots = sorted(ln.get_xdata()[0] for ln in axis.get_lines() if len(ln.get_xdata()) == 1)
        np.testing.assert_allclose(dots, sorted(100 * told[told > 0]))
    assert len(asl_curve_figure(dp, ymax=1).axes) == 1
    with pytest.raises(InputError, match="not in the result"):
        asl_curve_figure(dp, method="tukey")


def test_incomplete_judgments_figure_has_the_tables_units_and_a_true_caption():
    """The discriminative-power row is in percent, as the table; each curve ends at 100 % with the full-qrels value
    (hollow); x is the percentage of judgments kept; the caption names the columns (forms), no line style."""
    from meta_eval.analyses.incomplete_judgments import figure_caption, incomplete_judgments_figure
    from meta_eval.model.demo import demo_collection
    from meta_eval.statistics.incomplete_judgments import incomplete_judgments

    res = incomplete_judgments(demo_collection(), ["AP", "nDCG"], fractions=[0.3, 0.6], n_draws=2)
    fig = incomplete_judgments_figure(res.summary)
    power = fig.axes[4]  # third row (discriminative power), standard form
    assert power.get_ylabel() == "% pairs significant (t-test)"
    rows = res.summary[res.summary["form"] == "standard"].set_index(["metric", "fraction"])
    lines = [ln for ln in power.get_lines() if len(ln.get_xdata()) == 2 and ln.get_markevery() is None]
    ends = [ln for ln in power.get_lines() if ln.get_markevery() == [1]]
    assert len(lines) == len(ends) == 2
    for line, end, metric in zip(lines, ends, ["AP", "nDCG"]):
        np.testing.assert_allclose(line.get_ydata(), 100 * rows.loc[metric, "discpower"].to_numpy())
        assert end.get_ydata()[1] == pytest.approx(100 * rows.loc[metric, "discpower_full"].iloc[0])
        assert end.get_markerfacecolor() == "white"
    # dodged around the percentage kept (and 100 % for the full qrels), side by side
    np.testing.assert_allclose(np.mean([ln.get_xdata() for ln in lines], axis=0), [30, 60])
    np.testing.assert_allclose(np.mean([ln.get_xdata()[1] for ln in ends]), 100)
    assert lines[0].get_xdata()[0] < 30 < lines[1].get_xdata()[0]
    assert [t.get_text() for t in fig.axes[-1].get_xticklabels()] == ["30", "60", "100 (full)"]
    caption = figure_caption(["standard", "condensed"])
    assert "standard: unjudged documents count as not relevant" in caption and "condensed: unjudged" in caption
    assert not re.search(r"solid|dashed|dotted", caption)


def test_scatter_has_error_bars_and_no_diagonal():
    from meta_eval.analyses.correlation import means_scatter

    s = _scores()
    ma, mb = s["A"].mean(1), s["B"].mean(1)
    fig = means_scatter(s["A"], s["B"], name_x="A", name_y="B", systems=[f"s{i}" for i in range(10)], label=3)
    ax = fig.axes[0]
    assert f"$\\tau_b$ = {stats.kendalltau(ma, mb).statistic:.3f}" in ax.get_title()
    assert not ax.get_lines() or not any(np.allclose(*ln.get_data()) for ln in ax.get_lines())
    offsets = ax.collections[-1].get_offsets()
    np.testing.assert_allclose(offsets[:, 0], ma)
    bars = [c for c in ax.collections if c.__class__.__name__ == "LineCollection"]
    assert bars, "no error bars"
    segments = np.concatenate([b.get_segments() for b in bars])
    half = sorted(np.round(np.abs(seg[1] - seg[0]).max() / 2, 12) for seg in segments)
    expected = sorted(np.round(np.concatenate([stats.sem(s["A"], axis=1), stats.sem(s["B"], axis=1)]), 12))
    np.testing.assert_allclose(half, expected, atol=1e-9)
    assert len(ax.texts) == 3


def test_rank_rank_uses_ranks_one_to_s():
    from meta_eval.analyses.correlation import rank_rank

    s = _scores(n_sys=12)
    fig = rank_rank(s["A"], s["C"], name_x="A", name_y="C")
    ax = fig.axes[0]
    offsets = ax.collections[0].get_offsets()
    np.testing.assert_allclose(np.sort(offsets[:, 0]), np.arange(1, 13))
    assert ax.get_xticks()[0] == 1 and ax.get_yticks()[0] == 1
    assert 0 < ax.get_xlim()[0] < 1 and 12 < ax.get_xlim()[1] < 13


def test_grids_lay_out_small_multiples_across_the_page():
    from meta_eval.analyses.correlation import rank_grid, scatter_grid

    s = _scores()
    fig = scatter_grid(s, ["A", "B", "C"], ["D"])
    assert len(fig.axes) == 3 and fig.get_size_inches()[0] > fig.get_size_inches()[1]
    for ax, y in zip(fig.axes, ["A", "B", "C"]):
        tau = stats.kendalltau(s["D"].mean(1), s[y].mean(1)).statistic
        assert f"{tau:.3f}" in ax.texts[0].get_text() and ax.get_ylabel() == f"mean {y}"
    fig = rank_grid(s, ["A"], ["B", "C", "D"])
    assert len(fig.axes) == 3 and all(ax.get_xlabel().startswith("rank by ") for ax in fig.axes)
    with pytest.raises(InputError, match="no scores"):
        scatter_grid(s, ["Z"], ["A"])


def test_heatmap_with_two_triangles():
    from meta_eval.statistics.correlation import correlate_systems
    from meta_eval.rendering.heatmap import correlation_heatmap

    res = correlate_systems(_scores(), n_resamples=0)
    fig = correlation_heatmap(res.matrix("kendall_tau_b"), upper=res.matrix("tau_ap_sym"), fmt=".2f")
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert len(texts) == 4 * 3  # every off-diagonal cell, no diagonal
    tab = res.table.set_index(["metric_x", "metric_y", "coefficient"]).value
    assert f"{tab['A', 'D', 'kendall_tau_b']:.2f}" in texts and f"{tab['A', 'D', 'tau_ap_sym']:.2f}" in texts
    # the symmetrised τ_AP is named apart from the directed one
    assert r"$\tau_b$" in fig.axes[0].get_title() and r"$\tau_{AP\text{-}b}$" in fig.axes[0].get_title()
    with pytest.raises(InputError):
        correlation_heatmap(pd.DataFrame(np.ones((2, 3))))


def test_informativeness_figures_draw_error_bars():
    from meta_eval.analyses.informativeness import figure2, rms_bar_figure

    summary = pd.DataFrame({"metric": ["AP", "AP", "GAP", "GAP"], "threshold": [1, 2, 1, 2],
                            "mean_rms": [0.1, 0.2, 0.12, 0.15], "sem_rms": [0.01, 0.02, 0.01, 0.015]})
    fig = rms_bar_figure(summary)
    ax = fig.axes[0]
    assert len(ax.containers) == 4  # one errorbar per metric and threshold
    ys = sorted(float(c.lines[0].get_ydata()[0]) for c in ax.containers)
    assert ys == sorted(summary.mean_rms)
    rows = []
    for g1 in (0.0, 0.5, 1.0):
        for t in (1, 2):
            rows.append(("GAP", g1, 1 - g1, t, 0.1 + g1 / 10, 0.01))
            rows.append(("nDCG", g1, 1 - g1, t, 0.13, 0.005))
    table = pd.DataFrame(rows, columns=["line", "g1", "g2", "threshold", "mean_rms", "sem_rms"])
    fig = figure2(table)
    assert len(fig.axes) == 2
    ax = fig.axes[0]
    assert len(ax.containers) == 1 and np.allclose(ax.containers[0].lines[0].get_xdata(), [0, 0.5, 1])
    assert any(np.allclose(ln.get_ydata(), 0.13) for ln in ax.get_lines())  # nDCG: horizontal line
    assert len(ax.patches) == 1  # ... with its ±1 s.e. band


def test_background_writer_writes_the_same_files(tmp_path):
    """A figure handed to the background writer gives byte-identical files to saving it here; a figure that cannot
    be pickled (a lambda tick formatter) is saved here; a write that fails is reported with the figure's name."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    from meta_eval.analyses.correlation import rank_rank
    from meta_eval.rendering.figure_style import BackgroundWriter, figure_paths

    s = _scores()
    here = save_figure(rank_rank(s["A"], s["B"], name_x="A", name_y="B"), tmp_path / "here", ("pdf",),
                       preview_dpi=80)
    writer = BackgroundWriter()
    try:
        there = writer.save(rank_rank(s["A"], s["B"], name_x="A", name_y="B"), tmp_path / "there", ("pdf",),
                            preview_dpi=80)
        assert there == figure_paths(tmp_path / "there", ("pdf",), preview_dpi=80)
        lam = plt.figure()
        lam.gca().plot([0, 1], [0, 1])
        lam.gca().yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"<{v:.1f}>"))
        writer.save(lam, tmp_path / "lambda", ("png",), dpi=60)
        assert (tmp_path / "lambda.png").exists()  # saved at once, in this process
        writer.wait()
        for a, b in zip(here, there):
            assert a.read_bytes() == b.read_bytes(), a.name
        writer.save(rank_rank(s["A"], s["B"], name_x="A", name_y="B"), tmp_path / "missing" / "x", ("png",))
        with pytest.raises(RuntimeError, match="1 figure.*x: "):
            writer.wait()
    finally:
        writer.close()


# ------------------------------------------------------------------------------------------------------------------
# Every figure the study writes, checked for what a reviewer would redraw (issue 35)
# ------------------------------------------------------------------------------------------------------------------

#: Small budgets that still give every figure its full shape (several fractions, a top-k panel, a g grid).
_BUDGETS = {"incomplete-judgments": dict(fractions=(0.2, 0.5, 0.8), n_draws=2), "discpower": dict(top=8),
            "informativeness": dict(lists=8, g_grid=0.5)}
#: Analyses that need data or libraries the demo study does not have by default.
_NOT_IN_THE_DEMO_STUDY = ("ltr", "compare", "error-rates")


def study_results() -> dict:
    """Every analysis of the registry (but those that need other data) on the demo collection with the study's
    default metrics and references (six series, the most a figure of the study draws), run once per session."""
    return _study_results()


@functools.cache
def _study_results() -> dict:
    import meta_eval as me
    from meta_eval.analyses import AnalysisData, analyses
    from meta_eval.analyses._base import DEFAULT_AGAINST, DEFAULT_METRICS

    data = AnalysisData.from_collection(me.demo_collection(), DEFAULT_METRICS, against=DEFAULT_AGAINST)
    data.colors = metric_colors([*DEFAULT_METRICS, *DEFAULT_AGAINST], references=DEFAULT_AGAINST)
    out = {}
    for decl in analyses():
        if decl.name in _NOT_IN_THE_DEMO_STUDY:
            continue
        params = {**decl.quick, **_BUDGETS.get(decl.name, {})}
        if decl.name == "reusability":
            params.pop("pool_depth", None)  # the study's default: the collection's own pool depth
        if decl.name == "informativeness":
            params["no_cache"] = True
        data.results[decl.name] = out[decl.name] = decl(data, **decl.bind(params))
    return out


@pytest.fixture(scope="module")
def study_figures() -> list:
    """(stem, caption, figure) of every figure of :func:`study_results`, drawn on an Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    out = []
    for result in study_results().values():
        for f in result.figures():
            fig = f.draw()
            FigureCanvasAgg(fig).draw()
            out.append((f.stem, f.caption, fig))
    return out


def _drawn_texts(fig) -> list:
    """Every text matplotlib draws: figure texts, legends, and per axes its texts, titles, axis labels and the
    labels of the ticks inside its view (the labels of ticks outside it exist but are not drawn)."""
    texts = list(fig.texts)
    for legend in fig.legends:
        texts += [*legend.get_texts(), legend.get_title()]
    for ax in fig.axes:
        texts += [*ax.texts, ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
        if ax.get_legend() is not None:
            texts += [*ax.get_legend().get_texts(), ax.get_legend().get_title()]
        for axis in (ax.xaxis, ax.yaxis):
            for tick in axis._update_ticks():
                texts += [tick.label1, tick.label2]
    return [t for t in texts if t.get_visible() and t.get_text().strip()]


def _series(ax) -> list:
    """The data lines of an axes: every visible line of two points or more but the reference lines (axhline,
    axvline: two points, one value)."""
    out = []
    for line in ax.get_lines():
        x, y = (np.asarray(v, dtype=float) for v in line.get_data())
        if line.get_visible() and x.size >= 2 and not (x.size == 2 and (x[0] == x[1] or y[0] == y[1])):
            out.append(line)
    return out


def _has_markers(line) -> bool:
    return line.get_marker() not in (None, "None", "none", "", " ")


def _marked(line) -> np.ndarray:
    """Display positions of a line's markers (its integer ``markevery`` forms)."""
    xy = line.axes.transData.transform(np.column_stack(line.get_data()).astype(float))
    every = line.get_markevery()
    index = np.arange(len(xy))
    if isinstance(every, (int, np.integer)):
        index = index[::every]
    elif isinstance(every, tuple):
        index = index[every[0]::every[1]]
    elif every is not None:
        index = index[np.asarray(every)]
    xy = xy[index]
    return xy[np.isfinite(xy).all(axis=1)]


def _dash_kind(line) -> str:
    """What a caption calls the line's style: solid, dashed, dotted or dash-dot."""
    offset, dashes = line._dash_pattern  # the pattern as drawn (scaled by the line width)
    if not dashes:
        return "solid"
    if len(dashes) > 2:
        return "dash-dot"
    return "dotted" if dashes[0] <= 1.5 * line.get_linewidth() else "dashed"


def test_the_study_draws_every_figure_it_declares(study_figures):
    stems = {stem for stem, _, _ in study_figures}
    assert {"asl_curves", "incomplete_judgments", "topic_set_size", "heatmap_agreement", "intuitiveness",
            "reusability_standard", "inferred_pr_curves", "split_half", "rms_vs_g"} <= stems


def test_no_text_runs_off_its_figure(study_figures):
    """Every drawn text lies inside the figure as designed: a label longer than the figure (the intuitiveness
    colour bar's) or a title wider than it (the two-coefficient heatmap's) is cut, or, saved with a tight box,
    makes the figure larger than the column it was sized for."""
    problems = []
    for stem, _, fig in study_figures:
        renderer, box = fig.canvas.get_renderer(), fig.bbox
        for text in _drawn_texts(fig):
            e = text.get_window_extent(renderer)
            if e.x0 < box.x0 - 1 or e.y0 < box.y0 - 1 or e.x1 > box.x1 + 1 or e.y1 > box.y1 + 1:
                problems.append((stem, text.get_text()[:50]))
    assert not problems, problems


def test_no_two_texts_overlap(study_figures):
    """No drawn text sits on another (e.g. the x labels of two panels side by side); rotated texts are left out,
    since their boxes are not their shapes."""
    problems = []
    for stem, _, fig in study_figures:
        renderer = fig.canvas.get_renderer()
        texts = [t for t in _drawn_texts(fig) if t.get_rotation() % 90 == 0]
        boxes = [t.get_window_extent(renderer) for t in texts]
        for i, a in enumerate(boxes):
            for j in range(i + 1, len(boxes)):
                b = boxes[j]
                if min(a.x1, b.x1) - max(a.x0, b.x0) > 0.5 and min(a.y1, b.y1) - max(a.y0, b.y0) > 0.5:
                    problems.append((stem, texts[i].get_text()[:30], texts[j].get_text()[:30]))
    assert not problems, problems


def test_no_series_hides_another(study_figures):
    """Within a panel, lines without markers have distinct line styles (colour alone does not tell two overlapping
    lines apart, nor any line in greyscale), and no series has most of its markers on another's (metrics of equal
    value are dodged, or their markers staggered): a metric under another is still seen."""
    problems = []
    for stem, _, fig in study_figures:
        for ax in fig.axes:
            plain = [ln for ln in _series(ax) if not _has_markers(ln)]
            styles = [(str(ln._dash_pattern), round(ln.get_linewidth(), 1)) for ln in plain]
            for i, style in enumerate(styles):
                if style in styles[:i]:
                    problems.append((stem, ax.get_title(), "line style shared", plain[i].get_label()))
            marked = [ln for ln in _series(ax) if _has_markers(ln)]
            points = [_marked(ln) for ln in marked]
            for i, line in enumerate(marked):
                radius = 0.5 * line.get_markersize() * fig.dpi / 72
                others = [p for j, p in enumerate(points) if j != i and len(p)]
                if not len(points[i]) or not others:
                    continue
                others = np.concatenate(others)
                gap = np.linalg.norm(points[i][:, None, :] - others[None, :, :], axis=-1).min(axis=1)
                if np.mean(gap < radius) > 0.5:
                    problems.append((stem, ax.get_title(), "markers piled", line.get_color()))
    assert not problems, problems


def test_captions_name_only_line_styles_that_are_drawn(study_figures):
    """A caption that names a line style (``condensed: dashed``) describes lines drawn in it."""
    problems = []
    for stem, caption, fig in study_figures:
        drawn = {_dash_kind(ln) for ax in fig.axes for ln in _series(ax)}
        for kind in ("solid", "dashed", "dotted", "dash-dot"):
            if re.search(rf"\b{kind}\b", caption) and kind not in drawn:
                problems.append((stem, kind, sorted(drawn)))
        if "hollow" in caption and not any(ln.get_markerfacecolor() in ("white", "w", "none") for ax in fig.axes
                                           for ln in ax.get_lines() if _has_markers(ln)):
            problems.append((stem, "hollow"))
    assert not problems, problems
