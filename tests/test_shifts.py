"""Permutation tests by circular shifts (``_shifts.py``): the FFT pass against the same shifts
as explicit permutations, its rounding against its bound, the plan of circular diagonals and
the compiled kernels against their NumPy twins."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pkex_select import HSICShapleySelector, MMDShapleyAttributor, _pairgame, _shifts
from pkex_select._integrals import NUMBA
from pkex_select._plan import CircularPairs

needs_numba = pytest.mark.skipif(not NUMBA, reason="compiled kernels need numba")


def _explicit_permutations(monkeypatch):
    """Make the fits evaluate the shifts they draw as explicit permutations, pair by pair."""

    def as_permutations(n_samples, n_permutations, random_state):
        return _shifts.shift_permutations(
            *_shifts.draw_shifts(n_samples, n_permutations, random_state)
        )

    monkeypatch.setattr(_pairgame, "uses_shifts", lambda *args: False)
    monkeypatch.setattr(_pairgame, "draw_permutations", as_permutations)


def _tests_of(fitted):
    return fitted.null_distribution_, fitted.statistics_, fitted.pvalues_, fitted.pvalue_


@pytest.mark.parametrize(
    "value_function, labels", [("anova", False), ("baseline", False), ("anova", True)]
)
def test_shifts_by_fft_are_the_shifts_as_permutations(monkeypatch, value_function, labels):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((90, 4))
    y = X[:, 0] ** 2 + 0.5 * rng.standard_normal(90)
    y = (y > np.median(y)).astype(int) if labels else y
    selector = HSICShapleySelector(
        value_function=value_function, n_permutations=60, random_state=3, memory=None
    )
    by_fft = _tests_of(selector.fit(X, y))
    _explicit_permutations(monkeypatch)
    explicit = _tests_of(selector.fit(X, y))
    for fft, reference in zip(by_fft[:2], explicit[:2]):
        np.testing.assert_allclose(fft, reference, rtol=1e-9, atol=1e-12 * np.abs(reference).max())
    np.testing.assert_array_equal(by_fft[2], explicit[2])
    assert by_fft[3] == explicit[3]
    assert selector.n_permutations_ == 60


def test_mmd_shifts_by_fft_are_the_shifts_as_permutations(monkeypatch):
    rng = np.random.default_rng(1)
    X = np.vstack([rng.standard_normal((40, 3)), rng.standard_normal((45, 3)) + [0.8, 0, 0]])
    sample = np.repeat(["P", "Q"], [40, 45])
    attributor = MMDShapleyAttributor(n_permutations=50, random_state=0)
    by_fft = attributor.fit(X, sample)
    fft = (by_fft.null_distribution_.copy(), by_fft.pvalues_.copy(), by_fft.pvalue_)
    _explicit_permutations(monkeypatch)
    explicit = attributor.fit(X, sample)
    np.testing.assert_allclose(
        fft[0], explicit.null_distribution_, rtol=1e-9, atol=1e-12 * np.abs(fft[0]).max()
    )
    np.testing.assert_array_equal(fft[1], explicit.pvalues_)
    assert fft[2] == explicit.pvalue_


def test_as_many_permutations_as_samples_take_random_ones(monkeypatch):
    """Shifts are used only with fewer permutations than samples (n - 1 shifts exist)."""
    calls = []
    monkeypatch.setattr(
        _pairgame, "draw_permutations", lambda *args: calls.append(args) or _draw(*args)
    )
    rng = np.random.default_rng(2)
    X, y = rng.standard_normal((30, 3)), rng.standard_normal(30)
    HSICShapleySelector(value_function="anova", n_permutations=30, random_state=0).fit(X, y)
    assert calls and calls[0][1] == 30
    calls.clear()
    HSICShapleySelector(value_function="anova", n_permutations=29, random_state=0).fit(X, y)
    assert not calls


_draw = _pairgame.draw_permutations


@given(st.integers(2, 40), st.integers(0, 2**32 - 1))
@settings(max_examples=40, deadline=None)
def test_circular_diagonals_hold_every_pair_once(n_samples, seed):
    order = np.random.default_rng(seed).permutation(n_samples)
    plan = CircularPairs(order, pair_bytes=int(seed % 5000) + 1)
    pairs = [plan.pairs(chunk) for chunk in plan.chunks]
    a = np.concatenate([p.a for p in pairs])
    b = np.concatenate([p.b for p in pairs])
    unordered = set(zip(np.minimum(a, b).tolist(), np.maximum(a, b).tolist()))
    assert a.size == n_samples * (n_samples - 1) // 2 == len(unordered)
    assert np.all(a != b)


@given(st.integers(3, 30), st.integers(1, 3), st.integers(0, 2**32 - 1))
@settings(max_examples=30, deadline=None)
def test_fft_correlations_are_the_direct_sums_within_their_rounding_bound(
    n_samples, n_columns, seed
):
    rng = np.random.default_rng(seed)
    order = rng.permutation(n_samples)
    shifts = np.arange(1, n_samples)
    plan = CircularPairs(order, pair_bytes=n_samples * 8)
    table = rng.standard_normal((n_samples, n_samples))
    table = table + table.T
    values = rng.standard_normal((n_samples, n_samples, n_columns))
    values = values + values.transpose(1, 0, 2)  # a pair's values, whichever way round
    weights = _shifts.ShiftSpectra(lambda pairs: table[pairs.a, pairs.b][None], n_samples)
    rows = sum(
        weights.products(pairs, values[pairs.a, pairs.b]) for pairs in map(plan.pairs, plan.chunks)
    )
    shifted = _shifts.shifted_rows(rows[None], n_samples, shifts)[0]
    # The same sums pair by pair, correctly rounded: pair (a, b) under shift k weighs
    # table[perm[a], perm[b]].
    a, b = np.triu_indices(n_samples, 1)
    direct = np.array(
        [
            [math.fsum(table[perm[a], perm[b]] * values[a, b, c]) for c in range(n_columns)]
            for perm in _shifts.shift_permutations(order, shifts)
        ]
    )
    tolerance = _shifts.rounding_tolerance(rows[1], n_samples)
    # At most 0.044 of the bound over 20 draws at n = 3, 0.003 from n = 31 on.
    assert np.all(np.abs(shifted - direct) <= 0.1 * tolerance)


def test_a_shift_within_the_rounding_bound_counts_as_a_tie():
    n = 8
    rows = np.zeros((1, 2 + 2 * (n // 2 + 1), 2))
    rows[0, 0] = [1.0, 1.0]  # observed
    rows[0, 1] = [1.0, 1e-20]  # the bound's sums: wide for the first column, tight for the second
    rows[0, 2] = [n * (1.0 - 1e-15), n * (1.0 - 1e-15)]  # every shift just below the observed
    shifted = _shifts.shifted_rows(rows, n, np.arange(1, n))[0]
    np.testing.assert_array_equal(shifted[1:, 0], 1.0)
    assert np.all(shifted[1:, 1] < 1.0)


def test_shift_permutations_are_a_group_of_permutations():
    order = np.random.default_rng(4).permutation(11)
    permutations = _shifts.shift_permutations(order, np.arange(1, 11))
    np.testing.assert_array_equal(permutations[0], np.arange(11))
    np.testing.assert_array_equal(np.sort(permutations, axis=1), np.tile(np.arange(11), (11, 1)))
    # Shifting by 3 then by 5 is shifting by 8.
    np.testing.assert_array_equal(permutations[5][permutations[3]], permutations[8])


@needs_numba
@given(st.integers(1, 4), st.integers(1, 6), st.integers(1, 40), st.integers(0, 2**32 - 1))
@settings(max_examples=30, deadline=None)
def test_compiled_spectra_sum_is_its_numpy_twin(n_diagonals, n_columns, n_frequencies, seed):
    rng = np.random.default_rng(seed)
    shape = (n_diagonals, n_frequencies, n_columns)
    value_spectra = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    weight_spectra = rng.standard_normal(shape[:2]) + 1j * rng.standard_normal(shape[:2])
    compiled, twin = np.ones((2, 2, n_frequencies, n_columns))
    _shifts.add_spectra_numba(value_spectra, weight_spectra, *compiled)
    _shifts.add_spectra_numpy(value_spectra, weight_spectra, *twin)
    np.testing.assert_allclose(compiled, twin, rtol=1e-13, atol=1e-13)


@needs_numba
@given(st.integers(4, 30), st.integers(1, 6), st.floats(0.05, 1.0), st.integers(0, 2**32 - 1))
@settings(max_examples=30, deadline=None)
def test_compiled_pair_centring_and_exponents_are_their_numpy_twins(
    n_samples, n_features, weight, seed
):
    from pkex_select._features import DataFactors, centre_pairs_numba, centre_pairs_numpy

    rng = np.random.default_rng(seed)
    plan = CircularPairs(rng.permutation(n_samples), pair_bytes=8)
    pairs = plan.pairs(plan.chunks[int(rng.integers(len(plan.chunks)))])
    Z = rng.uniform(0, 1, (pairs.a.size, n_features))
    row_terms = rng.uniform(0, 0.5, (n_samples, n_features))
    total_terms = rng.uniform(0, 0.5, n_features)
    constant = rng.random(n_features) < 0.3
    twin_Z = Z.copy()
    compiled = centre_pairs_numba(Z, pairs.a, pairs.b, row_terms, total_terms, weight, constant)
    twin = centre_pairs_numpy(twin_Z, pairs.a, pairs.b, row_terms, total_terms, weight, constant)
    np.testing.assert_allclose(Z, twin_Z, rtol=1e-14, atol=1e-15)
    for products, twin_products in zip(compiled, twin):
        np.testing.assert_allclose(products, twin_products, rtol=1e-13, atol=1e-300)
    X = rng.standard_normal((n_samples, n_features))
    kernels = [("rbf", "laplacian", "delta")[j % 3] for j in range(n_features)]
    X[:, 2::3] = np.round(X[:, 2::3])  # delta columns with ties
    factors = DataFactors(X, kernels, [rng.uniform(0.1, 2, n_features)] * 2)
    for by_pass, by_numpy in zip(factors(pairs), factors.factors_numpy(pairs)):
        np.testing.assert_array_equal(by_pass, by_numpy)


def test_rounding_tolerance_grows_with_log_n_and_the_diagonals():
    bound = np.array([1.0])
    small, large = (_shifts.rounding_tolerance(bound, n)[0] for n in (64, 4096))
    eps = np.finfo(np.float64).eps
    assert small == pytest.approx(eps * (20 * math.log2(64) + 32))
    assert large > small


def test_functions_on_gram_matrices_take_the_same_shifts(monkeypatch):
    from pkex_select import hsic_shapley_values
    from pkex_select.kernels import gram_matrices

    rng = np.random.default_rng(5)
    X = rng.standard_normal((50, 3))
    y = X[:, 0] ** 2 + rng.standard_normal(50)
    K, L = gram_matrices(X), np.exp(-(np.subtract.outer(y, y) ** 2))
    options = {"n_permutations": 30, "random_state": 0, "return_result": True}
    by_fft = hsic_shapley_values(K, L, value_function="anova", **options).tests
    _explicit_permutations(monkeypatch)
    explicit = hsic_shapley_values(K, L, value_function="anova", **options).tests
    reference = explicit.null_distribution
    np.testing.assert_allclose(
        by_fft.null_distribution, reference, rtol=1e-9, atol=1e-12 * np.abs(reference).max()
    )
    np.testing.assert_array_equal(by_fft.pvalues, explicit.pvalues)
