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
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import meta_eval as me
from meta_eval.core.errors import InputError, OutputError
from meta_eval.core.file_identity import is_pattern, named_files
from meta_eval.inputs.trec import RunFilesNote, expand_paths

CLI = [sys.executable, "-c", "from meta_eval.cli import app; app()"]
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


def test_mem_spellings_and_gap_names_are_exact_and_trec_eval_spellings_unchanged():
    from meta_eval.measures.resolver import resolve_one
    from meta_eval.statistics.maxent.expectations import MeasureSpec
    from meta_eval.statistics.maxent.pr_inference import g_grid, gap_measure

    assert MeasureSpec("RBP", {"p": 0.5000001}, None).name == "RBP(p=0.5000001)"
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

    assert unique(["402", "401"], "--topic") == ["402", "401"]
    with pytest.raises(InputError, match=r"^--topic 2 given twice; give each value once$"):
        unique(["2", "3", "2"], "--topic")
    with pytest.raises(InputError, match=r"--system bm25 given 3 times"):
        unique(["bm25"] * 3, "--system")


@pytest.mark.parametrize("topics", [[0, 0], [3, 1, 3], np.array([2, 2, 2])])
def test_the_engines_refuse_a_repeated_topic_or_system(topics):
    from meta_eval.statistics.best_systems import select_systems, select_topics
    from meta_eval.statistics.significance.discriminative_power import discriminative_power

    scores = np.arange(20.0).reshape(4, 5)
    with pytest.raises(InputError, match=r"topic position \d given (twice|3 times)"):
        select_topics(scores, topics)
    with pytest.raises(InputError, match=r"topic position \d given"):
        discriminative_power({"m": scores}, ["a", "b", "c", "d"], topics=topics, n_resamples=20)
    with pytest.raises(InputError, match=r"system b given twice"):
        select_systems(scores, ["a", "b", "c", "d"], ["b", "a", "b"])
    assert select_topics(scores, [3, 1]).tolist() == scores[:, [3, 1]].tolist()


def test_cli_a_repeated_topic_is_exit_2():
    result = clean(cli("discpower", "-m", "AP", "--topic", "402", "--topic", "402", "-B", "20", "--top", "0",
                       "--no-progress"))
    assert result.returncode == 2 and "given twice" in result.stderr


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

    (tmp_path / "study.toml").write_text('[study]\nmetrics = "AP"\nseed = 3\n[[collection]]\n' + GOOD_ENTRY
                                         + 'depth = 10\n')
    specs, options = read_study_file(tmp_path / "study.toml")
    assert options == {"metrics": ["AP"], "seed": 3}
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


def test_a_real_ctrl_c_while_a_plugin_runs_still_interrupts(tmp_path):
    """A SIGINT that arrives while the plug-in runs is the user's: KeyboardInterrupt goes through; the SIGINT
    handler is the one it was afterwards (a plug-in's own is not kept)."""
    import signal

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
    result = clean(cli("evaluate", "-m", f"{real}:ctrl_c", "--no-progress"))
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


@pytest.mark.parametrize("args", [("correlate", "--no-progress", "-B", "50"), ("anova", "--no-progress"),
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
    if args[0] == "correlate":
        assert b"\\u03c4_b" in result.stdout  # Kendall's tau, as an escape
    if "/nonexistent/τ-qrels.txt" in args:
        assert b"\\u03c4-qrels.txt: file not found" in result.stderr
