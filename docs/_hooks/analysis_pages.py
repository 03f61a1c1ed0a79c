"""MkDocs hook: one page per analysis, generated from the registry (``meta_eval.analyses``), so that no analysis or
parameter is listed by hand a second time.

- ``on_config``: the nav's "Analyses" entry gets one page per analysis of the registry, in the study report's order.
- ``on_files``: an analysis without a hand-written page ``docs/analyses/NAME.md`` gets a generated one.
- ``on_page_content``: the Sphinx roles of the docstrings (``:class:`~x.Y```) shown as plain code on every page.
- ``on_page_markdown``: every analysis page gets its reference — command, what it reads, where it runs in the
  study, one row per declared parameter (option, study option, default, allowed values) — in place of a
  ``<!-- reference -->`` line (or at its end); ``analyses/index.md`` gets the table of every analysis in place of
  ``<!-- analyses-table -->``.
"""

from __future__ import annotations

import re
from typing import Any

from mkdocs.structure.files import File

NAV_SECTION = "Analyses"
INDEX = "analyses/index.md"
_ROLE = re.compile(r":(?:mod|func|class|meth|attr|data|obj):`~?([^`]+)`")
_HTML_ROLE = re.compile(r":(?:mod|func|class|meth|attr|data|obj):(<code>)~?")


def _registry() -> list[Any]:
    from meta_eval.analyses import analyses

    return analyses()


def _page(decl) -> str:
    return f"analyses/{decl.name}.md"


def on_config(config, **_):
    """Replace the nav's ``Analyses: analyses/index.md`` by the overview and one page per analysis."""

    def expand(items: list) -> bool:
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            (title, target), = item.items()
            if title == NAV_SECTION and target == INDEX:
                items[i] = {title: [{"Overview": INDEX}] + [{decl.title: _page(decl)} for decl in _registry()]}
                return True
            if isinstance(target, list) and expand(target):
                return True
        return False

    if not expand(config["nav"]):
        raise RuntimeError(f"mkdocs.yml: the nav has no '{NAV_SECTION}: {INDEX}' entry for the analysis pages")
    return config


def on_files(files, config, **_):
    """A generated page for every analysis that has no hand-written one."""
    for decl in _registry():
        if files.get_file_from_path(_page(decl)) is None:
            files.append(File.generated(config, _page(decl), content=f"# {decl.title}\n\n<!-- reference -->\n"))
    return files


def on_page_markdown(markdown: str, page, **_):
    by_page = {_page(decl): decl for decl in _registry()}
    if page.file.src_uri == INDEX:
        return markdown.replace("<!-- analyses-table -->", _overview(by_page.values()))
    decl = by_page.get(page.file.src_uri)
    if decl is None:
        return markdown
    reference = _reference(decl)
    if "<!-- reference -->" in markdown:
        return markdown.replace("<!-- reference -->", reference)
    return markdown.rstrip() + "\n\n" + reference


def on_page_content(html: str, **_) -> str:
    """Docstrings are written for Sphinx as much as for mkdocstrings: drop the role in front of the code."""
    return _HTML_ROLE.sub(r"\1", html)


def _plain(text: str) -> str:
    """A docstring paragraph as Markdown: Sphinx roles as code, lines joined."""
    return " ".join(line.strip() for line in _ROLE.sub(r"`\1`", text).splitlines())


def _reads(decl) -> str:
    return {"measures": "the measures only (not the runs)",
            "scores": "per-topic scores: runs and qrels, or score tables (`--scores`)",
            "collection": "runs and qrels (the rankings, not only their scores)"}[decl.needs]


def _overview(decls) -> str:
    rows = ["| analysis | what | reads | in the study |", "| --- | --- | --- | --- |"]
    for decl in decls:
        rows.append(f"| [`{decl.name}`]({decl.name}.md) | {_cell(decl.summary)} | {decl.needs} | {_in_study(decl)} |")
    return "\n".join(rows)


def _in_study(decl) -> str:
    if decl.enabled is None:
        return "always" if decl.name == "scores" else f"by default (`--skip {decl.name}`)"
    defaults = {p.name: p.default for p in decl.params}
    try:
        on = decl.enabled(defaults)
    except Exception:  # noqa: BLE001 - an enabled() that needs given values: opt-in
        on = False
    return f"by default (`--skip {decl.name}`)" if on else f"opt-in (`--analysis {decl.name}` or its options)"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _value(param, value) -> str:
    from meta_eval.core.params import format_value

    if value is None:
        return "–"
    return ", ".join(format_value(v) for v in value) if param.many else format_value(value)


def _reference(decl) -> str:
    from meta_eval.orchestration.study import study_flag

    doc = (decl.run.__doc__ or "").strip().split("\n\n")[0]
    lines = ["## Reference", ""]
    if doc:
        lines += [_plain(doc), ""]
    lines += [(f"- **Command**: `meta-eval {decl.name}` (or `meta-eval analysis \"{decl.name}(param=value,...)\"`); "
               "`--out DIR` writes its result folder: its CSV and LaTeX tables, figures, `report.md`/`report.html` "
               "and `manifest.json`."),
              f"- **Reads**: {_reads(decl)}.",
              f"- **In the study**: {_in_study(decl)}."]
    if decl.requires:
        lines.append("- **Requires**: " + ", ".join(f"[`{r}`]({r}.md)" for r in decl.requires) + " (run first).")
    if decl.after:
        lines.append("- **Uses when they ran**: " + ", ".join(f"[`{r}`]({r}.md)" for r in decl.after) + ".")
    extra = [flag for flag, on in (("--standardise z|cdf", decl.standardised), ("--jobs/--scheduler", decl.parallel))
             if on]
    if extra:
        lines.append("- **Also takes**: " + ", ".join(f"`{e}`" for e in extra) + ".")
    module = f"meta_eval.analyses.{decl.name.replace('-', '_')}"
    lines.append(f"- **Module**: `{module}` (its API below).")
    if decl.params:
        lines += ["", "| parameter | option | study option | default | allowed | meaning |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for p in decl.params:
            option = "/".join(p.flags) if p.flags else p.option
            lines.append(f"| `{p.name}` | `{option}` | `{study_flag(decl, p)}` | {_cell(_value(p, p.default))} | "
                         f"{_cell(p.domain_text)} | {_cell(p.doc)}{' (repeatable)' if p.many else ''} |")
    lines += ["", "## API", "", f"::: {module}", "    options:", "      heading_level: 3",
              "      show_root_heading: false"]
    return "\n".join(lines) + "\n"
