"""SoftRank (Taylor, Guiver, Robertson & Minka, WSDM 2008) for nDCG, AP and GAP, with PyTorch autodiff.

Each document's score is smoothed into a Gaussian N(s_j, σ²), so document m beats document n with probability
π_mn = Φ((s_m − s_n) / (σ √2)). The smooth metrics are then functions of the π's, and their gradients come from
PyTorch's autodiff:

- SoftNDCG (Taylor et al. §3): the rank distribution p_j(r) of each document is built by adding the other
  documents one at a time, p_j(r) ← p_j(r)(1 − π_ij) + p_j(r − 1) π_ij (ranks 0-based), and
  SoftNDCG = Σ_j g(y_j) Σ_r D(r) p_j(r) / IDCG, D the metric's discount (0 past the cutoff k, where the
  distribution is cut: exact, and cheaper). O(n³) per query (O(n² k) with a cutoff).
- SoftGAP (the GAP paper §5): PC_n = [Σ_{j<=i_n} g_j + Σ_{m≠n} π_mn δ_mn] / [1 + Σ_{m≠n} π_mn] and
  SoftGAP = Σ_n PC_n / Σ_i R_i Σ_{j<=i} g_j, δ_mn = Σ_{j<=min(i_m, i_n)} g_j: expected relevant mass above the
  pivot over its expected rank. O(n²) per query. SoftAP is SoftGAP with all of g on the relevance level.

Both tend to the exact metric as σ → 0 (distinct scores). Other metrics have no smooth form here: use LambdaMART.

Why PyTorch: the rank-distribution recursion is a loop of n small tensor updates, so eager execution with
multithreaded CPU kernels suits it. Measured on the MSLR sample (one SoftNDCG gradient, linear model), PyTorch
2.13 CPU took 3.6 s against 24 s for HIPS autograd (0.7 MB); JAX + optax (~620 MB of wheels to download) would
recompile for every padded block shape. The CPU build (``torch==2.13.0``) is the pinned ``ltr`` extra; meta-eval
imports it only inside these functions.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from meta_eval.core.errors import InputError
from meta_eval.inputs.letor import Fold, LTRSet
from meta_eval.statistics.learning_to_rank.groups import blocks, query_counts, ranked_rankings
from meta_eval.measures.registry import Measure, gain_table
from meta_eval.measures.resolver import resolve_one
from meta_eval.model.rankings import Rankings

__all__ = ["SoftRankModel", "soft_metric", "train_softrank"]

#: Elements of one block's rank-distribution tape (B · n² · depth): bounds autodiff memory.
TAPE_CELLS = 20_000_000


def _torch():
    try:
        import torch
    except ImportError:  # pragma: no cover - depends on the installation
        raise InputError('SoftRank needs PyTorch: pip install "meta-eval[ltr]"') from None
    return torch


def smooth_form(measure: Measure) -> str:
    """``"ndcg"`` or ``"gap"`` (AP included): the smooth form of ``measure``; InputError if it has none."""
    name, params = measure.family.name, dict(measure.params)
    if name == "nDCG":
        return "ndcg"
    if name in ("GAP", "AP") and params.get("k") is None:
        return "gap"
    raise InputError(f"SoftRank has smooth forms of nDCG, AP and GAP (no cutoff for AP/GAP), not "
                     f"{measure.output_name}; train it with --algorithm lambdamart")


def _gap_weights(measure: Measure, max_grade: int, rel_level: int) -> np.ndarray:
    """G(i) = Σ_{j<=i} g_j for grades 0..max_grade (AP: G(i) = [i >= rel_level])."""
    from meta_eval.measures.graded import threshold_probabilities

    grades = np.arange(max_grade + 1)
    if measure.family.name == "AP":
        return (grades >= max(rel_level, 1)).astype(np.float64)
    g = threshold_probabilities(dict(measure.params)["g"], max_grade)
    return np.concatenate([[0.0], np.cumsum(g)])


def soft_metric(measure, scores, labels, valid, counts: np.ndarray, sigma: float, rel_level: int = 1):
    """The smooth metric of each query of a padded block, differentiable in ``scores``.

    Parameters
    ----------
    measure : str or Measure
        nDCG (any gain, discount, cutoff), AP or GAP (any g).
    scores : torch.Tensor (B, n)
    labels : ndarray of int (B, n)
        Grades (anything where ``valid`` is False).
    valid : ndarray of bool (B, n)
    counts : ndarray (B, G + 1)
        Documents per grade of each query.
    sigma : float
        Standard deviation of the score noise (> 0).

    Returns
    -------
    torch.Tensor (B,)
    """
    torch = _torch()
    measure = resolve_one(measure)
    if not sigma > 0:
        raise InputError(f"sigma must be > 0, got {sigma}")
    form = smooth_form(measure)
    dtype = scores.dtype
    valid_t = torch.as_tensor(valid)
    labels = np.where(valid, labels, 0)
    # π[b, m, n] = P(s_m > s_n), zero on the diagonal and for padding
    pi = 0.5 * (1.0 + torch.erf((scores[:, :, None] - scores[:, None, :]) / (2.0 * sigma)))
    mask = valid_t[:, :, None] & valid_t[:, None, :] & ~torch.eye(scores.shape[1], dtype=torch.bool)[None]
    pi = torch.where(mask, pi, torch.zeros((), dtype=dtype))
    max_grade = counts.shape[-1] - 1
    if form == "gap":
        G = _gap_weights(measure, max_grade, rel_level)
        pivot = torch.as_tensor(G[labels] * valid, dtype=dtype)  # G(i_n)
        delta = torch.as_tensor(G[np.minimum(labels[:, :, None], labels[:, None, :])], dtype=dtype)
        numerator = pivot + (pi * delta).sum(1)  # Σ_m π_mn δ_mn (δ_mn = 0 when i_n = 0)
        pc = numerator / (1.0 + pi.sum(1))
        at_least = np.cumsum(counts[:, ::-1], axis=1)[:, ::-1]  # R_{>=j}
        den = at_least[:, 1:] @ (G[1:] - G[:-1])  # Σ_j g_j R_{>=j}
        total = (pc * valid_t).sum(1)
        return torch.where(torch.as_tensor(den > 0), total / torch.as_tensor(np.where(den > 0, den, 1.0), dtype=dtype),
                           torch.zeros((), dtype=dtype))
    return _soft_ndcg(torch, measure, pi, labels, valid, counts)


def _soft_ndcg(torch, measure, pi, labels, valid, counts):
    from meta_eval.measures.graded import _ideal_dcg, discounts

    params = dict(measure.params)
    b, n = labels.shape
    depth = n if params["k"] is None else min(n, int(params["k"]))
    ranks = np.arange(1, depth + 1, dtype=np.float64)
    disc = torch.as_tensor(discounts(ranks, params["discount"], params["base"]), dtype=pi.dtype)
    table = gain_table(params["gain"], counts.shape[-1] - 1)
    gains = torch.as_tensor(np.where(valid, table[labels], 0.0), dtype=pi.dtype)
    r = Rankings(np.zeros((b, 1), dtype=np.int16), np.ones(b, dtype=np.int64), counts)
    ideal = _ideal_dcg(r, table, params["k"], params["discount"], params["base"])
    # p[b, j, r]: probability that document j has r documents above it (ranks past depth dropped: exact at k)
    p = torch.zeros((b, n, depth), dtype=pi.dtype)
    p[:, :, 0] = 1.0
    for i in range(n):
        beat = pi[:, i, :, None]  # document i above document j
        shifted = torch.nn.functional.pad(p[:, :, :-1], (1, 0))
        p = p * (1.0 - beat) + shifted * beat
    expected = (gains * (p @ disc)).sum(1)
    scale = torch.as_tensor(np.where(ideal > 0, 1.0 / np.where(ideal > 0, ideal, 1.0), 0.0), dtype=pi.dtype)
    return expected * scale


@dataclass(eq=False)
class SoftRankModel:
    """A trained SoftRank scorer: z-scored features into a linear model or a one-hidden-layer network."""

    mean: np.ndarray
    scale: np.ndarray
    net: object
    history: list = field(default_factory=list)
    best_epoch: int = 0

    def predict(self, X) -> np.ndarray:
        torch = _torch()
        Z = ((X.toarray() if hasattr(X, "toarray") else np.asarray(X)) - self.mean) / self.scale
        with torch.no_grad():
            return self.net(torch.as_tensor(Z, dtype=torch.float64)).reshape(-1).numpy()


def _network(torch, n_features: int, model: str, hidden: int):
    if model == "linear":
        return torch.nn.Linear(n_features, 1, bias=False)
    if model == "mlp":
        return torch.nn.Sequential(torch.nn.Linear(n_features, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 1))
    raise InputError(f"unknown SoftRank model {model!r}; use linear or mlp")


def train_softrank(fold: Fold, measure, *, model: str = "linear", sigma: float = 0.1, epochs: int = 150,
                   learning_rate: float = 0.05, patience: int = 4, eval_every: int = 5, hidden: int = 16,
                   seed: int = 0, rel_level: int = 1, max_label: int | None = None,
                   threads: int = 1) -> SoftRankModel:
    """Train a SoftRank model for ``measure`` by Adam on the training queries (full batch), keeping the epoch with
    the best trained-for measure on the validation queries (checked every ``eval_every`` epochs; stop after
    ``patience`` checks without improvement).

    Queries whose labels are all equal contribute a constant (no gradient); the loss is −mean over queries of the
    smooth metric. Features are z-scored with the training mean and standard deviation. ``threads`` PyTorch
    threads are used during training (1 by default: the tensors are small, and on a shared 2-core machine two
    threads made an epoch 4x slower, measured).
    """
    torch = _torch()
    measure = resolve_one(measure)
    smooth_form(measure)
    if epochs < 1 or eval_every < 1 or patience < 1:
        raise InputError("epochs, eval_every and patience must be >= 1")
    max_label = fold.max_label if max_label is None else max_label
    torch.manual_seed(seed)
    X = fold.train.X.toarray()
    mean, scale = X.mean(0), X.std(0)
    scale = np.where(scale > 0, scale, 1.0)
    Z = torch.as_tensor((X - mean) / scale, dtype=torch.float64)
    net = _network(torch, X.shape[1], model, hidden).double()
    trained = SoftRankModel(mean, scale, net)
    parts = _training_blocks(fold.train, max_label, measure)
    with _threads(torch, threads):
        best_state = _fit(torch, trained, measure, fold, parts, Z, sigma, epochs, learning_rate, patience, eval_every,
                          rel_level, max_label)
    if best_state is not None:
        net.load_state_dict(best_state)
    return trained


@contextmanager
def _threads(torch, n: int):
    previous = torch.get_num_threads()
    torch.set_num_threads(max(1, int(n)))
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _fit(torch, trained, measure, fold, parts, Z, sigma, epochs, learning_rate, patience, eval_every, rel_level,
         max_label):
    """Adam epochs with early stopping; returns the parameters of the best validation check."""
    net = trained.net
    optimiser = torch.optim.Adam(net.parameters(), lr=learning_rate)
    n_q = fold.train.n_queries
    best, best_state, bad = -math.inf, None, 0
    for epoch in range(1, epochs + 1):
        optimiser.zero_grad()
        loss_value = 0.0
        for rows, labels, valid, counts in parts:
            s = net(Z[rows.reshape(-1)]).reshape(rows.shape)
            loss = -soft_metric(measure, s, labels, valid, counts, sigma, rel_level).sum() / n_q
            loss.backward()
            loss_value += loss.item()
        optimiser.step()
        if epoch % eval_every == 0 or epoch == epochs:
            r = ranked_rankings(trained.predict(fold.vali.X), fold.vali.y, fold.vali.bounds, max_label, rel_level)
            value = float(np.mean(measure(r)))
            trained.history.append((epoch, -loss_value, value))
            if value > best:
                best, bad, trained.best_epoch = value, 0, epoch
                best_state = {k: v.clone() for k, v in net.state_dict().items()}
            else:
                bad += 1
                if bad >= patience:
                    break
    return best_state


def _training_blocks(data: LTRSet, max_label: int, measure: Measure):
    counts = query_counts(data.y, data.bounds, max_label)
    cubic = smooth_form(measure) == "ndcg"
    width = max(1, int(data.sizes.max(initial=1)))
    cells = TAPE_CELLS // width if cubic else TAPE_CELLS
    out = []
    for block in blocks(data.bounds, cells=max(cells, 1)):
        live = (counts[block.queries] > 0).sum(1) > 1  # at least two different labels
        if not live.any():
            continue  # every list of the block scores a constant: no gradient
        rows, valid = block.rows[live], block.valid[live]
        out.append((rows, np.where(valid, data.y[rows], 0), valid, counts[block.queries[live]]))
    return out
