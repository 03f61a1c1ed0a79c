"""Benchmark: error rates of significance tests, 129 runs x 50 topics, four metrics, the default budget.

Data: a synthetic collection of per-topic scores, 129 systems x 50 topics (TREC-8 ad hoc's shape), under four
metrics with the shapes real ones have: AP-like and nDCG-like (continuous, a point mass at 0), P@10-like (tenths:
many ties) and RR-like (1/rank: few values). Topic difficulty, system quality and noise are drawn with one seed.

Ours: :func:`meta_eval.statistics.significance.error_rates.significance_error_rates` with its default budget: 5 topic-set
sizes (5, 10, 20, 30, 50); per size 1,000 trials of a pair, each tested by 5 tests at 6 effects (the null and
five), and 400 families of 10 systems, each tested in 2 configurations by 3 tests under 4 corrections and by the
randomised Tukey HSD; B = 1,000 for the bootstrap, randomisation and Tukey HSD. Run with ``jobs=1`` (its CPU time
is this process's) and ``jobs=2`` (the wall time on two cores: the target is under a minute).

Peer: the plain approach, a loop over trials, effects and pairs calling scipy.stats (``ttest_1samp``, ``wilcoxon``,
``binomtest``, ``permutation_test`` with B = 1,000), a numpy bootstrap per test, statsmodels' ``multipletests`` per
family, and a randomised Tukey HSD looping over its B permutations — the same design and budget per trial, run on
a small budget (``--peer-trials`` pair trials and ``--peer-families`` families per size and metric) and extrapolated
by the number of trials to the default budget, as the other benchmarks do.

The two are timed side by side, alternating ``--repeat`` times (best of each), in CPU time (``time.process_time``)
beside wall time, with the load average before and after; the speed-up is the ratio of CPU times.

With ``--study``, also the cost of the analysis in the demo study (opt-in there: ``meta-eval study --analysis
error-rates``): the whole study with and without it, alternating, in this process (``jobs=1``: CPU time is this
process's), one more BENCH line (``ours_s``: with it, ``peer_s``: without).

Usage: python scripts/bench_error_rates.py [--repeat 2] [--peer-trials 4] [--peer-families 2] [--study]
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np

from meta_eval.statistics.significance.error_rates import (DEFAULT_EFFECTS, DEFAULT_FAMILY_TESTS, default_sizes,
                                                     significance_error_rates)

N_SYSTEMS, N_TOPICS = 129, 50
N_TRIALS, FAMILY_TRIALS, FAMILY_SIZE, FAMILY_EFFECT, B, ALPHA = 1000, 400, 10, 0.5, 1000, 0.05


def synthetic_scores(seed: int = 0) -> dict[str, np.ndarray]:
    """Four (129, 50) score arrays with the shapes of AP, nDCG@10, P@10 and RR."""
    rng = np.random.default_rng(seed)
    difficulty = rng.beta(1.2, 3.0, N_TOPICS)
    quality = rng.normal(0, 0.08, N_SYSTEMS)
    latent = difficulty[None, :] + quality[:, None]
    noisy = lambda sd: latent + rng.normal(0, sd, latent.shape)  # noqa: E731
    ap = np.clip(noisy(0.12), 0, 1)
    ndcg = np.clip(noisy(0.15) + 0.1, 0, 1)
    p10 = np.round(np.clip(noisy(0.15), 0, 1) * 10) / 10
    rank = np.ceil(np.clip(rng.exponential(1.0 / np.clip(noisy(0.1) * 3 + 0.05, 0.05, None)), 1, 1000))
    return {"AP": ap, "nDCG@10": ndcg, "P@10": p10, "RR": np.where(rank > 100, 0.0, 1.0 / rank)}


def peak_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux ru_maxrss is in KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --------------------------------------------------------------------------------------------- the plain peer


def peer_pairs(x: np.ndarray, n: int, trials: int, rng: np.random.Generator) -> None:
    """``trials`` trials of the pairs part for one metric: a pair, n topics, a sign per topic; five tests at six
    effects, each p-value from scipy.stats (the bootstrap in numpy)."""
    from scipy import stats

    for _ in range(trials):
        a, b = rng.choice(N_SYSTEMS, 2, replace=False)
        z = (x[a] - x[b])[rng.integers(0, N_TOPICS, n)] * rng.choice([-1.0, 1.0], n)
        sigma = np.sqrt(np.mean((x[a] - x[b]) ** 2))
        for effect in (0.0, *DEFAULT_EFFECTS):
            d = z + effect * sigma
            stats.ttest_1samp(d, 0.0)
            if np.any(d != 0):
                stats.wilcoxon(d, correction=True, method="approx")
            positive, negative = int(np.sum(d > 0)), int(np.sum(d < 0))
            if positive + negative:
                stats.binomtest(positive, positive + negative)
            w = d - d.mean()
            resampled = w[rng.integers(0, n, (B, n))]
            t_star = resampled.mean(axis=1) / (resampled.std(axis=1, ddof=1) / np.sqrt(n) + 1e-300)
            np.mean(np.abs(t_star) >= abs(d.mean() / (d.std(ddof=1) / np.sqrt(n) + 1e-300)))
            stats.permutation_test((d,), lambda v, axis=-1: np.abs(np.mean(v, axis=axis)), n_resamples=B,
                                   permutation_type="samples", alternative="greater", random_state=rng)


def peer_families(x: np.ndarray, scale: float, n: int, trials: int, rng: np.random.Generator) -> None:
    """``trials`` families for one metric: every pair tested by three scipy tests in each configuration, the
    p-values corrected by statsmodels, and the randomised Tukey HSD looping over its permutations."""
    from scipy import stats
    from statsmodels.stats.multitest import multipletests

    raised = np.arange(FAMILY_SIZE) >= FAMILY_SIZE // 2
    pairs = [(i, j) for i in range(FAMILY_SIZE) for j in range(i + 1, FAMILY_SIZE)]
    for _ in range(trials):
        members = rng.choice(N_SYSTEMS, FAMILY_SIZE, replace=False)
        y = x[members][:, rng.integers(0, N_TOPICS, n)].T  # (topics, systems)
        y = rng.permuted(y, axis=1)
        for effect in (0.0, FAMILY_EFFECT):
            yc = y + effect * scale * raised
            p = {t: [] for t in DEFAULT_FAMILY_TESTS}
            for i, j in pairs:
                d = yc[:, i] - yc[:, j]
                p["ttest"].append(stats.ttest_1samp(d, 0.0).pvalue)
                p["wilcoxon"].append(stats.wilcoxon(d, correction=True, method="approx").pvalue if np.any(d) else 1.0)
                positive, negative = int(np.sum(d > 0)), int(np.sum(d < 0))
                p["sign"].append(stats.binomtest(positive, positive + negative).pvalue if positive + negative else 1)
            for values in p.values():
                for method in ("bonferroni", "holm", "fdr_bh"):
                    multipletests(np.nan_to_num(values, nan=1.0), alpha=ALPHA, method=method)
            means = yc.mean(axis=0)
            hsd = np.empty(B)
            for k in range(B):
                permuted = rng.permuted(yc, axis=1).mean(axis=0)
                hsd[k] = permuted.max() - permuted.min()
            [np.mean(hsd >= abs(means[i] - means[j])) for i, j in pairs]


def run_peer(scores: dict[str, np.ndarray], sizes: list[int], pair_trials: int, family_trials: int
             ) -> tuple[float, float, float, float]:
    """(CPU s, wall s) of the peer on the small budget, and the same extrapolated to the default budget."""
    rng = np.random.default_rng(1)
    c0, w0 = time.process_time(), time.perf_counter()
    pairs_cpu = families_cpu = 0.0
    for n in sizes:
        for name, x in scores.items():
            c = time.process_time()
            peer_pairs(x, n, pair_trials, rng)
            pairs_cpu += time.process_time() - c
            c = time.process_time()
            peer_families(x, float(np.median(np.sqrt(np.mean((x[:, None] - x[None]) ** 2, axis=2)))), n,
                          family_trials, rng)
            families_cpu += time.process_time() - c
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    extrapolated = pairs_cpu * N_TRIALS / pair_trials + families_cpu * FAMILY_TRIALS / family_trials
    return cpu, wall, extrapolated, extrapolated * wall / cpu


def run_ours(scores: dict[str, np.ndarray], jobs: int) -> tuple[float, float]:
    c0, w0 = time.process_time(), time.perf_counter()
    significance_error_rates(scores, jobs=jobs)
    return time.process_time() - c0, time.perf_counter() - w0


def demo_study(repeat: int) -> None:
    """The demo study (its default options, PNG figures) with and without the error rates, alternating."""
    import tempfile

    import meta_eval as me
    from meta_eval.orchestration.study import StudyOptions, run_study

    col = me.demo_collection()
    times: dict[str, list[tuple[float, float, float]]] = {"with": [], "without": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(repeat):
            for label, analyses in (("without", ()), ("with", ("error-rates",))):
                c0, w0 = time.process_time(), time.perf_counter()
                result = run_study(col, f"{tmp}/{label}{r}", StudyOptions(formats=("png",), analyses=analyses))
                times[label].append((time.process_time() - c0, time.perf_counter() - w0,
                                     result.timings.get("error-rates", 0.0)))
                print(f"demo study {label:7s} error rates: {times[label][-1][0]:6.2f} s CPU, "
                      f"{times[label][-1][1]:6.2f} s wall (its stage {times[label][-1][2]:.2f} s; load "
                      f"{os.getloadavg()[0]:.1f})", flush=True)
    with_cpu, without_cpu = min(t[0] for t in times["with"]), min(t[0] for t in times["without"])
    print(f"BENCH name=error_rates_demo_study ours_s={with_cpu:.2f} peer_s={without_cpu:.2f} "
          f"speedup={without_cpu / with_cpu:.2f} added_s={with_cpu - without_cpu:.2f} "
          f"stage_wall_s={min(t[2] for t in times['with']):.2f} peak_mb={peak_mb():.0f} "
          f"load={os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--study", action="store_true", help="also time the demo study with and without it")
    parser.add_argument("--peer-trials", type=int, default=4, help="pair trials per size and metric for the peer")
    parser.add_argument("--peer-families", type=int, default=2, help="families per size and metric for the peer")
    args = parser.parse_args()

    scores = synthetic_scores()
    sizes = default_sizes(N_TOPICS)
    print(f"{N_SYSTEMS} systems x {N_TOPICS} topics, {len(scores)} metrics; sizes {sizes}; {N_TRIALS} pair trials "
          f"and {FAMILY_TRIALS} families of {FAMILY_SIZE} per size; B = {B}; {os.cpu_count()} CPUs visible")
    load_before = os.getloadavg()
    significance_error_rates(scores, sizes=[5], n_trials=25, family_trials=25)  # warm-up: imports, caches
    ours, ours2, peer = [], [], []
    for r in range(args.repeat):  # alternating, so that both sides see the same load
        ours.append(run_ours(scores, jobs=1))
        if r == 0:
            own_peak = peak_mb()
        print(f"ours  jobs=1: {ours[-1][0]:6.2f} s CPU, {ours[-1][1]:6.2f} s wall (load {os.getloadavg()[0]:.1f})",
              flush=True)
        peer.append(run_peer(scores, sizes, args.peer_trials, args.peer_families))
        cpu, wall, extra_cpu, extra_wall = peer[-1]
        print(f"peer  {args.peer_trials} pair trials + {args.peer_families} families per size and metric: "
              f"{cpu:6.2f} s CPU, {wall:6.2f} s wall -> default budget {extra_cpu:8.1f} s CPU "
              f"({extra_wall:8.1f} s wall) (load {os.getloadavg()[0]:.1f})", flush=True)
        ours2.append(run_ours(scores, jobs=2))
        print(f"ours  jobs=2: {ours2[-1][1]:6.2f} s wall (load {os.getloadavg()[0]:.1f})", flush=True)
    load_after = os.getloadavg()
    ours_cpu, ours_wall = min(o[0] for o in ours), min(o[1] for o in ours)
    wall2 = min(o[1] for o in ours2)
    peer_cpu = min(p[2] for p in peer)
    speedup = peer_cpu / ours_cpu
    print(f"load average (1, 5, 15 min): before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    print(f"ours {ours_cpu:.2f} s CPU ({ours_wall:.2f} s wall) on one core, {wall2:.2f} s wall on two; peer "
          f"{peer_cpu:.0f} s CPU extrapolated: {speedup:.0f}x; target < 60 s on two cores: "
          f"{'ok' if wall2 < 60 else 'MISSED'}")
    print(f"BENCH name=error_rates ours_s={ours_cpu:.2f} peer_s={peer_cpu:.1f} speedup={speedup:.1f} "
          f"peak_mb={own_peak:.0f} wall_s={ours_wall:.2f} wall_jobs2_s={wall2:.2f} "
          f"load_before={load_before[0]:.2f} load_after={load_after[0]:.2f}")
    if args.study:
        demo_study(args.repeat)


if __name__ == "__main__":
    main()
