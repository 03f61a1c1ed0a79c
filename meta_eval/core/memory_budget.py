"""The memory a request needs, estimated before it is allocated, and refused with the figure when it cannot fit.

A budget option (``--resamples``, ``--splits``, ``--draws``...) sizes arrays: ``-B 99999999999`` asks for a 7 TB
replicate matrix, and numpy's answer is a MemoryError traceback or, worse, an allocation the kernel grants lazily
and then kills the process for, after minutes of work. Each resampling design states what it will hold at its peak
(:func:`require`), and a request larger than the memory this process can still use is refused with both figures
and the option to lower.

The memory available is the least of: the kernel's ``MemAvailable``, the cgroup's limit minus its usage (a container
or a CI job), and the address-space limit (``ulimit -v``) minus what the process maps already.
``META_EVAL_MEMORY`` (bytes, or with a K/M/G/T suffix) sets it instead, e.g. to leave room for other jobs.
"""

from __future__ import annotations

import os
import re

from meta_eval.core.errors import InputError

__all__ = ["available_bytes", "configured_bytes", "format_bytes", "parse_size", "require"]

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def format_bytes(n: float) -> str:
    """``1.5 GB``-style text (binary units, as ``free -h`` prints them)."""
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1024 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError  # pragma: no cover


_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([KMGT]?)(?:i?B)?\s*", re.IGNORECASE)


def parse_size(text: str, what: str) -> int:
    """A size in bytes: a number, optionally with a unit K, M, G or T (powers of 1024; ``B``, ``iB`` accepted:
    ``2G``, ``500MiB``, ``0.5K``), at least one byte. ``what`` names the setting in the error."""
    match = _SIZE.fullmatch(text)
    if match is None:
        raise InputError(f"{what} must be a size such as 2G, 500M or a number of bytes, got {text!r}")
    size = float(match.group(1)) * _UNITS[match.group(2).upper()]
    if size < 1:
        raise InputError(f"{what} must be at least one byte, got {text!r}")
    return int(size)


def configured_bytes() -> int | None:
    """The memory ``META_EVAL_MEMORY`` sets, None when it is not set."""
    text = os.environ.get("META_EVAL_MEMORY", "")
    return parse_size(text, "META_EVAL_MEMORY") if text.strip() else None


def available_bytes() -> int:
    """Bytes this process can still allocate (see the module's docstring for the sources)."""
    configured = configured_bytes()
    if configured is not None:
        return configured
    found = [v for v in (_meminfo_available(), _cgroup_room(), _address_space_room()) if v is not None]
    if not found:  # pragma: no cover - not Linux
        try:
            return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return 1 << 62
    return max(0, min(found))


def require(n_bytes: float, what: str, lower: str) -> None:
    """Refuse a request whose estimated peak ``n_bytes`` exceeds :func:`available_bytes`.

    Parameters
    ----------
    n_bytes : float
        The estimate (a float: products of user-given sizes may exceed any integer type).
    what : str
        The request, e.g. ``"the bootstrap with B = 99,999,999,999 replicates of 30 topics"``.
    lower : str
        What to lower, e.g. ``"--resamples/-B"``.

    Raises
    ------
    InputError
        ``"<what> would need about 7.3 TB of memory; 21.4 GB is available (lower --resamples/-B)"``.
    """
    available = available_bytes()
    if n_bytes > available:
        raise InputError(f"{what} would need about {format_bytes(n_bytes)} of memory; {format_bytes(available)} is "
                         f"available (lower {lower})")


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # "max" (no limit) -> None


def _cgroup_room() -> int | None:
    """The cgroup's memory limit minus its usage (v2, then v1); None without a limit."""
    for limit, usage in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                         ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        cap = _read_int(limit)
        if cap is not None and cap < 1 << 60:  # v1 reports "no limit" as a huge number
            return cap - (_read_int(usage) or 0)
    return None


def _address_space_room() -> int | None:
    """``ulimit -v`` minus the process's mapped size; None without a limit."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/status") as f:
            mapped = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    except (OSError, StopIteration, ValueError):
        mapped = 0
    return soft - mapped
