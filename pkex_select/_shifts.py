"""Permutation tests by circular shifts: every shift of the labels for the cost of one FFT pass.

Put the samples in a random order sigma and shift the labels along it: under shift s,
sample ``sigma[i]`` takes the labels of ``sigma[(i + s) % n]``. The n shifts form a group, so
a test that draws its permutations from them (the identity first) is exact under
exchangeability, as one that draws them from all permutations (Hemerik and Goeman, JRSS B 80,
2018); the random order keeps the shifts from following any order the rows came in.

A pair statistic ``T(s) = sum_pairs phi_p w_p(s)`` then needs no permutation's weights. Along
a circular diagonal t of the order (:class:`~pkex_select._plan.CircularPairs`), the pairs'
weights under shift s are the observed ones shifted by s, so the diagonal's part of T is the
circular cross-correlation of its values with its weights, ``sum_i phi[i] w[(i + s) % n]``,
and its discrete Fourier transform is ``conj(F phi) F w``. The transforms are summed over the
diagonals and transformed back once: T at every shift in O(n^2 log n) per column, where the
weights of B permutations gathered pair by pair and multiplied cost O(B n^2) (HSIC at
n = 2000, d = 20: 999 shifts cost 0.76 s beyond the fit without tests, an eighth of the
products of 999 random permutations' weights alone; ``python -m
benchmarks.scale.permutations``).

The observed statistic is summed directly, pair by pair. The transformed ones carry the FFT's
rounding, at most about ``u log2(n)`` times ``sum_t ||phi_t|| ||w_t||`` per shift (Higham,
Accuracy and Stability of Numerical Algorithms, 2nd ed., section 24.1); a shift within
that bound of the observed value (:func:`rounding_tolerance`) counts as at least as
extreme, so that the rounding can only make a test conservative.
"""

import math

import numpy as np
import scipy.fft

from ._integrals import NUMBA, compile_kernel
from ._statistics import PairWeights

__all__ = [
    "add_spectra_numba",
    "add_spectra_numpy",
    "draw_shifts",
    "rounding_tolerance",
    "shift_permutations",
    "shifted_rows",
    "ShiftSpectra",
    "uses_shifts",
]

# The rounding bound's factor of u sum_t ||phi_t|| ||w_t||: 20 log2(n) for the three
# transforms (Higham's eta = mu + gamma_4 (sqrt 2 + mu), about 6u, per level of each), plus one
# u per diagonal for the sum of their spectra. Against correctly rounded sums on random data
# the largest error was 0.044 of it at n = 3 and below 0.003 from n = 31 on (20 draws each;
# tests/test_shifts.py checks 0.1).
_FFT_LEVEL_FACTOR = 20.0


def uses_shifts(plan, n_permutations, value_function, interactions):
    """Whether the tests draw circular shifts: every pair of the sample (no blocks), fewer
    permutations than samples, weights that the labels alone move (not the observational
    game's cells) and no interaction index."""
    return (
        0 < n_permutations < plan.n_samples
        and not plan.blocked
        and value_function != "observational"
        and interactions is None
    )


def draw_shifts(n_samples, n_permutations, random_state):
    """A random order of the samples and ``n_permutations`` distinct shifts along it, 1 to
    ``n_samples - 1`` (the identity, shift 0, is the observed labels)."""
    order = random_state.permutation(n_samples)
    shifts = random_state.choice(n_samples - 1, n_permutations, replace=False) + 1
    return order, shifts


def shift_permutations(order, shifts):
    """The shifts as permutations of the samples, the identity first: row k sends sample
    ``order[i]`` to the labels of ``order[(i + shifts[k]) % n]``, as
    :func:`~pkex_select._pairgame.draw_permutations`' rows do (for tests and inspection)."""
    n = order.size
    permutations = np.empty((len(shifts) + 1, n), dtype=np.intp)
    for k, shift in enumerate(np.r_[0, shifts]):
        permutations[k, order] = np.roll(order, -shift)
    return permutations


def add_spectra_numpy(value_spectra, weight_spectra, real, imag):
    """Add to ``real`` and ``imag`` (n_frequencies, n_columns) the sum over the diagonals of
    ``conj(value_spectra) weight_spectra``, of shapes (n_diagonals, n_frequencies,
    n_columns) and (n_diagonals, n_frequencies): the spectra of their correlations."""
    spectrum = np.einsum("dfc,df->fc", value_spectra.conj(), weight_spectra)
    real += spectrum.real
    imag += spectrum.imag


def _add_spectra_kernel(value_spectra, weight_spectra, real, imag):
    """Compiled twin of :func:`add_spectra_numpy`: one pass, no conjugated copy."""
    n_diagonals, n_frequencies, n_columns = value_spectra.shape
    for d in range(n_diagonals):
        for f in range(n_frequencies):
            weight = weight_spectra[d, f]
            for c in range(n_columns):
                product = value_spectra[d, f, c].conjugate() * weight
                real[f, c] += product.real
                imag[f, c] += product.imag


add_spectra_numba = compile_kernel(_add_spectra_kernel) if NUMBA else None
add_spectra = add_spectra_numba or add_spectra_numpy


class ShiftSpectra(PairWeights):
    """The weights of a :class:`~pkex_select._plan.CircularPairs` plan's pairs under every
    shift, as what :func:`~pkex_select._pairgame.solve` sums over the chunks.

    ``products(pairs, columns)`` returns 2 + 2 (n // 2 + 1) rows per column: the observed
    weighted sum, the rounding bound's sum of norms, and the real and imaginary parts of the
    spectrum of the correlations. Each is a sum over the chunks' diagonals, so the chunks'
    rows add up; :func:`shifted_rows` turns their sums into the statistic under each shift.
    """

    def __init__(self, observed_weights, n_samples):
        super().__init__(observed_weights)
        self.n_samples = n_samples

    def products(self, pairs, columns):
        n = self.n_samples
        n_frequencies = n // 2 + 1
        weights = self.entries(pairs)[0]
        rows = np.zeros((2 + 2 * n_frequencies, columns.shape[1]))
        rows[0] = weights @ columns
        real, imag = rows[2 : 2 + n_frequencies], rows[2 + n_frequencies :]
        # Whole diagonals of n pairs, then at most one of n / 2 (t = n / 2, whose weights
        # repeat after n / 2 places).
        whole = weights.size // n * n
        diagonals = [
            (columns[:whole].reshape(-1, n, columns.shape[1]), weights[:whole].reshape(-1, n))
        ]
        if whole < weights.size:
            diagonals.append((columns[whole:][None], np.tile(weights[whole:], 2)[None]))
        for values, diagonal_weights in diagonals:  # values: (diagonals, i, columns)
            # Along axis 1, pocketfft transforms the columns side by side: no transposed copy.
            value_spectra = scipy.fft.rfft(values, n=n, axis=1)
            weight_spectra = scipy.fft.rfft(diagonal_weights, axis=1)
            add_spectra(value_spectra, weight_spectra, real, imag)
            rows[1] += np.linalg.norm(diagonal_weights, axis=1) @ np.linalg.norm(values, axis=1)
        return rows


def rounding_tolerance(bound, n_samples):
    """How far the transformed statistic may be from the exact one, from the rounding
    bound's sum of norms ``bound`` (:meth:`ShiftSpectra.products`' second row)."""
    eps = np.finfo(np.float64).eps
    return eps * (_FFT_LEVEL_FACTOR * math.log2(n_samples) + n_samples / 2) * bound


def shifted_rows(rows, n_samples, shifts):
    """The statistic under the observed labels and each shift, from the summed rows of
    :meth:`ShiftSpectra.products` along axis 1 of ``rows`` (n_scales, 2 + 2 F, ...)."""
    n_frequencies = n_samples // 2 + 1
    observed, bound = rows[:, :1], rows[:, 1:2]
    spectrum = rows[:, 2 : 2 + n_frequencies] + 1j * rows[:, 2 + n_frequencies :]
    shifted = scipy.fft.irfft(spectrum, n=n_samples, axis=1)[:, shifts]
    near = np.abs(shifted - observed) <= rounding_tolerance(bound, n_samples)
    shifted = np.where(near, np.maximum(shifted, observed), shifted)
    return np.concatenate([observed, shifted], axis=1)
