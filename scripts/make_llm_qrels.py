"""Generate the demo collection's synthetic "LLM judge" qrels (``data/demo/llm-qrels.txt``) deterministically.

The demo's qrels (``data/demo/qrels.txt``) are the reference assessor's labels. A second judge — standing in for a
large language model prompted to grade the same documents — relabels every judged document with a fixed
confusion model of the kind reported for LLM judges (Thomas et al., SIGIR 2024: agreement well above chance, more
lenient than TREC assessors, grades 1 and 2 confused most):

    reference grade 0:  other 0 with p 0.88, 1 with 0.10, 2 with 0.02     (a lenient judge)
    reference grade 1:  other 0 with p 0.20, 1 with 0.55, 2 with 0.25
    reference grade 2:  other 0 with p 0.05, 1 with 0.25, 2 with 0.70

and, for realism, it leaves about 2 % of the documents unlabelled (a parse failure of the model's answer) and its
leniency varies by topic (the probability of upgrading a 0 is scaled by a topic factor in [0.5, 1.5]). The same
seed gives the same file, byte for byte.

Run: ``python scripts/make_llm_qrels.py [--qrels data/demo/qrels.txt] [--out data/demo/llm-qrels.txt]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

SEED = 20240714  # SIGIR 2024
CONFUSION = {0: (0.88, 0.10, 0.02), 1: (0.20, 0.55, 0.25), 2: (0.05, 0.25, 0.70)}
MISSING = 0.02
REPO = Path(__file__).resolve().parents[1]


def relabel(lines: list[str], seed: int = SEED) -> str:
    """The other judge's qrels text for the reference qrels ``lines`` (``topic iteration docid grade``)."""
    rng = np.random.default_rng(seed)
    topics = sorted({line.split()[0] for line in lines if line.strip()})
    leniency = dict(zip(topics, rng.uniform(0.5, 1.5, size=len(topics))))
    out = []
    for line in lines:
        if not line.strip():
            continue
        topic, iteration, docid, grade = line.split()
        if rng.random() < MISSING:
            continue
        p = np.array(CONFUSION[int(grade)], dtype=float)
        if int(grade) == 0:
            p[1:] *= leniency[topic]
            p[0] = 1.0 - p[1:].sum()
        out.append(f"{topic} {iteration} {docid} {rng.choice(3, p=p)}")
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--qrels", type=Path, default=REPO / "data" / "demo" / "qrels.txt")
    parser.add_argument("--out", type=Path, default=REPO / "data" / "demo" / "llm-qrels.txt")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    args.out.write_text(relabel(args.qrels.read_text().splitlines(), args.seed))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
