"""The documentation's examples run: every fenced block marked ``<!-- run -->`` in README.md and docs/**/*.md.

Each page's blocks run in document order in a temporary folder holding a copy of the demo collection — ``qrels.txt``,
``runs/`` (gzip runs), ``run.txt`` (one plain run), ``data/demo/`` — and of ``examples/``, so the commands of the
pages run as they are written:

``python``
    one script per block (each block is self-contained, as a reader copies it), which must exit 0;
``bash``
    one script per block under ``set -euo pipefail``;
``console``
    each ``$ command`` line is run; the lines after it, up to the next ``$``, are the output it must print (standard
    output and error together): its words in order, numbers to the precision shown, ``...`` for anything left out,
    line breaks free (the terminal's width decides them). A command shown without output must exit 0.

``<!-- run: shared -->`` marks a block that needs the reference data in ``../shared`` (skipped without it; the
folder is then reachable as ``../shared`` from the examples' folder). Every marker must precede a block of one of
these languages, so a typo cannot silently turn a test off.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO, SHARED

PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
LANGUAGES = ("python", "bash", "console")
MARKER = re.compile(r"^<!--\s*run(?::\s*(?P<flags>[\w\s,-]*))?\s*-->\s*$")
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")
#: Seconds one block may take (a whole command on the demo takes a few seconds; on a loaded machine several times
#: that): a block that hangs fails instead of holding the suite.
BLOCK_TIMEOUT = 300
#: A number in printed output (an integer, a decimal, scientific notation), else one visible character.
TOKEN = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|\S")
NUMBER = re.compile(r"[-+]?\d+(?:\.(?P<decimals>\d+))?(?:[eE](?P<exponent>[-+]?\d+))?$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    text: str
    flags: frozenset[str]

    def __str__(self) -> str:
        return f"{_shown(self.page)}:{self.line} ({self.lang})"


def _shown(page: Path) -> str:
    return str(page.relative_to(REPO)) if page.is_relative_to(REPO) else str(page)


def runnable_blocks(page: Path) -> list[Block]:
    """The marked blocks of a page, in order; a marker not followed by a block of a known language is an error."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out = []
    for i, line in enumerate(lines):
        marker = MARKER.match(line)
        if not marker:
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        fence = FENCE.match(lines[j]) if j < len(lines) else None
        where = f"{_shown(page)}:{i + 1}"
        assert fence and fence.group("lang") in LANGUAGES, f"{where}: <!-- run --> must precede a {LANGUAGES} block"
        end = next((k for k in range(j + 1, len(lines)) if lines[k].startswith("```")), None)
        assert end is not None, f"{where}: the block is not closed"
        flags = frozenset(f.strip() for f in (marker.group("flags") or "").split(",") if f.strip())
        assert flags <= {"shared"}, f"{where}: unknown flags {sorted(flags)}"
        out.append(Block(page, j + 2, fence.group("lang"), "\n".join(lines[j + 1:end]) + "\n", flags))
    return out


def _pages_with_blocks() -> list[Path]:
    return [page for page in PAGES if runnable_blocks(page)]


# ------------------------------------------------------------------------------------------------ output matching

def _tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


def _same(expected: str, actual: str) -> bool:
    """Equal tokens; numbers equal to the precision the expected one is printed with."""
    if expected == actual:
        return True
    want, got = NUMBER.match(expected), NUMBER.match(actual)
    if not (want and got):
        return False
    last_digit = int(want.group("exponent") or 0) - len(want.group("decimals") or "")  # 0.575: -3; 2.5e-3: -4
    return abs(float(actual) - float(expected)) <= 0.5 * 10.0 ** last_digit + 1e-12 * abs(float(expected))


def _find(segment: list[str], tokens: list[str], start: int) -> int | None:
    """Where ``segment`` occurs contiguously in ``tokens`` at or after ``start`` (its end), else None."""
    for i in range(start, len(tokens) - len(segment) + 1):
        if all(_same(e, a) for e, a in zip(segment, tokens[i:i + len(segment)])):
            return i + len(segment)
    return None


def output_matches(expected: str, actual: str) -> str | None:
    """None when ``actual`` shows what ``expected`` does (``...`` stands for anything); else what is missing."""
    tokens, cursor = _tokens(actual), 0
    for part in expected.split("..."):
        segment = _tokens(part)
        if not segment:
            continue
        found = _find(segment, tokens, cursor)
        if found is None:
            return part.strip()
        cursor = found
    return None


def test_output_matching():
    """The matcher itself: numbers to the printed precision, '...' for omissions, line breaks free."""
    actual = "Under AP\nthe ranking moves (τ_b = 0.9563, 43 of 496 pairs); sys29 moves 7 places.\n"
    shown = "the ranking moves (τ_b = 0.956, 43 of 496 pairs); ... sys29 moves 7 places."
    assert output_matches(shown, actual) is None
    assert output_matches("Under AP the ranking", actual) is None
    assert output_matches("τ_b = 0.957", actual) == "τ_b = 0.957"  # 0.9563 is not 0.957 to three decimals
    assert output_matches("44 of 496", actual) == "44 of 496"
    assert output_matches("sys29 moves 7 places ... Under AP", actual) == "Under AP"  # order counts
    assert output_matches("1e-3", "value 0.0010") is None and output_matches("2.5e-3", "value 0.0010") == "2.5e-3"


def test_markers_parse(tmp_path):
    """Markers, flags and block bounds; a marker before anything but a runnable block is an error."""
    page = tmp_path / "page.md"
    page.write_text("text\n<!-- run -->\n```bash\necho hi\n```\n\n```python\nnot = 'marked'\n```\n"
                    "<!-- run: shared -->\n\n```python\nx = 1\ny = 2\n```\n")
    found = [(b.lang, b.text, sorted(b.flags), b.line) for b in runnable_blocks(page)]
    assert found == [("bash", "echo hi\n", [], 4), ("python", "x = 1\ny = 2\n", ["shared"], 13)]
    page.write_text("<!-- run -->\n```toml\na = 1\n```\n")
    with pytest.raises(AssertionError, match="must precede"):
        runnable_blocks(page)
    assert console_commands("$ a\nout 1\n...\n$ b\n") == [("a", "out 1\n..."), ("b", "")]


# ------------------------------------------------------------------------------------------------ the workspace

@pytest.fixture
def workspace(tmp_path) -> Path:
    """A folder laid out as the pages assume: the demo collection under the names the examples use."""
    demo = REPO / "data" / "demo"
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(demo / "qrels.txt", work / "qrels.txt")
    shutil.copytree(demo / "runs", work / "runs")
    (work / "run.txt").write_bytes(gzip.decompress((demo / "runs" / "sys01.gz").read_bytes()))
    shutil.copytree(demo, work / "data" / "demo")
    shutil.copytree(REPO / "examples", work / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    if SHARED.exists():
        (tmp_path / "shared").symlink_to(SHARED, target_is_directory=True)
    return work


def _env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["XDG_CACHE_HOME"] = str(work.parent / "cache")  # the MEM cache stays in the test's folder
    env["META_EVAL_PROGRESS"] = "off"
    env["MPLBACKEND"] = "Agg"
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def _run(args: list[str], work: Path, block: Block) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(args, cwd=work, env=_env(work), capture_output=True, text=True, timeout=BLOCK_TIMEOUT,
                              stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{block}: still running after {BLOCK_TIMEOUT} s")


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.splitlines()[-lines:])


def run_block(block: Block, work: Path) -> None:
    if block.lang == "python":
        script = work / f"block_{block.line}.py"
        script.write_text(block.text, encoding="utf-8")
        done = _run([sys.executable, str(script)], work, block)
        assert done.returncode == 0, f"{block} failed:\n{_tail(done.stdout)}\n{_tail(done.stderr)}"
    elif block.lang == "bash":
        script = work / f"block_{block.line}.sh"
        script.write_text("set -euo pipefail\n" + block.text, encoding="utf-8")
        done = _run(["bash", str(script)], work, block)
        assert done.returncode == 0, f"{block} failed:\n{_tail(done.stdout)}\n{_tail(done.stderr)}"
    else:
        for command, expected in console_commands(block.text):
            done = _run(["bash", "-c", command], work, block)
            shown = done.stdout + done.stderr
            if not expected.strip():
                assert done.returncode == 0, f"{block}: `{command}` failed:\n{_tail(shown)}"
                continue
            missing = output_matches(expected, shown)
            assert missing is None, f"{block}: `{command}` did not print\n  {missing}\nit printed:\n{_tail(shown)}"


def console_commands(text: str) -> list[tuple[str, str]]:
    """``$ command`` lines of a console block, each with the output shown after it."""
    out: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], []))
        else:
            assert out, f"console block: output before any '$ ' command: {line!r}"
            out[-1][1].append(line)
    return [(command, "\n".join(lines)) for command, lines in out]


@pytest.mark.slow
@pytest.mark.parametrize("page", _pages_with_blocks(), ids=lambda p: str(p.relative_to(REPO)))
def test_page_examples_run(page: Path, workspace: Path):
    """The page's marked blocks, in order, in one folder (a later block may read what an earlier one wrote)."""
    for block in runnable_blocks(page):
        if "shared" in block.flags and not SHARED.exists():
            pytest.skip(f"{block} needs ../shared ({SHARED})")
        run_block(block, workspace)


# ------------------------------------------------------------------------------------------------ the pages

def test_every_page_has_examples_that_run():
    """The README and the pages a newcomer reads first show examples that are run."""
    for name in ("README.md", "docs/evaluate.md", "docs/plugins.md", "docs/score-tables.md"):
        assert runnable_blocks(REPO / name), f"{name} has no <!-- run --> block"


def test_readme_is_short_and_keeps_ci_commands():
    """Issue 35: under 250 lines; CI (.ci/run) reads the two commands after their markers."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 250
    for marker in ("<!-- main-command -->", "<!-- test-command -->"):
        after = text.split(marker, 1)[1].lstrip().splitlines()
        assert after[0] == "```bash" and after[1].startswith("pip install"), marker


def test_readme_links_resolve():
    """Every relative link of README.md and ARCHITECTURE.md names a file of the repository (MkDocs checks docs/)."""
    for name in ("README.md", "ARCHITECTURE.md"):
        text = (REPO / name).read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" in target:
                continue
            assert (REPO / target).exists(), f"{name}: link to {target}, which does not exist"


def test_analysis_pages_generated_from_the_registry():
    """The MkDocs hook gives every analysis of the registry a nav entry and a page listing each declared parameter
    with its option and study option (CI builds the site; this checks what the hook writes)."""
    pytest.importorskip("mkdocs")
    import importlib.util

    from meta_eval.analyses import analyses
    from meta_eval.orchestration.study import study_flag

    spec = importlib.util.spec_from_file_location("analysis_pages", REPO / "docs" / "_hooks" / "analysis_pages.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    nav = [{"Meta-evaluation": [{"The study": "study.md"}, {"Analyses": "analyses/index.md"}]}]
    hook.on_config({"nav": nav})
    pages = nav[0]["Meta-evaluation"][1]["Analyses"]
    assert pages[0] == {"Overview": "analyses/index.md"}
    assert [next(iter(p.values())) for p in pages[1:]] == [f"analyses/{a.name}.md" for a in analyses()]
    for decl in analyses():
        text = hook._reference(decl)
        assert f"`meta-eval {decl.name}`" in text and f"::: meta_eval.analyses.{decl.name.replace('-', '_')}" in text
        for param in decl.params:
            assert f"| `{param.name}` |" in text and f"`{study_flag(decl, param)}`" in text, (decl.name, param.name)
    table = hook._overview(analyses())
    assert all(f"[`{a.name}`]({a.name}.md)" in table for a in analyses())
