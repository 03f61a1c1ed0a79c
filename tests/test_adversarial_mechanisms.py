"""Round 4 of the adversarial audit, tested at the mechanisms every command goes through: one test (with variants)
per class of silently wrong number, lost data, hang or traceback.

1. paths are paths (a file named ``run[1].txt`` is that file; a pattern only when no such file exists, and said);
2. canonical measure names exact (``RBP(p=0.5000001)`` is not ``RBP(p=0.5)``, in names and MEM cache keys);
3. one file, one system (aliases merged and said; a dangling link an error naming it);
4. repeated option values refused the same way everywhere (:func:`meta_eval.core.params.unique`);
5. outputs that cannot be swapped or moved under us (absolute paths, mount points, NAME_MAX, free space, a crash-safe
   swap, write errors inside a result folder);
6. Dask addresses, a scheduler that never answers, ``-j`` above the usable cores;
7. process state (closed standard streams, an ASCII-only locale);
8. plug-ins raising BaseExceptions of their own;
9. study files of the wrong shape; 10. LETOR files LightGBM cannot take; 11. the MEM cache folder's XDG rule.

Every case asserts the exact result or the clear error, and that the inputs are unchanged.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import meta_eval as me
from meta_eval.core.errors import InputError, MetaEvalWarning, OutputError
from meta_eval.core.file_identity import is_pattern, named_files
from meta_eval.inputs.trec import RunFilesNote, expand_paths

CLI = [sys.executable, "-c", "from meta_eval.cli import run; run()"]
QRELS = "1 0 a 2\n1 0 b 0\n1 0 c 1\n2 0 a 1\n2 0 e 0\n2 0 f 2\n"


def run_text(tag: str, order: str = "abc") -> str:
    """A two-topic run ranking the documents ``order`` (topic 1) and ``efa`` (topic 2), tagged ``tag``."""
    lines = [f"1 Q0 {d} {i + 1} {10 - i} {tag}" for i, d in enumerate(order)]
    return "\n".join(lines + [f"2 Q0 {d} {i + 1} {10 - i} {tag}" for i, d in enumerate("efa")]) + "\n"


def cli(*args, cwd=None, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          **kwargs)


def clean(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    """The result, after checking it is no traceback."""
    assert "Traceback" not in result.stderr, result.stderr
    return result


def notes(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, RunFilesNote)]


def expand(specs) -> tuple[list[str], list[str]]:
    """expand_paths' files (as strings) and the notes it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        files = [str(p) for p in expand_paths(specs)]
    return files, notes(caught)


# ------------------------------------------------------------------------------------------------ 1. paths are paths


@pytest.mark.parametrize("name, decoy", [("run[1].txt", "run1.txt"), ("a*b.txt", "aXb.txt"), ("q?.txt", "qX.txt"),
                                         ("[ab].txt", "a.txt"), ("x[!y].txt", "xz.txt")])
def test_a_file_named_with_glob_characters_is_that_file(tmp_path, name, decoy):
    (tmp_path / name).write_text(run_text("literal"))
    (tmp_path / decoy).write_text(run_text("decoy", "cba"))
    spec = str(tmp_path / name)
    assert not is_pattern(spec)
    assert expand([spec]) == ([spec], [])  # the file itself, no note
    assert named_files([spec]) == [spec]  # the output layer sees the same input
    col = me.load_collection(_qrels(tmp_path), [spec])
    assert list(col.systems) == ["literal"]


@pytest.mark.parametrize("name", ["run[1].txt", "a*b.txt", "q?.txt"])
def test_a_file_named_with_glob_characters_that_matches_nothing_else_is_read(tmp_path, name):
    (tmp_path / name).write_text(run_text("only"))
    col = me.load_collection(_qrels(tmp_path), [str(tmp_path / name)])  # was "no run files found"
    assert list(col.systems) == ["only"]


def test_a_pattern_is_a_pattern_only_when_no_file_has_its_name_and_says_what_it_matched(tmp_path):
    for name in ("run1.txt", "run2.txt", "other.txt"):
        (tmp_path / name).write_text(run_text(name[:-4]))
    spec = str(tmp_path / "run[12].txt")
    files, said = expand([spec])
    assert files == [str(tmp_path / "run1.txt"), str(tmp_path / "run2.txt")]
    assert len(said) == 1 and repr(spec) in said[0] and "run1.txt and" in said[0] and "run2.txt" in said[0]
    assert sorted(named_files([spec])) == files
    with pytest.raises(InputError, match=r"no run files match this glob pattern \(and no file has this name\)"):
        expand_paths([str(tmp_path / "nothing*.txt")])


def _qrels(folder: Path) -> Path:
    (folder / "qrels.txt").write_text(QRELS)
    return folder / "qrels.txt"


NAME_PARTS = st.sampled_from(["run", "1", "*", "?", "[1]", "[!x]", "a", ".txt", "["])


@given(names=st.lists(st.lists(NAME_PARTS, min_size=1, max_size=4).map("".join), min_size=1, max_size=4,
                      unique=True), pick=st.integers(0, 3))
@settings(max_examples=40)
def test_expand_paths_and_named_files_agree_on_every_name(tmp_path_factory, names, pick):
    """Whatever the names, a spec naming an existing file gives that file, and the reader (expand_paths) and the
    output layer's view of the inputs (named_files) give the same files."""
    folder = tmp_path_factory.mktemp("names")
    for name in names:
        (folder / name).write_text(run_text("x"))
    spec = str(folder / names[pick % len(names)])
    files, _ = expand([spec])
    assert files == [spec]
    assert named_files([spec]) == [spec]
    other = str(folder / "run*")  # a pattern when no file is named so, else that file
    if os.path.lexists(other):
        assert expand([other])[0] == [other]
    elif any(n.startswith("run") for n in names):
        matched = expand([other])[0]
        assert sorted(matched) == sorted(named_files([other])) and all(Path(f).is_file() for f in matched)


def test_cli_scores_the_file_named_and_an_output_may_not_be_it(tmp_path):
    (tmp_path / "run[1].txt").write_text(run_text("literal"))
    (tmp_path / "run1.txt").write_text(run_text("decoy", "cba"))
    qrels = _qrels(tmp_path)
    result = clean(cli("evaluate", "-Q", qrels, tmp_path / "run[1].txt", "-m", "AP", "--no-progress", "-o",
                       tmp_path / "out.csv"))
    assert result.returncode == 0, result.stderr
    assert "literal" in (tmp_path / "out.csv").read_text() and "decoy" not in (tmp_path / "out.csv").read_text()
    refused = clean(cli("evaluate", "-Q", qrels, tmp_path / "run[1].txt", "-m", "AP", "-o", tmp_path / "run[1].txt"))
    assert refused.returncode == 2 and "is an input of this command" in refused.stderr
    assert (tmp_path / "run[1].txt").read_text() == run_text("literal")


# ------------------------------------------------------------------------------------------- 3. one file, one system


@pytest.fixture()
def aliased(tmp_path) -> Path:
    """A run folder: a.txt, b.txt, a symlink and a hard link to a.txt, a relative symlink to b.txt."""
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "a.txt").write_text(run_text("A"))
    (runs / "b.txt").write_text(run_text("B", "cba"))
    (runs / "link-to-a.txt").symlink_to(runs / "a.txt")
    os.link(runs / "a.txt", runs / "z-hard-a.txt")
    (runs / "0-link-to-b").symlink_to("b.txt")
    return runs


def test_aliases_of_one_file_are_one_run_and_said(aliased):
    files, said = expand([str(aliased)])
    assert files == [str(aliased / "b.txt"), str(aliased / "a.txt")]  # where first named; a real name, not a link
    assert len(said) == 2 and all("one file, read as one run" in s for s in said)
    with pytest.warns(RunFilesNote, match="one file, read as one run"):
        col = me.load_collection(_qrels(aliased.parent), [aliased])
    assert sorted(col.systems) == ["A", "B"]


@pytest.mark.parametrize("spelling", [lambda r: [r / "a.txt", r / "a.txt"], lambda r: [r / "a.txt", r / "." / "a.txt"],
                                      lambda r: [r / "a.txt", r.parent / "runs" / ".." / "runs" / "a.txt"],
                                      lambda r: [r, r / "link-to-a.txt"], lambda r: [r / "z-hard-a.txt", r]])
def test_one_file_named_twice_is_one_run(aliased, spelling):
    specs = spelling(aliased)
    files, said = expand([str(s) for s in specs])
    assert len(files) == len({os.stat(f).st_ino for f in files})
    assert said and all("one file, read as one run" in s for s in said)


@pytest.mark.parametrize("where", ["folder", "pattern"])
def test_a_dangling_link_is_an_error_naming_it(aliased, where):
    (aliased / "gone.txt").symlink_to(aliased / "deleted.txt")
    spec = str(aliased) if where == "folder" else str(aliased / "*.txt")
    with pytest.raises(InputError, match=r"gone.txt: a dangling symbolic link \(its target '.*deleted.txt' does not "
                                         r"exist\)"):
        expand_paths([spec])
    (aliased / "gone.txt").unlink()
    (aliased / "loop").symlink_to("loop")
    with pytest.raises(InputError, match=r"loop: a symbolic link loop"):
        expand_paths([str(aliased)])


def test_a_fifo_in_a_run_folder_is_skipped_and_said_never_read(aliased):
    os.mkfifo(aliased / "pipe")
    files, said = expand([str(aliased)])
    assert str(aliased / "pipe") not in files and any("pipe, not regular files" in s for s in said)


def test_cli_one_row_per_file_and_a_dangling_link_is_exit_2(aliased):
    qrels = _qrels(aliased.parent)
    result = clean(cli("evaluate", "-Q", qrels, aliased, "-m", "AP", "--no-progress", "-o", aliased.parent / "o.csv"))
    assert result.returncode == 0 and "one file, read as one run" in result.stderr
    rows = [line.split(",") for line in (aliased.parent / "o.csv").read_text().splitlines()[1:]]
    assert sorted({row[0] for row in rows}) == ["A", "B"]
    (aliased / "gone").symlink_to("nowhere")
    result = clean(cli("evaluate", "-Q", qrels, aliased, "-m", "AP", "--no-progress"))
    assert result.returncode == 2 and "gone: a dangling symbolic link" in result.stderr


# ------------------------------------------------------------------------------------- 2. canonical names are exact


@given(p=st.floats(min_value=1e-12, max_value=1 - 1e-12, allow_subnormal=False))
@settings(max_examples=200)
def test_a_name_reads_back_as_the_same_measure(p):
    from meta_eval.measures.resolver import resolve_one

    measure = resolve_one(f"RBP(p={p!r})")
    assert dict(measure.params)["p"] == p
    again = resolve_one(measure.name)
    assert again.name == measure.name and dict(again.params)["p"] == p


@pytest.mark.parametrize("a, b", [(0.5, 0.5000001), (0.5, 0.50000000001), (0.1, 0.1 + 2 ** -56 * 3),
                                  (1e-7, 1.0000001e-7), (0.999999, 0.9999999)])
def test_two_parameter_values_are_two_names_two_rows_and_two_cache_keys(a, b):
    from meta_eval.measures.resolver import resolve
    from meta_eval.statistics import maxent as mem
    from meta_eval.statistics.maxent.cache import MemCache

    measures = resolve([f"RBP(p={a!r})", f"RBP(p={b!r})"])
    assert len(measures) == 2 and measures[0].name != measures[1].name
    table = me.evaluate(me.demo_collection(), [f"RBP(p={a!r})", f"RBP(p={b!r})"])
    assert table["measure"].nunique() == 2
    lists = mem.lists_from_collection(me.demo_collection()).subset(np.arange(3))
    cache = MemCache(Path("/nonexistent"))
    keys = {cache.key(lists.batch, m, "grades", {}) for m in measures}
    assert len(keys) == 2


@pytest.mark.parametrize("value, text", [(0.5, "0.5"), (1.0, "1"), (0.0, "0"), (1e-7, "1e-07"), (123456789.0,
                         "123456789"), (0.5000001, "0.5000001"), (np.float64(0.25), "0.25"), (np.float32(0.5), "0.5"),
                         ((0.3333333333, 0.6666666667), "0.3333333333,0.6666666667"), (np.int64(3), "3"),
                         ({1: 3, 2: 9.5}, "1:3,2:9.5"), (True, "true")])
def test_format_value_is_exact(value, text):
    from meta_eval.core.params import format_value, parse_floats

    assert format_value(value) == text
    if isinstance(value, float):
        assert parse_floats(text) == (float(value),)


def test_gap_grid_names_are_exact_and_trec_eval_spellings_unchanged():
    from meta_eval.measures.resolver import resolve_one
    from meta_eval.statistics.maxent.pr_inference import g_grid, gap_measure

    assert [gap_measure(g) for g in g_grid(0.5)] == ["GAP(g=0,1)", "GAP(g=0.5,0.5)", "GAP(g=1,0)"]
    assert gap_measure(g_grid(1 / 3)[1]) == "GAP(g=0.3333333333,0.6666666667)"
    for spelling in ("iprec_at_recall_0.10", "P_5", "ndcg_cut_10", "rbp_p=0.5000001", "Rprec_mult_0.20"):
        assert resolve_one(spelling).output_name == spelling
    assert resolve_one("iprec_at_recall_0.10").name == "IPrec@0.1"


def test_cli_prints_both_measures(tmp_path):
    result = clean(cli("evaluate", "-m", "RBP(p=0.5000001)", "-m", "RBP(p=0.5)", "--no-progress", "-o",
                       tmp_path / "o.csv"))
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "o.csv").read_text()
    assert "RBP(p=0.5000001)" in text and "RBP(p=0.5)," in text


# -------------------------------------------------------------------------------------- 4. repeated option values


def test_unique_refuses_a_value_given_twice_and_keeps_the_order():
    from meta_eval.core.params import unique

    assert unique(["402", "401"], "--topic") == ("402", "401")
    with pytest.raises(InputError, match=r"^option --topic: 2 is given twice$"):
        unique(["2", "3", "2"], "--topic")
    with pytest.raises(InputError, match=r"option --system: bm25 is given twice"):
        unique(["bm25"] * 3, "--system")
    with pytest.raises(InputError, match=r"option --fraction: 0.5000001 is given twice"):  # exact, not rounded
        unique([0.5, 0.5000001, 0.5000001], "--fraction")


@pytest.mark.parametrize("topics", [[0, 0], [3, 1, 3], np.array([2, 2, 2])])
def test_the_engines_refuse_a_repeated_topic_or_system(topics):
    from meta_eval.statistics.best_systems import select_systems, select_topics
    from meta_eval.statistics.significance.discriminative_power import discriminative_power

    scores = np.arange(20.0).reshape(4, 5)
    with pytest.raises(InputError, match=r"option topics: \d is given twice"):
        select_topics(scores, topics)
    with pytest.raises(InputError, match=r"option topics: \d is given twice"):
        discriminative_power({"m": scores}, ["a", "b", "c", "d"], topics=topics, n_resamples=20)
    with pytest.raises(InputError, match=r"option systems: b is given twice"):
        select_systems(scores, ["a", "b", "c", "d"], ["b", "a", "b"])
    assert select_topics(scores, [3, 1]).tolist() == scores[:, [3, 1]].tolist()


def test_cli_a_repeated_topic_is_exit_2():
    result = clean(cli("discpower", "-m", "AP", "--topic", "402", "--topic", "402", "-B", "20", "--top", "0",
                       "--no-progress"))
    assert result.returncode == 2 and "option --topic: 402 is given twice" in result.stderr


@pytest.mark.parametrize("args, message", [
    (("anova", "--min-d", "0.1", "--min-d", "0.1"), "option --min-d: 0.1 is given twice"),
    (("anova", "--min-d", "0.1", "--min-d", "0.10"), "option --min-d: 0.1 is given twice"),  # one number
    (("discpower", "--topic", "2", "--topic", "2"), "option --topic: 2 is given twice"),
    (("discpower", "--system", "x", "--system", "x"), "option --system: x is given twice"),
    (("discpower", "-m", "AP", "-m", "AP"), "option -m: AP is given twice"),
    (("discpower", "-m", "AP", "-m", "ap"), "option -m: AP and ap name one measure (AP); give it once"),
    (("correlation", "--against", "nDCG", "--against", "nDCG"), "option --against: nDCG is given twice"),
    (("properties", "AP", "ap"), "option -m: AP and ap name one measure"),
    (("study", "-m", "AP", "-m", "AP"), "option -m: AP is given twice"),
    (("study", "-m", "AP", "-m", "ap"), "option -m: AP and ap name one measure"),
    (("study", "--anova-min-d", "0.1", "--anova-min-d", "0.1"), "option --anova-min-d: 0.1 is given twice"),
    (("study", "--skip", "anova", "--skip", "anova"), "option --skip: anova is given twice"),
])
def test_cli_a_value_given_twice_is_refused_before_any_work(tmp_path, args, message):
    """One rule for every repeatable option of the generated commands and the study (core/params.unique, called by
    the parameters' validation and cli/common.DataOptions): exit 2 and the option named, nothing written."""
    out = tmp_path / "out"
    result = clean(cli(*args, "--no-progress", "-o", out) if args[0] != "properties" else cli(*args))
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert not out.exists()


def test_a_repeatable_parameter_given_twice_is_refused_after_parsing():
    from meta_eval.analyses import analyses

    anova = next(d for d in analyses() if d.name == "anova")
    assert anova.bind({"min_d": (0.1, 0.2)})["min_d"] == (0.1, 0.2)
    with pytest.raises(InputError, match=r"parameter min_d: 0.1 is given twice"):
        anova.bind({"min_d": (0.1, "0.10")})


# --------------------------------------------------------------------------------------- 11. the MEM cache folder


@pytest.mark.parametrize("xdg, expected", [(None, "HOME/.cache"), ("", "HOME/.cache"),
                                           ("relative/cache", "HOME/.cache"), ("./x", "HOME/.cache"),
                                           ("/abs/cache", "/abs/cache")])
def test_the_default_cache_folder_follows_the_xdg_rule(monkeypatch, tmp_path, xdg, expected):
    from meta_eval.statistics.maxent.cache import default_folder

    monkeypatch.setenv("HOME", str(tmp_path))
    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    assert default_folder() == Path(expected.replace("HOME", str(tmp_path))) / "meta-eval" / "mem"


# ------------------------------------------------------------------------------------------------- 9. study files


GOOD_ENTRY = 'name = "c"\nqrels = "q.txt"\nruns = ["runs"]\n'
C = '[[collection]]\nname = "c"\n'  # a collection named c, the rest to follow


@pytest.mark.parametrize("text, message", [
    ('[collection]\n' + GOOD_ENTRY, r"\[collection\] is a single table: write \[\[collection\]\]"),
    ('collection = ["a", "b"]\n', r"'collection' must be \[\[collection\]\] sections .* not a list"),
    ('collection = 5\n', r"'collection' must be \[\[collection\]\] sections .* not an integer"),
    (C + 'qrels = 5\nruns = "r"\n', r"collection 1 \(c\): qrels must be a string .* integer \(5\)"),
    (C + 'qrels = ["q"]\nruns = "r"\n', r"collection 1 \(c\): qrels must be .* got a list"),
    ('[[collection]]\nname = 7\nqrels = "q"\nruns = "r"\n', r"collection 1: name must be a string; got an integer"),
    (C + 'qrels = "q"\nruns = [1, 2]\n', r"collection 1 \(c\): runs must be a string or a non"),
    (C + 'qrels = "q"\nruns = []\n', r"collection 1 \(c\): runs must be a string or a non-empty list"),
    (C + 'qrels = "q"\nruns = {a = 1}\n', r"collection 1 \(c\): runs must be .* got a table"),
    ('[[collection]]\n' + GOOD_ENTRY + 'depth = "ten"\n', r"collection 1 \(c\): depth must be an integer; got a str"),
    ('[[collection]]\n' + GOOD_ENTRY + 'depth = true\n', r"collection 1 \(c\): depth must be an integer; got a bool"),
    ('[[collection]]\n' + GOOD_ENTRY + 'colour = 1\n', r"collection 1 \(c\): unknown option\(s\) \['colour'\]"),
    ('[[collection]]\nname = "a/b"\nqrels = "q"\nruns = "r"\n', r"collection name 'a/b'"),
    ('study = 3\n[[collection]]\n' + GOOD_ENTRY, r"\[study\] must be one table of options; got an integer"),
    ('[[study]]\n[[collection]]\n' + GOOD_ENTRY, r"\[study\] must be one table of options; got a list"),
    ('[study]\ncolour = 1\n[[collection]]\n' + GOOD_ENTRY, r"\[study\] has unknown option\(s\) \['colour'\]"),
    ('[study]\nseed = [1, 2]\n[[collection]]\n' + GOOD_ENTRY, r"\[study\] seed must be a single value; got a list"),
    ('[study]\nmetrics = [["AP"]]\n[[collection]]\n' + GOOD_ENTRY, r"\[study\] metrics must be a list of values"),
    ('[study]\nseed = {a = 1}\n[[collection]]\n' + GOOD_ENTRY, r"\[study\] seed must be a single value; got a table"),
    ('[study]\nparams = 3\n[[collection]]\n' + GOOD_ENTRY, r"\[study\] params must be \[study.params.ANALYSIS\]"),
    ('[study.params]\ndiscpower = 0\n[[collection]]\n' + GOOD_ENTRY, r"\[study\] params must be \[study.params.ANALYSIS\] tables of options; got a table"),
    ('[collections]\n', r"unknown section\(s\) \['collections'\]"),
    ('', r"no \[\[collection\]\] in the study file"),
])
def test_a_study_file_of_the_wrong_shape_is_an_error_naming_the_file_and_key(tmp_path, text, message):
    from meta_eval.orchestration.multi_collection_study import read_study_file

    (tmp_path / "study.toml").write_text(text or "# nothing\n")
    with pytest.raises(InputError, match=f"^{tmp_path / 'study.toml'}: {message}"):
        read_study_file(tmp_path / "study.toml")


def test_a_good_study_file_reads_and_a_string_is_a_list_of_one(tmp_path):
    from meta_eval.orchestration.multi_collection_study import read_study_file

    (tmp_path / "study.toml").write_text('[study]\nmetrics = "AP"\nseed = 3\n[study.params.discpower]\ntop = 0\n'
                                         '[[collection]]\n' + GOOD_ENTRY + 'depth = 10\n')
    specs, options = read_study_file(tmp_path / "study.toml")
    assert options == {"metrics": ["AP"], "seed": 3, "params": {"discpower": {"top": 0}}}
    assert specs[0].qrels == str(tmp_path / "q.txt") and specs[0].runs == [str(tmp_path / "runs")]
    assert specs[0].load == {"depth": 10}


def test_cli_a_study_file_of_the_wrong_shape_is_exit_2(tmp_path):
    (tmp_path / "study.toml").write_text('[collection]\n' + GOOD_ENTRY)
    result = clean(cli("study", "--study-file", tmp_path / "study.toml", "-o", tmp_path / "out", "--no-progress"))
    assert result.returncode == 2 and "study.toml: [collection] is a single table" in result.stderr
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------ 8. plug-ins that misbehave

RAISES = {
    "class Mine(BaseException):\n    pass\n\n\ndef bad(r):\n    raise Mine('own')\n": r"raised Mine: own",
    "def bad(r):\n    raise GeneratorExit()\n": r"raised GeneratorExit",
    "def bad(r):\n    raise SystemExit(0)\n": r"raised SystemExit: 0",
    "import sys\n\n\ndef bad(r):\n    sys.exit('bye')\n": r"raised SystemExit: bye",
    "def bad(r):\n    raise KeyboardInterrupt('mine')\n": r"raised KeyboardInterrupt: mine",
    "import meta_eval as me\n\n\n@me.per_list\ndef bad(grades, counts):\n    raise KeyboardInterrupt()\n":
        r"raised KeyboardInterrupt",
    "import meta_eval as me\n\n\n@me.per_list\ndef bad(grades, counts):\n    raise GeneratorExit\n":
        r"raised GeneratorExit",
    "def bad(r):\n    def gen():\n        yield 1\n    g = gen()\n    next(g)\n    g.throw(GeneratorExit)\n":
        r"raised GeneratorExit",
}


def _plugin(folder: Path, body: str, name: str = "plug.py") -> str:
    (folder / name).write_text("import numpy as np\n" + body)
    return str(folder / name)


@pytest.mark.parametrize("body", list(RAISES))
def test_a_plugin_raising_any_base_exception_is_a_plugin_error(tmp_path, body):
    from meta_eval.measures.plugins import PluginError

    path = _plugin(tmp_path, body)
    with pytest.raises(PluginError, match=r"metric plug-in .*plug.py:bad: " + RAISES[body]):
        me.score(me.demo_collection(), f"{path}:bad")


@pytest.mark.parametrize("statement, message", [("raise KeyboardInterrupt", "KeyboardInterrupt"),
                                                ("raise GeneratorExit", "GeneratorExit"),
                                                ("class Mine(BaseException): pass\nraise Mine()", "Mine")])
def test_a_plugin_raising_a_base_exception_when_imported_is_an_input_error(tmp_path, statement, message):
    path = _plugin(tmp_path, statement + "\n")
    with pytest.raises(InputError, match=rf"plug.py:\d+: cannot import metric plug-in: {message}"):
        me.score(me.demo_collection(), f"{path}:anything")


def _sigint_default() -> None:
    """A preexec_fn: SIGINT's default disposition in the child, as at a terminal (a test run in the background of
    a non-interactive shell inherits SIGINT ignored, and Python then installs no KeyboardInterrupt handler)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_a_real_ctrl_c_while_a_plugin_runs_still_interrupts(tmp_path, request):
    """A SIGINT that arrives while the plug-in runs is the user's: KeyboardInterrupt goes through; the SIGINT
    handler is the one it was afterwards (a plug-in's own is not kept)."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # started in the background: Python's handler, as usual
        signal.signal(signal.SIGINT, signal.default_int_handler)
        request.addfinalizer(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    body = "import os, signal, time\n\n\ndef ctrl_c(r):\n    os.kill(os.getpid(), signal.SIGINT)\n    time.sleep(5)\n"
    path = _plugin(tmp_path, body)
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        me.score(me.demo_collection(), f"{path}:ctrl_c")
    assert signal.getsignal(signal.SIGINT) is before
    keeps = _plugin(tmp_path, "import signal\n\n\ndef keeps(r):\n    signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                              "    return np.zeros(r.shape)\n", "keeps.py")
    me.score(me.demo_collection(), f"{keeps}:keeps")
    assert signal.getsignal(signal.SIGINT) is before


def test_cli_a_plugin_base_exception_is_exit_2_and_a_real_ctrl_c_is_130(tmp_path):
    own = _plugin(tmp_path, "def bad(r):\n    raise KeyboardInterrupt('mine')\n", "own.py")
    result = clean(cli("evaluate", "-m", f"{own}:bad", "--no-progress"))
    assert result.returncode == 2 and "raised KeyboardInterrupt: mine" in result.stderr
    real = _plugin(tmp_path, "import os, signal, time\n\n\ndef ctrl_c(r):\n    os.kill(os.getpid(), signal.SIGINT)\n"
                             "    time.sleep(5)\n    return np.zeros(r.shape)\n", "real.py")
    result = clean(cli("evaluate", "-m", f"{real}:ctrl_c", "--no-progress", preexec_fn=_sigint_default))
    assert result.returncode == 130 and "interrupted" in result.stderr
    exits = _plugin(tmp_path, "import sys\n\n\ndef bad(r):\n    sys.exit(0)\n", "exits.py")
    result = clean(cli("evaluate", "-m", f"{exits}:bad", "--no-progress", "-o", tmp_path / "o.csv"))
    assert result.returncode == 2 and "raised SystemExit: 0" in result.stderr and not (tmp_path / "o.csv").exists()


# --------------------------------------------------------------------------------------------- 7. process state


def _closing(*fds: int):
    """A preexec_fn that closes ``fds`` in the child before meta-eval starts (as ``<&- >&- 2>&-``)."""
    return lambda: [os.close(fd) for fd in fds]


@pytest.mark.parametrize("fds", [(0, 1), (1,), (0, 1, 2), (0,)])
def test_closed_standard_streams_never_capture_results_nor_give_a_traceback(tmp_path, fds):
    """With descriptor 1 closed, the first file opened (the qrels) became standard output; now every closed
    stream is /dev/null, the results go where -o says, complete, and the inputs are unchanged."""
    qrels = _qrels(tmp_path)
    (tmp_path / "run.txt").write_text(run_text("A"))
    before = {p: p.read_bytes() for p in (qrels, tmp_path / "run.txt")}
    result = subprocess.run([*CLI, "evaluate", "-Q", str(qrels), str(tmp_path / "run.txt"), "-m", "AP", "-m",
                             "nDCG", "--no-progress", "-o", str(tmp_path / "out.csv")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_closing(*fds), timeout=120)
    assert result.returncode == 0 and "Traceback" not in result.stderr
    col = me.load_collection(qrels, [tmp_path / "run.txt"])
    written = (tmp_path / "out.csv").read_text().splitlines()
    assert written[0] == "run,topic,measure,value,summary" and len(written) == 3
    for line, measure in zip(written[1:], ["AP", "nDCG"]):
        assert line.startswith(f"A,all,{measure},")
        assert float(line.split(",")[3]) == pytest.approx(me.score(col, measure).mean(), rel=1e-12)
    assert {p: p.read_bytes() for p in before} == before
    if 1 in fds and 2 not in fds:
        assert "standard output is closed" in result.stderr


def test_closed_standard_output_without_o_and_closed_input_as_a_run():
    result = subprocess.run([*CLI, "evaluate", "-m", "AP", "--no-progress"], stderr=subprocess.PIPE, text=True,
                            preexec_fn=_closing(0, 1), timeout=120)
    assert result.returncode == 0 and "standard output is closed; what is printed there is discarded" in result.stderr
    qrels, _ = me.demo_paths()
    result = subprocess.run([*CLI, "evaluate", "-Q", str(qrels), "-", "-m", "AP", "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_closing(0),
                            timeout=120)
    assert result.returncode == 2 and "-: file is empty" in clean(result).stderr


@pytest.mark.parametrize("args", [("correlation", "--no-progress", "-B", "50"), ("anova", "--no-progress"),
                                  ("measures",), ("measures", "GAP"), ("evaluate", "-m", "AP", "--no-progress"),
                                  ("evaluate", "-Q", "/nonexistent/τ-qrels.txt", "run", "-m", "AP")])
@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_an_ascii_only_stream_writes_escapes_never_a_traceback(args, encoding):
    result = subprocess.run([*CLI, *args], capture_output=True, env={**os.environ, "PYTHONIOENCODING": encoding},
                            timeout=120)
    assert b"Traceback" not in result.stderr and b"UnicodeEncodeError" not in result.stderr
    assert result.returncode == (2 if "/nonexistent/τ-qrels.txt" in args else 0)
    for stream in (result.stdout, result.stderr):
        stream.decode(encoding)  # nothing but what the encoding holds
    if args[0] == "correlation":
        assert b"\\u03c4_b" in result.stdout  # Kendall's tau, as an escape
    if "/nonexistent/τ-qrels.txt" in args:
        assert b"\\u03c4-qrels.txt: file not found" in result.stderr


STUDY_SKIPS = [arg for name in ("compare", "correlation", "discpower", "error-rates", "incomplete-judgments",
                                 "informativeness", "intuitiveness", "judge-agreement", "ltr", "properties",
                                 "reusability", "split-half") for arg in ("--skip", name)]
PIPED = {"evaluate": ("evaluate", "-m", "all_trec", "-q", "--no-progress"),  # about 2 MB: more than a pipe holds
         "measures": ("measures",), "anova": ("anova", "--no-progress"),
         "study": ("study", "-m", "AP", "--no-progress", "--format", "png", "--dpi", "50", *STUDY_SKIPS)}


#: ``measures`` after one line is left out: its list (19 kB) fits in a pipe, so it may be written whole, and the
#: command end with 0, before the reader goes away (a race, not a defect).
READERS_GONE = [(command, when) for command in PIPED for when in ("after one line", "before any")
                if (command, when) != ("measures", "after one line")]


@pytest.mark.parametrize("command, when", READERS_GONE)
def test_a_reader_that_goes_away_ends_the_command_quietly_with_141(tmp_path, command, when):
    """``meta-eval ... | head -1``: a real pipe whose reader closes it after the first line or at once. Status 141
    (128 + SIGPIPE), never a traceback, rich's status 1, or Python's "Exception ignored" line. The study prints its
    summary on stderr: it is read as ``meta-eval study 2>&1 | head -1`` (what it would print there is lost, the
    status tells), and its report is whole or absent."""
    study = command == "study"
    args = [*PIPED[command], *(("-o", str(tmp_path / "out")) if study else ())]
    proc = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, cwd=tmp_path,
                            stderr=subprocess.STDOUT if study else subprocess.PIPE)
    if when == "after one line":
        assert proc.stdout.readline()
    proc.stdout.close()
    err = "" if study else proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 141, err
    for word in ("Traceback", "Exception ignored", "BrokenPipe"):
        assert word not in err, err
    if study:  # whole, or absent when the first note found the reader gone; no hidden twin left
        from meta_eval.outputs.result_folder import verify_folder

        assert not (tmp_path / "out").exists() or verify_folder(tmp_path / "out") == []
        assert [p.name for p in tmp_path.iterdir()] in ([], ["out"])


# ---------------------------------------------------------------------------------------------------------- 6. Dask


@pytest.mark.parametrize("address, expected", [
    ("tcp://127.0.0.1:8786/", "tcp://127.0.0.1:8786"), ("TCP://h:1", "tcp://h:1"), ("tcp://host", "tcp://host:8786"),
    ("tcp://[::1]", "tcp://[::1]:8786"), ("tcp://[::1]:9000/", "tcp://[::1]:9000"), ("ws://h:80", "ws://h:80"),
    ("tcp://[::1", r"an IPv6 address is written in brackets"), ("tcp://[zz]:1", r"\[zz\] is not an IPv6 address"),
    ("inproc://", r"inproc:// address lives inside one process"), ("inproc://192.168.1.1/1/2", r"inproc://"),
    ("tls://h:8786", r"a TLS address needs certificates"), ("wss://h:1", r"a TLS address needs certificates"),
    ("tcp://host:99999", r"the port must be a number in 1..65535; got '99999'"), ("tcp://h:0", r"in 1..65535"),
    ("tcp://h:-1", r"in 1..65535"), ("tcp://h:", r"in 1..65535"), ("tcp://:8786", r"no host"),
    ("ucx://h:1", r"unknown scheme ucx://"), ("127.0.0.1:8786", r"must be 'local' or a Dask scheduler address"),
    ("tcp://h:1/x", r"must be 'local'"), ("", r"must be 'local'"),
])
def test_scheduler_addresses_are_accepted_in_one_spelling_or_refused_clearly(address, expected):
    from meta_eval.core.parallel import check_scheduler

    if re.fullmatch(r"[a-z]+://\S+", expected):  # accepted, in this spelling
        assert check_scheduler(address) == expected
    else:
        with pytest.raises(InputError, match=expected):
            check_scheduler(address)


def test_a_scheduler_that_accepts_and_never_answers_is_a_clear_error(monkeypatch):
    """Dask's connection waits for the handshake without a timeout: a server that accepts and stays silent held
    Client() for minutes. The probe's deadline (twice the connect timeout) covers the handshake."""
    import socket

    from meta_eval.core import parallel

    pytest.importorskip("distributed")
    silent, closed = socket.socket(), socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(4)  # the kernel accepts connections; nobody ever answers
    closed.bind(("127.0.0.1", 0))  # bound, not listening: connections refused
    monkeypatch.setattr(parallel, "CONNECT_TIMEOUT", 1)
    try:
        with pytest.raises(InputError, match=r"accepted the connection but did not answer Dask's handshake within 2 s"):
            parallel.connect_scheduler(f"tcp://127.0.0.1:{silent.getsockname()[1]}")
        with pytest.raises(InputError, match=r"cannot reach the Dask scheduler within 1 s"):
            parallel.connect_scheduler(f"tcp://127.0.0.1:{closed.getsockname()[1]}")
    finally:
        silent.close()
        closed.close()


def test_jobs_above_the_usable_cores_are_capped_and_said(monkeypatch):
    import joblib

    from meta_eval.core import parallel

    monkeypatch.setattr(parallel, "_CUT_SAID", set())  # what this process said before
    usable = joblib.cpu_count()
    with pytest.warns(parallel.WorkersNote, match=rf"--jobs 200: .* {usable} core\(s\); running {usable} worker"):
        assert parallel.usable_jobs(200, 200) == usable
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert parallel.usable_jobs(200, 200) == usable  # said once: a command asks for its cluster and its tasks
        assert parallel.usable_jobs(usable, usable) == usable and parallel.usable_jobs(1, 1) == 1
        assert parallel.usable_jobs(usable + 5, None) == usable  # the automatic choice: capped, not said
    monkeypatch.setattr(joblib, "cpu_count", lambda: 1)
    with pytest.warns(parallel.WorkersNote):
        out = parallel.parallel_map(_square, range(4), jobs=3, progress=False)
    assert out == [0, 1, 4, 9]


def _square(x: int) -> int:
    return x * x


def test_cli_jobs_200_is_one_note_and_the_same_numbers(tmp_path):
    args = ["discpower", "-m", "AP", "-m", "nDCG", "-B", "50", "--top", "0", "--no-progress"]
    many = clean(cli(*args, "-j", "200", "-o", tmp_path / "many"))
    assert many.returncode == 0 and many.stderr.count("--jobs 200: ") == 1
    one = clean(cli(*args, "-j", "1", "-o", tmp_path / "one"))
    tables = sorted(p.name for p in (tmp_path / "one").glob("*.csv"))
    assert tables and tables == sorted(p.name for p in (tmp_path / "many").glob("*.csv"))
    for name in tables:
        assert (tmp_path / "many" / name).read_text() == (tmp_path / "one" / name).read_text()


# -------------------------------------------------------------------------------- 5. outputs that cannot be swapped

CHDIR_PLUGIN = """import os
import numpy as np

os.chdir({elsewhere!r})


def wanders(r):
    os.chdir({elsewhere!r})
    return np.zeros(r.shape)
"""


@pytest.mark.parametrize("command", [("evaluate", "-o", "out.csv"), ("compare", "-o", "out.csv"),
                                     ("discpower", "-B", "20", "--top", "0", "--no-figures", "-o", "out"),
                                     ("analysis", "anova", "-o", "out")])
def test_a_relative_output_stays_where_it_was_checked_when_a_plugin_changes_folder(tmp_path, command):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "wanders.py").write_text(CHDIR_PLUGIN.format(elsewhere=str(elsewhere)))
    work = tmp_path / "work"
    work.mkdir()
    result = clean(cli(command[0], "-m", "AP", "-m", f"{tmp_path / 'wanders.py'}:wanders", "--no-progress",
                       *command[1:], cwd=work))
    assert result.returncode == 0, result.stderr
    assert (work / command[-1]).exists() and list(elsewhere.iterdir()) == []


def test_a_plugin_that_changes_folder_finds_it_put_back(tmp_path, monkeypatch):
    """The mechanism: the plug-in loader and the call guard run the plug-in's code inside ``folder_kept``."""
    elsewhere, work = tmp_path / "elsewhere", tmp_path / "work"
    elsewhere.mkdir()
    work.mkdir()
    (tmp_path / "wanders.py").write_text(CHDIR_PLUGIN.format(elsewhere=str(elsewhere)))
    monkeypatch.chdir(work)
    col = me.load_collection({"q1": {"d1": 1}}, {"a": {"q1": {"d1": 1.0}}})
    values = me.score(col, f"{tmp_path / 'wanders.py'}:wanders")
    assert os.getcwd() == str(work) and (np.asarray(values) == 0).all()


def test_an_output_checked_in_one_folder_is_written_there_after_a_change_of_folder(tmp_path, monkeypatch):
    """The mechanism under every command: check_output / check_output_folder remember the absolute path, and the
    writer and result_folder use it for the same spelling (study checks its folder, then run_study writes it)."""
    from meta_eval.outputs.result_folder import check_output_folder, result_folder
    from meta_eval.outputs.writer import check_output, write_output

    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    monkeypatch.chdir(first)
    assert check_output("res.csv") == first / "res.csv"
    assert check_output_folder("res") == first / "res"
    monkeypatch.chdir(second)  # what a plug-in's code may do between the check and the write
    write_output("res.csv", "a\n")
    with result_folder("res", kind="t") as tmp:
        (tmp / "table.csv").write_text("1\n")
    assert (first / "res.csv").read_text() == "a\n" and (first / "res" / "table.csv").exists()
    assert list(second.iterdir()) == []
    write_output("res.csv", "b\n")  # a write without a check is where the working folder is
    with result_folder("res", kind="t") as tmp:
        (tmp / "table.csv").write_text("2\n")
    assert (second / "res.csv").read_text() == "b\n" and (second / "res" / "table.csv").read_text() == "2\n"


def _cli_text(*args: str) -> str:
    """The command line as a shell script's line, its standard output discarded."""
    return " ".join(shlex.quote(a) for a in [*CLI, *map(str, args)]) + " > /dev/null"


def in_namespace(script: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run a shell script in a mount namespace of its own (``unshare -m``: its mounts are private and vanish with
    it); skip the test where that is not permitted (not root, no unshare, a container without the capability)."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare command")
    result = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script], capture_output=True,
                            text=True, timeout=timeout)
    if result.returncode == 77 or "unshare:" in result.stderr:
        pytest.skip(f"cannot make a private mount here: {result.stderr.strip()[:200]}")
    return result


def test_a_mount_point_is_refused_before_any_work(tmp_path):
    """A container's volume (-o /out): a bind mount of a folder of the same file system, which os.path.ismount
    misses; its rename failed after the work with EBUSY and a traceback."""
    from tests.conftest import marking_plugin

    (tmp_path / "volume").mkdir()
    (tmp_path / "out").mkdir()
    plugin = marking_plugin(tmp_path)
    result = in_namespace(f"mount --bind {tmp_path / 'volume'} {tmp_path / 'out'} || exit 77\n"
                          + _cli_text("discpower", "-m", "AP", "-m", f"{plugin}:marking", "-B", "20", "--top", "0",
                                      "--no-progress", "-o", tmp_path / "out") + "\necho rc=$?\n"
                          + _cli_text("discpower", "-m", "AP", "-B", "20", "--top", "0", "--no-figures",
                                      "--no-progress", "-o", tmp_path / "out" / "results") + "\necho rc=$?\n"
                          f"ls {tmp_path / 'out' / 'results'}\n")
    assert "Traceback" not in result.stderr
    assert "rc=2\nrc=0\n" in result.stdout and "summary.csv" in result.stdout, result.stdout + result.stderr
    assert "is a mount point" in result.stderr and "write the results into a folder inside it" in result.stderr
    assert not (tmp_path / "scored").exists()  # refused before any work


def test_a_mount_point_is_refused_by_the_check_itself(tmp_path, monkeypatch):
    from meta_eval.outputs import result_folder as rf

    (tmp_path / "out").mkdir()
    monkeypatch.setattr(rf, "is_mount_point", lambda path: Path(path) == tmp_path / "out")
    with pytest.raises(OutputError, match=r"is a mount point .* e.g. --out .*/out/results"):
        rf.FolderTarget(tmp_path / "out", "discpower")
    rf.FolderTarget(tmp_path / "out" / "results", "discpower")  # inside it: fine


def test_mountinfo_paths_are_unescaped(tmp_path):
    from meta_eval.outputs.result_folder import _unescape, is_mount_point

    assert _unescape(rb"/mnt/my\040volume\134x") == b"/mnt/my volume\\x"
    assert is_mount_point(Path("/")) and not is_mount_point(tmp_path)


@pytest.mark.parametrize("length", [220, 240, 255])
def test_a_long_name_gets_short_hidden_twins(tmp_path, length):
    from meta_eval.outputs.result_folder import _stem, result_folder, verify_folder

    out = tmp_path / ("r" * length)
    for round_ in range(2):  # a new folder, then a replaced one (the old twin)
        with result_folder(out, kind="t") as tmp:
            assert len(os.fsencode(tmp.name)) <= 255 and tmp.parent == tmp_path
            (tmp / "table.csv").write_text(f"{round_}\n")
        assert verify_folder(out) == [] and (out / "table.csv").read_text() == f"{round_}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]  # no twin or lock left
    assert len(os.fsencode(f".{_stem(out)}.partial-4194304-abcdef")) <= 255


def test_a_name_longer_than_the_file_system_allows_is_refused_before_any_work(tmp_path):
    from meta_eval.outputs.result_folder import FolderTarget

    with pytest.raises(OutputError, match=r"--out .*: File name too long"):
        FolderTarget(tmp_path / ("r" * 256), "t")


def test_short_free_space_is_refused_before_any_work(tmp_path, monkeypatch):
    from meta_eval.outputs import result_folder as rf

    out = tmp_path / "res"
    with rf.result_folder(out, kind="t") as tmp:
        (tmp / "big.bin").write_bytes(b"x" * 300_000)
    monkeypatch.setattr(rf, "free_bytes", lambda folder: rf.MIN_FREE_BYTES + 200_000)
    with pytest.raises(OutputError, match=r"has 1.2 MB free; writing the results there needs at least 1.3 MB \(the "
                                          r"size of the folder replaced"):
        rf.FolderTarget(out, "t")
    rf.FolderTarget(tmp_path / "new", "t")  # a new folder needs the margin only
    monkeypatch.setattr(rf, "free_bytes", lambda folder: 1000)
    with pytest.raises(OutputError, match=r"free some space or choose another --out"):
        rf.FolderTarget(tmp_path / "new", "t")


FILLER = """import numpy as np


def fills(r):
    import shutil
    free = shutil.disk_usage({disk!r}).free
    with open({disk!r} + "/filler", "ab") as f:
        f.write(b"x" * max(free - 4096, 0))
    return np.zeros(r.shape)
"""


def test_a_small_disk_is_refused_before_work_and_a_full_one_is_a_clear_error(tmp_path):
    """On a tmpfs of its own: one too small is refused before any work; one that fills while the command works
    (a plug-in takes the space) gives an OutputError naming the file, and the earlier result folder is intact."""
    disk, tiny = tmp_path / "disk", tmp_path / "tiny"
    disk.mkdir()
    tiny.mkdir()
    (tmp_path / "filler.py").write_text(FILLER.format(disk=str(disk)))
    args = ("discpower", "-m", "AP", "-B", "20", "--top", "0", "--no-progress")
    result = in_namespace(
        f"mount -t tmpfs -o size=512k tmpfs {tiny} && mount -t tmpfs -o size=1536k tmpfs {disk} || exit 77\n"
        + _cli_text(*args, "-o", tiny / "res") + "\necho rc=$?\n"
        + _cli_text(*args, "--no-figures", "-o", disk / "res") + "\necho rc=$?\n"
        + _cli_text(*args, "-m", f"{tmp_path / 'filler.py'}:fills", "-o", disk / "res") + "\necho rc=$?\n"
        f"ls -a {disk}; cp -r {disk / 'res'} {tmp_path / 'kept'}\n")
    assert "Traceback" not in result.stderr
    assert "rc=2\nrc=0\nrc=2\n" in result.stdout, result.stdout + result.stderr
    assert "tiny has 0.5 MB free; writing the results there needs at least 1.0 MB" in result.stderr
    assert_names_a_file_of(result.stderr, disk / "res", r"no space left on the device|No space left on device")
    from meta_eval.outputs.result_folder import read_manifest, verify_folder

    assert verify_folder(tmp_path / "kept") == [] and read_manifest(tmp_path / "kept")["meta_eval"] == "discpower"
    assert ".res.partial" not in result.stdout  # no partial folder left


def assert_names_a_file_of(stderr: str, out: Path, reason: str) -> None:
    """The error names a file of the result folder ``out`` (as the user named it, never its hidden temporary twin)
    and the reason."""
    error = next(line for line in stderr.splitlines() if line.startswith("meta-eval: error:") and str(out) in line)
    assert re.search(rf"{re.escape(str(out))}(/\S+| \(|:)", error) and ".partial-" not in error, error
    assert re.search(reason, error) and re.search(r"writing \S+ failed|cannot write \S+", error), error


def _fsize_limit(limit: int):
    import resource

    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@pytest.mark.parametrize("command", [("discpower", "-B", "20", "--top", "0"), ("analysis", "anova")])
def test_a_file_size_limit_inside_a_result_folder_is_a_clear_error_naming_the_file(tmp_path, command):
    """ulimit -f: EFBIG (Python ignores SIGXFSZ) — it was an OSError traceback in every command but evaluate."""
    from meta_eval.outputs.result_folder import verify_folder

    out = tmp_path / "res"
    first = clean(cli(*command, "-m", "AP", "--no-progress", "-o", out))
    assert first.returncode == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    result = subprocess.run([*CLI, *command, "-m", "AP", "-m", "nDCG", "--no-progress", "-o", str(out)],
                            capture_output=True, text=True, preexec_fn=_fsize_limit(3000), timeout=300)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert_names_a_file_of(result.stderr, out, r"larger than the file-size limit|File too large")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before and verify_folder(out) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]


def test_write_errors_inside_a_folder_are_named_by_the_result_folder_layer(tmp_path):
    import errno

    from meta_eval.outputs.result_folder import result_folder

    out = tmp_path / "res"
    with pytest.raises(OutputError, match=rf"writing {out}/b.csv failed: no space left on the device"):
        with result_folder(out, kind="t") as tmp:
            (tmp / "a.csv").write_text("a")
            (tmp / "b.csv").write_text("b")
            os.utime(tmp / "a.csv", ns=(0, 0))
            raise OSError(errno.ENOSPC, "No space left on device")  # a failed write() names no file
    with pytest.raises(OutputError, match=rf"writing {out}/sub/x.pdf failed: larger than the file-size limit"):
        with result_folder(out, kind="t") as tmp:
            (tmp / "sub").mkdir()
            raise RuntimeError("1 figure could not be written") from OSError(errno.EFBIG, "File too large",
                                                                            str(tmp / "sub" / "x.pdf"))
    with pytest.raises(FileNotFoundError):  # reading an input is not a write error of the folder
        with result_folder(out, kind="t"):
            open(tmp_path / "missing-input.txt").close()
    assert not out.exists() and list(tmp_path.iterdir()) == []


# -------------------------------------------------------------------------------------------- the crash-safe swap

KILLED_SWAP = """
import os, signal, sys
from pathlib import Path
from meta_eval.outputs import result_folder as rf

out, point = Path(sys.argv[1]), sys.argv[2]
if point != "exchange":
    rf._exchange = lambda a, b: False  # a file system without RENAME_EXCHANGE: two renames
renames = []
real_rename, real_rmtree = os.rename, rf.shutil.rmtree


def rename(a, b):
    real_rename(a, b)
    renames.append((a, b))
    if point == f"after rename {len(renames)}":
        os.kill(os.getpid(), signal.SIGKILL)


def rmtree(path, *args, **kwargs):
    if point in ("exchange", "before rmtree"):
        os.kill(os.getpid(), signal.SIGKILL)
    real_rmtree(path, *args, **kwargs)


rf.os.rename, rf.shutil.rmtree = rename, rmtree
with rf.result_folder(out, kind="t") as tmp:
    (tmp / "table.csv").write_text("new\\n")
"""


@pytest.mark.parametrize("point", ["after rename 1", "after rename 2", "before rmtree", "exchange"])
def test_a_sigkill_in_the_swap_never_loses_the_folder_and_the_next_run_recovers(tmp_path, point):
    """Killed between the two renames of a swap, the earlier folder was left as a hidden .old- folder that the next
    run deleted: the only copy. Now the next run moves it back; with RENAME_EXCHANGE the target never goes away."""
    from meta_eval.outputs.result_folder import result_folder, verify_folder

    out = tmp_path / "res"
    with result_folder(out, kind="t") as tmp:
        (tmp / "table.csv").write_text("old\n")
    killed = subprocess.run([sys.executable, "-c", KILLED_SWAP, str(out), point], capture_output=True, text=True,
                            timeout=120)
    assert killed.returncode == -9, killed.stderr
    if point != "after rename 1":
        assert verify_folder(out) == []  # complete at every moment: old, or new
    with result_folder(out, kind="t") as tmp:  # the next run
        assert verify_folder(out) == [] and (out / "table.csv").read_text() in ("old\n", "new\n")
        (tmp / "table.csv").write_text("next\n")
    assert (out / "table.csv").read_text() == "next\n" and verify_folder(out) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]  # every leftover cleared


def test_rename_exchange_is_used_where_the_file_system_has_it(tmp_path):
    from meta_eval.outputs.result_folder import _exchange

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x").write_text("x")
    if not _exchange(tmp_path / "a", tmp_path / "b"):
        pytest.skip("this file system has no RENAME_EXCHANGE")
    assert (tmp_path / "b" / "x").exists() and not (tmp_path / "a" / "x").exists()


# ----------------------------------------------------------------------------------------------------- 10. LETOR


def _letor(path: Path, features, n_queries: int = 6, docs: int = 6, seed: int = 0) -> Path:
    """A LETOR file: ``features(rng)`` gives each line's ``index:value`` items."""
    rng = np.random.default_rng(seed)
    lines = [f"{rng.integers(0, 3)} qid:{q} {features(rng)}".rstrip() for q in range(1, n_queries + 1)
             for _ in range(docs)]
    path.write_text("\n".join(lines) + "\n")
    return path


LETOR_FILES = {
    "small": lambda rng: f"1:{rng.random():.3f} 2:{rng.random():.3f}",
    "constant": lambda rng: "1:0.5 7:1",
    "no features": lambda rng: "",
    "zeros": lambda rng: "1:0 2:0.0",
    "huge index": lambda rng: f"1:{rng.random():.3f} 2000000000:0.5",
}


@pytest.mark.parametrize("kind", list(LETOR_FILES))
def test_letor_files_lightgbm_could_not_take_are_trained_or_refused_before_any_model(tmp_path, kind):
    pytest.importorskip("lightgbm")
    from meta_eval.statistics.learning_to_rank.experiment import run_ltr

    data = _letor(tmp_path / "set.txt", LETOR_FILES[kind])
    run = dict(train_for=["nDCG"], test=["nDCG@10"], lambdamart={"num_boost_round": 3}, progress=False)
    if kind == "small":  # 18-24 training documents: no split at min_data_in_leaf = 20 ("num_features() > 0")
        with pytest.warns(MetaEvalWarning, match=r"LambdaMART on Fold1, .*no tree can split"):
            result = run_ltr(data, **run)
        assert np.isfinite(result.table["mean"]).all()
    elif kind == "huge index":  # two billion columns: std::bad_alloc inside LightGBM
        with pytest.raises(InputError, match=r"2,000,000,000 feature columns .* would need about 1.\d TB of memory"):
            run_ltr(data, **run)
    else:
        with pytest.raises(InputError, match=r"set.txt \[Fold1 train\]: no feature varies across the 18 training "
                                             r"documents of Fold1"):
            run_ltr(data, **run)


def test_a_small_fold_trains_a_model_without_splits_in_the_library_too(tmp_path):
    pytest.importorskip("lightgbm")
    from meta_eval.inputs.letor import load_folds
    from meta_eval.statistics.learning_to_rank.lambdamart import train_lambdamart

    fold = load_folds(_letor(tmp_path / "set.txt", LETOR_FILES["small"]), k=3)[0]
    booster = train_lambdamart(fold, "nDCG", num_boost_round=3)
    assert booster.feature_importance("split").sum() == 0
    assert np.ptp(booster.predict(fold.test.X)) == 0


@given(dense=st.lists(st.lists(st.sampled_from([0.0, 0.0, 1.0, 2.5]), min_size=3, max_size=3), min_size=1,
                      max_size=6))
@settings(max_examples=100)
def test_any_feature_varies_agrees_with_a_dense_reference(dense):
    import scipy.sparse as sp

    from meta_eval.statistics.learning_to_rank.experiment import _any_feature_varies

    X = np.array(dense)
    assert _any_feature_varies(sp.csr_matrix(X)) == bool((X.max(0) != X.min(0)).any())


def test_cli_ltr_on_hostile_letor_files(tmp_path):
    pytest.importorskip("lightgbm")
    small = _letor(tmp_path / "small.txt", LETOR_FILES["small"])
    huge = _letor(tmp_path / "huge.txt", LETOR_FILES["huge index"])
    ok = clean(cli("ltr", "-d", small, "--rounds", "3", "--no-progress", "nDCG"))
    assert ok.returncode == 0 and "no tree can split" in ok.stderr
    for algorithm in ("lambdamart", "softrank"):
        refused = clean(cli("ltr", "-d", huge, "--algorithm", algorithm, "--rounds", "3", "--epochs", "2",
                            "--no-progress", "nDCG"))
        assert refused.returncode == 2 and "lower the feature indices" in refused.stderr
