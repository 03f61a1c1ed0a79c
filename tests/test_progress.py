"""The progress helper: plain periodic lines (with time left) when the output is not a terminal, a tqdm bar when it
is, nothing when disabled; no cursor escape codes in logs."""

from __future__ import annotations

import io

import pytest

from meta_eval.core.errors import InputError
from meta_eval.core.progress import progress, progress_mode


def test_lines_mode_prints_periodic_plain_lines_with_time_left():
    out = io.StringIO()
    items = list(progress(range(5), desc="work", unit="step", file=out, interval=0.0))
    assert items == [0, 1, 2, 3, 4]
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("work:  20% (1/5 step)") and "left" in lines[0]
    assert lines[-1].startswith("work: done, 5 step in")
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()


def test_lines_mode_is_quiet_for_short_loops_and_manual_updates_work():
    out = io.StringIO()
    with progress(total=10, desc="quick", file=out) as bar:
        bar.update(4)
        bar.update(6)
    assert out.getvalue() == ""
    out = io.StringIO()
    bar = progress(total=None, desc="open-ended", unit="chunk", file=out, interval=0.0)
    bar.update(3)
    bar.close()
    bar.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith("open-ended: 3 chunk, ") and lines[1].startswith("open-ended: done")


def test_mode_follows_the_stream_and_the_environment(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv("META_EVAL_PROGRESS", raising=False)
    assert progress_mode(io.StringIO()) == "lines" and progress_mode(Tty()) == "bar"
    monkeypatch.setenv("META_EVAL_PROGRESS", "off")
    out = io.StringIO()
    assert list(progress([1, 2], file=out, interval=0.0)) == [1, 2] and out.getvalue() == ""
    monkeypatch.setenv("META_EVAL_PROGRESS", "bar")
    out = io.StringIO()
    list(progress(range(3), desc="bar", file=out))
    assert "bar:" in out.getvalue() and "0/3" in out.getvalue()  # a tqdm bar (cleared when done)


def test_disabled_and_bad_mode():
    out = io.StringIO()
    assert list(progress(range(3), enabled=False, file=out, interval=0.0)) == [0, 1, 2] and out.getvalue() == ""
    with pytest.raises(InputError, match="progress mode"):
        progress(range(3), mode="fancy")


# ---------------------------------------------------------------------------------------------- measured time left


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def fake_clock(monkeypatch):
    import meta_eval.core.progress

    clock = FakeClock()
    monkeypatch.setattr(meta_eval.core.progress, "clock", clock)
    return clock


def _lefts(text: str) -> list[str]:
    return [line.split("elapsed, ")[1] for line in text.splitlines() if "elapsed, " in line]


def test_time_left_leaves_out_the_cost_paid_before_the_first_unit(fake_clock):
    """A first unit of 10 s (imports, compiled kernels loaded), then units of 1 s: after the third unit, 7 units
    are left at 1 s each — not 7 × 12/3 = 28 s, the rate since the start."""
    out = io.StringIO()
    bar = progress(total=10, desc="work", file=out, interval=0.0, mode="lines")
    fake_clock.t = 10.0
    bar.update(1)  # one unit done: nothing measured after it yet, so the rate since the start (10 s a unit)
    fake_clock.t = 11.0
    bar.update(1)
    fake_clock.t = 12.0
    bar.update(1)
    bar.close()
    assert _lefts(out.getvalue()) == ["about 01:30 left", "about 00:08 left", "about 00:07 left"]


def test_restart_rate_measures_after_the_workers_start(fake_clock):
    """Two units here in 1 s, then 15 s of workers starting: the time left is not extrapolated from that pause;
    until a unit completes after it none is given, then it is measured from there."""
    from meta_eval.core.progress import restart_rate

    out = io.StringIO()
    bar = progress(total=100, desc="MEM", file=out, interval=0.0, mode="lines")
    fake_clock.t = 0.5
    bar.update(2)
    fake_clock.t = 1.0
    bar.update(2)
    fake_clock.t = 16.0
    restart_rate(bar)  # what parallel_map does when the first result of its workers arrives
    bar.update(2)
    fake_clock.t = 18.0
    bar.update(10)  # 12 units since the restart (the workers' first 2, then 10) in 2 s: 84 left, 1/6 s each
    restart_rate(object())  # anything without the method (a tqdm bar, a silent display) is left alone
    assert _lefts(out.getvalue())[-2:] == ["time left: measuring", "about 00:14 left"]


def test_a_loop_longer_than_the_interval_ends_with_a_line_even_if_it_printed_none(fake_clock):
    out = io.StringIO()
    bar = progress(total=2, desc="two", unit="step", file=out, interval=10.0, mode="lines")
    fake_clock.t = 8.0
    bar.update(1)
    fake_clock.t = 16.0
    bar.update(1)  # the last unit: its line would say 100 %, the final line says it
    bar.close()
    assert out.getvalue() == "two: done, 2 step in 00:16\n"


def test_stage_progress_scales_the_estimates_by_the_measured_speed(fake_clock):
    """Three stages of 10, 30 and 60 estimated seconds and a report of 5: the first takes 30 s (three times its
    estimate), so the speed is (30 + 1) / (10 + 1) (shrunk toward 1 by 1 s of prior) and the time left
    (30 + 60 + 5) × 31/11 = 267.7 s; nothing is a share of the number of stages."""
    from meta_eval.core.progress import PRIOR_S, StageProgress

    assert PRIOR_S == 1.0
    out = io.StringIO()
    stages = StageProgress([("a", 10.0), ("b", 30.0), ("c", 60.0)], closing=("report", 5.0), file=out,
                           mode="lines")
    stages.begin("a")
    fake_clock.t = 30.0
    stages.begin("b")
    fake_clock.t = 40.0
    assert stages.left(40.0) == pytest.approx((30 + 60 + 5) * 31 / 11 - 10)
    stages.begin("c")
    stages.begin("report")
    stages.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == ("study: 3 analyses and the report: about 01:45 of one core's work by their cost models (the "
                        "time left follows the speed measured as they finish)")
    assert lines[1] == "study: a (1/3, estimated 00:10); then 2 more analyses and the report: about 01:45 left"
    assert lines[2] == ("study: b (2/3, estimated 01:24); a took 00:30 (estimated 00:10); then 1 more analysis "
                        "and the report: about 04:27 left")
    # b took 10 s of its 30: the speed is now (30 + 10 + 1) / (10 + 30 + 1) = 1
    assert lines[3] == ("study: c (3/3, estimated 01:00); b took 00:10 (estimated 01:24); then the report: about "
                        "01:05 left")
    assert lines[-1] == "study: done in 00:40 (estimated 01:45 at the start)"


def test_the_time_left_is_never_less_than_the_work_going_on_beside_the_stages(fake_clock):
    """Figures drawn in the background: the report waits for them, so 50 s of them left with 10 s of stages and
    a report of 2 s give 52 s left (at speed 1), and the report's own estimate once it begins."""
    from meta_eval.core.progress import StageProgress

    out = io.StringIO()
    backlog = [50.0]
    stages = StageProgress([("a", 10.0)], closing=("report", 2.0), file=out, mode="lines",
                           beside=lambda: backlog[0])
    assert stages.left(0.0) == pytest.approx(52.0)
    backlog[0] = 1.0
    assert stages.left(0.0) == pytest.approx(12.0)
    stages.begin("report", estimate=30.0)
    assert stages.left(0.0) == pytest.approx(30.0)


def test_stage_progress_names_what_has_no_estimate(fake_clock):
    from meta_eval.core.progress import StageProgress

    out = io.StringIO()
    stages = StageProgress([("a", 10.0), ("mine", None)], closing=("report", 1.0), file=out, mode="lines")
    stages.begin("a")
    fake_clock.t = 10.0
    stages.begin("mine")
    stages.begin("report", estimate=42.0)  # measured now (a backlog of figures): used as it is
    stages.close(completed=False)
    stages.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == ("study: 2 analyses and the report: about 00:11 of one core's work by their cost models, 1 "
                        "of unknown cost (mine) (the time left follows the speed measured as they finish)")
    assert lines[2].startswith("study: mine (2/2, cost unknown); a took 00:10 (estimated 00:10); then the report")
    assert lines[3] == "study: report (estimated 00:42); mine took 00:00; about 00:42 left"
    assert len(lines) == 4  # stopped by an error: no "done" line, and closing twice prints nothing


def test_stage_progress_off_prints_nothing_and_a_bar_is_cleared(fake_clock):
    from meta_eval.core.progress import StageProgress

    out = io.StringIO()
    stages = StageProgress([("a", 1.0)], file=out, enabled=False)
    stages.begin("a")
    stages.close()
    assert out.getvalue() == "" and stages.measured == {"a": 0.0}
    stages = StageProgress([("a", 1.0), ("b", 3.0)], file=out, mode="bar")
    stages.begin("a")
    fake_clock.t = 1.0
    stages.begin("b")
    assert stages.bar.n == pytest.approx(25.0)  # a quarter of the estimated work, not half of the stages
    stages.close()
    assert "study 2/2: b" in out.getvalue() and "about 00:03 left" in out.getvalue()  # tqdm's rendering


@pytest.mark.parametrize("measured", [
    {"small": (10.0, 1.2), "medium": (1000.0, 3.0), "large": (1e5, 150.0)},
    {"flat": (1.0, 5.0), "flat too": (1e6, 5.5)},  # the per-unit cost comes out negative: fixed cost only
    {"through zero": (10.0, 0.1), "steep": (1000.0, 10.0), "steeper": (2000.0, 19.0)},
    {"one run": (50.0, 2.0)},
])
def test_cost_model_fit_is_the_non_negative_least_squares_of_the_relative_errors(measured):
    """CostModel.fit against scipy.optimize.nnls on the same problem: rows (1/t, u/t), target 1."""
    import numpy as np
    from scipy.optimize import nnls

    from meta_eval.core.progress import CostModel

    model = CostModel.fit("units", float, measured)
    u, t = np.array(list(measured.values())).T
    (fixed, per_unit), _ = nnls(np.column_stack([1 / t, u / t]), np.ones_like(t))
    assert (model.fixed_s, model.per_unit_s) == pytest.approx((fixed, per_unit), rel=1e-9, abs=1e-12)
    assert model.seconds(100.0) == pytest.approx(fixed + 100.0 * per_unit)
    assert model.measured == measured
