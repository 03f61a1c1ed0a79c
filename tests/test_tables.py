"""Paper tables (meta_eval.rendering.paper_table): the same cells in Markdown (parsed by markdown-it), LaTeX (a structural parser
check, and pdflatex when it is installed) and HTML; bold best and markers; the compact tables of the analyses."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from meta_eval.core.errors import InputError
from meta_eval.rendering.paper_table import PaperTable, best_mask, format_number, latex_escape, matrix_table

# ------------------------------------------------------------------------------------------------ checkers


def markdown_tables(text: str) -> list[list[list[str]]]:
    """Every table of a Markdown document, parsed by markdown-it (GFM tables): rows of cell texts, header first."""
    from markdown_it import MarkdownIt

    tables, rows, row = [], None, None
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    for i, tok in enumerate(tokens):
        if tok.type == "table_open":
            rows = []
        elif tok.type == "tr_open":
            row = []
        elif tok.type in ("th_open", "td_open"):
            row.append(tokens[i + 1].content if tokens[i + 1].type == "inline" else "")
        elif tok.type == "tr_close":
            rows.append(row)
        elif tok.type == "table_close":
            tables.append(rows)
    return tables


def check_markdown(text: str) -> list[list[list[str]]]:
    """Every table parses and each row has as many cells as the header."""
    tables = markdown_tables(text)
    n_pipes_tables = len(re.findall(r"^\| .* \|\n\| (?:-{3}:?|:?-{3})", text, flags=re.M))
    assert len(tables) == n_pipes_tables, "a Markdown table did not parse"
    for rows in tables:
        assert all(len(r) == len(rows[0]) for r in rows), rows
    return tables


def check_latex(text: str) -> None:
    """A parser check of a LaTeX table: ASCII only, balanced braces and environments, booktabs rules, every row
    with as many cells as the column spec, no unescaped special character."""
    assert text.isascii(), sorted({c for c in text if not c.isascii()})
    body = "\n".join(line for line in text.splitlines() if not line.startswith("%"))
    depth = 0
    for i, ch in enumerate(body):
        if ch in "{}" and (i == 0 or body[i - 1] != "\\"):
            depth += 1 if ch == "{" else -1
            assert depth >= 0, body[max(0, i - 40):i + 1]
    assert depth == 0
    envs = re.findall(r"\\(begin|end)\{(\w+)\}", body)
    stack = []
    for kind, name in envs:
        if kind == "begin":
            stack.append(name)
        else:
            assert stack and stack.pop() == name, envs
    assert not stack
    for spec, inner in re.findall(r"\\begin\{tabular\}\{([lrc]+)\}(.*?)\\end\{tabular\}", body, flags=re.S):
        assert r"\toprule" in inner and r"\midrule" in inner and r"\bottomrule" in inner
        rows = [r for r in inner.split("\n") if r.strip() and not r.strip().startswith("\\") or "&" in r]
        for row in rows:
            assert row.rstrip().endswith(r"\\"), row
            cells = re.split(r"(?<!\\)&", row)
            assert len(cells) == len(spec), (spec, row)
        unescaped = re.findall(r"(?<!\\)[_%#$^~]", re.sub(r"\\ensuremath\{[^{}]*(\{[^{}]*(\{[^{}]*\})?\})?\}", "",
                                                             re.sub(r"\\textsuperscript\{.*?\}\}?", "", inner)))
        assert not unescaped, unescaped


def compile_latex(snippets: list[str], tmp_path) -> None:
    """Compile the tables in one document with pdflatex (skips when pdflatex is not installed)."""
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex not installed (apt-get install texlive-latex-base texlive-latex-recommended)")
    doc = ("\\documentclass{article}\n\\usepackage{booktabs,amssymb}\n\\begin{document}\n" + "\n".join(snippets)
           + "\n\\end{document}\n")
    (tmp_path / "tables.tex").write_text(doc)
    res = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "tables.tex"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout[-3000:]
    assert (tmp_path / "tables.pdf").stat().st_size > 1000


# ------------------------------------------------------------------------------------------------ tests


def _table() -> PaperTable:
    values = pd.DataFrame({"tau_ap(y|x)": [0.91234, 0.5, np.nan], "n_pairs": [496, 105, 3], "note": ["a|b", "x_y",
                                                                                                   "50% #1"]},
                          index=pd.Index(["AP", "nDCG@10", "GAP(g=0.5,0.5)"], name="metric"))
    bold = best_mask(values, {"tau_ap(y|x)": "max"}, 3)
    markers = pd.DataFrame("", index=values.index, columns=values.columns)
    markers.iloc[0, 0] = "▲"
    low = pd.DataFrame(np.nan, index=values.index, columns=values.columns)
    high = low.copy()
    low.iloc[0, 0], high.iloc[0, 0] = 0.8, 0.95
    return PaperTable(values, caption="Coefficients (τ_AP ≥ 0.5, α = 0.05)", decimals=3, bold=bold,
                      markers=markers, low=low, high=high, note="▲: better; Δ required; ±")


def test_cells_format_bold_interval_and_marker():
    t = _table()
    assert t.text("AP", "tau_ap(y|x)") == "0.912" and t.interval("AP", "tau_ap(y|x)") == "[0.800, 0.950]"
    assert t.text("GAP(g=0.5,0.5)", "tau_ap(y|x)") == "–" and t.text("AP", "n_pairs") == "496"
    assert t.cells()[0][0] == ("0.912", "[0.800, 0.950]", "▲", True)
    assert [c[3] for c in (t.cells()[1][0], t.cells()[2][0])] == [False, False]
    assert format_number(-0.00001, 3) == "0.000" and format_number(np.float32(1.5), 1) == "1.5"


def test_markdown_is_valid_and_keeps_pipes_in_cells():
    t = _table()
    (rows,) = check_markdown(t.to_markdown())
    assert rows[0] == ["metric", "tau_ap(y|x)", "n_pairs", "note"]
    assert rows[1][0] == "AP" and rows[1][3] == "a|b" and rows[1][1].startswith("**0.912**")
    assert len(rows) == 4


def test_latex_is_ascii_booktabs_and_parses(tmp_path):
    t = _table()
    tex = t.to_latex("tab:x")
    check_latex(tex)
    assert r"\textbf{0.912}" in tex and r"\blacktriangle" in tex and r"\usepackage{amssymb}" in tex
    # "|" is \textbar{}: in pdflatex's default OT1 encoding a bare | prints as an em dash
    assert r"tau\_ap(y\textbar{}x)" in tex and r"a\textbar{}b" in tex and r"50\% \#1" in tex
    assert r"\ensuremath{\tau_{\mathrm{AP}}}" in tex
    compile_latex([tex, t.to_latex(float_env=False)], tmp_path)


def test_latex_escape_writes_any_name():
    """A run or collection named in any language gets a table (a name without a LaTeX form failed the command, or a
    study after all its work): accents as LaTeX's accent commands, Greek in math mode, the rest as UTF-8."""
    assert latex_escape("τ_AP-b ≥ 0.5") == r"\ensuremath{\tau_{\mathrm{AP-b}}} \ensuremath{\geq} 0.5"
    cases = {"λ": r"\ensuremath{\lambda}", "Müller": r'M\"{u}ller', "système": r"syst\`{e}me",
             "naïve": r'na\"{\i}ve', "Straße": r"Stra\ss{}e", "Łódź": r"\L{}\'{o}d\'{z}", "Ωα": r"\ensuremath{\Omega}\ensuremath{\alpha}",
             "ΑΒ": "AB", "ǖ": r'\={\"{u}}', "sys☃": "sys☃", "中文_run": r"中文\_run"}
    for text, latex in cases.items():
        assert latex_escape(text) == latex, text


def test_html_and_console_show_the_same_cells():
    t = _table()
    page = t.to_html()
    assert "<b>0.912</b> <small>[0.800, 0.950]</small><sup>▲</sup>" in page and "a|b" in page
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(t.to_rich())
    assert "0.912 [0.800, 0.950]▲" in console.export_text()


def test_best_mask_compares_displayed_values():
    values = pd.DataFrame({"x": [0.12341, 0.12344, 0.1], "y": [3, 1, 1]})
    mask = best_mask(values, {"x": "max", "y": "min"}, 3)
    assert mask["x"].tolist() == [True, True, False] and mask["y"].tolist() == [False, True, True]
    with pytest.raises(InputError):
        best_mask(values, {"z": "max"})
    with pytest.raises(InputError):
        PaperTable(values, bold=mask.iloc[:2])


def test_matrix_table_puts_two_coefficients_in_the_triangles():
    names = ["A", "B", "C"]
    lower = pd.DataFrame(np.arange(9.0).reshape(3, 3), index=names, columns=names)
    upper = -lower
    t = matrix_table(lower, upper, caption="m", low=(lower - 1, upper - 1), high=(lower + 1, upper + 1))
    assert t.text("B", "A") == "3.000" and t.text("A", "B") == "-1.000" and t.text("A", "A") == "–"
    assert t.interval("C", "A") == "[5.000, 7.000]" and t.interval("A", "C") == "[-3.000, -1.000]"


def test_compact_tables_of_the_analyses():
    from meta_eval.statistics.correlation import correlate_systems
    from meta_eval.statistics.significance.discriminative_power import discriminative_power
    from meta_eval.analyses.correlation import agreement_table
    from meta_eval.analyses.discpower import DiscriminativePower, pairs
    from meta_eval.analyses.informativeness import informativeness_table

    rng = np.random.default_rng(0)
    base = rng.random((8, 12))
    scores = {"A": base, "B": base + rng.normal(0, 0.05, base.shape), "C": base**2}
    dp = discriminative_power(scores, n_resamples=100)
    spread = {m: float(np.std(x)) for m, x in scores.items()}
    t = DiscriminativePower(dp, None, [], 0, ("bootstrap",), 100, 0.05, spread).compact_table()
    summary = dp.summary().set_index("metric")
    for m in scores:
        assert t.text(m, "% discriminated") == f"{100 * summary.loc[m, 'proportion']:.1f}"
        assert t.text(m, "Δ/σ") == f"{summary.loc[m, 'diff_required'] / spread[m]:.3f}"
    assert "pairs" not in t.values.columns and pairs(dp, "bootstrap") == 28  # the caption's, once
    assert not t.bold["Δ required"].any()  # only scale-free columns are marked best
    check_markdown(t.to_markdown())
    check_latex(t.to_latex())
    res = correlate_systems(scores, n_resamples=50, ci_method="normal")
    a = agreement_table(res)
    row = res.table[(res.table.metric_x == "A") & (res.table.metric_y == "C")]
    tau = row[row.coefficient == "kendall_tau_b"].iloc[0]
    sym = row[row.coefficient == "tau_ap_sym"].iloc[0]
    assert a.text("C", "A") == f"{tau.value:.3f}" and a.text("A", "C") == f"{sym.value:.3f}"
    assert a.interval("C", "A") == f"[{tau.ci_low:.3f}, {tau.ci_high:.3f}]"
    check_latex(a.to_latex())
    summary = pd.DataFrame({"metric": ["A", "A", "B", "B"], "threshold": [1, 2, 1, 2], "mean_rms": [0.1, 0.2, 0.3, 0.1],
                            "sem_rms": [0.01] * 4, "n_lists": [30, 29, 30, 29], "n_failed": [0, 1, 0, 1]})
    i = informativeness_table(summary)
    rms = ["RMS, grade ≥ 1", "s.e., grade ≥ 1", "RMS, grade ≥ 2", "s.e., grade ≥ 2"]
    # compact: a paper's columns, no solver internals; the lists per threshold, as they differ (30 and 29)
    assert list(i.values.columns) == [*rms, "lists, grade ≥ 1", "lists, grade ≥ 2"]
    assert i.text("A", "lists, grade ≥ 1") == "30" and i.text("A", "lists, grade ≥ 2") == "29"
    assert i.bold.loc["A", "RMS, grade ≥ 1"] and i.bold.loc["B", "RMS, grade ≥ 2"]
    check_latex(i.to_latex())
    same = informativeness_table(summary.assign(n_lists=30))  # one count: one column
    assert list(same.values.columns) == [*rms, "lists"]


# ------------------------------------------------------------------------------------------------ the study's tables


def _study_tables() -> list:
    """(stem, caption, PaperTable) of every compact table of the demo study's analyses (tests/test_figures.py)."""
    from tests.test_figures import study_results

    return [(t.stem, t.caption, t.compact) for result in study_results().values() for t in result.outputs
            if t.compact is not None]


def _numbers(table: PaperTable) -> np.ndarray:
    values = table.values.apply(pd.to_numeric, errors="coerce")
    numeric = values.loc[:, values.notna().any()]
    return numeric.to_numpy(dtype=float)


def test_no_table_of_zeros_without_a_reason():
    """A table whose every number is 0 says why in its caption or note (a reviewer reads six rows of zeros as a
    bug); the check itself fails on such a table without a reason."""
    def unexplained(caption: str, table: PaperTable) -> bool:
        numbers = _numbers(table)
        zeros = numbers.size > 0 and np.allclose(numbers[np.isfinite(numbers)], 0)
        return zeros and "because" not in f"{caption} {table.note or ''}"

    problems = [stem for stem, caption, table in _study_tables() if unexplained(caption, table)]
    assert not problems, problems
    assert unexplained("six rows", PaperTable(pd.DataFrame({"change": [0.0, 0.0]}, index=["AP", "Q"])))


def test_a_drop_is_a_positive_magnitude():
    """Every column that names a drop or a loss holds magnitudes (>= 0) in every table of the study."""
    problems = []
    for stem, _, table in _study_tables():
        for column in table.values.columns:
            if re.search(r"\b(drop|loss)", str(column)):
                values = pd.to_numeric(table.values[column], errors="coerce").dropna()
                if (values < 0).any():
                    problems.append((stem, column, values.min()))
    assert not problems, problems


def test_the_reusability_table_reports_drops_as_magnitudes():
    """Hand-worked: runs r1..r3 lose 0.03, gain 0.01 and keep their score under M; under N every run gains. The
    largest score drop is 0.03 under M and 0 under N (no run drops), the largest rank drop 2 and 0; the mean score
    change keeps its sign (reduced - full)."""
    from meta_eval.analyses.reusability import reusability_table
    from meta_eval.statistics.reusability import Reusability

    runs = pd.DataFrame({"metric": ["M"] * 3 + ["N"] * 3, "form": "standard", "run": ["r1", "r2", "r3"] * 2,
                         "removed": [4, 0, 2] * 2, "removed_relevant": [1, 0, 0] * 2,
                         "score_change": [-0.03, 0.01, 0.0, 0.02, 0.01, 0.005],
                         "rank_change": [2, -1, 0, -1, 0, 0]})
    grouped = runs.groupby(["metric", "form"], sort=False)
    summary = pd.DataFrame({"runs": grouped.size(), "mean_score_change": grouped["score_change"].mean(),
                            "min_score_change": grouped["score_change"].min(),
                            "mean_abs_rank_change": grouped["rank_change"].apply(lambda v: v.abs().mean()),
                            "max_rank_change": grouped["rank_change"].max(),
                            "runs_dropping": grouped["rank_change"].apply(lambda v: int((v > 0).sum()))}).reset_index()
    t = reusability_table(Reusability(runs, summary, 5))
    assert t.text("M", "largest score drop") == "0.0300" and t.text("N", "largest score drop") == "0.0000"
    assert t.text("M", "largest rank drop") == "2" and t.text("N", "largest rank drop") == "0"
    assert t.text("M", "mean score change") == "-0.0067" and t.text("N", "mean score change") == "0.0117"
    assert t.text("M", "judgments removed") == "2.0" and "because" not in t.note
