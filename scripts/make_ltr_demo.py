"""Write the small deterministic learning-to-rank demo set ``data/ltr-demo/demo.txt.gz`` (LETOR format).

150 queries of 15-40 documents. Each document has a latent relevance u ~ N(0, 1) shifted by a per-query difficulty;
its label is the latent cut at two thresholds (grades 0, 1, 2: about 70 / 22 / 8 %; some queries have no relevant
document, as real collections do). 16 features: noisy and non-linear views of u (1-4), a feature that marks the
highly relevant (5), an interaction (6 × 7), the query difficulty (8: constant within a query, useless for ranking
within it) and 8 pure-noise features. Documents are shuffled within each query so that file order says nothing.

Usage: python scripts/make_ltr_demo.py [OUT_DIR]
"""

from __future__ import annotations

import gzip
import io
import sys
from pathlib import Path

import numpy as np

SEED = 2010
N_QUERIES = 150


def make(seed: int = SEED) -> str:
    rng = np.random.default_rng(seed)
    lines = []
    for q in range(1, N_QUERIES + 1):
        n = int(rng.integers(15, 41))
        shift = rng.normal(0.0, 0.5)
        u = rng.normal(0.0, 1.0, n) + shift
        label = np.digitize(u, [0.55, 1.45])
        z = rng.uniform(0.0, 1.0, n)
        features = np.column_stack([
            u + rng.normal(0.0, 1.0, n),
            u + rng.normal(0.0, 1.6, n),
            np.exp(0.6 * u) + rng.normal(0.0, 0.6, n),
            np.round(np.clip(3 + 2 * u + rng.normal(0.0, 2.0, n), 0, None)),  # a count-like feature
            (u > 1.45) + rng.normal(0.0, 0.8, n),
            u * z + rng.normal(0.0, 0.5, n),
            z,
            np.full(n, shift) + rng.normal(0.0, 0.05),
            rng.normal(0.0, 1.0, (n, 8)),
        ])
        for i in rng.permutation(n):
            values = " ".join(f"{j}:{v:.3f}" for j, v in enumerate(features[i], start=1))
            lines.append(f"{label[i]} qid:{q} {values}")
    return "\n".join(lines) + "\n"


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="demo.txt", mode="wb", fileobj=buffer, mtime=0) as handle:
        handle.write(make().encode())
    (out / "demo.txt.gz").write_bytes(buffer.getvalue())
    print(f"wrote {out / 'demo.txt.gz'} ({len(buffer.getvalue()) / 1024:.0f} KiB)")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "data" / "ltr-demo")
