"""Write a synthetic TREC collection of S runs × T topics × depth D (deterministic for a seed), for growth benchmarks.

The shape of TREC-COVID round 1 by default (143 runs, 30 topics, depth 1000, graded qrels 0/1/2 with ~290
judgments per topic); ``--scale k`` multiplies the topics by k. Each topic has a pool of documents, a fifth of
them judged (grades 0/1/2 in proportions 60/25/15 %); each run retrieves D documents of the pool, better runs
ranking relevant documents higher, with scores rounded to 4 decimals (ties occur, as in real runs). Runs are gzip
files (ISA-L, level 1); the lines are built and written by Arrow, so 16× TREC-COVID (2.5 GB of text) takes a minute.

``--grade-share`` sets the grades and their proportions among judged documents (``0.6,0.2,0.12,0.08``: grades 0-3,
the collection behind ``scripts/bench_mem.py --synthetic``).

Usage: python scripts/make_synthetic.py OUT [--runs 143] [--topics 30] [--depth 1000] [--scale 1] [--seed 0]
       [--grade-share 0.6,0.25,0.15]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
from isal import igzip

GRADE_SHARE = (0.60, 0.25, 0.15)


def make_collection(out: Path, runs: int, topics: int, depth: int, seed: int = 0,
                    grade_share: tuple[float, ...] = GRADE_SHARE) -> tuple[Path, Path]:
    """Write ``out/qrels.txt`` and ``out/runs/run###.gz`` (judged grades 0..len(grade_share) - 1 drawn in those
    proportions); returns (qrels, runs folder)."""
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    (out / "runs").mkdir(exist_ok=True)
    pool = 2 * depth  # documents a topic's runs draw from
    judged = pool // 5 + 90
    grades = rng.choice(len(grade_share), size=(topics, judged), p=grade_share)
    topic_ids = pa.array([str(401 + t) for t in range(topics)])
    qrels = pa.table({
        "topic": pc.take(topic_ids, pa.array(np.repeat(np.arange(topics), judged))),
        "iter": pa.array(np.zeros(topics * judged, dtype=np.int64)),
        "docid": _docids(np.repeat(np.arange(topics), judged), np.tile(np.arange(judged), topics)),
        "grade": pa.array(grades.ravel()),
    })
    _write(qrels, out / "qrels.txt", gzip=False)
    quality = np.linspace(0.2, 2.0, runs)  # how strongly a run favours relevant documents
    gain = np.zeros((topics, pool))
    gain[:, :judged] = grades
    for r in range(runs):
        run_rng = np.random.default_rng([seed, r])
        noise = run_rng.gumbel(size=(topics, pool))
        utility = quality[r] * gain + noise
        top = np.argsort(-utility, axis=1)[:, :depth]  # (T, D) document indices, best first
        score = np.round(np.take_along_axis(utility, top, axis=1) + 10.0, 4)
        t = np.repeat(np.arange(topics), depth)
        table = pa.table({
            "topic": pc.take(topic_ids, pa.array(t)),
            "q0": pa.array(np.full(t.size, "Q0")),
            "docid": _docids(t, top.ravel()),
            "rank": pa.array(np.tile(np.arange(1, depth + 1), topics)),
            "score": pa.array(score.ravel()),
            "tag": pa.array(np.full(t.size, f"run{r:03d}")),
        })
        _write(table, out / "runs" / f"run{r:03d}.gz", gzip=True)
    return out / "qrels.txt", out / "runs"


def _docids(topic: np.ndarray, doc: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise(pa.array(np.char.mod("d%d", topic)), pa.array(doc).cast(pa.string()), "_")


def _write(table: pa.Table, path: Path, gzip: bool) -> None:
    options = pacsv.WriteOptions(include_header=False, delimiter="\t", quoting_style="none")
    if gzip:
        with igzip.open(path, "wb", compresslevel=1) as f:
            pacsv.write_csv(table, f, options)
    else:
        pacsv.write_csv(table, path, options)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--runs", type=int, default=143)
    parser.add_argument("--topics", type=int, default=30)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--scale", type=int, default=1, help="Multiply the topics by this.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--grade-share", default=",".join(map(str, GRADE_SHARE)),
                        help="Proportions of grades 0, 1, ... among judged documents (comma-separated, sum 1).")
    args = parser.parse_args()
    share = tuple(float(x) for x in args.grade_share.split(","))
    if len(share) < 2 or min(share) < 0 or abs(sum(share) - 1) > 1e-9:
        parser.error(f"--grade-share needs two or more proportions >= 0 summing to 1; got {args.grade_share}")
    qrels, runs = make_collection(args.out, args.runs, args.topics * args.scale, args.depth, args.seed, share)
    print(f"wrote {qrels} and {runs}/ ({args.runs} runs × {args.topics * args.scale} topics × {args.depth})")


if __name__ == "__main__":
    main()
