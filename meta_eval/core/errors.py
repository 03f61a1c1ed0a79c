"""Errors raised for bad input: every message names the file and, where there is one, the line."""

from __future__ import annotations


class MetaEvalError(Exception):
    """Base class of every error meta-eval raises on purpose."""


class InputError(MetaEvalError, ValueError):
    """Malformed or inconsistent input (run, qrels, measure name, option).

    Parameters
    ----------
    message : str
        What is wrong, and what was expected.
    source : str, optional
        The file (or DataFrame label) the problem is in.
    line : int, optional
        1-based line number in ``source``.
    """

    def __init__(self, message: str, source: str | None = None, line: int | None = None):
        self.source = source
        self.line = line
        where = ""
        if source is not None:
            where = f"{source}:{line}: " if line is not None else f"{source}: "
        super().__init__(where + message)


class PluginError(InputError):
    """A metric plug-in failed or broke its contract (:mod:`meta_eval.measures.plugins`). Here, below every layer,
    because the scoring loop of a collection (:mod:`meta_eval.model.collection`) names the run and topic it failed
    on.

    Attributes
    ----------
    metric : str
        The plug-in (its specification or name).
    problem : str
        What went wrong.
    index : tuple of int or None
        The list, in the leading shape of the rankings the plug-in was called on (None: the whole call failed).
    where : str
        The list in words: its run and topic (:meth:`at`) or its grades.
    """

    def __init__(self, metric: str, problem: str, index: tuple | None = None, where: str = ""):
        self.metric, self.problem, self.index, self.where = metric, problem, index, where
        super().__init__(f"metric plug-in {metric}: {problem}" + (f" ({where})" if where else ""))

    def __reduce__(self):  # travels back from worker processes whole
        return PluginError, (self.metric, self.problem, self.index, self.where)

    def at(self, where: str) -> "PluginError":
        """The same error, its list described by the caller (``run bm25, topic 401``)."""
        return PluginError(self.metric, self.problem, None, where)


class ConflictError(InputError):
    """Input that reads well but contradicts itself: a document listed twice for one topic (in a run or the
    qrels), preferences of one judgment group that contradict each other."""


class InfeasibleError(MetaEvalError, ValueError):
    """A constraint set (e.g. a metric value for MEM) that no distribution can satisfy."""


class OutputError(MetaEvalError):
    """An output that cannot or must not be written: a folder, a device that is not a stream, an input of the same
    command, a result folder of another command, a full disk. The message names the option and the path."""


class WorkerLost(MetaEvalError):
    """A worker process (joblib's, or a Dask cluster's) ended, or the cluster was lost, before its work was done."""


class Terminated(SystemExit):
    """The process was asked to end (SIGTERM): raised by meta-eval's handler with status 128 + the signal's number,
    and let through wherever a plug-in's code runs (never taken for the plug-in's own failure)."""


class MetaEvalWarning(UserWarning):
    """Base class of the warnings meta-eval gives on purpose (the command line prints them as one line)."""

