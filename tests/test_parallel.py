"""meta_eval.core.parallel: the same results, in task order, whatever the engine and the number of workers."""

from __future__ import annotations

import numpy as np
import pytest

import meta_eval as me
from meta_eval.statistics.significance.discriminative_power import discriminative_power
from meta_eval.core.parallel import check_scheduler, parallel_map, resolve_jobs
from meta_eval.core.resampling import bootstrap_indices


def test_results_in_task_order_and_identical_for_any_worker_count():
    tasks = [5, 7, 11, 13, 17]
    common = dict(n_resamples=50, seed=3)
    one = parallel_map(bootstrap_indices, tasks, common=common, jobs=1, progress=False)
    two = parallel_map(bootstrap_indices, tasks, common=common, jobs=2, progress=False)
    assert [a.shape for a in one] == [(n, 50) for n in tasks]
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


def test_large_common_arrays_reach_the_workers():
    big = np.arange(3_000_000, dtype=np.float64)  # memory-mapped by joblib, not copied per task
    tasks = [np.array([1.5, 2_999_998.25]), np.array([10.0])]
    out = parallel_map(np.interp, tasks, common=dict(xp=big, fp=2 * big), jobs=2, progress=False)
    np.testing.assert_array_equal(out[0], [3.0, 5_999_996.5])
    np.testing.assert_array_equal(out[1], [20.0])


def test_discriminative_power_is_the_same_on_two_workers():
    col = me.demo_collection()
    scores = me.score(col, ["AP", "nDCG", "P@10"])
    kw = dict(methods=("bootstrap", "tukey", "ttest"), n_resamples=200, seed=1)
    one = discriminative_power(scores, col.systems, jobs=1, **kw)
    two = discriminative_power(scores, col.systems, jobs=2, **kw)
    for key, test in one.tests.items():
        np.testing.assert_array_equal(test.asl, two.tests[key].asl)
        np.testing.assert_array_equal(test.diff_required, two.tests[key].diff_required)  # NaN for ttest


def test_options_are_checked():
    assert resolve_jobs(3) == 3 and resolve_jobs(None) >= 1 and resolve_jobs(-1) >= 1
    assert check_scheduler("local") == "local" and check_scheduler("tcp://127.0.0.1:8786")
    with pytest.raises(me.InputError, match="scheduler must be 'local' or a Dask scheduler address"):
        check_scheduler("127.0.0.1:8786")
    with pytest.raises(me.InputError, match="jobs must be an integer"):
        resolve_jobs(1.5)


class _Recorder:
    """Stands in for the progress display: records the total and every update."""

    def __init__(self, *args, total=None, unit="", **kwargs):
        self.total, self.unit, self.steps = total, unit, []

    def update(self, n=1):
        self.steps.append(n)

    def set_description(self, desc):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


@pytest.mark.parametrize("jobs", [1, 2, None])
def test_weighted_progress_counts_the_work_not_the_tasks(monkeypatch, jobs):
    """Tasks of uneven cost, costliest first: the display advances by each task's share of the work, so the time
    left extrapolates from work done (counting tasks announced 5 minutes for 22 s of MEM)."""
    import meta_eval.core.progress

    bars = []
    monkeypatch.setattr(meta_eval.core.progress, "progress", lambda **kw: bars.append(_Recorder(**kw)) or bars[-1])
    weights = [8.0, 4.0, 2.0, 1.0, 1.0]
    out = parallel_map(abs, [-1, -2, -3, -4, -5], jobs=jobs, weights=weights)
    assert out == [1, 2, 3, 4, 5]
    (bar,) = bars
    assert bar.total == 100.0 and bar.unit == "% of the work"
    assert bar.steps == pytest.approx([100 * w / 16 for w in weights])
    with pytest.raises(ValueError, match="weights must be 5 finite non-negative numbers"):
        parallel_map(abs, [-1, -2, -3, -4, -5], jobs=1, weights=[1, 2])


class _Clock:
    """A clock the tasks advance by their nominal duration, so the automatic choice sees the same times whatever
    the machine's load (a test of the rule, not of this machine's speed)."""

    now = 0.0

    @classmethod
    def perf_counter(cls) -> float:
        return cls.now

    @staticmethod
    def sleep(seconds: float) -> None:
        pass


def _pid_taking(seconds: float) -> int:
    import os

    _Clock.now += seconds  # only the tasks run in this process are timed by the automatic choice
    return os.getpid()


def _machine(monkeypatch, cores: int, idle: float, load: float = 1.0) -> None:
    """A machine of ``cores`` usable cores on which ``idle`` of them sit idle while the first tasks run here, at a
    one-minute load average of ``load``."""
    import meta_eval.core.parallel as par

    monkeypatch.setattr(par, "time", _Clock)
    monkeypatch.setattr(par, "usable_cores", lambda: cores)
    monkeypatch.setattr(par, "IdleCores", lambda: (lambda: idle))
    monkeypatch.setattr(par, "load_average", lambda: load)


def test_automatic_workers_discount_the_first_tasks_one_time_costs(monkeypatch):
    """The automatic choice extrapolates the work left from the second task, not the first (which also pays lazy
    imports and compiled kernels loaded in this process): a slow first task among quick ones stays here, and work
    that is long throughout goes to the workers."""
    import os

    import meta_eval.core.parallel as par

    _machine(monkeypatch, cores=2, idle=1.0)
    monkeypatch.setattr(par, "WORKER_START_S", 0.5)  # workers pay off beyond 1 s of work left on 2 of them
    quick_after_slow = parallel_map(_pid_taking, [0.8] + [0.0] * 9, jobs=None, progress=False)
    assert set(quick_after_slow) == {os.getpid()}  # the first task alone extrapolated to 7.2 s: workers
    long_throughout = parallel_map(_pid_taking, [0.3] * 10, jobs=None, progress=False)
    assert set(long_throughout[:2]) == {os.getpid()} and os.getpid() not in long_throughout[2:]


@pytest.mark.parametrize("idle, load, here", [(0.0, 1.0, True), (0.5, 1.0, True), (0.85, 1.0, False),
                                              (0.85, 1.5, True), (0.85, 1.15, False)])
def test_automatic_workers_only_on_cores_left_idle(monkeypatch, idle, load, here):
    """Work long enough for workers stays in this process when the other cores were busy with other processes
    while its first tasks ran (two CPU-bound processes beside it on 2 cores), or idle less than FREE_SHARE of the
    time, or when the last minute kept them busy (a load average of 1.5: this process and half a core of others'
    work); a core idle that share of the time, and over the last minute, gets a worker."""
    import os

    import meta_eval.core.parallel as par

    _machine(monkeypatch, cores=2, idle=idle, load=load)
    monkeypatch.setattr(par, "WORKER_START_S", 0.5)
    pids = parallel_map(_pid_taking, [0.3] * 10, jobs=None, progress=False)
    assert (set(pids) == {os.getpid()}) == here


def test_free_cores_count_this_process_and_the_idle_ones(monkeypatch):
    import meta_eval.core.parallel as par

    monkeypatch.setattr(par, "usable_cores", lambda: 4)
    monkeypatch.setattr(par, "load_average", lambda: 1.0)
    assert par.free_cores(0.0) == 1  # every core busy: still one
    assert par.free_cores(0.0, busy_here=1) == 1
    assert par.free_cores(0.7, busy_here=1) == 1  # a core idle 70 % of the time is not free
    assert par.free_cores(0.9, busy_here=1) == 2  # at 90 %, it is
    assert par.free_cores(1.7, busy_here=1) == 2  # one core idle, the other 70 % of the time
    assert par.free_cores(2.85, busy_here=1) == 4
    assert par.free_cores(3.0, busy_here=1) == 4  # no more than the usable cores
    monkeypatch.setattr(par, "load_average", lambda: 2.6)  # this process and 1.6 cores of others' in the last minute
    assert par.free_cores(3.0, busy_here=1) == 2
    assert par.resolve_jobs(-1) == 4 and par.resolve_jobs(3) == 3


def test_idle_cores_from_proc_stat(tmp_path):
    """/proc/stat's per-core ticks (user nice system idle iowait irq softirq steal ...): the idle share of each
    usable core between two readings, summed; the machine-wide "cpu" line and other lines are ignored."""
    from meta_eval.core.parallel import cpu_times, idle_share

    first = ("cpu  400 0 100 500 0 0 0 0 0 0\ncpu0 100 0 50 250 0 0 0 0 0 0\n"
             "cpu1 300 0 50 250 0 0 0 0 0 0\nintr 1 2 3\nctxt 99\n")
    second = ("cpu  600 0 100 800 0 0 0 0 0 0\ncpu0 100 0 50 350 0 0 0 0 0 0\n"  # cpu0: 100 ticks, all idle
              "cpu1 360 0 60 260 10 0 0 10 0 0\nintr 1 2 3\n")  # cpu1: 100 ticks, 10 idle + 10 iowait, 10 stolen
    start, end = cpu_times(first), cpu_times(second)
    assert start == {0: (250, 400), 1: (250, 600)}
    assert idle_share(start, end, None) == pytest.approx(1.0 + 0.2)
    assert idle_share(start, end, {1}) == pytest.approx(0.2)  # only the cores this process may use
    assert idle_share(start, start, None) == 0.0  # no tick counted: busy
    stat = tmp_path / "stat"
    stat.write_text(first)
    meter = par_meter(stat)
    stat.write_text(second)
    assert meter() == pytest.approx(idle_share(start, end, _affinity()))


def par_meter(path):
    from meta_eval.core.parallel import IdleCores

    return IdleCores(str(path))


def _affinity():
    import os

    return set(os.sched_getaffinity(0))


def _ends_its_process(task: int) -> int:
    import os

    os._exit(3)


def test_a_worker_that_dies_is_one_clear_error():
    """A worker process that ends (a crash, the memory killer, a plug-in's os._exit) was joblib's traceback, status
    1: it is meta-eval's error, with the exit code and what to do."""
    from meta_eval.core.errors import WorkerLost

    with pytest.raises(WorkerLost, match=r"a worker process ended before its work was done \(exit codes "
                                         r"\{EXIT\(3\)(, EXIT\(3\))*\}.*rerun with --jobs 1"):
        parallel_map(_ends_its_process, [1, 2, 3, 4], jobs=2, progress=False)
    assert parallel_map(abs, [-1, -2], jobs=2, progress=False) == [1, 2]  # the next map starts afresh


def test_what_a_lost_cluster_raises_is_told_from_any_other_error():
    from concurrent.futures import CancelledError

    from meta_eval.core.parallel import _worker_lost

    class FutureCancelledError(CancelledError):  # distributed's, by its name and base
        pass

    assert "dropped a task" in _worker_lost(FutureCancelledError("x"))
    assert _worker_lost(ValueError("a plug-in's own error")) is None
