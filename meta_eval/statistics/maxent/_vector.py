"""Vectorisable building blocks of the compiled kernels: exp of non-positive arguments and compensated sums.

numba calls the C library's exp for ``np.exp`` inside a loop, one element at a time (some 6 ns each on this
machine); the loops over the ranks of a list are the solver's inner loops, so the kernels use :func:`exp_neg`, an
exp written in plain arithmetic that the compiler turns into vector instructions (about 1.3 ns an element): Cody and
Waite's reduction x = k ln 2 + r, |r| <= ln 2 / 2 (ln 2 split in two so k ln 2 is exact), the Taylor polynomial of
degree 13 (its remainder, r^14 / 14! < 2e-18, is below half an ulp of exp(r)), and 2^k set in the exponent bits;
within 1 ulp of the library's exp on [-708, 0] (tests/test_mem_newton_kernel.py), 0 below (probabilities below
e^-708 of their rank's largest are 0 in double precision anyway).

Sums over ranks are kept in four running sums (independent additions the processor overlaps instead of waiting on
one running sum), plain over blocks of :data:`BLOCK` ranks and added across blocks with Neumaier's compensation:
the gradients they make are tested against tolerances of 1e-12 on counts of hundreds of documents. The order of
every operation is fixed by the code (no reassociation is allowed to the compiler), so results do not depend on the
processor's vector width.

Also the small dense solve of the Newton and Anderson steps (:func:`solve_small`). Written by hand because no
library offers a vectorised exp or compensated sums inside numba-compiled code, and numba's LAPACK binding adds
seconds of compilation for (c+2)-sized systems.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

BLOCK = 32  # ranks summed plainly before a compensated addition
LOG2E = 1.4426950408889634
LN2_HI = 6.93147180369123816490e-01  # ln 2 = LN2_HI + LN2_LO, LN2_HI with trailing zero bits: k LN2_HI is exact
LN2_LO = 1.90821492927058770002e-10
EXP_MIN = -708.0  # below: exp is 0 here (2^-1022 is the smallest normal number)
_C = [1.0 / math.factorial(k) for k in range(14)]
C2, C3, C4, C5, C6, C7, C8, C9, C10, C11, C12, C13 = _C[2:14]


@njit(cache=True, error_model="numpy", inline="always")
def _poly(r):
    """exp(r) for |r| <= ln 2 / 2: the Taylor polynomial of degree 13 by Horner's rule."""
    p = C13
    p = p * r + C12
    p = p * r + C11
    p = p * r + C10
    p = p * r + C9
    p = p * r + C8
    p = p * r + C7
    p = p * r + C6
    p = p * r + C5
    p = p * r + C4
    p = p * r + C3
    p = p * r + C2
    p = p * r + 1.0
    return p * r + 1.0


@njit(cache=True, error_model="numpy", inline="always")
def _exp_parts(xi):
    """exp(xi) for xi <= 0 as (p, bits): p = exp(r) by the polynomial, r = xi - k ln 2 (Cody-Waite), and the bits
    of the float 2^k; 0 for xi below EXP_MIN (and -inf). The product p * 2^k is taken in a loop of its own, where
    the compiler vectorises it."""
    xc = max(xi, EXP_MIN)
    k = np.floor(xc * LOG2E + 0.5)
    r = (xc - k * LN2_HI) - k * LN2_LO
    return (_poly(r) if xi >= EXP_MIN else 0.0), (np.int64(k) + 1023) << 52


@njit(cache=True, error_model="numpy")
def exp_neg(x, out, bits):
    """out[i] = exp(x[i]) for x[i] <= 0 (0 for x[i] < EXP_MIN, and for -inf); ``bits`` (int64, as long as x) is
    scratch. x and out may be the same array."""
    n = x.size
    for i in range(n):
        out[i], bits[i] = _exp_parts(x[i])
    scale = bits.view(np.float64)
    for i in range(n):
        out[i] = out[i] * scale[i]


@njit(cache=True, error_model="numpy")
def exp_shifted(x, m, out, total, bits, n):
    """out[i] = exp(x[i] - m[i]) for x[i] <= m[i] (0 below EXP_MIN, and for x[i] = -inf), i < n, added to
    total[i]: :func:`exp_neg` with the shift and the running sum in its loops (no pass of their own)."""
    for i in range(n):
        out[i], bits[i] = _exp_parts(x[i] - m[i])
    scale = bits.view(np.float64)
    for i in range(n):
        e = out[i] * scale[i]
        out[i] = e
        total[i] += e


@njit(cache=True, error_model="numpy", inline="always")
def add(total, comp, x):
    """Neumaier's compensated summation step: (total, comp) + x."""
    t = total + x
    if abs(total) >= abs(x):
        comp += (total - t) + x
    else:
        comp += (x - t) + total
    return t, comp


@njit(cache=True, error_model="numpy")
def lane_sum(x, n):
    """sum x[:n] (module docstring: four running sums, plain over blocks, compensated across blocks)."""
    tot = 0.0
    comp = 0.0
    full = n - n % BLOCK
    for lo in range(0, full, BLOCK):
        a0 = a1 = a2 = a3 = 0.0
        for i in range(lo, lo + BLOCK, 4):
            a0 += x[i]
            a1 += x[i + 1]
            a2 += x[i + 2]
            a3 += x[i + 3]
        tot, comp = add(tot, comp, (a0 + a1) + (a2 + a3))
    s = 0.0
    for i in range(full, n):
        s += x[i]
    tot, comp = add(tot, comp, s)
    return tot + comp


@njit(cache=True, error_model="numpy", inline="always")
def _two_sum(s, e, b):
    """Knuth's branch-free TwoSum: s + b rounded, and its rounding error added to the running error e."""
    t = s + b
    bb = t - s
    return t, e + ((s - (t - bb)) + (b - bb))


@njit(cache=True, error_model="numpy")
def lane_sum_accurate(x, n):
    """sum x[:n] with every addition compensated (Knuth's branch-free TwoSum in four running sums): for terms of
    very different size that largely cancel (the dual's sum of each rank's largest logit, 1e10 per rank near an
    extreme, against the multipliers' terms)."""
    s0 = s1 = s2 = s3 = 0.0
    e0 = e1 = e2 = e3 = 0.0
    full = n - n % 4
    for i in range(0, full, 4):  # four independent running sums: the compiler keeps them in vector lanes
        s0, e0 = _two_sum(s0, e0, x[i])
        s1, e1 = _two_sum(s1, e1, x[i + 1])
        s2, e2 = _two_sum(s2, e2, x[i + 2])
        s3, e3 = _two_sum(s3, e3, x[i + 3])
    tot = 0.0
    comp = 0.0
    for v in (s0, e0, s1, e1, s2, e2, s3, e3):
        tot, comp = add(tot, comp, v)
    for i in range(full, n):
        tot, comp = add(tot, comp, x[i])
    return tot + comp


@njit(cache=True, error_model="numpy")
def lane_dot(x, y, n):
    """sum x[:n] * y[:n] (module docstring)."""
    tot = 0.0
    comp = 0.0
    full = n - n % BLOCK
    for lo in range(0, full, BLOCK):
        a0 = a1 = a2 = a3 = 0.0
        for i in range(lo, lo + BLOCK, 4):
            a0 += x[i] * y[i]
            a1 += x[i + 1] * y[i + 1]
            a2 += x[i + 2] * y[i + 2]
            a3 += x[i + 3] * y[i + 3]
        tot, comp = add(tot, comp, (a0 + a1) + (a2 + a3))
    s = 0.0
    for i in range(full, n):
        s += x[i] * y[i]
    tot, comp = add(tot, comp, s)
    return tot + comp


@njit(cache=True, error_model="numpy")
def lane_moments(q, x, w, n):
    """(sum q, sum q e, sum q e^2, sum q^2) over [:n], e = x - w, in one loop (module docstring)."""
    t0 = c0 = t1 = c1 = t2 = c2 = t3 = c3 = 0.0
    full = n - n % BLOCK
    for lo in range(0, full, BLOCK):
        s0 = s1 = s2 = s3 = 0.0
        u0 = u1 = u2 = u3 = 0.0
        v0 = v1 = v2 = v3 = 0.0
        z0 = z1 = z2 = z3 = 0.0
        for i in range(lo, lo + BLOCK, 4):
            qa = q[i]
            qb = q[i + 1]
            qc = q[i + 2]
            qd = q[i + 3]
            ea = x[i] - w[i]
            eb = x[i + 1] - w[i + 1]
            ec = x[i + 2] - w[i + 2]
            ed = x[i + 3] - w[i + 3]
            s0 += qa
            s1 += qb
            s2 += qc
            s3 += qd
            ua = qa * ea
            ub = qb * eb
            uc = qc * ec
            ud = qd * ed
            u0 += ua
            u1 += ub
            u2 += uc
            u3 += ud
            v0 += ua * ea
            v1 += ub * eb
            v2 += uc * ec
            v3 += ud * ed
            z0 += qa * qa
            z1 += qb * qb
            z2 += qc * qc
            z3 += qd * qd
        t0, c0 = add(t0, c0, (s0 + s1) + (s2 + s3))
        t1, c1 = add(t1, c1, (u0 + u1) + (u2 + u3))
        t2, c2 = add(t2, c2, (v0 + v1) + (v2 + v3))
        t3, c3 = add(t3, c3, (z0 + z1) + (z2 + z3))
    s0 = u0 = v0 = z0 = 0.0
    for i in range(full, n):
        qa = q[i]
        ea = x[i] - w[i]
        ua = qa * ea
        s0 += qa
        u0 += ua
        v0 += ua * ea
        z0 += qa * qa
    t0, c0 = add(t0, c0, s0)
    t1, c1 = add(t1, c1, u0)
    t2, c2 = add(t2, c2, v0)
    t3, c3 = add(t3, c3, z0)
    return t0 + c0, t1 + c1, t2 + c2, t3 + c3


@njit(cache=True, error_model="numpy")
def sum_logs(s, n):
    """sum log s[:n] for s in [1, K]: one log per block of BLOCK ranks (of the block's product, at most K^32),
    compensated across blocks."""
    tot = 0.0
    comp = 0.0
    for lo in range(0, n, BLOCK):
        prod = 1.0
        for i in range(lo, min(lo + BLOCK, n)):
            prod *= s[i]
        tot, comp = add(tot, comp, np.log(prod))
    return tot + comp


@njit(cache=True, error_model="numpy")
def solve_small(A, b, out):
    """out = A^-1 b for a small system by Gaussian elimination with partial pivoting (A and b are overwritten); an
    unknown whose pivot is 0 (a singular system) is left at 0."""
    K1 = b.size
    for col in range(K1):
        piv = col
        for row in range(col + 1, K1):
            if abs(A[row, col]) > abs(A[piv, col]):
                piv = row
        if piv != col:
            for k in range(K1):
                A[col, k], A[piv, k] = A[piv, k], A[col, k]
            b[col], b[piv] = b[piv], b[col]
        if A[col, col] == 0.0:
            continue
        for row in range(col + 1, K1):
            factor = A[row, col] / A[col, col]
            if factor != 0.0:
                for k in range(col, K1):
                    A[row, k] -= factor * A[col, k]
                b[row] -= factor * b[col]
    for a in range(K1 - 1, -1, -1):
        out[a] = 0.0
        if A[a, a] == 0.0:
            continue
        acc = b[a]
        for k in range(a + 1, K1):
            acc -= A[a, k] * out[k]
        out[a] = acc / A[a, a]
