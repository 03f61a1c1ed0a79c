"""The ``meta-eval`` Typer application; each subcommand lives in a module of this package.

Subcommands are loaded lazily: ``meta-eval --help`` lists them from :func:`commands` without importing any (their
modules, and Typer's reading of their signatures, cost several tenths of a second), and ``meta-eval NAME`` imports
only the module of NAME. Every analysis of the registry is a command (:mod:`meta_eval.cli.generated`), found from
the analyses package's files; ``tests/test_cli_startup.py`` checks that the table and the modules agree.
"""

from __future__ import annotations

import errno
import importlib
import os
import sys

import typer
import typer.main
from typer.core import TyperGroup

#: Width of help and tables written to a pipe or file (on a terminal, the terminal's width). Rich's default there is
#: 80 columns, which cut option names in ``--help`` ("--measure,--metr…"), examples of ``study --help`` and the headers
#: of result tables ("mean_r…"); ``TERMINAL_WIDTH`` or ``COLUMNS`` set by the user win.
PIPE_WIDTH = 160

#: The commands that are not analyses -> (module of meta_eval.cli defining it, the summary ``meta-eval --help``
#: shows), in listing order; every analysis of the registry adds its own (:func:`commands`).
COMMANDS: dict[str, tuple[str, str]] = {
    "evaluate": ("evaluate", "Score every run with the given measures."),
    "trec-eval": ("trec_eval", "trec_eval 10's command line: the same output, byte for byte."),
    "measures": ("measures", "List every measure, its parameters, aliases and trec_eval spellings."),
    "study": ("study", "Meta-evaluate metrics against GAP and nDCG: a report folder."),
    "reproduce": ("reproduce", "Reproduce the seed papers' tables and figures."),
    "analysis": ("generated", "Run any analysis, yours included (file.py:NAME); list them."),
}


#: Commands whose names changed -> the command that replaced them (a clear error, not a second name).
RENAMED = {"correlate": "correlation"}


def commands() -> dict[str, tuple[str, str]]:
    """Every command -> (its module, its summary): :data:`COMMANDS`, then one per analysis of the registry (read
    from the analyses package without importing it: :func:`meta_eval.analyses.builtin_modules`)."""
    from meta_eval.analyses import builtin_modules

    analyses = {name: ("generated", summary) for name, summary in builtin_modules().items()}
    return {**COMMANDS, **analyses}


def command_modules() -> dict[str, str]:
    """Every command -> its module, in the order of :func:`commands`, without reading the analyses' sources for
    their summaries (what running a command needs: :func:`meta_eval.analyses.builtin_names`)."""
    from meta_eval.analyses import builtin_names

    return {**{name: module for name, (module, _) in COMMANDS.items()}, **dict.fromkeys(builtin_names(), "generated")}


def command_name(info) -> str:
    """The name Typer gives a registered command."""
    return info.name or typer.main.get_command_name(info.callback.__name__)


#: The narrowest width a user's ``COLUMNS``/``TERMINAL_WIDTH`` may set; narrower (0, 1, a word) is ignored: Rich
#: printed no table at all at 0, one character a line at 1.
MIN_WIDTH = 20


def _usable_width(text: str) -> bool:
    return text.strip().isdigit() and int(text) >= MIN_WIDTH


class LazyGroup(TyperGroup):
    """A command group that imports a subcommand's module only when that subcommand is used."""

    def main(self, *args, **kwargs):
        """Run the command line (only then: importing meta_eval.cli leaves the host process's settings alone)."""
        standard_streams()
        for name in ("TERMINAL_WIDTH", "COLUMNS"):
            if name in os.environ and not _usable_width(os.environ[name]):  # COLUMNS=0 printed no table at all
                del os.environ[name]
        if "TERMINAL_WIDTH" not in os.environ and "COLUMNS" not in os.environ and not sys.stdout.isatty():
            os.environ["TERMINAL_WIDTH"] = os.environ["COLUMNS"] = str(PIPE_WIDTH)
        return super().main(*args, **kwargs)

    def invoke(self, ctx):
        """Run the subcommand; a reader of standard output that went away (``meta-eval evaluate | head -1``) ends
        it as it ends a Unix tool: quietly, status 141 (128 + SIGPIPE), never a ``BrokenPipeError`` traceback,
        rich's status 1 or Python's "Exception ignored" line at exit."""
        pipe_closed_raises()
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            stdout_to_devnull()
            raise typer.Exit(code=PIPE_CLOSED) from None

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        """``meta-eval`` alone prints the help, on stderr with status 2 as Click does (Typer's handler of Click's
        "no arguments" error prints nothing when the help is not its own rich one, as :meth:`format_help` is)."""
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            typer.echo(ctx.get_help(), err=True)
            ctx.exit(2)
        return super().parse_args(ctx, args)

    def list_commands(self, ctx) -> list[str]:
        registered = [command_name(info) for info in app.registered_commands]
        return list(dict.fromkeys([*command_modules(), *registered]))

    def get_command(self, ctx, name: str):
        if name not in self.commands:
            # a command of COMMANDS is found without reading the analyses package's registry (15 ms of imports)
            module = COMMANDS[name][0] if name in COMMANDS else command_modules().get(name)
            if module:
                importlib.import_module(f"meta_eval.cli.{module}")
            if not _registered(name):  # a command not in the table: look in every module
                load_all()
            info = _registered(name)
            if info is None:
                if name in RENAMED:
                    ctx.fail(f"'meta-eval {name}' is now 'meta-eval {RENAMED[name]}' (the same options and files)")
                return None
            self.commands[name] = typer.main.get_command_from_info(
                info, pretty_exceptions_short=app.pretty_exceptions_short, rich_markup_mode=app.rich_markup_mode)
        return self.commands[name]

    def format_help(self, ctx, formatter) -> None:
        """The top-level help, plain, from the table: no subcommand module is imported to print it."""
        self.format_usage(ctx, formatter)
        self.format_help_text(ctx, formatter)
        self.format_options(ctx, formatter)

    def format_commands(self, ctx, formatter) -> None:
        table = commands()
        rows = [(name, table[name][1] if name in table else "") for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def standard_streams() -> None:
    """Make the standard streams usable whatever state the process was started in.

    * A closed standard input, output or error (``meta-eval evaluate <&- >&-``, as cron and daemons may run
      commands) is opened on ``/dev/null``, as daemon(3) does: the next file the command opens would otherwise get
      descriptor 1 and receive the results meant for standard output; what is printed there is discarded (said on
      stderr), files written with ``-o`` are complete.
    * A stream whose encoding cannot write every character (``PYTHONIOENCODING=ascii``, a C locale) writes the
      others as escapes (``\\u03c4`` for τ) instead of failing in the middle of a table.
    """
    closed = []
    for fd, name, flags in ((0, "stdin", os.O_RDONLY), (1, "stdout", os.O_WRONLY), (2, "stderr", os.O_WRONLY)):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, flags)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            closed.append(name)
        if getattr(sys, name) is None:  # Python sets a stream that was closed at start-up to None
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False, errors="backslashreplace",
                                    buffering=1 if fd == 2 else -1))
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        if encoding != "utf8" and getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    if "stdout" in closed:
        print("meta-eval: note: standard output is closed; what is printed there is discarded (give -o FILE to "
              "keep the results)", file=sys.stderr)


#: The exit status of a command whose reader went away: a shell's for a process ended by SIGPIPE (Python ignores the
#: signal and raises BrokenPipeError instead: https://docs.python.org/3/library/signal.html#note-on-sigpipe).
PIPE_CLOSED = 128 + 13


def pipe_closed_raises() -> None:
    """Make rich's consoles raise ``BrokenPipeError`` when their reader went away, as ``print`` does: rich's own
    handling (``Console.on_broken_pipe``, meant to be replaced) exits with status 1, as if the command had failed.
    Set when a command runs, not at import: ``meta-eval --help`` imports no rich console."""
    import rich.console

    def reader_gone(console) -> None:
        console.quiet = True
        raise BrokenPipeError(errno.EPIPE, "the reader of standard output went away")

    rich.console.Console.on_broken_pipe = reader_gone


def stdout_to_devnull() -> None:
    """Point standard output at /dev/null, so that the interpreter's last flush of what is left in its buffer does
    not fail again ("Exception ignored ... BrokenPipeError")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # pragma: no cover - no real stdout
        pass


def run() -> None:
    """The ``meta-eval`` program: :data:`app`, then an exit that skips the interpreter's teardown.

    Tearing down the modules a command imported (numpy, pyarrow, numba, their objects' cycles found by a last
    garbage collection) takes a tenth of a second, about a tenth of ``meta-eval evaluate`` on TREC-COVID, and frees
    nothing the operating system would not reclaim. So once the command has finished, its exit handlers are run and
    its streams flushed, the process ends at once (``os._exit``) — unless the usual exit could still do something
    that matters (:func:`_quick_exit_is_safe`), or a flush fails: then the interpreter ends it as usual. A thread a
    plug-in's code started and left running (:func:`meta_eval.measures.plugins.threads_left`) is said and not waited
    for: the usual exit would wait for it forever. In-process callers (tests, notebooks) call :data:`app`, which
    never exits this way."""
    try:
        app()
        code = 0
    except SystemExit as done:
        code = done.code
    if code is None:
        code = 0
    plugins = sys.modules.get("meta_eval.measures.plugins")
    stuck = _still_running(plugins.threads_left()) if plugins else []
    if stuck:  # the usual exit would wait for them: forever, for a plug-in's endless loop
        print(f"meta-eval: note: the command has finished, but thread(s) a plug-in started still run "
              f"({', '.join(stuck)}): ending without waiting for them", file=sys.stderr)
    if isinstance(code, int) and (stuck or _quick_exit_is_safe()) and _flushed():
        import atexit

        atexit._run_exitfuncs()  # what the interpreter runs at exit (temporary folders' finalizers, logging...)
        if _flushed():
            os._exit(code)
    raise SystemExit(code)


def _quick_exit_is_safe() -> bool:
    """Whether ending the process without the interpreter's teardown loses nothing: no other thread and no child
    process of the multiprocessing module runs; no plug-in's code ran (a file it left open would lose what is
    buffered, a temporary file of its would stay); no profiler or tracer waits to write its record at exit."""
    import threading

    children = sys.modules.get("multiprocessing")
    plugins = sys.modules.get("meta_eval.measures.plugins")
    return (threading.active_count() == 1 and not (children and children.active_children())
            and not (plugins and plugins.any_loaded()) and sys.getprofile() is None and sys.gettrace() is None)


def _still_running(threads: list, grace: float = 1.0) -> list[str]:
    """The names of ``threads`` (a plug-in's) still running after ``grace`` seconds."""
    import time

    deadline = time.monotonic() + grace
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [thread.name for thread in threads if thread.is_alive()]


def _flushed() -> bool:
    """Flush the standard streams; False if one cannot be flushed (the usual exit then reports it)."""
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return False
    return True


def load_all() -> None:
    """Import every subcommand module (each registers its commands on :data:`app`)."""
    for module in sorted(set(command_modules().values())):
        importlib.import_module(f"meta_eval.cli.{module}")


def _registered(name: str):
    return next((info for info in app.registered_commands if command_name(info) == name), None)


app = typer.Typer(
    name="meta-eval",
    cls=LazyGroup,
    help="Evaluate IR evaluation metrics: exact scores, informativeness, discriminative power, correlation.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _main() -> None:
    # A callback makes Typer build a group even before any subcommand module is imported.
    pass
