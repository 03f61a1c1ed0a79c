"""The prefix-state form: the exact expected value of a metric computed by a small state carried down the ranking.

Family
    For lists of a fixed length N and qrels counts, a metric belongs to it when its value is

        M(g_1, ..., g_N) = alpha^T A_1[g_1] A_2[g_2] ... A_N[g_N] beta                                     (1)

    for a vector alpha (r_0), matrices A_i[j] (r_{i-1} x r_i, one per rank i and grade j) and a vector beta (r_N):
    a weighted automaton whose transitions may depend on the rank (Schützenberger 1961; Fliess 1974). It holds
    every metric of the form sum_i f(i, g_i, s_{i-1}) whose state s_i = T(s_{i-1}, g_i) takes few values (the state
    vector is the indicator of s_i beside the running sum, r = |S| + 1): first-hit cascades (RR, RR at a grade
    >= t, Success@k, "1/rank of the first top-grade document"), whether a grade has been seen, counts capped at a
    small number, cutoffs; stopping models whose survival probability is one coordinate (ERR: r = 2); and every
    degree-2 prefix polynomial of :mod:`meta_eval.statistics.maxent.forms` (AP: (1, relevant so far, running sum), r = 3).
Expectation (forward/backward dynamic programme)
    Under MEM's independent ranks, E[prod_i A_i[G_i]] = prod_i E[A_i[G_i]], so with Abar_i = sum_j p_i(j) A_i[j]

        E[M](P) = alpha^T Abar_1 ... Abar_N beta,      dE/dp_i(j) = f_{i-1}^T A_i[j] b_i                    (2)

    with forward vectors f_i^T = f_{i-1}^T Abar_i (f_0 = alpha) and backward ones b_{i-1} = Abar_i b_i (b_N = beta):
    O(N K r^2) per list (a compiled loop over lists and ranks). (2) is multilinear in the rows p_i and equals M at
    every point mass, so it *is* the expectation of M (a multilinear function is fixed by its values on the
    vertices): the form, and its gradient, are exact wherever (1) is.
Identification by probing
    The smallest r_i in (1) is the rank of the Hankel matrix H_i[u, w] = M(u w), prefixes u of length i against
    suffixes w of length N - i (Carlyle & Paz 1971; Fliess 1974). The rows of H_i are spanned by the extensions
    b j of a row basis {b} at cut i - 1, so a basis is carried forward rank by rank: at cut i the metric is scored
    on the lists b j w for every basis prefix b, grade j and a few test suffixes w (all zeros, one grade then
    zeros, random suffixes of several densities, or every suffix when there are few); the SVD of that block gives
    the rank r_i and orthonormal state coordinates (the projections of a prefix's row onto the block's row space),
    greedy pivoting keeps r_i independent prefixes as the next basis, and A_i[j] maps the coordinates of b to
    those of b j. Ranks above :data:`MAX_STATES` end the attempt: the metric is not in the family. The lists of
    one topic share one automaton when appending zero-grade documents never changes the metric (then a list of
    length n < N reads beta_n = A_{n+1}[0] ... A_N[0] beta), and all lists share one when the metric also ignores
    the qrels counts; both properties are checked on the verification lists before they are used.
Verification
    As for derived forms (:func:`meta_eval.statistics.maxent.forms.derive_form`): the identified automaton is scored against the
    metric itself on a sample of the actual lists and on random lists of every length and counts, and used only if
    the largest residual, relative to the metric's scale, is within ``tol``. A metric outside the family is never
    given a wrong form.

References
----------
M.-P. Schützenberger, On the definition of a family of automata, Information and Control 4 (1961).
J. W. Carlyle and A. Paz, Realizations by stochastic finite automata, J. Comput. Syst. Sci. 5 (1971).
M. Fliess, Matrices de Hankel, J. Math. Pures Appl. 53 (1974).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from meta_eval.core.errors import InputError
from meta_eval.statistics.maxent.batch import ListBatch
from meta_eval.statistics.maxent.groups import groups_for, score

MAX_STATES = 8  # largest automaton dimension tried: beyond, the metric is taken to be outside the family
RANK_TOL = 1e-11  # singular values below this fraction of the largest are zero
SNAP_TOL = 1e-14  # transition entries below this fraction of the largest are round-off (exact zeros)
_DENSITIES = (0.5, 0.15, 0.85, 0.3, 0.7, 0.05, 0.95, 0.4, 0.6, 0.25)  # share of non-zero grades, random suffixes


# ------------------------------------------------------------------------------------------------------------
# The form
# ------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Automaton:
    """Identified automata (1) for groups of lists, zero-padded to a common dimension r and depth N.

    Attributes
    ----------
    alpha : (G, r) initial vectors
    mats : (G, N, K, r, r) transition matrices A_i[j] (rank i, grade j)
    tails : (G, N + 1, r) beta_n for a list of n documents (beta_N = beta; shorter lists append zero grades)
    keys : (G, d) int, the key of each group (its qrels counts, its length and counts, or nothing)
    by : {"all", "counts", "length+counts"} what a list's group is keyed on
    """

    alpha: np.ndarray
    mats: np.ndarray
    tails: np.ndarray
    keys: np.ndarray
    by: str

    @property
    def n_states(self) -> int:
        return int(self.alpha.shape[1])

    def groups_of(self, batch: ListBatch) -> np.ndarray:
        """The automaton of every list of ``batch`` (an error for a list whose group was not identified)."""
        from meta_eval.statistics.maxent.groups import GroupTable

        try:
            group = GroupTable.keyed(self.by, self.keys).lookup(batch)
        except KeyError as exc:
            raise InputError(f"the prefix-state form was identified for other lists (no group {exc})") from None
        if batch.n_lists and np.any(batch.lengths > self.mats.shape[1]):
            raise InputError("the prefix-state form was identified for shorter lists")
        return group

    def __call__(self, index: np.ndarray, batch: ListBatch) -> "PrefixStateForm":
        """The form for the lists of ``batch`` (the builder protocol of :class:`~meta_eval.statistics.maxent.forms.MetricForm`)."""
        return PrefixStateForm(self, self.groups_of(batch), batch.lengths.astype(np.int64))


class PrefixStateForm:
    """E[M](P) and its gradient by the forward/backward programme (2) over an :class:`Automaton`.

    ``grad`` gives dE/dp_i(j) - dE/dp_i(0): the gradient up to a constant per rank, which neither the expected value
    of a distribution (each row of P sums to 1) nor the maximum-entropy solution sees, computed without the
    cancellation the full derivative would suffer (:mod:`meta_eval.statistics.maxent._prefix_kernel`).
    """

    linear = False

    def __init__(self, automaton: Automaton, group: np.ndarray, lengths: np.ndarray):
        self.automaton = automaton
        self.group = np.ascontiguousarray(group, dtype=np.int64)
        self.lengths = np.ascontiguousarray(lengths, dtype=np.int64)

    def take(self, index) -> "PrefixStateForm":
        return PrefixStateForm(self.automaton, self.group[index], self.lengths[index])

    def _run(self, P: np.ndarray, grad: bool):
        from meta_eval.statistics.maxent._prefix_kernel import value_grad

        a = self.automaton
        P = np.ascontiguousarray(P, dtype=np.float64)
        if P.shape[0] != self.group.size or P.shape[2] != a.mats.shape[2]:
            raise InputError(f"distribution of shape {P.shape} for {self.group.size} lists with "
                             f"{a.mats.shape[2]} grades")
        if self.lengths.size and self.lengths.max() > P.shape[1]:
            raise InputError(f"distribution of depth {P.shape[1]} for lists of up to {self.lengths.max()} ranks")
        value = np.empty(P.shape[0])
        g = np.zeros(P.shape if grad else (0, 0, 0))
        value_grad(a.alpha, a.mats, a.tails, self.group, self.lengths, P, grad, value, g)
        return value, g

    def value(self, P: np.ndarray) -> np.ndarray:
        return self._run(P, False)[0]

    def grad(self, P: np.ndarray) -> np.ndarray:
        return self._run(P, True)[1]

    def value_and_grad(self, P: np.ndarray):
        return self._run(P, True)


def describe(automaton: Automaton) -> str:
    """The form in words, for reports: its dimension and how many automata."""
    from meta_eval.statistics.maxent.groups import GroupTable, groups_in_words

    table = GroupTable.keyed(automaton.by, automaton.keys)
    return f"prefix-state automaton of dimension {automaton.n_states}, {groups_in_words(table)}"


# ------------------------------------------------------------------------------------------------------------
# Identification
# ------------------------------------------------------------------------------------------------------------

def identify(measure, lengths: np.ndarray, counts: np.ndarray, *, rel_level: int = 1, seed: int = 0,
             max_states: int = MAX_STATES) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The automaton (1) of ``measure`` for lists of each length ``lengths[g]`` and counts ``counts[g]`` (module
    docstring), all groups in lockstep, rank by rank; None if some group needs more than ``max_states`` states.

    Returns
    -------
    (alpha (G, r), mats (G, N, K, r, r), tails (G, N + 1, r)) with N = max(lengths); tails hold beta_n for every
    n <= lengths[g] (meaningful as shorter lists only when the metric ignores appended zero grades).
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    G, K = counts.shape
    N = int(lengths.max(initial=0))
    R = max_states
    basis = np.zeros((G, R, max(N, 1)), dtype=np.int8)  # basis prefixes (their first i - 1 entries at cut i)
    rank = np.ones(G, dtype=np.int64)  # r_{i-1}; the empty prefix has coordinate 1 (alpha = e_1)
    X = np.broadcast_to(np.eye(R), (G, R, R)).copy()  # coordinates of the basis prefixes, identity-padded
    mats = np.zeros((G, N, K, R, R))
    used = 1
    for i in range(1, N + 1):
        live = np.flatnonzero(lengths >= i)
        rng = np.random.default_rng([seed, i, 7])
        Y, r_raw = _cut(measure, basis[live], rank[live], i, lengths[live], counts[live], rel_level, rng, R)
        if Y is None:
            return None
        mats[live, i - 1] = _transitions(X[live], Y, rank[live], K, R)
        # (live, R): candidate row p K + j of each new basis prefix (-1: none). A rank of 0 (every value is 0 from
        # here on) keeps one state whose coordinates are all 0: its basis prefix and coordinate stay as they were.
        sel = _pivot_rows(Y, r_raw)
        r_new = np.maximum(r_raw, 1)
        Xn = np.broadcast_to(np.eye(R), (live.size, R, R)).copy()
        nb = basis[live].copy()
        for q in range(R):
            has = np.flatnonzero(sel[:, q] >= 0)
            p, j = np.divmod(sel[has, q], K)
            Xn[has, q] = Y[has, sel[has, q]]
            new = basis[live[has], p]
            new[:, i - 1] = j
            nb[has, q] = new
        basis[live], X[live], rank[live] = nb, Xn, r_new
        used = max(used, int(r_new.max(initial=1)))
    alpha = np.zeros((G, R))
    alpha[:, 0] = 1.0
    tails = _tails(mats, lengths, R)
    return alpha[:, :used], mats[..., :used, :used], tails[..., :used]


def _cut(measure, basis, rank, i, lengths, counts, rel_level, rng, R):
    """Coordinates Y (G, R K, R) of every candidate prefix (basis prefix, grade) at cut i and the new ranks (None
    when a group needs more than R states). Groups whose rank comes close to the number of test suffixes are probed
    again with more, so a rank is never limited by the suffixes tried."""
    G = basis.shape[0]
    n_rand = rank + 1
    Y = np.zeros((G, R * counts.shape[1], R))
    r = np.zeros(G, dtype=np.int64)
    todo = np.arange(G)
    for _ in range(4):
        H, n_cols, exhaustive = _probe_cut(measure, basis[todo], rank[todo], i, lengths[todo], counts[todo],
                                           rel_level, rng, n_rand[todo])
        Yt, rt = _coordinates(H, lengths[todo] == i, R)
        if np.any(rt > R):
            return None, None
        Y[todo], r[todo] = Yt, rt
        short = ~exhaustive & (rt > n_cols - 2)
        if not short.any():
            return Y, r
        todo = todo[short]
        n_rand[todo] = rt[short] + 4
    return None, None


def _probe_cut(measure, basis, rank, i, lengths, counts, rel_level, rng, n_rand):
    """Score every candidate prefix (basis prefix, grade) at cut i against test suffixes: H (G, R K, m), the
    number of test suffixes of each group and whether they are all the suffixes there are."""
    G, R, _ = basis.shape
    K = counts.shape[1]
    N = int(lengths.max())
    tests = _suffixes(lengths - i, K, n_rand, rng, max(N - i, 2))
    rows, lens, cnts = [], [], []
    for g in range(G):
        n, r, S = int(lengths[g]), int(rank[g]), tests[g][0]
        block = np.zeros((r * K, S.shape[0], N), dtype=np.int8)
        block[:, :, : i - 1] = np.repeat(basis[g, :r, : i - 1], K, axis=0)[:, None, :]  # row p K + j
        block[:, :, i - 1] = np.tile(np.arange(K, dtype=np.int8), r)[:, None]
        block[:, :, i:n] = S[None, :, : n - i]
        rows.append(block.reshape(-1, N))
        lens.append(np.full(r * K * S.shape[0], n))
        cnts.append(np.broadcast_to(counts[g], (r * K * S.shape[0], K)))
    values = score(measure, np.concatenate(rows), np.concatenate(lens), np.concatenate(cnts), rel_level)
    m = max(S.shape[0] for S, _ in tests)
    H = np.zeros((G, R * K, m))
    at = 0
    for g in range(G):
        nr, ns = int(rank[g]) * K, tests[g][0].shape[0]
        H[g, :nr, :ns] = values[at : at + nr * ns].reshape(nr, ns)
        at += nr * ns
    n_cols = np.array([S.shape[0] for S, _ in tests])
    exhaustive = np.array([e for _, e in tests])
    return H, n_cols, exhaustive


def _suffixes(length: np.ndarray, K: int, n_rand: np.ndarray, rng, width: int) -> list:
    """For each group, test suffixes of ``length[g]`` grades (padded to ``width``) and whether they are all there
    are: every suffix when there are few, else all zeros, one and two documents of each grade followed by zeros,
    all top grade, and ``n_rand[g]`` random suffixes of several densities of non-zero grades."""
    G = len(length)
    top = int(n_rand.max(initial=0))
    dens = np.array([_DENSITIES[k % len(_DENSITIES)] for k in range(top)])
    nonzero = rng.random((G, top, width)) < dens[None, :, None]
    rand = np.where(nonzero, rng.integers(1, K, size=(G, top, width)), 0).astype(np.int8)
    fixed = np.zeros((2 * K, width), dtype=np.int8)
    j = np.arange(1, K)
    fixed[j, 0] = j
    fixed[K - 1 + j, :2] = j[:, None]
    fixed[2 * K - 1] = K - 1
    out = []
    for g in range(G):
        n = int(length[g])
        if n == 0:
            out.append((np.zeros((1, width), dtype=np.int8), True))
        elif K**min(n, 30) <= 2 * (2 * K + n_rand[g]):
            grid = np.zeros((K**n, width), dtype=np.int8)
            grid[:, :n] = np.indices((K,) * n, dtype=np.int8).reshape(n, -1).T
            out.append((grid, True))
        else:
            tests = np.concatenate([fixed, rand[g, : n_rand[g]]])
            tests[:, n:] = 0
            if n <= 12:  # short random suffixes may repeat
                tests = np.unique(tests, axis=0)
            out.append((tests, False))
    return out


def _coordinates(H, last, R):
    """Ranks and orthonormal coordinates Y (G, R K, R) of the candidate rows of H (G, R K, m): the projections of
    each row onto a basis of the block's row space; at the last cut (``last``) the coordinate is the value.

    When the constant function lies in the row space (a metric that adds up what it has seen: the past adds the
    same amount to every future), it is the first basis vector: the running sum then has a coordinate of its own,
    and the others (a survival probability, a count) keep their full relative precision however small they get.
    """
    G, RK, m = H.shape
    _, s, Vt = np.linalg.svd(H, full_matrices=False)
    r = np.sum(s > RANK_TOL * np.maximum(s[:, :1], 1e-300), axis=1)
    k = min(R, Vt.shape[1])
    Q = np.zeros((G, m, R))
    Q[:, :, :k] = np.transpose(Vt[:, :k, :], (0, 2, 1))
    Q *= np.arange(R)[None, None, :] < r[:, None, None]
    Q = _constant_first(Q, r)
    Q[last] = 0.0
    Q[last, 0, 0] = 1.0
    r = np.where(last, 1, r)
    return np.einsum("grm,gmq->grq", H, Q), r


def _constant_first(Q, r):
    """Q (G, m, R) with orthonormal columns spanning each group's row space, rotated so that the first column is
    the constant function where it lies in that space (the others: an orthonormal basis of the rest)."""
    G, m, R = Q.shape
    one = np.ones(m) / np.sqrt(m)
    coef = np.einsum("m,gmq->gq", one, Q)  # the constant function in the basis
    inside = (np.abs(1.0 - np.einsum("gq,gq->g", coef, coef)) < 1e-10) & (r >= 1)
    for g in np.flatnonzero(inside):
        k = int(r[g])
        # an orthonormal basis of the space whose first vector is coef: Householder reflection of e_1 onto coef
        c = coef[g, :k]
        v = c.copy()
        v[0] -= 1.0
        nv = v @ v
        Hh = np.eye(k) - (2.0 * np.outer(v, v) / nv if nv > 1e-30 else 0.0)
        Q[g, :, :k] = Q[g, :, :k] @ Hh
    return Q


def _transitions(X, Y, rank, K, R):
    """A_i[j] (G, K, R, R) with X_{i-1} A_i[j] = Y[(p, j)] for the basis prefixes p (X identity-padded)."""
    G = X.shape[0]
    Yp = Y.reshape(G, R, K, R)  # (g, p, j, q)
    valid = np.arange(R)[None, :] < rank[:, None]
    Yp = Yp * valid[:, :, None, None]
    A = np.linalg.solve(X, Yp.reshape(G, R, K * R)).reshape(G, R, K, R)
    # entries at round-off level (a running sum that should feed no other coordinate) are exact zeros: left as
    # noise they would pollute a small coordinate (a survival probability of 1e-12) at every rank
    big = np.abs(A).max(axis=(1, 2, 3), keepdims=True)
    A = np.where(np.abs(A) <= SNAP_TOL * big, 0.0, A)
    return np.transpose(A, (0, 2, 1, 3))


def _pivot_rows(Y, rank):
    """Greedy pivoting: for each group, ``rank`` candidate rows of Y that are as independent as possible."""
    G, RK, R = Y.shape
    res = Y.copy()
    sel = np.full((G, R), -1, dtype=np.int64)
    for q in range(R):
        want = q < rank
        norms = np.einsum("grq,grq->gr", res, res)
        pick = norms.argmax(1)
        sel[want, q] = pick[want]
        v = res[np.arange(G), pick]  # (G, R)
        nv = np.sqrt(np.einsum("gq,gq->g", v, v))
        u = np.where(nv[:, None] > 0, v / np.where(nv > 0, nv, 1.0)[:, None], 0.0)
        res = res - np.einsum("gr,gq->grq", np.einsum("grq,gq->gr", res, u), u) * want[:, None, None]
    return sel


def _tails(mats, lengths, R):
    """beta_n (G, N + 1, R): beta_N = e_1 at each group's length, beta_n = A_{n+1}[0] beta_{n+1} below it."""
    G, N = mats.shape[:2]
    tails = np.zeros((G, N + 1, R))
    tails[np.arange(G), lengths, 0] = 1.0
    for n in range(N - 1, -1, -1):
        inside = lengths > n
        step = np.einsum("gab,gb->ga", mats[:, n, 0], tails[:, n + 1])
        tails[:, n] = np.where(inside[:, None], step, tails[:, n])
    return tails


# ------------------------------------------------------------------------------------------------------------
# The form of a metric, verified
# ------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Identified:
    """A verified prefix-state form: the automaton, its description and the largest relative residual found."""

    automaton: Automaton
    residual: float
    description: str


def prefix_state_form(measure, batch: ListBatch, *, rel_level: int = 1, tol: float = 1e-9,
                      seed: int = 0) -> Identified | None:
    """Identify and verify the prefix-state form of ``measure`` for the lists of ``batch`` (module docstring), or
    None when the metric is not in the family."""
    from meta_eval.statistics.maxent.verify import form_residual, verification_batch

    if measure is None or batch.n_lists == 0:
        return None
    table = groups_for(measure, batch, rel_level, tol, seed)
    found = identify(measure, table.lengths, table.counts, rel_level=rel_level, seed=seed)
    if found is None:
        return None
    alpha, mats, tails = found
    automaton = Automaton(alpha, mats, tails, table.keys, table.by)
    probe = verification_batch(batch, seed, max_groups=None)
    residual = form_residual(automaton(np.arange(probe.n_lists), probe), measure, probe, rel_level)
    if not residual <= tol:
        return None
    return Identified(automaton, residual, describe(automaton))
