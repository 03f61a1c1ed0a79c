"""One execution layer for meta-eval's embarrassingly parallel work: every core through joblib, or a Dask cluster.

:func:`parallel_map` runs ``func(task, **common)`` for every task and returns the results in task order:

* ``jobs=1`` (or a single task): a plain loop in this process (each task on one BLAS thread, as in workers);
* otherwise, by default, joblib's loky worker processes (``jobs`` of them; ``None``: chosen from the work and the
  cores actually free, :func:`parallel_map`) — processes, not threads, because the work is many medium-sized numpy
  calls that contend on the GIL;
* ``scheduler="local"``: a Dask ``LocalCluster`` of ``jobs`` single-threaded worker processes, made once per
  process; ``scheduler="tcp://HOST:PORT"``: the Dask cluster whose scheduler listens there (``dask scheduler`` and
  ``dask worker`` on the machines). Dask needs the ``meta-eval[dask]`` extra.

Results never depend on the engine or the number of workers: randomised tasks carry their own seeds (a task's
seed is part of the task, never derived from the worker), and inside workers BLAS and numba run on one thread
(threadpoolctl), so no floating-point sum depends on how a library split it.

Large inputs go in ``common``: joblib memory-maps the numpy arrays it holds (each worker maps the same file
instead of receiving a copy per task), Dask scatters it to every worker once, as one object under a key of its own
(never under names such as ``seed`` that another map of the same cluster could share and release). Tasks
themselves should be small (slices, indices, seeds): pass chunks, not the whole batch.

Workers die with their parent: each worker watches its parent process and exits when it is gone (a SIGKILLed
command leaves no worker behind), ignores Ctrl-C (the parent handles it), and :func:`terminate_workers` stops them
all when a command ends abnormally. A Dask scheduler is reached (or refused) before any work
(:func:`connect_scheduler`), and a local cluster keeps its scratch space in a private temporary folder.
"""

from __future__ import annotations

import atexit
import math
import os
import re
import signal
import sys
import threading
import time
from typing import Any, Callable, Sequence

from meta_eval.core.errors import InputError, MetaEvalWarning, WorkerLost

__all__ = ["parallel_map", "resolve_jobs", "usable_cores", "usable_jobs", "free_cores", "IdleCores", "check_scheduler",
           "connect_scheduler", "close_clusters", "terminate_workers", "init_worker"]

_CLIENTS: dict[tuple[str, int], Any] = {}
_SCRATCH: list[str] = []  # private scratch folders of the local clusters this process made
#: Seconds to wait for a Dask scheduler before giving up (each command checks it once, before any work).
CONNECT_TIMEOUT = 10


def resolve_jobs(jobs: int | None) -> int:
    """The number of workers: ``None`` or 0 -> the cores free now (:func:`free_cores`); negative -> usable cores
    + 1 + jobs (joblib's convention)."""
    if jobs is None or jobs == 0:
        return free_cores()
    if isinstance(jobs, bool) or not isinstance(jobs, int):
        raise InputError(f"jobs must be an integer (workers; 0 or None: every free core); got {jobs!r}")
    return max(1, usable_cores() + 1 + jobs) if jobs < 0 else jobs


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity (``os.sched_getaffinity``: a container's, a batch
    system's or ``taskset``'s limit), else every core of the machine."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


#: Seconds :func:`free_cores` watches the cores for (when not given a measure of its own).
SAMPLE_S = 0.1
#: A core counts as free when it was idle this share of the time (the rest: other processes' bursts).
FREE_SHARE = 0.8


def free_cores(idle: float | None = None, *, busy_here: int = 0) -> int:
    """The workers that would find a core of their own: the usable cores that sit idle (another user's processes
    run on the others), and that the last minute left idle too, at least 1.

    A core counts when it was idle :data:`FREE_SHARE` of an interval just measured, and when the one-minute load
    average leaves it free: on a machine shared with other users, whose work comes and goes, a core idle for a
    moment is soon busy again, and workers started then compete with them for the cores (the demo study took
    1.7 times as long with them at a load average of 3 on 2 cores).

    Parameters
    ----------
    idle : float, optional
        Cores that were idle over some interval (:class:`IdleCores`); default: measured now over
        :data:`SAMPLE_S` seconds.
    busy_here : int
        Cores this process kept busy over that interval (they are its workers' once it waits for them).
    """
    if idle is None:
        meter = IdleCores()
        time.sleep(SAMPLE_S)
        idle = meter()
    others = max(0.0, load_average() - 1.0)  # the runnable processes of the last minute but (at most) this one
    recent = usable_cores() - math.ceil(others - (1 - FREE_SHARE))
    return max(1, min(usable_cores(), recent, busy_here + int(idle + (1 - FREE_SHARE))))


def load_average() -> float:
    """The one-minute load average (runnable processes), 0 where the system does not give it."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - Windows
        return 0.0


class IdleCores:
    """How many of this process's usable cores sat idle since it was made: per core its idle share of the
    interval (``/proc/stat``: idle and I/O-wait time over all the time counted, steal included), summed.

    Without ``/proc/stat`` (macOS, Windows) the estimate is the usable cores minus the one-minute load average,
    which lags a change of load by about a minute."""

    def __init__(self, stat: str = "/proc/stat"):
        self._stat = stat
        self._start = cpu_times(self._read())

    def __call__(self) -> float:
        end = cpu_times(self._read())
        if not self._start or not end:
            return max(usable_cores() - load_average(), 0.0)
        return idle_share(self._start, end, _affinity())

    def _read(self) -> str:
        try:
            with open(self._stat) as f:
                return f.read()
        except OSError:
            return ""


def cpu_times(stat: str) -> dict[int, tuple[int, int]]:
    """Per core of ``/proc/stat``'s text, (idle, total) time in clock ticks: idle is ``idle + iowait``, total the
    sum of ``user nice system idle iowait irq softirq steal`` (guest time is inside user time)."""
    out = {}
    for line in stat.splitlines():
        name, *fields = line.split()
        if name.startswith("cpu") and name[3:].isdigit() and len(fields) >= 4:
            ticks = [int(x) for x in fields[:8]]
            out[int(name[3:])] = (ticks[3] + (ticks[4] if len(ticks) > 4 else 0), sum(ticks))
    return out


def idle_share(start: dict[int, tuple[int, int]], end: dict[int, tuple[int, int]], cores: set[int] | None) -> float:
    """Cores that were idle between two :func:`cpu_times` readings: Σ over ``cores`` (None: all) of the idle share
    of each core's time. A core that counted no time (the readings within one clock tick) counts as busy."""
    total = 0.0
    for core in end.keys() & start.keys():
        if cores is not None and core not in cores:
            continue
        idle, ticks = end[core][0] - start[core][0], end[core][1] - start[core][1]
        total += idle / ticks if ticks > 0 else 0.0
    return total


def _affinity() -> set[int] | None:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - macOS, Windows
        return None


#: Dask's default scheduler port, taken when an address gives none (``tcp://HOST``), as Dask itself does.
DASK_PORT = 8786
# SCHEME://HOST[:PORT][/]: HOST a name, an IPv4 address or a bracketed IPv6 one
_ADDRESS = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://"
                      r"(?P<host>\[[^\[\]/]*\]|[^\[\]/:]*)(?::(?P<port>[^/]*))?/?")
_SCHEMES = ("tcp", "tls", "ws", "wss")


class WorkersNote(MetaEvalWarning):
    """How many workers run, when it is not what was asked (a line on stderr)."""


_CUT_SAID: set[tuple[int, int]] = set()  # (--jobs asked, cores usable) already said in this process


def usable_jobs(n_jobs: int, asked: int | None = None) -> int:
    """``n_jobs`` workers, at most as many as the cores this process may use (:func:`usable_cores`). More worker
    processes than cores only take turns on them, each with its own start-up and copy of the data: ``-j 200`` on 2
    cores ran 10 times longer than the default. A number the user asked for (``asked``) that is cut is said once."""
    if n_jobs <= 1:
        return n_jobs
    usable = usable_cores()
    if n_jobs > usable and asked is not None and asked > 0 and (asked, usable) not in _CUT_SAID:
        import warnings

        _CUT_SAID.add((asked, usable))  # a command asks here for its cluster and again for its tasks
        warnings.warn(f"--jobs {asked}: this machine lets meta-eval use {usable} core(s); running {usable} "
                      "worker(s) (more would only take turns on them)", WorkersNote, stacklevel=3)
    return min(n_jobs, usable)


def check_scheduler(scheduler: str | None) -> str | None:
    """``None`` (joblib), ``"local"`` (a Dask LocalCluster) or a Dask scheduler address ``SCHEME://HOST[:PORT]``,
    returned in its one spelling ``scheme://host:port``: the scheme in lower case (``TCP://`` is ``tcp://``), a
    trailing ``/`` dropped, Dask's default port 8786 when none is given.

    Raises
    ------
    InputError
        Not ``local`` nor an address; a malformed one (``tcp://[::1``, no host, a port outside 1..65535); a scheme
        Dask cannot reach from another process (``inproc://``) or does not know; ``tls://``/``wss://`` without the
        certificates Dask's configuration must name.
    """
    if scheduler is None or scheduler == "local":
        return scheduler
    hint = "a Dask scheduler address such as tcp://127.0.0.1:8786"
    if isinstance(scheduler, str) and scheduler.lower().startswith("inproc://"):
        raise InputError(f"scheduler {scheduler!r}: an inproc:// address lives inside one process and cannot be "
                         "reached from meta-eval; use 'local' or tcp://HOST:PORT")
    match = _ADDRESS.fullmatch(scheduler) if isinstance(scheduler, str) else None
    if match is None:
        bracket = " (an IPv6 address is written in brackets: tcp://[::1]:8786)" if "[" in str(scheduler) else ""
        raise InputError(f"scheduler must be 'local' or {hint}; got {scheduler!r}{bracket}")
    scheme, host, port = match["scheme"].lower(), match["host"], match["port"]
    if not host:
        raise InputError(f"scheduler {scheduler!r}: no host; expected {hint}")
    if scheme not in _SCHEMES:
        raise InputError(f"scheduler {scheduler!r}: unknown scheme {scheme}://; expected {hint} "
                         f"(schemes: {', '.join(_SCHEMES)})")
    if host.startswith("["):
        import ipaddress  # (here: the readers import this module)

        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise InputError(f"scheduler {scheduler!r}: {host} is not an IPv6 address") from None
    if port is not None and not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        raise InputError(f"scheduler {scheduler!r}: the port must be a number in 1..65535; got {port!r}")
    if scheme in ("tls", "wss"):
        _check_tls(scheduler)
    return f"{scheme}://{host}:{int(port) if port is not None else DASK_PORT}"


def _check_tls(scheduler: str) -> None:
    """A TLS address needs the client's certificate, key and CA from Dask's configuration (read by Dask's
    ``Security()``): without them Dask fails deep inside the connection."""
    try:
        import dask
    except ImportError:
        return  # the missing Dask is said when the connection is made
    tls = dask.config.get("distributed.comm.tls", {}) or {}
    client = tls.get("client") or {}
    if not (tls.get("ca-file") and client.get("cert")):
        raise InputError(f"scheduler {scheduler!r}: a TLS address needs certificates; set distributed.comm.tls.ca-file"
                         " and distributed.comm.tls.client.cert (and .key) in Dask's configuration (e.g. "
                         "DASK_DISTRIBUTED__COMM__TLS__CA_FILE=...), or use tcp://")


def parallel_map(
    func: Callable[..., Any],
    tasks: Sequence[Any],
    *,
    common: dict[str, Any] | None = None,
    jobs: int | None = None,
    scheduler: str | None = None,
    desc: str = "",
    unit: str = "task",
    progress: bool = True,
    weights: Sequence[float] | None = None,
) -> list:
    """``[func(task, **common) for task in tasks]``, on every core or a cluster (module docstring).

    Parameters
    ----------
    func : callable
        A module-level function (workers import it by name).
    tasks : sequence
        Small per-task arguments (chunks, indices, seeds).
    common : dict, optional
        Keyword arguments shared by every task (large arrays, the collection): sent once per worker.
    jobs : int, optional
        Worker processes; 1 runs in this process. None (the default): chosen from the size of the work and the
        cores actually free — the first task runs here, timed, while the idle time of the usable cores is counted
        (:class:`IdleCores`); the others go to workers only on cores that sat idle meanwhile (another user's
        processes have the others), and only when the work left would take longer than starting the workers
        costs (:func:`_workers_pay_off`), so the default is never the slow choice; the progress line says which
        was chosen.
    scheduler : str, optional
        ``"local"`` or ``"tcp://HOST:PORT"`` to run on Dask instead of joblib.
    desc, unit, progress
        The progress display (:func:`meta_eval.core.progress.progress`), counted in tasks.
    weights : sequence of float, optional
        Each task's expected cost (any unit). Progress and the time left then count work done rather than tasks,
        and the automatic choice of workers extrapolates the first task's time by its share of the work: tasks of
        uneven cost, run costliest first, made the time left several times too long (5 minutes announced, 22 s
        taken).

    Returns
    -------
    list
        The results, in task order.
    """
    from meta_eval.core.progress import progress as show, restart_rate

    tasks = list(tasks)
    common = common or {}
    scheduler = check_scheduler(scheduler)
    n_jobs = usable_jobs(usable_cores() if jobs is None and scheduler is None else resolve_jobs(jobs), jobs)
    share = _shares(weights, len(tasks))
    bar = show(total=len(tasks) if share is None else 100.0, desc=desc or "tasks", unit=unit if share is None
               else "% of the work", enabled=progress)
    step = (lambda i: bar.update(1)) if share is None else (lambda i: bar.update(100.0 * share[i]))
    with bar:
        if scheduler is not None and tasks:
            return _on_dask(func, tasks, common, n_jobs, scheduler, step)
        out: list = []
        if jobs is None and n_jobs > 1 and len(tasks) > 1:  # automatic: time the first task(s) here
            n_jobs = _choose_jobs(func, tasks, common, share, n_jobs, out, step)
            bar.set_description(f"{desc or 'tasks'} ({'in this process' if n_jobs == 1 else f'{n_jobs} workers'})")
        if n_jobs == 1 or len(tasks) - len(out) <= 1:
            for i in range(len(out), len(tasks)):
                out.append(_in_worker(func, tasks[i], common))  # one BLAS thread here too: the same sums everywhere
                step(i)
            return out
        from joblib import Parallel, delayed

        runner = Parallel(n_jobs=n_jobs, backend="loky", return_as="generator",
                          initializer=init_worker, initargs=(os.getpid(),))
        first = len(out)
        try:
            for result in runner(delayed(_in_worker)(func, task, common) for task in tasks[len(out):]):
                if len(out) == first:
                    restart_rate(bar)  # the workers' start-up is behind: the time left is measured from here
                step(len(out))
                out.append(result)
        except Exception as exc:
            lost = _worker_lost(exc)
            if lost is None:
                raise
            raise WorkerLost(f"{lost}; rerun with --jobs 1 to run the work in this process") from None
        return out


#: What the engines raise when a worker or the cluster is gone (by name: neither engine is imported to tell).
_LOST = {"TerminatedWorkerError": "a worker process ended before its work was done",
         "BrokenProcessPool": "a worker process ended before its work was done",
         "KilledWorker": "the Dask cluster lost the workers that ran a task",
         "FutureCancelledError": "the Dask cluster dropped a task (a worker or the scheduler was lost)",
         "CancelledError": "the Dask cluster dropped a task (a worker or the scheduler was lost)",
         "CommClosedError": "the connection to the Dask scheduler closed"}


def _worker_lost(exc: BaseException) -> str | None:
    """What ``exc`` says when it is a lost worker's (or cluster's), in words; None for any other exception."""
    import re

    for cls in type(exc).__mro__:
        if cls.__name__ in _LOST:
            codes = re.search(r"exit codes of the workers are (\{[^}]*\})", str(exc))
            return _LOST[cls.__name__] + (f" (exit codes {codes.group(1)}: a crash, the system's memory killer, "
                                          "or code that ended its process)" if codes else "")
    return None


def _choose_jobs(func, tasks: list, common: dict, share: list[float] | None, n_jobs: int, out: list,
                 step: Callable[[int], None]) -> int:
    """Run the first task here (and the second, when there are three or more), appending the results to ``out``,
    and return the workers to use for the rest: at most ``n_jobs``, one per core free meanwhile (this process's own
    core, and the usable cores that sat idle: :func:`free_cores`), and 1 unless the work left pays for starting
    them.

    The work left is extrapolated from the time of the last task run here by its share of the work. With three
    tasks or more that is the second: the first also pays one-time costs in this process (lazy imports, compiled
    kernels loaded from numba's cache), which made the first task look several times its size and chose workers
    for work that ran faster here (informativeness on the demo: 5.7 s by default against 4.4 s with --jobs 1).
    Counting the free cores keeps workers off a busy machine, where they compete with other users' processes for
    the cores and start slowly (the demo study with workers took 1.65 times as long as without at a load of 7-8 on
    2 cores).
    """
    fractions = share if share is not None else [1.0 / len(tasks)] * len(tasks)
    meter = IdleCores()
    watched = time.perf_counter()
    for i in range(2 if len(tasks) >= 3 else 1):
        started = time.perf_counter()
        out.append(_in_worker(func, tasks[i], common))
        step(i)
        seconds = time.perf_counter() - started
    left = 1.0 - sum(fractions[:len(out)])
    serial = seconds * left / max(fractions[len(out) - 1], 1e-12)
    if not _workers_pay_off(serial, n_jobs):
        return 1
    if time.perf_counter() - watched >= SAMPLE_S:  # the cores idle while this process worked on one
        free = free_cores(meter(), busy_here=1)
    else:  # too short for /proc/stat's clock ticks: the cores idle now
        free = free_cores()
    n_jobs = min(n_jobs, free)
    return n_jobs if n_jobs > 1 and _workers_pay_off(serial, n_jobs) else 1


def _shares(weights: Sequence[float] | None, n: int) -> list[float] | None:
    """Each task's share of the work (summing to 1), or None without weights."""
    if weights is None:
        return None
    w = [float(x) for x in weights]
    if len(w) != n or not all(x >= 0 and x == x and x != float("inf") for x in w):
        raise ValueError(f"weights must be {n} finite non-negative numbers, one per task")
    total = sum(w)
    return [x / total for x in w] if total > 0 else [1.0 / max(n, 1)] * n


#: Seconds it costs to start the worker processes and import meta-eval's modules in them (measured about 1.5 s on
#: an idle 2-core machine, 3 s on a busy one: ``scripts/bench_parallel.py``).
WORKER_START_S = 2.0


def _workers_pay_off(serial_seconds: float, n_jobs: int) -> bool:
    """Whether ``serial_seconds`` of work left finishes sooner on ``n_jobs`` workers than here: with a start-up
    cost S (none when this process's workers are already running), workers take S + T / n against T here, so they
    pay off when T > S n / (n - 1)."""
    start = 0.1 if _workers_running(n_jobs) else WORKER_START_S
    return serial_seconds > start * n_jobs / (n_jobs - 1)


def _workers_running(n_jobs: int) -> bool:
    loky = sys.modules.get("joblib.externals.loky.reusable_executor")
    executor = getattr(loky, "_executor", None)
    return executor is not None and getattr(executor, "_max_workers", 0) == n_jobs and \
        not getattr(executor, "_broken", False) and not getattr(executor, "_shutdown_thread", False)


_THREADPOOLS: list = []  # (modules imported when found, threadpoolctl controller): found again after new imports


def _threadpools():
    """threadpoolctl's controller of the loaded thread pools (BLAS, OpenMP). Finding them walks every loaded shared
    library (about 10 ms): it is kept, and found again only when modules were imported since (a library loaded with
    them may bring a thread pool). Before, every task found them anew: some 0.3 s per metric of MEM's 27 chunks."""
    from threadpoolctl import ThreadpoolController

    if not _THREADPOOLS or _THREADPOOLS[0][0] != len(sys.modules):
        _THREADPOOLS[:] = [(len(sys.modules), ThreadpoolController())]
    return _THREADPOOLS[0][1]


def _in_worker(func: Callable[..., Any], task: Any, common: dict[str, Any]) -> Any:
    """Run one task with BLAS and numba on one thread (the workers share the cores)."""
    with _threadpools().limit(limits=1):
        if "numba" in sys.modules:  # numba's own threads too, where a task has loaded it
            import numba  # a thread of a Dask worker may still be importing it: the import waits for that one

            numba.set_num_threads(1)
        return func(task, **common)


def init_worker(parent: int) -> None:
    """Run in every worker process when it starts (joblib's, and the figure writer's): Ctrl-C is the parent's to
    handle (a worker printing its own KeyboardInterrupt traceback helps nobody), SIGTERM ends the worker silently,
    and the worker exits as soon as its parent is gone (a SIGKILLed parent cannot stop it; a worker would otherwise
    idle for minutes)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    threading.Thread(target=_exit_with, args=(parent,), name="meta-eval-parent-watch", daemon=True).start()


def _exit_with(parent: int, every: float = 0.25) -> None:
    """Exit this process once ``parent`` is no longer its parent (it died and the process was re-parented).
    Polling: no portable notification of a parent's death exists (Linux's PR_SET_PDEATHSIG follows the thread that
    forked, which for loky may be a thread that ends before the work does)."""
    import time

    while os.getppid() == parent:
        time.sleep(every)
    os._exit(1)


def quiet_killed_pools() -> None:
    """Keep the management threads of process pools that are being killed from printing tracebacks (a killed
    worker's pending item is missing when the thread looks it up: ``KeyError`` in concurrent.futures); exceptions
    of every other thread are printed as before."""
    previous = threading.excepthook

    def hook(args) -> None:
        if args.thread is None or not args.thread.name.endswith("ManagerThread"):
            previous(args)

    threading.excepthook = hook


def terminate_workers() -> None:
    """Stop every worker process this process started (joblib's loky workers, Dask clusters): called when a
    command is interrupted or fails, so nothing keeps computing after it."""
    loky = sys.modules.get("joblib.externals.loky.reusable_executor")  # no workers if joblib was never imported
    executor = getattr(loky, "_executor", None)
    if executor is not None:
        try:
            executor.shutdown(wait=False, kill_workers=True)
        except Exception:  # pragma: no cover - best effort while exiting
            pass
    close_clusters()


def _on_dask(func, tasks, common, n_jobs: int, scheduler: str, step: Callable[[int], None]) -> list:
    client = _client(scheduler, n_jobs)
    # ``common`` travels as ONE object under a fresh random key (hash=False), held by this call until every result
    # is back: scattering the dict itself would name the data by its keys ('seed', 'alpha'), shared by every map on
    # the cluster, so the end of one map could release the data another still needs ("lost dependencies").
    shared = client.scatter([common], broadcast=True, hash=False)[0] if common else None
    futures = client.map(_in_worker_dask, [func] * len(tasks), tasks, [shared] * len(tasks), pure=False)
    out = []
    try:
        for future in futures:
            try:
                result = future.result()
            except Exception as exc:
                lost = _worker_lost(exc)
                if lost is None:
                    raise
                raise WorkerLost(f"--scheduler {scheduler}: {lost}; check the cluster and rerun, or drop "
                                 "--scheduler") from None
            step(len(out))
            out.append(result)
    finally:
        client.cancel(futures)
        if shared is not None:
            client.cancel([shared])
    return out


def _in_worker_dask(func, task, common):
    return _in_worker(func, task, common or {})


def _client(scheduler: str, n_jobs: int):
    """A Dask client for the scheduler, made once per process (a LocalCluster of ``n_jobs`` workers for
    ``"local"``)."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise InputError("the Dask engine needs dask[distributed]: pip install 'meta-eval[dask]'") from None
    key = (scheduler, n_jobs if scheduler == "local" else 0)
    client = _CLIENTS.get(key)
    if client is not None and client.status == "running":
        return client
    if scheduler == "local":
        # scratch space (spilled data, worker files) in a private folder of this process, not in the shared /tmp
        import tempfile  # (here: the readers import this module, and tempfile costs them milliseconds)

        scratch = tempfile.mkdtemp(prefix="meta-eval-dask-")
        _SCRATCH.append(scratch)
        cluster = LocalCluster(n_workers=n_jobs, threads_per_worker=1, processes=True, dashboard_address=None,
                               host="127.0.0.1", local_directory=scratch)
        client = Client(cluster)
    else:
        problem = _handshake(scheduler, CONNECT_TIMEOUT)
        if problem is not None:
            raise InputError(f"--scheduler {scheduler}: {problem}; start a scheduler there (dask scheduler --host "
                             "127.0.0.1 --port PORT) or drop --scheduler")
        try:
            client = Client(scheduler, timeout=f"{CONNECT_TIMEOUT}s")
        except (OSError, TimeoutError) as exc:
            raise InputError(f"--scheduler {scheduler}: cannot reach the Dask scheduler within {CONNECT_TIMEOUT} s "
                             f"({exc}); start it (dask scheduler --host 127.0.0.1 --port PORT) or drop --scheduler"
                             ) from None
        if not client.scheduler_info().get("workers"):
            client.close()
            raise InputError(f"--scheduler {scheduler}: the scheduler has no workers; start some with "
                             f"dask worker {scheduler}")
    _CLIENTS[key] = client
    return client


def _handshake(address: str, seconds: float) -> str | None:
    """None when a Dask scheduler at ``address`` completes Dask's handshake in time, else why not.

    Dask's own connection gives up on the TCP connection after its timeout, but then waits for the handshake
    without any: a server that accepts the connection and never answers (a wrong port, a hung scheduler) held
    ``Client()`` for minutes. Here the connection and the handshake share one deadline, ``seconds`` to connect and
    as long again to answer; the probe runs in a thread of its own (a notebook's event loop may be running in this
    one)."""
    import asyncio

    from distributed.comm import connect

    outcome: list[str | None] = []

    async def shake() -> None:
        comm = await asyncio.wait_for(connect(address, timeout=seconds), 2 * seconds)
        await comm.close()

    def probe() -> None:
        try:
            asyncio.run(shake())
            outcome.append(None)
        except asyncio.TimeoutError:
            outcome.append(f"the server there accepted the connection but did not answer Dask's handshake within "
                           f"{2 * seconds:g} s (not a Dask scheduler, or a hung one)")
        except Exception as exc:  # noqa: BLE001 - any failure to connect is the message
            outcome.append(f"cannot reach the Dask scheduler within {seconds:g} s ({type(exc).__name__}: {exc})")

    thread = threading.Thread(target=probe, name="meta-eval-dask-handshake", daemon=True)
    thread.start()
    thread.join(2 * seconds + 5)
    return outcome[0] if outcome else f"no answer from the Dask scheduler within {2 * seconds:g} s"


def connect_scheduler(scheduler: str | None, jobs: int | None = None) -> str | None:
    """Check ``--scheduler`` before any work: the address is well formed, Dask is installed, and the scheduler
    answers within :data:`CONNECT_TIMEOUT` seconds with at least one worker (a local cluster is started). Returns
    the scheduler; the connection is kept for the work that follows."""
    scheduler = check_scheduler(scheduler)
    if scheduler is not None:
        _client(scheduler, usable_jobs(resolve_jobs(jobs), jobs))
    return scheduler


@atexit.register
def close_clusters() -> None:
    """Close the Dask clients (and the local clusters) this process opened."""
    while _CLIENTS:
        _, client = _CLIENTS.popitem()
        cluster = getattr(client, "cluster", None)
        try:
            client.close()
            if cluster is not None:
                cluster.close()
        except Exception:  # pragma: no cover - closing at exit is best effort
            pass
    while _SCRATCH:
        import shutil

        shutil.rmtree(_SCRATCH.pop(), ignore_errors=True)
