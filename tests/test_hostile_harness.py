"""A property-based harness that keeps the adversarial classes closed: every command, run as the installed program in
a process of its own, on hostile inputs, with invariants checked on every case.

Data-driven: :data:`COMMANDS` is a table of commands, each with the generator of its command lines (drawn by
hypothesis from the shared option strategies below) and its budget of examples: ``evaluate``, ``trec-eval``,
``measures``, ``analysis``, one row per analysis of the registry (its command, drawn from its declaration: one of
its parameters sane or hostile, sometimes given twice, with :data:`CHEAP` budgets) and ``study`` (``-B 20``,
``--informativeness-lists 4``, ``--no-figures``, the slow analyses skipped); :func:`test_every_command_has_a_row`
keeps the table in step with ``meta-eval --help``. Every case runs in a fresh folder (a :class:`World`) holding:

* qrels with LF, CRLF or lone-CR line ends and a comment line;
* runs whose names hold glob characters (``run[1].txt`` beside a decoy ``run1.txt``, ``x*y.txt``), a CRLF run, a
  run folder with a symlink alias, a hard link, a dangling link and a FIFO, a FIFO named as a run (fed as a
  process substitution would feed it), standard input;
* metric plug-ins that misbehave (``SystemExit``, their own ``KeyboardInterrupt``, a ``BaseException`` subclass,
  ``GeneratorExit``, NaN, a change of working folder, output on stdout) when called or when imported;
* numbers that are huge, negative, NaN or not numbers; repeated options;
* outputs that cannot or must not be written: an input, a folder, a kernel file, ``/dev/full``, a path under a
  file, a name with glob characters, a name near NAME_MAX, a folder of someone else's files, an earlier output;
* the process's state: an ASCII-only or Latin-1 standard output, XDG_CACHE_HOME unset, empty or relative.

Values are drawn one fault at a time (:class:`Pick`): a case is hostile in one dimension at most, so most cases
reach the work, and those with no fault check the results themselves.

Invariants, on every case: the exit status is one of the command's (0, 1 or 2; trec-eval adds trec_eval's 4 and
255; the harness sends no signal, so 130, 141 and 143 would be a plug-in's exception escaping); no traceback on
stderr; every input unchanged, byte for byte (and every link, FIFO and folder as it was), and nothing written
anywhere but the output; an output complete (a parsable file, a result folder that matches its manifest) or
absent (or, if one was there, unchanged), with no temporary twin left beside it; a tidy output (CSV, TSV, JSON)
holds the runs the specifications name, one per file (checked against the rules written again here), and one
measure per distinct ``-m``; no hang (60 s a case).

Fixed seed (the tests run derandomised), bounded budget, no shrinking (a failing case is reported as drawn): 71
processes, 85-125 s wall and 72-77 s CPU on 2 shared cores at load averages of 3.2 to 6.5 (``python -m pytest
-n 0 tests/test_hostile_harness.py``; 70-110 s for the first 87 processes of evaluate, trec-eval, measures and analysis
at loads of 3.4 to 5.8). Checked against the code before round 4: the cases find the merged alias, a plug-in
failing at import, and the ASCII-only output; the study's row found that its status 1 (a report written with its
failed analyses marked) is a written output, not a failed one (:attr:`Case.written`).
"""

from __future__ import annotations

import errno
import glob
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

CLI = [sys.executable, "-c", "from meta_eval.cli import run; run()"]
#: A command's statuses: success, 1 and 2 for errors (Click's usage errors are 2). The harness sends no signal and
#: closes no pipe, so 130, 141 and 143 (Ctrl-C, a reader gone, SIGTERM), allowed to commands in general, would here
#: mean that a plug-in's own KeyboardInterrupt or SystemExit escaped: they fail a case.
STATUSES = frozenset({0, 1, 2})
TIMEOUT = 60

# ------------------------------------------------------------------------------------------------ the world

QRELS = "# judged by hand\n1 0 a 2\n1 0 b 0\n1 0 c 1\n2 0 a 1\n2 0 e 0\n2 0 f 2\n3 0 g 1\n3 0 h 0\n"


def run_text(tag: str, docs: str = "abc", line_end: str = "\n") -> str:
    """A three-topic run of the documents ``docs`` (topic 1), ``efa`` (topic 2) and ``gh`` (topic 3)."""
    lines = [f"{t} Q0 {d} {i + 1} {10 - i} {tag}" for t, order in ((1, docs), (2, "efa"), (3, "hg"))
             for i, d in enumerate(order)]
    return line_end.join(lines) + line_end


PLUGIN = '''import os
import sys
import numpy as np


class Mine(BaseException):
    pass


def ok(r):
    return r.n_ret / (1.0 + r.n_ret)


def exits(r):
    sys.exit(3)


def interrupts(r):
    raise KeyboardInterrupt("the plug-in's own")


def own_base(r):
    raise Mine("mine")


def generator_exit(r):
    raise GeneratorExit


def nan(r):
    return np.full(r.shape, np.nan)


def wanders(r):
    os.chdir({elsewhere!r})
    return np.zeros(r.shape)


def prints(r):
    print("stdout is not for plug-ins")
    return np.zeros(r.shape)
'''
PLUGIN_FUNCTIONS = ("ok", "exits", "interrupts", "own_base", "generator_exit", "nan", "wanders", "prints")
IMPORT_FAILURES = {"imp_exit.py": "raise SystemExit(0)\n", "imp_kbi.py": "raise KeyboardInterrupt\n",
                   "imp_base.py": "class Mine(BaseException):\n    pass\n\n\nraise Mine()\n"}


@dataclass
class World:
    """The files of one case, under ``root`` (the working folder of the command)."""

    root: Path
    fifo_feed: dict[str, bytes] = field(default_factory=dict)  # FIFO -> what a writer sends when it is read
    env: dict[str, str] = field(default_factory=dict)  # the command's environment

    def snapshot(self, skip: set[Path]) -> dict[str, tuple]:
        """Every entry under root but ``skip`` (and what is inside them): its kind and content or link target."""
        out = {}
        for path in sorted(self.root.rglob("*")):
            if path in skip or any(s in path.parents for s in skip):
                continue
            st_ = os.lstat(path)
            rel = str(path.relative_to(self.root))
            if stat.S_ISLNK(st_.st_mode):
                out[rel] = ("link", os.readlink(path))
            elif stat.S_ISREG(st_.st_mode):
                out[rel] = ("file", path.read_bytes(), stat.S_IMODE(st_.st_mode))
            else:
                out[rel] = (stat.S_IFMT(st_.st_mode),)
        return out


def build_world(data) -> World:
    """A fresh folder of hostile inputs; what varies between cases is drawn from ``data``."""
    root = Path(tempfile.mkdtemp(prefix="meta-eval-hostile-"))
    world = World(root)
    ending = data.draw(st.sampled_from(["\n", "\r\n", "\r"]), label="qrels line ends")
    (root / "qrels.txt").write_bytes(QRELS.replace("\n", ending).encode())
    runs = root / "runs"
    runs.mkdir()
    (runs / "a.txt").write_text(run_text("A"))
    (runs / "b.txt").write_text(run_text("B", "cba"))
    (root / "run[1].txt").write_text(run_text("LITERAL", "bac"))  # a file named with glob characters...
    (root / "run1.txt").write_text(run_text("DECOY", "cab"))  # ...and the file its pattern would match
    (root / "x*y.txt").write_text(run_text("STAR", "acb"))
    (root / "crlf.txt").write_bytes(run_text("CRLF", "bca", "\r\n").encode())
    extras = data.draw(st.sets(st.sampled_from(["alias", "hard", "fifo"])), label="run folder extras")
    if data.draw(st.sampled_from([False] * 5 + [True]), label="a dangling link in the run folder"):
        extras.add("dangling")
    if "alias" in extras:
        (runs / "alias.txt").symlink_to("a.txt")
    if "hard" in extras:
        os.link(runs / "b.txt", runs / "hard.txt")
    if "dangling" in extras:
        (runs / "gone.txt").symlink_to(root / "deleted.txt")
    if "fifo" in extras:
        os.mkfifo(runs / "pipe")
    os.mkfifo(root / "fifo.run")
    world.fifo_feed[str(root / "fifo.run")] = run_text("FIFO", "cba").encode()
    (root / "elsewhere").mkdir()
    (root / "plug.py").write_text(PLUGIN.format(elsewhere=str(root / "elsewhere")))
    for name, body in IMPORT_FAILURES.items():
        (root / name).write_text(body)
    (root / "huge.letor").write_text("".join(f"{q % 3} qid:{q // 4} 1:0.{q} 2000000000:1\n" for q in range(24)))
    (root / "flat.letor").write_text("".join(f"{q % 3} qid:{q // 4} 1:0.5\n" for q in range(24)))
    (root / "home").mkdir()
    world.env = process_environment(data, root)
    out = root / "out"
    out.mkdir()
    (out / "old.csv").write_text("an earlier output\n")
    (out / "mine").mkdir()
    (out / "mine" / "thesis.tex").write_text("the user's own file\n")
    return world


def process_environment(data, root: Path) -> dict[str, str]:
    """The command's environment: HOME in the world; an ASCII-only or Latin-1 standard output; XDG_CACHE_HOME
    unset, empty, relative (both to be ignored: the cache goes to HOME/.cache, never the working folder) or set."""
    env = {**os.environ, "HOME": str(root / "home"),
           # matplotlib's font cache where it is already (a HOME of its own would rebuild it in every case)
           "MPLCONFIGDIR": os.environ.get("MPLCONFIGDIR") or str(Path.home() / ".config" / "matplotlib")}
    encoding = data.draw(st.sampled_from([None, None, "ascii", "latin-1"]), label="PYTHONIOENCODING")
    env.pop("PYTHONIOENCODING", None)
    if encoding:
        env["PYTHONIOENCODING"] = encoding
    xdg = data.draw(st.sampled_from([None, "", "relative-cache", str(root / "home" / "xdg")]), label="XDG_CACHE_HOME")
    env.pop("XDG_CACHE_HOME", None)
    if xdg is not None:
        env["XDG_CACHE_HOME"] = xdg
    return env


# ---------------------------------------------------------------------------------------- option strategies


HOSTILE_NUMBERS = ["-5", "0", "nan", "inf", "1e400", "99999999999999999999", "2.5", "x", "", "٣"]


class Pick:
    """Draws a case's values one fault at a time: each value is drawn from its pool of values that should work,
    except in the one dimension (if any) the case makes hostile, drawn from its hostile pool. A case with several
    faults mostly shows the first; one fault a case reaches the work past it, and a third of the cases, with none,
    check that the results are right (the runs named, the measures asked for)."""

    def __init__(self, data, dimensions: tuple[str, ...]):
        self.data = data
        self.hostile = data.draw(st.sampled_from([None] * (len(dimensions) // 2 + 1) + list(dimensions)),
                                 label="hostile dimension")

    def __call__(self, dimension: str, sane: list, hostile: list = ()):
        pool = hostile if dimension == self.hostile and hostile else sane
        return self.data.draw(st.sampled_from(pool), label=dimension)

    def many(self, dimension: str, sane: list, hostile: list = (), min_size: int = 0, max_size: int = 3) -> list:
        """A list of values, one of them hostile in the hostile dimension; sometimes a value given twice."""
        n = self.data.draw(st.integers(min_size, max_size), label=f"how many {dimension}")
        values = [self(f"{dimension} {i}", sane) for i in range(n)]
        if dimension == self.hostile and hostile:
            values.insert(self.data.draw(st.integers(0, n), label="where"), self(dimension, sane, hostile))
        if values and self.data.draw(st.booleans(), label=f"repeat a {dimension}"):
            values.append(values[0])
        return values


# Each pool: (values that should work, hostile ones).
RUN_SPECS = (["runs", "runs/a.txt", "run[1].txt", "x*y.txt", "run?.txt", "crlf.txt", "fifo.run", "-",
              "runs/a.txt runs/./a.txt", "runs/b.txt runs", "r*n[1].txt"],
             ["nothing*.txt", "missing.txt", "qrels.txt", "out"])
MEASURES = (["AP", "nDCG@10", "P@2", "RBP(p=0.5000001)", "RBP(p=0.5)", "GAP", "map", "plug.py:ok",
             "plug.py:wanders", "plug.py:prints"],
            ["RBP(p=nan)", "RBP(p=1e400)", "P@-1", "nosuch", "ndcg_cut.5,5", "plug.py:exits", "plug.py:interrupts",
             "plug.py:own_base", "plug.py:generator_exit", "plug.py:nan", *(f"{n}:anything" for n in IMPORT_FAILURES)])
FILE_OUTPUTS = ([None, None, "-", "out/res.csv", "out/res.json", "out/res.trec", "out/o[1].csv", "out/old.csv",
                 "out/" + "n" * 250 + ".csv"],
                ["qrels.txt", "runs/a.txt", "runs", "qrels.txt/res.csv", "/proc/version", "/dev/full", "out/"])
FOLDER_OUTPUTS = ([None, "out/res", "out/r[1]", "out/" + "n" * 240],
                  ["out/mine", "runs", "qrels.txt", "/proc/sys", "out/old.csv"])


@dataclass
class Case:
    """One command line, and what it may write."""

    argv: list[str]
    output: str | None = None  # a path relative to the world (or absolute), or None
    output_kind: str = "file"  # "file" or "folder"
    stdin: bytes = b""
    statuses: frozenset = STATUSES
    written: frozenset = frozenset({0})  # statuses with which the output is written whole (the study's 1: a report
    # with its failed analyses marked); with any other status it is left as it was
    runs: list[str] | None = None  # the run specifications, for the runs the output must hold
    measures: list[str] | None = None  # the -m values, for the measures the output must hold


def _runs(pick: Pick) -> list[str]:
    return [part for spec in pick.many("runs", *RUN_SPECS, min_size=1) for part in spec.split()]


def _measures(pick: Pick, pool: tuple[list[str], list[str]] = MEASURES) -> list[str]:
    return [part for m in pick.many("measures", *pool) for part in ("-m", m)]


def _numbers(pick: Pick, options: dict[str, list[str]]) -> list[str]:
    """Each numeric option given or not; its value sane, or hostile in the "numbers" dimension."""
    argv = []
    for flag, sane in options.items():
        if pick(f"{flag}?", [True, False]):
            argv += [flag, pick("numbers", sane, HOSTILE_NUMBERS)]
    return argv


def evaluate_case(data) -> Case:
    pick = Pick(data, ("runs", "measures", "numbers", "format", "output"))
    runs, measures = _runs(pick), _measures(pick)
    argv = ["evaluate", "--no-progress", "-Q", "qrels.txt", *runs, *measures,
            *_numbers(pick, {"-M": ["3", "1"], "-l": ["1", "2"], "--digits": ["4"]})]
    if pick("-q", [True, False]):
        argv.append("-q")
    fmt = pick("format", ["csv", "csv", "json", "tsv", None, "trec", "md"], ["nonsense"])
    argv += ["-f", fmt] if fmt else []
    output = pick("output", *FILE_OUTPUTS)
    argv += ["-o", output] if output else []
    return Case(argv, output, "file", stdin=run_text("STDIN").encode(), runs=runs, measures=measures[1::2])


TREC_MEASURES = (["map", "P.5,10", "rbp.p=0.5000001", "all_trec", "official", "recip_rank", "ndcg_cut.5"],
                 ["ndcg_cut.1e400", "P.-1", "nosuch", "iprec_at_recall.0.10,1.5", "plug.py:ok", "ndcg_cut.5,5"])


def trec_eval_case(data) -> Case:
    pick = Pick(data, ("flags", "measures", "numbers", "files"))
    argv = ["trec-eval", *pick.many("flags", ["-q", "-c", "-n", "-qc"], ["-J", "-Z", "--bogus", "-R"]),
            *_measures(pick, TREC_MEASURES), *_numbers(pick, {"-M": ["3", "1000"], "-l": ["1", "2"], "-N": ["100"]})]
    argv.append(pick("files", ["qrels.txt"], ["missing.txt", "crlf.txt", "runs"]))
    argv += pick.many("files", ["runs/a.txt", "run[1].txt", "x*y.txt", "crlf.txt", "fifo.run", "-"],
                      ["missing.txt", "runs", "run?.txt", "qrels.txt"], min_size=1, max_size=2)
    return Case(argv, stdin=run_text("STDIN").encode(), statuses=STATUSES | {4, 255})


def measures_case(data) -> Case:
    pick = Pick(data, ("name",))
    name = pick("name", [None, "AP", "map", "P_10", "RBP(p=0.5000001)", "plug.py:ok", "iprec_at_recall_0.10",
                         "GAP(g=0.25,0.75)"],
                ["RBP(p=nan)", "P@1e400", "GAP(g=0.5)", "", "nosuch", "plug.py:exits", "imp_exit.py:x",
                 "imp_kbi.py:*", "imp_base.py:*", "plug.py:nothing"])
    return Case(["measures"] + ([name] if name is not None else []))


ANALYSES = (["scores", "anova", "split-half(n_splits=3)", "correlation(n_resamples=20)",
             "discpower(n_resamples=20,top=0)", "judge-agreement(other_qrels=qrels.txt)", "informativeness(lists=3)"],
            ["anova(alpha=nan)", "anova(alpha=2)", "anova(min_d=1e400)", "split-half(n_splits=-1)", "nosuch",
             "plug.py:ok", "ltr(letor=huge.letor,rounds=2)", "ltr(letor=flat.letor,rounds=2)"])
ANALYSIS_MEASURES = (["AP", "nDCG@10", "P@2", "RBP(p=0.5000001)", "plug.py:ok", "plug.py:wanders"],
                     ["plug.py:exits", "plug.py:interrupts", "plug.py:own_base", "plug.py:nan"])


def analysis_case(data) -> Case:
    pick = Pick(data, ("analysis", "measures", "output", "runs"))
    argv = ["analysis", "--no-progress", "-j", pick("jobs", ["1", "200"]), *_measures(pick, ANALYSIS_MEASURES)]
    output = pick("output", *FOLDER_OUTPUTS)
    argv += ["-o", output, "--format", "png", "--dpi", "50"] if output else []
    if pick("collection", [True, False]) or pick.hostile == "runs":
        argv += ["-Q", "qrels.txt", *_runs(pick)]
    return Case([*argv, pick("analysis", *ANALYSES)], output, "folder")  # the analysis last, after the runs


#: Options that keep an analysis command's work small (the harness checks its behaviour, not its numbers), by name;
#: an analysis not named here runs with its declaration's defaults.
CHEAP: dict[str, list[str]] = {
    "properties": ["--random-cases", "50", "--growth-length", "64", "--threshold-depth", "16"],
    "discpower": ["--resamples", "20", "--top", "0"],
    "error-rates": ["--trials", "10", "--resamples", "20", "--family-trials", "10", "--test", "ttest",
                    "--family-test", "ttest"],
    "compare": ["--resamples", "20"],
    "split-half": ["--splits", "3"],
    "correlation": ["--resamples", "20"],
    "incomplete-judgments": ["--fraction", "0.5", "--draws", "2"],
    "reusability": ["--pool-depth", "5"],
    "informativeness": ["--lists", "4", "--g-grid", "0.5"],
    "ltr": ["--data", "flat.letor", "--rounds", "2", "--folds", "2"],
    "judge-agreement": ["--other-qrels", "qrels.txt"],
}
HOSTILE_VALUES = ["-5", "0", "nan", "1e400", "99999999999999999999", "2.5", "x", "", "٣", "qrels.txt", "out"]


def _own_options(pick: Pick, decl) -> list[str]:
    """The analysis's cheap options, then one of its declared parameters given (drawn from the declaration):
    its cheap or default value, or a hostile one in the "parameter" dimension; a repeatable one sometimes twice."""
    argv = list(CHEAP.get(decl.name, ()))
    params = [p for p in decl.params if p.parse is not None and p.parse.__name__ != "parse_bool"]
    if not params:
        return argv
    param = pick("which parameter", params)
    flag = (param.flags or (param.option,))[0].split("/")[0]
    given = CHEAP.get(decl.name, [])
    cheap = given[given.index(flag) + 1] if flag in given else None
    default = param.default[0] if param.many and param.default else param.default
    sane = [v for v in (cheap, default, *(param.choices or ())) if v is not None][:3] or ["1"]
    values = pick.many("parameter", [str(v) for v in sane], HOSTILE_VALUES, min_size=1, max_size=1) \
        if param.many else [pick("parameter", [str(v) for v in sane], HOSTILE_VALUES)]
    return argv + [part for v in values for part in (flag, v)]


def analysis_command_case(name: str) -> Callable[..., Case]:
    """The generator of the command of analysis ``name``: what it reads (its measures, the world's runs or the
    demo collection, topics and systems, sometimes one given twice), its own parameters, an output folder."""

    def case(data) -> Case:
        from meta_eval.analyses import analyses

        decl = next(d for d in analyses() if d.name == name)
        pick = Pick(data, ("measures", "parameter", "output", "runs", "topics"))
        argv = [name, "--no-progress", *_own_options(pick, decl)]
        if decl.needs == "measures":  # the measures as arguments, after the options
            measures = [m for m in pick.many("measures", *ANALYSIS_MEASURES, max_size=2) if m] or ["AP"]
            tail = measures if name != "ltr" else ["nDCG@10"]
        else:
            argv += _measures(pick, ANALYSIS_MEASURES)
            tail = []
            if pick("collection", [True, False]) or pick.hostile in ("runs", "topics"):
                argv += ["-Q", "qrels.txt", *_runs(pick)]
                argv += [part for t in pick.many("topics", ["1", "2", "3"], ["9", "", "1e400"], max_size=2)
                         for part in ("--topic", t)]
        output = pick("output", *FOLDER_OUTPUTS)
        argv += ["-o", output, "--no-figures"] if output else []
        return Case([*argv, *tail], output, "folder")

    return case


STUDY_SKIPPED = ("error-rates", "properties", "ltr", "judge-agreement", "compare")  # slow, or need their own data


def study_case(data) -> Case:
    pick = Pick(data, ("measures", "output", "runs", "numbers"))
    skips = {*STUDY_SKIPPED, *pick.many("skip", ["incomplete-judgments", "reusability", "informativeness",
                                                   "intuitiveness", "split-half"], max_size=3)}
    argv = ["study", "--no-progress", "--no-figures", "-B", pick("numbers", ["20"], HOSTILE_NUMBERS),
            "--informativeness-lists", "4", "--split-half-splits", "3", "--incomplete-judgments-draws", "2",
            *[part for s in sorted(skips) for part in ("--skip", s)], *_measures(pick, ANALYSIS_MEASURES)]
    if pick("collection", [True, True, False]) or pick.hostile == "runs":
        argv += ["-Q", "qrels.txt", *_runs(pick)]
    output = pick("output", [o for o in FOLDER_OUTPUTS[0] if o], FOLDER_OUTPUTS[1])
    return Case([*argv, "-o", output], output, "folder", written=frozenset({0, 1}))


@dataclass(frozen=True)
class Command:
    """A row of the harness: how to draw a command line, and how many cases to run."""

    case: Callable[..., Case]
    examples: int


def _analysis_commands() -> dict[str, Command]:
    """A row for the command of every analysis of the registry (a module dropped into the analyses package gets
    one), a case each (the options they share are drawn in the other rows' cases too)."""
    from meta_eval.analyses import analyses

    return {decl.name: Command(analysis_command_case(decl.name), 1) for decl in analyses()}


#: Command -> its generator and budget: every command of ``meta-eval --help`` but ``reproduce`` (it reads the
#: papers' data, not the user's), checked by :func:`test_every_command_has_a_row`.
COMMANDS: dict[str, Command] = {
    "evaluate": Command(evaluate_case, 20),
    "trec-eval": Command(trec_eval_case, 16),
    "measures": Command(measures_case, 8),
    "analysis": Command(analysis_case, 10),
    **_analysis_commands(),
    "study": Command(study_case, 3),
}
NOT_COVERED = {"reproduce"}


def test_every_command_has_a_row():
    from meta_eval.cli.app import commands

    assert set(commands()) - NOT_COVERED == set(COMMANDS)


# ---------------------------------------------------------------------------------------------- running a case


def run(world: World, case: Case) -> subprocess.CompletedProcess:
    """The command in a process of its own, in the world's folder; FIFOs named on the command line are fed as a
    shell's process substitution feeds them (a writer that waits for the reader)."""
    proc = subprocess.Popen([*CLI, *case.argv], cwd=world.root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=world.env)
    done = threading.Event()
    feeders = [threading.Thread(target=_feed, args=(fifo, payload, done), daemon=True)
               for fifo, payload in world.fifo_feed.items() if Path(fifo).name in " ".join(case.argv)]
    for feeder in feeders:
        feeder.start()
    try:
        out, err = proc.communicate(case.stdin, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"meta-eval {' '.join(case.argv)}: no answer within {TIMEOUT} s (a hang)")
    finally:
        done.set()
    return subprocess.CompletedProcess(case.argv, proc.returncode, out.decode(errors="replace"),
                                       err.decode(errors="replace"))


def _feed(fifo: str, payload: bytes, done: threading.Event) -> None:
    """Write ``payload`` into ``fifo`` once a reader opens it; give up when the command has ended."""
    while not done.is_set():
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: no reader yet
                return
            time.sleep(0.01)
            continue
        try:
            os.set_blocking(fd, True)
            os.write(fd, payload)
        except OSError:
            pass
        finally:
            os.close(fd)
        return


# ------------------------------------------------------------------------------------------------ invariants


def _target(world: World, case: Case) -> Path | None:
    """The output as a path, when it names something inside the world that may be written."""
    if case.output in (None, "-"):
        return None
    path = Path(case.output) if os.path.isabs(case.output) else world.root / case.output
    return path if world.root in path.parents else None


def check(world: World, case: Case, before: dict, after: dict, earlier: dict | None,
          result: subprocess.CompletedProcess) -> None:
    """Every invariant of one case (the module docstring)."""
    shown = f"meta-eval {' '.join(case.argv)}\n--- status {result.returncode}; stderr:\n{result.stderr[-3000:]}"
    assert result.returncode in case.statuses, shown
    assert "Traceback" not in result.stderr, shown
    assert before == after, f"an input changed\n{shown}"
    _check_rows(_tidy_rows(result.stdout) if case.output in (None, "-") else None, world, case, shown)
    target = _target(world, case)
    if target is None:
        return
    leftovers = [p.name for p in target.parent.iterdir() if p.name.startswith(".") and (
        ".partial-" in p.name or ".old-" in p.name or p.name.endswith(".lock"))] if target.parent.is_dir() else []
    assert leftovers == [], f"temporary twins left: {leftovers}\n{shown}"
    unchanged = world.snapshot(set()).get(str(target.relative_to(world.root))) == (earlier or {}).get("self")
    if result.returncode == 0 or result.returncode in case.written and not unchanged:
        assert _complete(target, case.output_kind), f"the output is incomplete\n{shown}"
        if case.output_kind == "file":
            _check_rows(_tidy_rows(target.read_text(errors="replace")), world, case, shown)
    else:
        assert unchanged, f"a failed command changed its output\n{shown}"
        if earlier is not None and case.output_kind == "folder" and earlier.get("inside") is not None:
            assert World(target).snapshot(set()) == earlier["inside"], f"a failed command changed its output\n{shown}"


def _check_rows(rows: list[dict] | None, world: World, case: Case, shown: str) -> None:
    """A tidy output holds the runs the specifications name (one per file) and one measure per distinct -m."""
    if rows is None:
        return
    if case.runs is not None:
        assert {row["run"] for row in rows} == expected_runs(world, case.runs), f"not the runs named\n{shown}"
    if case.measures:
        assert len({row["measure"] for row in rows}) == len(set(case.measures)), f"measures merged\n{shown}"


def _tidy_rows(text: str) -> list[dict] | None:
    """The rows of a tidy output (CSV, TSV, JSON: run, topic, measure, value, summary), or None for another."""
    if text.lstrip().startswith("[{"):
        return json.loads(text)
    for sep in (",", "\t"):
        if text.startswith(f"run{sep}topic{sep}measure"):
            lines = text.splitlines()
            header = lines[0].split(sep)
            return [dict(zip(header, line.split(sep))) for line in lines[1:]]
    return None


def expected_runs(world: World, specs: list[str]) -> set[str]:
    """The runs (tags) the specifications name, by the rules, written here again as a reference: a name that
    exists is that file (a folder: its visible regular files, FIFOs skipped), a name that exists nowhere and holds
    ``*?[`` a glob pattern; one file, one run whatever its names; ``-`` standard input."""
    files: dict[object, str] = {}
    for spec in specs:
        if spec == "-":
            files["stdin"] = "STDIN"
            continue
        path = world.root / spec
        if os.path.lexists(path):
            named = sorted(p for p in path.iterdir() if not p.name.startswith(".")) if path.is_dir() else [path]
        else:
            named = sorted(Path(p) for p in glob.glob(str(world.root / spec)))
        for file in named:
            try:
                mode = os.stat(file).st_mode
            except OSError:
                return {f"an error: {file} cannot be read"}
            if stat.S_ISREG(mode) or stat.S_ISFIFO(mode) and file == path:
                key = (os.stat(file).st_dev, os.stat(file).st_ino)
                text = world.fifo_feed[str(file)].decode() if stat.S_ISFIFO(mode) else file.read_text()
                files[key] = text.split()[-1]  # the tag of the last line
    return set(files.values())


def _complete(target: Path, kind: str) -> bool:
    """Whether a written output is whole: a result folder that matches its manifest, a file that parses."""
    if kind == "folder":
        from meta_eval.outputs.result_folder import verify_folder

        return target.is_dir() and verify_folder(target) == []
    text = target.read_bytes()
    if not text.endswith(b"\n"):
        return False
    if target.suffix == ".json" and text.lstrip().startswith(b"["):
        json.loads(text)
    if target.suffix == ".csv" and text.startswith(b"run,"):
        widths = {len(line.split(b",")) for line in text.splitlines()}
        return len(widths) == 1
    return True


def _earlier(world: World, case: Case) -> dict | None:
    """What the output's path holds before the command (to check a failed command left it alone)."""
    target = _target(world, case)
    if target is None or not os.path.lexists(target):
        return None
    inside = World(target).snapshot(set()) if target.is_dir() and not target.is_symlink() else None
    return {"self": world.snapshot(set()).get(str(target.relative_to(world.root))), "inside": inside}


def _inputs_skip(world: World, case: Case) -> set[Path]:
    """What the command may change: its output (when it is not an input), and the plug-ins' compiled caches."""
    skip = {p for p in world.root.rglob("__pycache__")} | {world.root / "home"}
    target = _target(world, case)
    if target is not None and world.root / "out" in target.parents:
        skip.add(target)
    return skip


@pytest.mark.parametrize("name", list(COMMANDS))
def test_hostile_inputs_never_break_the_invariants(name):
    command = COMMANDS[name]

    # no shrinking: a failing case is reported as drawn (its draws are printed), within the harness's time budget
    @settings(max_examples=command.examples, suppress_health_check=list(HealthCheck), deadline=None,
              phases=(Phase.explicit, Phase.reuse, Phase.generate))
    @given(data=st.data())
    def one_case(data):
        world = build_world(data)
        try:
            case = command.case(data)
            skip = _inputs_skip(world, case)
            before, earlier = world.snapshot(skip), _earlier(world, case)
            result = run(world, case)
            after = world.snapshot(skip | _inputs_skip(world, case))
            check(world, case, before, after, earlier, result)
        finally:
            shutil.rmtree(world.root, ignore_errors=True)

    one_case()
