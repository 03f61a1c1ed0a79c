"""Honest progress of a study (issue 35), read from its plain progress lines on the demo collection: the first
estimate of the whole study is within a stated factor of its measured time, every display only moves forward,
the report phase says what it does, and informativeness names every metric it solves beyond those under study.

The study runs in this process (``jobs=1``) on the CPU clock (``time.process_time``): a busy machine stretches the
wall clock, not the work, so the comparison of an estimate with the measured time does not depend on the load. The
cost models are fitted on one machine; on a CPU faster or slower than it every analysis takes a like share more or
less, so the first estimate is compared with the measured total after that common factor (each analysis's measured
time over its model's estimate, the median), which the lines' times give, each line stamped with the CPU clock.
The estimates are of the study's work: numba's one-time compilation of MEM's kernels on a fresh installation is
not part of it (the cost models are fitted with the kernels cached), so the test compiles them first.
"""

from __future__ import annotations

import io
import re
import sys
import time

import numpy as np
import pytest

import meta_eval as me
import meta_eval.core.progress as progress_module
from meta_eval.analyses import analyses
from meta_eval.orchestration.study import StudyOptions, run_study

#: The first estimate of the whole study is within this factor of its measured time (either way).
FACTOR = 3.0
#: The study of the test: every analysis of the default study with its quick parameters (a few seconds each).
QUICK = ("discpower", "split-half", "correlation", "incomplete-judgments", "reusability", "informativeness")


@pytest.fixture(scope="module")
def stream(tmp_path_factory) -> "_Stamped":
    """What the study wrote on stderr, each line stamped with the CPU clock."""
    from meta_eval.statistics.maxent.solver import warm_up

    params = {a.name: dict(a.quick) for a in analyses() if a.name in QUICK}
    # MEM's kernels compiled (once per installation, then loaded from numba's cache) before the study is clocked:
    # on a fresh checkout their compilation, in a thread of this process, costs several times the study's CPU
    warm_up()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("META_EVAL_PROGRESS", "lines")
        patch.setattr(progress_module, "clock", time.process_time)
        patch.setattr(progress_module, "LINE_INTERVAL", 0.0)  # every update printed
        err = _Stamped()
        patch.setattr(sys, "stderr", err)
        run_study(me.demo_collection(), tmp_path_factory.mktemp("progress") / "study",
                  StudyOptions(params=params, n_resamples=50), progress=True, jobs=1)
    return err


@pytest.fixture(scope="module")
def lines(stream) -> list[str]:
    """The study's progress lines."""
    return stream.getvalue().splitlines()


@pytest.fixture(scope="module")
def stamps(stream) -> list[tuple[float, str]]:
    """(CPU clock, line) of every progress line, in order."""
    return stream.stamps


class _Stamped(io.StringIO):
    """A stream that notes the CPU clock when each line is written."""

    def __init__(self):
        super().__init__()
        self.stamps: list[tuple[float, str]] = []

    def write(self, text: str) -> int:
        self.stamps.extend((time.process_time(), line) for line in text.splitlines() if line)
        return super().write(text)


def _seconds(text: str) -> float:
    """``01:05`` or ``1:01:05`` as seconds."""
    parts = [int(p) for p in text.split(":")]
    return float(sum(p * 60 ** k for k, p in enumerate(reversed(parts))))


def test_the_first_estimate_is_within_the_factor_of_the_measured_total(lines, stamps):
    """The first estimate of the whole study, times this CPU's speed against the models' (the median over the
    analyses of measured / estimated seconds), is within :data:`FACTOR` of the measured total."""
    from meta_eval.analyses import AnalysisData
    from meta_eval.orchestration.study import estimated_seconds, study_plan

    assert lines[0].startswith("study: 10 analyses and the report: about ")
    first = next(line for line in lines if line.startswith("study: ") and line.endswith(" left"))
    estimate = _seconds(re.search(r"about (\S+) left", first).group(1))
    starts = [(t, re.match(r"study: (\S+) \(\d+/10, ", line).group(1)) for t, line in stamps
              if re.match(r"study: \S+ \(\d+/10, ", line)]
    ends = [t for t, line in stamps if line.startswith("study: report (estimated ")]
    measured = {name: end - start for (start, name), end in zip(starts, [t for t, _ in starts[1:]] + ends)}
    total = stamps[-1][0] - stamps[0][0]
    data = AnalysisData.from_collection(me.demo_collection(), ["AP", "nDCG@10", "Q", "ERR", "GAP", "nDCG"],
                                        against=["GAP", "nDCG"])
    plan, _ = study_plan(data, StudyOptions(params={a.name: dict(a.quick) for a in analyses() if a.name in QUICK},
                                            n_resamples=50))
    modelled = {decl.name: estimated_seconds(decl, data, params) for decl, params in plan}
    ratios = [measured[name] / seconds for name, seconds in modelled.items() if seconds and seconds >= 0.2]
    assert len(ratios) >= 4, modelled  # the speed is read off the analyses that take a measurable time
    speed = float(np.median(ratios))
    assert total / FACTOR <= estimate * speed <= total * FACTOR, (estimate, speed, total, measured, modelled)


def test_the_study_line_counts_analyses_with_their_times_and_what_follows(lines):
    staged = [line for line in lines if re.match(r"study: \S+ \(\d+/10, ", line)]
    assert [int(re.search(r"\((\d+)/10", line).group(1)) for line in staged] == list(range(1, 11))
    assert "took" not in staged[0] and all(" took " in line for line in staged[1:])
    assert staged[0].endswith(" left") and "then 9 more analyses and the report: about " in staged[0]
    assert "then 1 more analysis and the report" in staged[-2] and "then the report: about" in staged[-1]
    assert not any("%" in line for line in lines if line.startswith("study:"))  # never a share of the stages


def test_every_display_moves_forward(lines):
    """Within each display (until its final line), the share done and the count of units never go back."""
    last: dict[str, tuple[float, float]] = {}
    for line in lines:
        m = re.match(r"(.+?): +(\d+)%(?: \((\d+)/\d+ [^)]*\))?, ", line)
        if m is None:
            if re.match(r".+?: done", line):
                last.pop(line.split(": done")[0], None)
            continue
        desc, share, count = m.group(1), float(m.group(2)), float(m.group(3) or 0)
        assert (share, count) >= last.get(desc, (0.0, 0.0)), line
        last[desc] = (share, count)
    assert any("MEM" in line for line in lines)  # the engines' own displays were read too


def test_the_report_phase_says_what_it_does(lines):
    report = [k for k, line in enumerate(lines) if line.startswith("study: report (estimated ")]
    assert len(report) == 1 and "informativeness took" in lines[report[0]]
    assert lines[-1].startswith("study: done in ")


def test_informativeness_names_what_it_adds_and_solves_what_it_names(lines):
    (said,) = [line for line in lines if line.startswith("meta-eval: informativeness: solving ")]
    assert said.startswith("meta-eval: informativeness: solving 10 metrics, estimated in seconds of one core: "
                           "4 under study (AP, nDCG@10, Q, ERR: ")
    assert ", 2 reference(s) (GAP, nDCG: " in said and "--against none leaves them out" in said
    assert ("and 4 for GAP over its g grid and the GAP paper's Figure 2 (GAP(g=0,1), GAP(g=0.5,0.5), GAP(g=1,0), "
            "nDCG(gain=exp): ") in said and "--informativeness-g-grid 0" in said
    # the MEM displays count what the line names: the 6 of the analysis, then the 4 added
    solved = [m.group(1) for line in lines if (m := re.match(r"MEM (\d+) metric\(s\): done", line))]
    assert solved == ["6", "4"]


def test_every_analysis_of_the_default_study_has_a_cost_model_that_counts_these_data(tmp_path, monkeypatch):
    """An estimate that fails is shown as "unknown cost" rather than stopping a study; the built-in analyses must
    never need that: each counts its units on the demo and gets a positive estimate (with an empty MEM cache:
    distributions already cached cost nothing)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    from meta_eval.analyses import AnalysisData
    from meta_eval.orchestration.study import FIGURE_COST, REPORT_COST, estimated_seconds, study_plan

    data = AnalysisData.from_collection(me.demo_collection(), ["AP", "nDCG@10", "Q", "ERR", "GAP", "nDCG"],
                                        against=["GAP", "nDCG"])
    plan, _ = study_plan(data, StudyOptions())
    assert len(plan) == 10
    for decl, params in plan:
        units = decl.cost.count(data, params)
        assert units > 0 and decl.cost.seconds(data, params) == estimated_seconds(decl, data, params) > 0, decl.name
        assert decl.cost.measured, decl.name  # the runs it was fitted on, stated beside it
    assert REPORT_COST.seconds(len(plan)) > 0
    assert FIGURE_COST.seconds(1) > 0 and FIGURE_COST.fixed_s == 0 and FIGURE_COST.measured  # 1 figure: 1 share


def test_the_background_writer_shows_the_figures_written_and_measures_their_cost(tmp_path, monkeypatch, capsys):
    """What the report phase waits for on several cores: a line per figure written (of all handed to the writer),
    and the backlog at the measured time per figure."""
    from matplotlib.figure import Figure

    from meta_eval.rendering.figure_style import BackgroundWriter

    monkeypatch.setenv("META_EVAL_PROGRESS", "lines")
    monkeypatch.setattr(progress_module, "LINE_INTERVAL", 0.0)
    writer = BackgroundWriter()
    try:
        assert writer.backlog() == (0, None)  # nothing handed over, nothing measured
        for k in range(3):
            fig = Figure()
            fig.subplots().plot(range(10 * (k + 1)))
            writer.save(fig, tmp_path / f"f{k}", ("png",), dpi=50)
        waiting, seconds = writer.backlog()
        assert 0 <= waiting <= 3 and (seconds is None) == (waiting == 3)
        writer.wait(progress=True)
        assert writer.backlog() == (0, 0.0) and len(writer._seconds) == 3 and min(writer._seconds) > 0
    finally:
        writer.close()
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1].startswith("report: figures: done, 3 figure in ")
    counts = [int(re.search(r"\((\d)/3 figure\)", line).group(1)) for line in lines[:-1]]
    assert counts == sorted(counts) and all(1 <= c <= 3 for c in counts)
    assert all((tmp_path / f"f{k}.png").is_file() for k in range(3))
