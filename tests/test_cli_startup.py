"""Start-up cost: ``import meta_eval`` and ``meta-eval --help`` import no heavy library and no subcommand module;
the lazy command table agrees with the commands the modules register."""

from __future__ import annotations

import subprocess
import sys

import typer.main

HEAVY = ("numpy", "pandas", "pyarrow", "scipy", "matplotlib", "seaborn", "statsmodels", "pydantic", "rich.markdown")


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_import_meta_eval_imports_no_heavy_library():
    loaded = _modules_after("import meta_eval")
    assert not [m for m in HEAVY if m in loaded]


def test_help_imports_no_subcommand_and_no_heavy_library():
    loaded = _modules_after("from meta_eval.cli import app\ntry:\n    app(['--help'])\nexcept SystemExit:\n    pass")
    assert not [m for m in HEAVY if m in loaded]
    assert not [m for m in loaded if m.startswith("meta_eval.cli.") and m not in ("meta_eval.cli.app",)]


def test_a_command_that_is_not_an_analysis_imports_no_analysis(tmp_path):
    """``meta-eval evaluate`` finds its module without reading the analyses' registry (a sixth of its imports)."""
    (tmp_path / "q").write_text("1 0 d1 1\n")
    (tmp_path / "r").write_text("1 Q0 d1 1 1.0 r\n")
    code = (f"from meta_eval.cli import app\ntry:\n    app(['evaluate', '-Q', {str(tmp_path / 'q')!r}, "
            f"{str(tmp_path / 'r')!r}, '-m', 'AP'])\nexcept SystemExit as e:\n    assert not e.code, e.code")
    loaded = _modules_after(code)
    assert "meta_eval.cli.evaluate" in loaded
    assert not [m for m in loaded if m.startswith("meta_eval.analyses")]


def test_lazy_names_resolve_to_the_functions():
    import meta_eval as me
    import meta_eval.statistics.comparison  # noqa: F401  (importing the modules must not hide the functions)
    import meta_eval.measures.scoring  # noqa: F401

    assert callable(me.evaluate) and me.evaluate.__name__ == "evaluate"
    assert callable(me.compare) and me.compare.__name__ == "compare"
    assert me.load_collection.__module__ == "meta_eval.model.collection"


def test_command_table_matches_the_registered_commands():
    from meta_eval.analyses import analyses
    from meta_eval.cli import app, commands, load_all

    load_all()
    registered = {typer.main.get_command_name(i.callback.__name__) if i.name is None else i.name:
                  i.callback.__module__ for i in app.registered_commands}
    table = commands()
    assert set(registered) == set(table)
    assert {a.name for a in analyses()} <= set(table)  # every analysis of the registry is a command
    for name, (module, summary) in table.items():
        assert registered[name] == f"meta_eval.cli.{module}", name
        assert summary.endswith(".") and len(summary) < 80, name


def test_every_command_runs_from_the_lazy_group():
    from typer.testing import CliRunner

    from meta_eval.cli import app, commands

    runner = CliRunner()
    listing = runner.invoke(app, ["--help"])
    assert listing.exit_code == 0 and all(name in listing.output for name in commands())
    for name in commands():
        result = runner.invoke(app, [name, "--help"])
        assert result.exit_code == 0, (name, result.output)
    assert runner.invoke(app, ["no-such-command"]).exit_code == 2


def test_help_in_a_pipe_shows_every_option_name_whole():
    """Rich writes 80 columns to a pipe, which cut option names ("--measure,--metr…"); meta-eval widens it."""
    import os

    from meta_eval.cli.app import commands

    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TERMINAL_WIDTH")}
    for name in commands():
        out = subprocess.run([sys.executable, "-c", "from meta_eval.cli import run; run()", name, "--help"],
                             capture_output=True, text=True, env=env, timeout=120).stdout
        assert "Usage" in out and "…" not in out, name


def test_meta_eval_alone_prints_the_help():
    """``meta-eval`` with no argument prints the usage and the commands (on stderr, status 2, as Click does); Typer's
    handler printed nothing."""
    out = subprocess.run([sys.executable, "-c", "from meta_eval.cli import run; run()"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2 and "Usage: " in out.stderr and "evaluate" in out.stderr


PROGRAM = "import atexit, threading\n{setup}\nfrom meta_eval.cli import run\nrun()"


def test_the_program_runs_exit_handlers_and_waits_for_threads_before_it_ends():
    """:func:`meta_eval.cli.run` ends the process without the interpreter's teardown, but only after the exit
    handlers ran and when no other thread runs (a thread still running: the usual exit waits for it)."""
    handler = "atexit.register(lambda: print('handler ran', flush=True))"
    # the thread ends after the main thread's command (whatever its speed): it waits for the main thread to finish
    thread = ("threading.Thread(target=lambda: (threading.main_thread().join(), print('thread done', flush=True)))"
              ".start()")
    for setup, said in ((handler, "handler ran"), (thread, "thread done")):
        out = subprocess.run([sys.executable, "-c", PROGRAM.format(setup=setup), "evaluate", "--help"], capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0 and out.stdout.rstrip().endswith(said), out.stderr


def test_the_program_keeps_the_status_and_every_byte_of_its_output(tmp_path):
    """The quick exit flushes what is buffered: ``evaluate -q -m all_trec`` (about 2 MB through a pipe) is whole,
    the same bytes as the command run in-process; a usage error keeps its status."""
    from typer.testing import CliRunner

    from meta_eval.cli import app

    args = ["evaluate", "-m", "all_trec", "-q", "-f", "csv", "--no-progress"]
    out = subprocess.run([sys.executable, "-c", PROGRAM.format(setup=""), *args], capture_output=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.decode() == CliRunner().invoke(app, args).stdout
    bad = subprocess.run([sys.executable, "-c", PROGRAM.format(setup=""), "evaluate", "-m", "no-such-measure"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "unknown measure" in bad.stderr


PLUG_IN = """import meta_eval as me

LOG = open({log!r}, "w")  # left open, its text buffered: the usual exit flushes it


@me.per_list
def first(grades, counts):
    LOG.write("called\\n")
    return float(grades[0] > 0) if len(grades) else 0.0
"""


def test_the_program_ends_as_usual_after_a_plug_in_or_under_a_profiler(tmp_path):
    """A plug-in's open file keeps what it wrote, and a profiler writes its record: the quick exit is not taken
    when a plug-in's code ran or a profiler is on (it would drop both)."""
    plug_in, log = tmp_path / "plug.py", tmp_path / "log.txt"
    plug_in.write_text(PLUG_IN.format(log=str(log)))
    out = subprocess.run([sys.executable, "-c", PROGRAM.format(setup=""), "evaluate", "-m", f"{plug_in}:first",
                          "--no-progress"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert log.read_text().startswith("called\n")
    profile = tmp_path / "run.prof"
    program = tmp_path / "program.py"
    program.write_text("from meta_eval.cli import run\nrun()\n")
    out = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(profile), str(program), "measures"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and profile.stat().st_size > 0, out.stderr
