"""``meta-eval measures``: every measure with its parameters (domain, default), aliases, trec_eval spellings and
source — printed from the same declarations that parse and validate the names."""

from __future__ import annotations

import sys
import textwrap
from typing import Annotated, Optional

import typer

from meta_eval.cli.app import app
from meta_eval.cli.common import reports_errors


@app.command()
@reports_errors
def measures(
    name: Annotated[Optional[str], typer.Argument(
        help="Show one measure in full (its docstring with formula and source); any spelling: nDCG, map, P_10, "
        "or a plug-in file.py:function (which imports it).",
        show_default=False)] = None,
) -> None:
    """List every measure: parameters with their allowed values and defaults, aliases, trec_eval spellings."""
    from meta_eval.measures import families, resolve_one

    if name is None:
        sys.stdout.write("\n".join(describe(f) for f in sorted(families(), key=lambda f: f.name.lower())))
        sys.stdout.write("\nSyntax: NAME, NAME@k, NAME(param=value,...)@k; trec_eval spellings (map, P_10, "
                         "ndcg_cut.10) mean trec_eval's definition.\n")
        return
    measure = resolve_one(name)
    sys.stdout.write(describe(measure.family, full=True))
    if measure.output_name != measure.name:
        sys.stdout.write(f"\n{measure.output_name} is {measure.name}\n")


def describe(fam, full: bool = False) -> str:
    """A family's entry: name, description (with its source), parameters, aliases, summary over topics."""
    from meta_eval.core.params import format_value
    from meta_eval.core.trec_eval_names import trec_spellings

    lines = [fam.name + (f"@{fam.cutoff.name}" if fam.cutoff is not None else "")]
    if full:
        lines += ["    " + line for line in textwrap.dedent("    " + fam.doc.strip()).splitlines()]
    else:
        lines += _wrap(_first_paragraph(fam.doc) or fam.description, "    ")
    for p in fam.declared():
        role = "@" + p.name if p is fam.cutoff else p.name
        default = "none" if p.default is None else format_value(p.default)
        about = f" ({p.doc})" if p.doc and not p.domain else ""
        lines += _wrap(f"{role}: {p.domain_text}; default {default}{about}", "    - ")
    names = [n for n in dict.fromkeys(fam.aliases + trec_spellings(fam.name)) if n != fam.name]
    if names:
        lines += _wrap("also: " + ", ".join(names), "    ")
    if fam.aggregate != "mean":
        how = {"gmean": "geometric mean", "sum": "sum"}.get(fam.aggregate, "sum")
        lines.append(f"    summary over topics: {how}")
    if fam.undefined:
        lines += _wrap(f"undefined (NaN): {fam.undefined}", "    ")
    if fam.source:
        lines += _wrap(f"plug-in from {fam.source}", "    ")
    return "\n".join(lines) + "\n"


def _first_paragraph(doc: str) -> str:
    return " ".join(doc.strip().split("\n\n")[0].split())


def _wrap(text: str, indent: str) -> list[str]:
    return textwrap.wrap(" ".join(text.split()), 116, initial_indent=indent, subsequent_indent=" " * len(indent) + "  ")
