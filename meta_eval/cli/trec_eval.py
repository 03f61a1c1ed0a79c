"""``meta-eval trec-eval``: trec_eval 10's command line over meta-eval's library, printing what trec_eval prints.

Options are read as trec_eval reads them (GNU ``getopt_long``: options anywhere, ``-qc``, ``-mmap``, ``--measure=map``,
unique prefixes of the long names); the measures are the registry's, under their trec_eval names
(:mod:`meta_eval.measures.trec_names`); the lists come from the same loaders as ``evaluate`` (qrels, judgment groups,
preferences); the report is :mod:`meta_eval.rendering.trec_layout`. Exit statuses are trec_eval's (``trec_eval.c``).
"""

from __future__ import annotations

import getopt
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import typer

from meta_eval.cli.app import app
from meta_eval.cli.common import reports_errors

USAGE = """Usage: meta-eval trec-eval [-h] [-q] [-c] [-n] [-l num] [-M num] [-N num] [-J] [-R rel_format]
                           [-T results_format] [-Z zscores_file] {-m measure[.params]}* rel_info_file
                           results_file [results_file ...]
   -h: full help, with what differs from trec_eval 10
"""

HELP = USAGE + """
trec_eval 10's command line, printing what trec_eval prints (byte for byte; exit statuses too), over meta-eval's
measure library. results_file '-' reads standard input.

  -q, --query_eval_wanted          also print each topic's values
  -m, --measure NAME[.PARAMS]      a measure or set: official (default), all_trec, set, all_prefs, prefs,
                                   qrels_jg, or any trec_eval measure (P.5,10  ndcg_cut.10  ndcg.1=3,2=9
                                   set_F.0.5  rbp.p=0.8 ...; 'meta-eval measures' lists them)
  -c, --complete_rel_info_wanted   average over every topic of the rel_info file: a topic the run lacks scores 0
                                   (without -c such a topic is an error, status 4, as in trec_eval 10)
  -n, --nosummary                  no summary lines
  -l, --level_for_rel NUM          relevant = grade >= NUM (default 1)
  -M, --Max_retrieved_per_topic N  keep the top N documents of each list
  -N, --Number_docs_in_coll N      collection size (utility's fourth coefficient)
  -J, --Judged_docs_only           drop unjudged documents before scoring
  -R, --Rel_info_format FORMAT     qrels (default), qrels_jg (judgment groups), prefs, qrels_prefs
  -T, --Results_format FORMAT      trec_results (the only one)
  -Z, --Zscore FILE                print z-scores against FILE's per-topic 'topic measure mean sd' lines
  -v, --version                    version, on standard error
  -D, --Debug_level N              accepted; no debug trace is printed
  -o                               accepted (obsolete in trec_eval)

Exit status: 0 success; 1 bad option, wrong number of files or unknown measure; 2 unreadable or malformed input
(the message names the file and line), bad -R/-T, bad measure parameters; 4 a topic of the rel_info file the run
lacks (without -c), a document twice for one topic, contradictory preferences, a measure the -R format cannot
give; 255 a bad -Z file.

What differs from trec_eval 10, and why:
  * Several results files (or '-') may follow the rel_info file: each run's report in turn, as a shell loop of
    trec_eval prints them, from one process (the runs are read on every core); the first failing run's status
    ends it.
  * trec_eval's defects are not copied; meta-eval's value is kept:
    - fractional custom gains (ndcg.1=2.5,2=1.5, also G, Rndcg, ndcg_rel, dcg, ideal_dcg, rbp) order the ideal
      list by gain; trec_eval compares gains as integers and can order it wrongly;
    - iprec_at_recall and 11pt_avg of a list -J leaves empty (a topic the run lacks under -J -c, a run of
      unjudged documents) are 0; trec_eval divides 0 by 0 and prints -nan (and -nan for the summary);
    - rbp normalises the gains by the topic's highest gain; trec_eval's m_rbp.c reads two uninitialised
      variables, so its rbp depends on leftover memory (it agrees under all_trec; alone or with parameters,
      rbp.p=0.5, it can differ);
    - with -c, a topic the run lacks scores 0 for utility, rbp_resid and relstring with parameters too;
      trec_eval zeroes them by their plain names only;
    - parameters given to one of dcg, ideal_dcg, ndcg apply to that one; trec_eval shares one parameter block
      among them (-m ideal_dcg -m dcg.1=3 prints ideal_dcg_1=3) and aborts freeing it twice.
  * Bad input is refused with the file and line named: lines with extra fields in rel_info files, scores or
    levels that are not numbers (trec_eval reads them as 0), a document twice in a run even beyond -M (trec_eval
    checks the top -M only), a document listed twice in one preference sub-group, a pair parameter other than a
    grade (or p for rbp), parameters outside a measure's domain (iprec_at_recall.1.5, P.0), -M below 1, -N
    below 0, -l, -M or -N values that are not whole numbers (trec_eval's atol reads -M 1e3 as 1, -l '' as 0).
    Contradictory preferences are status 4 (trec_eval aborts, status 134).
  * A file whose lines end in a lone CR is read line by line (trec_eval reads one long line and scores 0).
  * stderr messages are meta-eval's (what is wrong and where); -D prints no debug trace.
"""

SHORT = "hvqm:cl:nD:JN:M:R:T:oZ:"
LONG = ["help", "version", "query_eval_wanted", "measure=", "complete_rel_info_wanted", "level_for_rel=",
        "nosummary", "Debug_level=", "Judged_docs_only", "Number_docs_in_coll=", "Max_retrieved_per_topic=",
        "Rel_info_format=", "Results_format=", "Output_old_results_format=", "Zscore="]
_LONG_TO_SHORT = {"help": "h", "version": "v", "query_eval_wanted": "q", "measure": "m",
                  "complete_rel_info_wanted": "c", "level_for_rel": "l", "nosummary": "n", "Debug_level": "D",
                  "Judged_docs_only": "J", "Number_docs_in_coll": "N", "Max_retrieved_per_topic": "M",
                  "Rel_info_format": "R", "Results_format": "T", "Output_old_results_format": "o", "Zscore": "Z"}
REL_FORMATS = ("qrels", "qrels_jg", "prefs", "qrels_prefs")


class Exit(Exception):
    """Stop with a status (and a message for standard error)."""

    def __init__(self, status: int, message: str = ""):
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class Options:
    """trec_eval's options (``EPI`` in trec_eval.c)."""

    query: bool = False
    complete: bool = False
    summary: bool = True
    rel_level: int = 1
    depth: int | None = None
    num_docs: int = 0
    judged_only: bool = False
    rel_format: str = "qrels"
    results_format: str = "trec_results"
    zscores: str | None = None
    measures: list[str] = field(default_factory=list)
    help: bool = False


@app.command("trec-eval", add_help_option=False,
             context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
@reports_errors
def trec_eval(ctx: typer.Context) -> None:
    """trec_eval 10's command line: the same options, output and exit statuses (-h: what differs)."""
    status = main(list(ctx.args))
    if status:
        raise typer.Exit(code=status)


def main(argv: list[str]) -> int:
    """Run trec_eval's command line ``argv``; the exit status."""
    try:
        options, files = parse(argv)
        if options.help:
            sys.stdout.write(HELP)
            return 0
        if len(files) < 2:
            raise Exit(1, "expected a rel_info file and a results file\n" + USAGE)
        return evaluate(options, files[0], files[1:])
    except Exit as stop:
        if stop.message:
            print(f"meta-eval trec-eval: {stop.message.rstrip()}", file=sys.stderr)
        return stop.status


def parse(argv: list[str]) -> tuple[Options, list[str]]:
    """trec_eval's options, in order (an unknown measure stops at once, status 1), and the file operands."""
    from meta_eval.core.trec_eval_names import BY_NAME, NICKNAMES

    try:
        pairs, files = getopt.gnu_getopt(argv, SHORT, LONG)
    except getopt.GetoptError as exc:
        raise Exit(1, f"{exc}\n{USAGE}") from None
    options = Options()
    for flag, value in pairs:
        key = _LONG_TO_SHORT.get(flag.lstrip("-"), flag.lstrip("-"))
        if key == "h":
            options.help = True
        elif key == "v":
            from meta_eval import __version__

            print(f"meta-eval {__version__} trec-eval (trec_eval 10 command line)", file=sys.stderr)
            raise Exit(0)
        elif key == "m":
            name, dot, params = value.partition(".")
            if (dot and not params) or (name not in BY_NAME and name not in NICKNAMES):
                raise Exit(1, f"illegal measure '{value}'")
            options.measures.append(value)
        elif key in "lNM":
            setattr(options, {"l": "rel_level", "N": "num_docs", "M": "depth"}[key], _whole_number(key, value))
        else:
            _flag(options, key, value)
    return options, files


#: The options that set a field: flag -> (field, value; None: the option's argument).
_SETS = {"q": ("query", True), "c": ("complete", True), "n": ("summary", False), "J": ("judged_only", True),
         "R": ("rel_format", None), "T": ("results_format", None), "Z": ("zscores", None)}


def _flag(options: Options, key: str, value: str) -> None:
    """Set what the option sets; -D (debug level) and -o (obsolete) are accepted and change nothing."""
    if key in _SETS:
        name, fixed = _SETS[key]
        setattr(options, name, value if fixed is None else fixed)


_WHOLE_NUMBER = re.compile(r"\s*[+-]?[0-9]+\s*")


def _whole_number(key: str, text: str) -> int:
    """The value of -l, -M or -N: a whole number written in full (trec_eval's ``atol`` reads "1e3" as 1, "2.5" as 2
    and "" as 0: not copied); -N (a collection's size) at least 0."""
    if not _WHOLE_NUMBER.fullmatch(text):
        raise Exit(1, f"-{key} {text!r}: expected a whole number")
    number = int(text)
    if key == "N" and number < 0:
        raise Exit(1, f"-N {number}: the number of documents in the collection must be at least 0")
    return number


# --------------------------------------------------------------------------------------------- evaluation


def evaluate(options: Options, rel_file: str, result_files: list[str]) -> int:
    """Read, score and print every run; the status of the first run that fails, else 0."""
    from meta_eval.core.errors import ConflictError, InputError
    from meta_eval.measures.trec_names import trec_eval_selection
    from meta_eval.rendering.trec_layout import numbers, report

    judgments = _read_judgments(options, rel_file)
    if options.results_format != "trec_results":
        raise Exit(2, f"illegal retrieval results format '{options.results_format}' (only trec_results)")
    zscores = _read_zscores(options.zscores) if options.zscores is not None else None
    try:
        selection = _with_collection_size(trec_eval_selection(options.measures), options.num_docs)
    except InputError as exc:
        raise Exit(2, f"cannot initialize measure: {exc}") from None
    for chosen in selection:
        if options.rel_format not in chosen.measure.formats:
            raise Exit(4, f"measure {chosen.measure.name} cannot be calculated from -R {options.rel_format} "
                          "judgments")
    try:
        collection = _collection(options, judgments, result_files)
    except ConflictError as exc:
        raise Exit(4, str(exc)) from None
    except InputError as exc:
        raise Exit(2, str(exc)) from None
    topics = collection.topics
    values = numbers(selection, _values(collection, selection), topics, collection=collection, zscores=zscores)
    relstring = _relstrings(collection, selection)
    for s, system in enumerate(collection.systems):
        absent = [] if options.complete else [t for t in range(len(topics)) if not collection.present[s, t]]
        text = report(selection, values, s, topics, _runid(collection, s), per_topic=options.query,
                      summary=options.summary, relstring=relstring[s] if relstring is not None else None,
                      upto=absent[0] if absent else None)
        sys.stdout.write(text)
        if absent:
            sys.stdout.flush()
            raise Exit(4, f"run {system!r} has no results for topic '{topics[absent[0]]}' of {rel_file} (with -c "
                          "it would score 0 there)")
    return 0


def _read_judgments(options: Options, path: str):
    from meta_eval.inputs import trec as io

    if options.rel_format not in REL_FORMATS:
        raise Exit(2, f"illegal rel_format '{options.rel_format}' (qrels, qrels_jg, prefs or qrels_prefs)")
    readers = {"qrels": io.read_qrels, "qrels_jg": io.read_qrels_jg}
    return _read(readers.get(options.rel_format, lambda p: io.read_prefs(p, fmt=options.rel_format)), path, 2)


def _read_zscores(path: str):
    from meta_eval.inputs import trec as io

    return _read(io.read_zscores, path, 255)  # trec_eval returns UNDEF from main: status 255


def _read(reader, path: str, status: int):
    """``reader(path)``, or stop with ``status`` and the reader's message (file and line)."""
    from meta_eval.core.errors import InputError

    try:
        return reader(path)
    except InputError as exc:
        raise Exit(status, str(exc)) from None


def _with_collection_size(selection, num_docs: int):
    """``-N``: utility's collection size."""
    from dataclasses import replace

    from meta_eval.measures import make_measure

    out = []
    for chosen in selection:
        if chosen.measure.family == "Utility":
            values = tuple(make_measure("Utility", label=m.output_name, **(dict(m.params) | {"N": num_docs}))
                           for m in chosen.values)
            chosen = replace(chosen, values=values)
        out.append(chosen)
    return out


def _collection(options: Options, judgments, result_files: list[str]):
    """The runs' lists against the judgments, as the -R format reads them."""
    from meta_eval.cli.common import keep_freed_memory

    keep_freed_memory()
    missing = "zero" if options.complete else "skip"
    if options.depth is not None and options.depth < 1:
        raise Exit(1, f"-M {options.depth}: the number of documents kept per topic must be at least 1")
    runs = [Path(f) if f != "-" else f for f in result_files]
    if options.rel_format == "qrels":
        from meta_eval.model.collection import load_collection

        return load_collection(judgments, runs, depth=options.depth, rel_level=options.rel_level, missing=missing,
                               unjudged="remove" if options.judged_only else "nonrel", disjoint=True)
    if options.rel_format == "qrels_jg":
        from meta_eval.model.judgment_groups import load_judgment_groups

        return load_judgment_groups(judgments, runs, depth=options.depth, rel_level=options.rel_level,
                                    missing=missing, unjudged="remove" if options.judged_only else "nonrel")
    from meta_eval.model.preferences import load_preferences

    return load_preferences(judgments, runs, depth=options.depth, missing=missing)


def _values(collection, selection) -> dict:
    """Per measure output name, the (S, T) per-topic values (every measure in one pass over the lists)."""
    from meta_eval.measures.scoring import per_topic_many

    measures = [m for chosen in selection for m in chosen.values]
    return {m.output_name: v for m, v in zip(measures, per_topic_many(collection, measures))} if measures else {}


def _relstrings(collection, selection):
    from meta_eval.core.trec_eval_names import c_atof
    from meta_eval.rendering.trec_layout import relstrings

    for chosen in selection:
        if chosen.measure.kind == "relstring":
            length = c_atof(chosen.params.split(",")[0]) if chosen.params else chosen.measure.defaults[0]
            return relstrings(collection, int(length))
    return None


def _runid(collection, s: int) -> str:
    """The run's tag as trec_eval prints it (the collection may have added ``@file`` to tell two runs apart)."""
    name = collection.systems[s]
    source = collection.options.get("runs", [""] * (s + 1))[s]
    suffix = "@" + Path(str(source)).name.removesuffix(".gz")
    return name[: -len(suffix)] if name.endswith(suffix) else name
