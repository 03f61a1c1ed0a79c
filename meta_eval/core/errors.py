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


class ConflictError(InputError):
    """Input that reads well but contradicts itself: a document listed twice for one topic (in a run or the
    qrels), preferences of one judgment group that contradict each other."""


class InfeasibleError(MetaEvalError, ValueError):
    """A constraint set (e.g. a metric value for MEM) that no distribution can satisfy."""


class OutputError(MetaEvalError):
    """An output that cannot or must not be written: a folder, a device that is not a stream, an input of the same
    command, a result folder of another command, a full disk. The message names the option and the path."""


class MetaEvalWarning(UserWarning):
    """Base class of the warnings meta-eval gives on purpose (the command line prints them as one line)."""

