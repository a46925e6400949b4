"""Adaptive quadrature: as many nodes as the proven error bound needs, never more than exact."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pkex_select import pair_contributions, shapley_values
from pkex_select._engine import loo_integrals, plan_integrals
from pkex_select._quadrature import (
    _log_rule_error_bound,
    exact_node_count,
    gauss_rule,
    log_error_bound,
    node_counts,
    series_rule,
)
from tests.references import recursion_shapley

TOL = 2.0**-53


@settings(max_examples=300, deadline=None)
@given(
    st.floats(0, 200),
    st.integers(1, 5000),
    st.sampled_from([TOL, 1e-12, 1e-8, 1e-4]),
    st.sampled_from([0, 1]),
)
def test_node_count_is_the_fewest_the_bound_allows(spread, n_features, tol, weight_degree):
    m = int(node_counts(np.array([spread]), n_features, tol, weight_degree)[0])
    cap = exact_node_count(n_features)
    assert 1 <= m <= cap

    def log_bound(n_nodes):
        if weight_degree == 0:  # a degree d - 1 integrand, each power's miss bounded
            return _log_rule_error_bound(spread, n_nodes, n_features - 1)
        # the first power an n-node rule misses with this weight, each by at most 1
        return log_error_bound(np.array(spread), max(2 * n_nodes - weight_degree, 1))

    if m < cap:
        assert log_bound(m) <= np.log(tol)
    if m > 1:  # one node fewer would not be proven accurate
        assert log_bound(m - 1) > np.log(tol) - 1e-9


@pytest.mark.parametrize("n_nodes", range(1, 7))
def test_gauss_remainder_bounds_each_power(n_nodes):
    # The m-node rule misses t^q (q >= 2m) by at most C(q, 2m) (m!)^4 / ((2m + 1) ((2m)!)^2),
    # with equality at q = 2m.
    from math import comb, factorial

    nodes, _, weights = gauss_rule(n_nodes)
    constant = factorial(n_nodes) ** 4 / ((2 * n_nodes + 1) * factorial(2 * n_nodes) ** 2)
    for power in range(2 * n_nodes, 2 * n_nodes + 30):
        miss = abs(1.0 / (power + 1) - weights @ nodes**power)
        assert miss <= min(1.0, comb(power, 2 * n_nodes) * constant) * (1 + 1e-9) + 1e-16
        if power == 2 * n_nodes:
            np.testing.assert_allclose(miss, constant, rtol=1e-8, atol=1e-16)
    for power in range(2 * n_nodes):
        assert abs(1.0 / (power + 1) - weights @ nodes**power) <= 1e-15


@settings(max_examples=200, deadline=None)
@given(
    st.integers(2, 60),
    st.floats(1e-3, 40.0),
    st.sampled_from([TOL, 1e-12, 1e-8]),
    st.booleans(),
    st.integers(0, 2**32 - 1),
)
def test_bound_holds_for_removed_factors_and_signed_deviations(
    n_features, spread, tol, equal, seed
):
    # prod_{i != j} (r_i - t u_i) with |r_i| <= 1 and sum |u_i| = spread: the rule the bound
    # gives against the exact one. Equal u_i (all of one sign) are where Maclaurin's
    # inequality is tight.
    rng = np.random.default_rng(seed)
    if equal:
        u = np.full(n_features, spread / n_features)
        removed = np.ones(n_features)
    else:
        u = rng.dirichlet(np.ones(n_features)) * spread * rng.choice([-1.0, 1.0], n_features)
        removed = rng.uniform(-1.0, 1.0, n_features)
    m = int(node_counts(np.array([spread]), n_features, tol)[0])
    exact_nodes = exact_node_count(n_features)

    def integrals(n_nodes):
        nodes, _, weights = gauss_rule(n_nodes)
        factors = removed[None, :] - nodes[:, None] * u[None, :]
        loo = np.array([np.prod(np.delete(factors, j, axis=1), axis=1) for j in range(n_features)])
        return loo @ weights

    exact = integrals(exact_nodes)
    rounding = 4 * n_features * np.finfo(float).eps * np.maximum(1.0, np.abs(exact))
    assert np.all(np.abs(integrals(m) - exact) <= tol + rounding)


def test_tol_zero_is_the_exact_rule():
    assert np.all(node_counts(np.array([0.0, 1e-30, 5.0]), 101, 0.0) == 51)


def integrals_with(Z, n_nodes):
    """prod_{i != j} ((1 - t) + t z_i) integrated with an n-node rule, by brute force."""
    nodes, complements, weights = gauss_rule(n_nodes)
    factors = complements[:, None, None] + nodes[:, None, None] * Z[None]
    total = np.prod(factors, axis=2, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        loo = total / factors
    return np.einsum("k,kpj->pj", weights, loo)


@pytest.mark.parametrize("tol", [1e-4, 1e-8, 1e-12])
@pytest.mark.parametrize("n_features", [40, 200, 1000])
def test_bound_holds_where_it_is_tight(tol, n_features):
    # Equal u_i make e_q(u) closest to S^q / q!: spreads just inside each count's limit.
    for m in range(1, 12):
        limit = np.exp(np.log(2 * m + 1) - 1e-9)
        spreads = [
            s
            for s in np.linspace(0.05, limit, 40)
            if node_counts(np.array([s]), n_features, tol)[0] == m
        ]
        if not spreads:
            continue
        Z = 1.0 - np.array(spreads)[:, None] / n_features * np.ones(n_features)
        adaptive = integrals_with(Z, m)
        exact = integrals_with(Z, exact_node_count(n_features))
        assert np.max(np.abs(adaptive - exact)) <= tol + 1e-14


@pytest.mark.parametrize("n_features", [17, 40, 301, 2000, 5000])
def test_adaptive_agrees_with_exact_on_awkward_factors(n_features):
    rng = np.random.default_rng(n_features)
    wide = 1.0 - rng.uniform(0, 3.0 / n_features, (30, n_features))  # S about 1.5
    zeros_ones = np.where(rng.random((10, n_features)) < 0.995, 1.0, 0.0)
    signed = 1.0 + rng.normal(scale=0.5 / n_features, size=(10, n_features))
    narrow = rng.uniform(0, 1, (10, n_features))
    Z = np.concatenate([wide, zeros_ones, signed, narrow])
    weights = rng.normal(size=len(Z))
    for backend in ["numba", "numpy"] if n_features <= 2000 else ["numba"]:
        adaptive = shapley_values(Z, weights, backend=backend)
        exact = shapley_values(Z, weights, backend=backend, tol=0)
        np.testing.assert_allclose(adaptive, exact, rtol=0, atol=1e-14 * np.abs(weights).sum())
    counts = node_counts(np.abs(Z - 1).sum(1), n_features)
    assert counts[:30].max() <= 14 < exact_node_count(n_features) or n_features < 30


@pytest.mark.parametrize("n_features", [60, 500])
def test_adaptive_matches_the_published_recursion_on_wide_kernels(n_features):
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(2, 200, n_features))
    Z = np.exp(-((a - b) ** 2) / (2 * n_features))  # gamma = 1 / (2 d), as gamma="scale"
    weights = rng.normal(size=200)
    np.testing.assert_allclose(
        shapley_values(Z, weights),
        recursion_shapley(Z, weights),
        rtol=0,
        atol=1e-13 * np.abs(weights).sum(),
    )
    np.testing.assert_allclose(
        weights @ pair_contributions(Z),
        shapley_values(Z, weights),
        rtol=0,
        atol=1e-15 * np.abs(weights).sum(),
    )


def test_loo_integrals_group_pairs_of_equal_counts():
    rng = np.random.default_rng(2)
    # Enough work for the bound to be used (at least 1e6 multiply-adds).
    Z = np.concatenate(
        [
            1 - rng.uniform(0, 1e-3, (300, 100)),
            1 - rng.uniform(0, 0.05, (200, 100)),
            rng.uniform(0, 1, (100, 100)),
        ]
    )
    rng.shuffle(Z)
    counts = node_counts(np.abs(Z - 1).sum(1), 100)
    assert len(np.unique(counts)) >= 3 and counts.min() < 10
    for backend in ["numpy", "numba"]:
        np.testing.assert_allclose(
            loo_integrals(Z, None, backend),
            loo_integrals(Z, None, backend, 0.0),
            rtol=0,
            atol=1e-14,
        )


@pytest.mark.parametrize("tol", [-1e-3, 1.0, float("nan"), "small"])
def test_tol_is_validated(tol):
    with pytest.raises(ValueError, match="tol must be"):
        shapley_values(np.full((2, 3), 0.5), np.ones(2), tol=tol)


def test_explainer_passes_its_tolerance_to_the_engine():
    from sklearn.svm import SVR

    from pkex_select import ProductKernelExplainer

    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 120))
    model = SVR(gamma="scale").fit(X[:250], X[:250, 0] * X[:250, 1])
    adaptive = ProductKernelExplainer(model).explain(X[250:])
    exact = ProductKernelExplainer(model, tol=0).explain(X[250:])
    scale = np.abs(model.dual_coef_).sum()
    np.testing.assert_allclose(adaptive.values, exact.values, rtol=0, atol=1e-14 * scale)


def _series(Z, tol=TOL, backend="numba"):
    """The integrals by the series form, with the rule its bound gives, or None (u > 1/2)."""
    from pkex_select._engine import IntegralPlan, integrate
    from pkex_select._integrals import deviations_numpy

    deviations, largest, above = deviations_numpy(Z, None)
    series = series_rule(float(deviations.max()), largest, above, Z.shape[1], tol)
    if series is None:
        return None
    return integrate(IntegralPlan("series", *series), Z, None, backend), series[1]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3000), st.floats(0.0, 0.5), st.booleans(), st.integers(0, 2**32 - 1))
def test_series_path_is_within_its_bound(n_features, largest_u, signed, seed):
    """The series path (wide kernels) against the exact rule, near its limit u = 1/2."""
    rng = np.random.default_rng(seed)
    u = rng.uniform(0, largest_u, size=(8, n_features))
    if signed:  # factors above 1 as well (u < 0)
        u *= rng.choice([-1.0, 1.0], size=u.shape)
    u[0] = largest_u  # one pair at the limit in every feature
    u[1] = 0.0  # and one with every factor 1
    Z = 1.0 - u
    exact = loo_integrals(Z, None, "numba", tol=0)
    for backend in ["numba", "numpy"]:
        series, n_terms = _series(Z, backend=backend)
        # Both are products of d factors and the series a sum of its terms: each may be off
        # by about d + terms ulps of its magnitude (which exceeds 1 when factors above 1 take
        # part), plus the bound. (Hypothesis found d = 1 off by 5 ulps.)
        ulps = 4 * (n_features + n_terms)
        rounding = ulps * np.finfo(float).eps * np.maximum(1.0, np.abs(exact))
        assert np.all(np.abs(series - exact) <= rounding + TOL)


def test_series_path_needs_factors_near_one():
    assert series_rule(1.0, 0.51, False, 100, TOL) is None
    rule, n_terms = series_rule(1.0, 0.01, False, 1000, TOL)
    # Truncation: u^R / ((R + 1)(1 - u)) within tol / 2 with u = 0.01.
    assert 0.01**n_terms / ((n_terms + 1) * 0.99) <= TOL / 2
    assert 0.01 ** (n_terms - 1) / (n_terms * 0.99) > TOL / 2 / 100


@pytest.mark.parametrize("n_features", [100, 1000, 5000])
def test_wide_kernels_take_the_series_and_agree_with_the_exact_rule(n_features):
    rng = np.random.default_rng(n_features)
    # Enough pairs that the bound's bookkeeping pays (the plan takes the exact rule below).
    a, b = rng.normal(size=(2, 512, n_features))
    Z = np.exp(-((a - b) ** 2) / (2 * n_features))
    assert _series(Z) is not None
    # At d = 100 one short quadrature rule costs less than the series; beyond, the series.
    assert plan_integrals(Z).path == ("one rule" if n_features == 100 else "series")
    weights = rng.normal(size=512)
    fast = shapley_values(Z, weights)
    exact = shapley_values(Z, weights, tol=0)
    assert np.abs(fast - exact).max() <= 1e-14 * np.abs(weights).sum()
