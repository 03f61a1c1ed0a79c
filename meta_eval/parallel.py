"""One execution layer for meta-eval's embarrassingly parallel work: every core through joblib, or a Dask cluster.

:func:`parallel_map` runs ``func(task, **common)`` for every task and returns the results in task order:

* ``jobs=1`` (or a single task): a plain loop in this process (each task on one BLAS thread, as in workers);
* otherwise, by default, joblib's loky worker processes (``jobs`` of them; ``None``: every core) — processes, not
  threads, because the work is many medium-sized numpy calls that contend on the GIL;
* ``scheduler="local"``: a Dask ``LocalCluster`` of ``jobs`` single-threaded worker processes, made once per
  process; ``scheduler="tcp://HOST:PORT"``: the Dask cluster whose scheduler listens there (``dask scheduler`` and
  ``dask worker`` on the machines). Dask needs the ``meta-eval[dask]`` extra.

Results never depend on the engine or the number of workers: randomised tasks carry their own seeds (a task's
seed is part of the task, never derived from the worker), and inside workers BLAS and numba run on one thread
(threadpoolctl), so no floating-point sum depends on how a library split it.

Large inputs go in ``common``: joblib memory-maps the numpy arrays it holds (each worker maps the same file
instead of receiving a copy per task), Dask scatters it to every worker once. Tasks themselves should be small
(slices, indices, seeds): pass chunks, not the whole batch.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import Any, Callable, Sequence

from meta_eval.errors import InputError

__all__ = ["parallel_map", "resolve_jobs", "check_scheduler", "close_clusters"]

_CLIENTS: dict[tuple[str, int], Any] = {}


def resolve_jobs(jobs: int | None) -> int:
    """The number of workers: ``None`` or 0 -> every core; negative -> cores + 1 + jobs (joblib's convention)."""
    cores = os.cpu_count() or 1
    if jobs is None or jobs == 0:
        return cores
    if isinstance(jobs, bool) or not isinstance(jobs, int):
        raise InputError(f"jobs must be an integer (workers; 0 or None: every core); got {jobs!r}")
    return max(1, cores + 1 + jobs) if jobs < 0 else jobs


def check_scheduler(scheduler: str | None) -> str | None:
    """``None`` (joblib), ``"local"`` (a Dask LocalCluster) or a Dask scheduler address ``tcp://HOST:PORT``."""
    if scheduler is None or scheduler == "local":
        return scheduler
    if not isinstance(scheduler, str) or "://" not in scheduler:
        raise InputError(f"scheduler must be 'local' or a Dask scheduler address such as tcp://127.0.0.1:8786; "
                         f"got {scheduler!r}")
    return scheduler


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
        Worker processes (default: every core); 1 runs in this process.
    scheduler : str, optional
        ``"local"`` or ``"tcp://HOST:PORT"`` to run on Dask instead of joblib.
    desc, unit, progress
        The progress display (:func:`meta_eval.progress.progress`), counted in tasks.

    Returns
    -------
    list
        The results, in task order.
    """
    from meta_eval.progress import progress as show

    tasks = list(tasks)
    common = common or {}
    scheduler = check_scheduler(scheduler)
    n_jobs = resolve_jobs(jobs)
    bar = show(total=len(tasks), desc=desc or "tasks", unit=unit, enabled=progress)
    with bar:
        if scheduler is not None and tasks:
            return _on_dask(func, tasks, common, n_jobs, scheduler, bar)
        if n_jobs == 1 or len(tasks) <= 1:
            out = []
            for task in tasks:
                out.append(_in_worker(func, task, common))  # one BLAS thread here too: the same sums everywhere
                bar.update(1)
            return out
        from joblib import Parallel, delayed

        runner = Parallel(n_jobs=min(n_jobs, len(tasks)), backend="loky", return_as="generator")
        out = []
        for result in runner(delayed(_in_worker)(func, task, common) for task in tasks):
            out.append(result)
            bar.update(1)
        return out


def _in_worker(func: Callable[..., Any], task: Any, common: dict[str, Any]) -> Any:
    """Run one task with BLAS and numba on one thread (the workers share the cores)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        if "numba" in sys.modules:
            sys.modules["numba"].set_num_threads(1)
        return func(task, **common)


def _on_dask(func, tasks, common, n_jobs: int, scheduler: str, bar) -> list:
    client = _client(scheduler, n_jobs)
    shared = client.scatter(common, broadcast=True) if common else {}
    futures = client.map(_in_worker_dask, [func] * len(tasks), tasks, [shared] * len(tasks), pure=False)
    out = []
    for future in futures:
        out.append(future.result())
        bar.update(1)
    return out


def _in_worker_dask(func, task, common):
    return _in_worker(func, task, common)


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
        cluster = LocalCluster(n_workers=n_jobs, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    else:
        try:
            client = Client(scheduler, timeout="20s")
        except OSError as exc:
            raise InputError(f"cannot reach the Dask scheduler at {scheduler} ({exc})") from None
    _CLIENTS[key] = client
    return client


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
