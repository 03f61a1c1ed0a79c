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
