"""Figures: one style (colour-blind palette, one colour per metric, TrueType fonts), files in every requested format,
and the redesigned figures draw what they claim (ASL curves zoomed on α with the top-k panel beside, scatter plots
without a diagonal but with error bars, rank-rank plots on 1..S, grids of small multiples)."""

from __future__ import annotations

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
    assert len(asl_curve_figure(dp, ymax=1).axes) == 1
    with pytest.raises(InputError, match="not in the result"):
        asl_curve_figure(dp, method="tukey")


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
