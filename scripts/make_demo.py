"""Generate the embedded demo collection (``data/demo``) deterministically.

Generative model (documented in data/demo/README.md):

* T = 20 topics; each has a candidate set of 400 documents with latent grades drawn per topic:
  P(grade 2) = a_t, P(grade 1) = b_t with a_t ~ U(0.01, 0.05), b_t ~ U(0.03, 0.10), else grade 0.
* S = 32 systems with quality q_s evenly spread in [0.15, 1.6] plus per-topic difficulty d_t ~ U(0.5, 1.5).
  A system scores document j of topic t as  q_s · d_t · grade_j + ε,  ε ~ N(0, 1): better systems separate the
  grades more, so rankings differ in quality but every system makes mistakes.
* Run depths are realistic and uneven: 100 documents per topic for most systems, 50 for some, 200 for a few, and a
  few topics truncated at random depths.
* Ties in scores: a third of the systems round their scores to 1 decimal, creating ties that the ordering
  policy (trec_eval: docid descending) resolves.
* Qrels by depth-10 pooling of every run plus a 5 % random sample of the other candidates: deeper retrieved
  documents are often unjudged (counted as not relevant by default), as in TREC.
* One system skips two topics (trec_eval -c semantics: they score 0).

Run: ``python scripts/make_demo.py [--out data/demo]``. The output is byte-for-byte reproducible.
"""

from __future__ import annotations

import argparse
import gzip
import io
from pathlib import Path

import numpy as np

SEED = 20100719  # SIGIR 2010, the GAP paper
N_TOPICS = 20
N_CANDIDATES = 400
N_SYSTEMS = 32
POOL_DEPTH = 10
SAMPLE_RATE = 0.05


def generate(seed: int = SEED) -> tuple[str, dict[str, str]]:
    """Return (qrels text, {run name: run text})."""
    rng = np.random.default_rng(seed)
    topics = [str(401 + t) for t in range(N_TOPICS)]
    docids = [[f"D{t:02d}-{j:04d}" for j in rng.permutation(N_CANDIDATES)] for t in range(N_TOPICS)]
    grades = []
    for _ in topics:
        a, b = rng.uniform(0.01, 0.05), rng.uniform(0.03, 0.10)
        grades.append(rng.choice([2, 1, 0], size=N_CANDIDATES, p=[a, b, 1 - a - b]))
    difficulty = rng.uniform(0.5, 1.5, size=N_TOPICS)
    quality = np.linspace(0.15, 1.6, N_SYSTEMS)
    depth_choice = rng.choice([100, 50, 200], size=N_SYSTEMS, p=[0.7, 0.2, 0.1])
    rounds = rng.random(N_SYSTEMS) < 1 / 3

    runs: dict[str, str] = {}
    pooled = [set() for _ in topics]
    for s in range(N_SYSTEMS):
        name = f"sys{s + 1:02d}"
        lines = []
        skip = {3, 11} if s == 7 else set()
        for t, topic in enumerate(topics):
            if t in skip:
                continue
            scores = quality[s] * difficulty[t] * grades[t] + rng.normal(0.0, 1.0, N_CANDIDATES)
            if rounds[s]:
                scores = np.round(scores, 1)
            depth = int(depth_choice[s]) if rng.random() > 0.1 else int(rng.integers(20, depth_choice[s]))
            top = np.argsort(-scores, kind="stable")[:depth]
            pooled[t].update(top[:POOL_DEPTH].tolist())
            for rank, j in enumerate(top, start=1):
                lines.append(f"{topic} Q0 {docids[t][j]} {rank} {scores[j]:.4f} {name}")
        runs[name] = "\n".join(lines) + "\n"

    qrels_lines = []
    for t, topic in enumerate(topics):
        sample = set(np.flatnonzero(rng.random(N_CANDIDATES) < SAMPLE_RATE).tolist())
        for j in sorted(pooled[t] | sample):
            qrels_lines.append(f"{topic} 0 {docids[t][j]} {grades[t][j]}")
    return "\n".join(qrels_lines) + "\n", runs


def write(out: Path, seed: int = SEED) -> None:
    qrels, runs = generate(seed)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    (out / "qrels.txt").write_text(qrels)
    for name, text in runs.items():
        buffer = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as gz:
            gz.write(text.encode())
        (out / "runs" / f"{name}.gz").write_bytes(buffer.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "data" / "demo")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    write(args.out, args.seed)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
