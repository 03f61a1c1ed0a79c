"""The learning-to-rank figure: what training for each metric gains or loses on each test metric.

One panel per test measure. Each row is a trained-for metric; the point is its mean paired difference from the best
row of the same algorithm and test measure (over the test queries), with the 95 % t-interval of that difference.
The best row sits at 0; a filled marker is a row significantly below the best (the ``p_value`` of
``results.csv``), a hollow one is not. Paired differences are shown rather than means with error bars because the
query-to-query spread dwarfs the differences between objectives, which a paired test resolves.
"""

from __future__ import annotations

import numpy as np

from meta_eval.rendering.figure_style import FULL_WIDTH, colors_for, styled

__all__ = ["ltr_figure", "paired_differences"]


def paired_differences(result, level: float = 0.95):
    """Per (algorithm, test measure, trained for): mean paired difference from the best row and its t-interval."""
    import pandas as pd
    from scipy import stats

    rows = []
    table = result.table
    for (algorithm, measure), part in result.per_query.groupby(["algorithm", "test_measure"], sort=False):
        wide = part.pivot_table(index="trained_for", columns=["fold", "query"], values="value", sort=False)
        info = table[(table["algorithm"] == algorithm) & (table["test_measure"] == measure)].set_index("trained_for")
        best = info.index[info["best"]][0]
        for trained in wide.index:
            d = wide.loc[trained].to_numpy() - wide.loc[best].to_numpy()
            n = len(d)
            half = stats.t.ppf(0.5 + level / 2, n - 1) * d.std(ddof=1) / np.sqrt(n) if n > 1 else np.nan
            rows.append({"algorithm": algorithm, "test_measure": measure, "trained_for": trained,
                         "difference": d.mean(), "low": d.mean() - half, "high": d.mean() + half,
                         "p_value": info.loc[trained, "p_value"], "best": trained == best})
    return pd.DataFrame(rows)


@styled
def ltr_figure(result, *, alpha: float = 0.05, colors=None, title: str | None = None):
    """Paired differences from the best objective, one panel per test measure (see the module docstring)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    data = paired_differences(result)
    measures = list(dict.fromkeys(data["test_measure"]))
    algorithms = list(dict.fromkeys(data["algorithm"]))
    objectives = list(dict.fromkeys(data["trained_for"]))
    palette = colors_for(algorithms, colors)
    fig = Figure(figsize=(min(FULL_WIDTH, 1.2 + 1.9 * len(measures)), 0.9 + 0.32 * len(objectives) * len(algorithms)),
                 layout="constrained")
    axes = fig.subplots(1, len(measures), sharey=True, squeeze=False)[0]
    offsets = (np.arange(len(algorithms)) - (len(algorithms) - 1) / 2) * 0.22
    for ax, measure in zip(axes, measures):
        part = data[data["test_measure"] == measure]
        for offset, algorithm in zip(offsets, algorithms):
            rows = part[part["algorithm"] == algorithm].set_index("trained_for").reindex(objectives)
            y = np.arange(len(objectives)) + offset
            colour = palette[algorithm]
            xerr = [rows["difference"] - rows["low"], rows["high"] - rows["difference"]]
            ax.errorbar(rows["difference"], y, xerr=xerr, fmt="none", ecolor=colour, elinewidth=1.0, capsize=2)
            best = rows["best"].to_numpy(dtype=bool)
            significant = (rows["p_value"] < alpha).to_numpy()
            other = ~best & ~significant
            ax.scatter(rows["difference"][best], y[best], color=colour, marker="D", s=26, zorder=3,
                       label=algorithm)
            ax.scatter(rows["difference"][significant], y[significant], color=colour, s=24, zorder=3)
            ax.scatter(rows["difference"][other], y[other], facecolor="white", edgecolor=colour, s=24, zorder=3)
        ax.axvline(0.0, color="0.4", linewidth=0.8, zorder=0)
        ax.set_title(f"test: {measure}", fontsize="medium")
        ax.xaxis.set_major_locator(MaxNLocator(nbins=3))
        ax.grid(axis="x", color="0.9", linewidth=0.6)
    axes[0].set_yticks(np.arange(len(objectives)), [f"trained for {o}" for o in objectives])
    axes[0].set_ylim(len(objectives) - 0.5, -0.5)
    handles, labels = axes[0].get_legend_handles_labels()
    if len(algorithms) > 1:
        seen = dict(zip(labels, handles))
        fig.legend(list(seen.values()), list(seen.keys()), loc="outside right center", frameon=False)
    fig.supxlabel("mean paired difference from the best objective (◆), 95 % CI", fontsize="small")
    who = "" if len(algorithms) > 1 else f"{algorithms[0]}: "
    fig.suptitle(title or f"{who}● significantly below the best (p < {alpha:g}), ○ not", fontsize="small")
    return fig
