"""The exact pair-game solver against enumeration, the published recursion and the axioms."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.special import comb

from pkex_select import pair_contributions, shapley_values
from pkex_select._engine import point_rules, point_values
from pkex_select._quadrature import exact_node_count, gauss_rule
from tests.references import enumeration_shapley, recursion_shapley

BACKENDS = ["numba", "numpy"]
RTOL = 1e-12


def assert_close(actual, expected, scale):
    """Agreement to RTOL relative to the size of the game (sum of |w_p|)."""
    np.testing.assert_allclose(actual, expected, rtol=0, atol=RTOL * max(scale, 1e-300))


def game_scale(weights):
    return float(np.abs(weights).sum())


def efficiency_gap(Z, weights):
    return weights @ np.prod(Z, axis=1) - weights.sum()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n_features", [1, 2, 3, 4, 7, 12])
@pytest.mark.parametrize("kind", ["kernel", "signed", "zeros", "ones", "large", "mixed_degenerate"])
def test_matches_enumeration(backend, n_features, kind):
    rng = np.random.default_rng(n_features)
    n_pairs = 40
    Z = {
        "kernel": lambda: rng.uniform(0, 1, (n_pairs, n_features)),
        "signed": lambda: rng.uniform(-1, 1, (n_pairs, n_features)),
        "zeros": lambda: np.zeros((n_pairs, n_features)),
        "ones": lambda: np.ones((n_pairs, n_features)),
        "large": lambda: rng.uniform(-3, 3, (n_pairs, n_features)),
        "mixed_degenerate": lambda: rng.choice([-1.0, 0.0, 0.5, 1.0], (n_pairs, n_features)),
    }[kind]()
    weights = rng.normal(size=n_pairs)
    expected = enumeration_shapley(Z, weights)
    actual = shapley_values(Z, weights, backend=backend)
    scale = game_scale(weights) * max(1.0, np.abs(Z).max()) ** n_features
    assert_close(actual, expected, scale)


@pytest.mark.parametrize("backend", BACKENDS)
def test_batched_points_and_outputs(backend):
    rng = np.random.default_rng(0)
    Z = rng.uniform(0, 1, (5, 9, 6))
    weights = rng.normal(size=(5, 9, 3))
    values = shapley_values(Z, weights, backend=backend, chunk_size=4)  # chunks span points
    assert values.shape == (5, 6, 3)
    for i in range(5):
        for o in range(3):
            expected = enumeration_shapley(Z[i], weights[i, :, o])
            assert_close(values[i, :, o], expected, game_scale(weights[i, :, o]))
    single = shapley_values(Z, weights[..., 0], backend=backend)
    np.testing.assert_allclose(single, values[..., 0], rtol=1e-14, atol=1e-15)
    shared = shapley_values(Z[0], weights[0], backend=backend)
    np.testing.assert_allclose(shared, values[0], rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("chunk_size", [1, 3, 1000])
def test_chunking_and_jobs_do_not_change_values(chunk_size, monkeypatch):
    monkeypatch.setattr("pkex_select._scheduling.MIN_PARALLEL_WORK", 0)
    rng = np.random.default_rng(1)
    Z = rng.uniform(0, 1, (50, 20))
    weights = rng.normal(size=50)
    reference = shapley_values(Z, weights)
    values = shapley_values(Z, weights, chunk_size=chunk_size, n_jobs=2)
    np.testing.assert_allclose(values, reference, rtol=1e-13, atol=1e-15)


def test_pair_contributions_is_the_linear_map():
    rng = np.random.default_rng(2)
    Z = rng.uniform(0, 1, (30, 9))
    C = pair_contributions(Z, chunk_size=7, n_jobs=2)
    for _ in range(3):
        weights = rng.normal(size=30)
        np.testing.assert_allclose(weights @ C, shapley_values(Z, weights), rtol=1e-13)
    assert_close(C[4], enumeration_shapley(Z[4:5], np.ones(1)), 1.0)


@pytest.mark.parametrize("n_features", [50, 200, 1000])
def test_matches_published_recursion(n_features):
    rng = np.random.default_rng(n_features)
    Z = rng.uniform(0, 1, (8, n_features))
    weights = rng.normal(size=8)
    expected = recursion_shapley(Z, weights)
    actual = shapley_values(Z, weights)
    assert_close(actual, expected, game_scale(weights))


@pytest.mark.parametrize("n_features", [1, 2, 3, 10, 11, 500, 5000])
def test_quadrature_is_exact_for_degree_d_minus_1(n_features):
    nodes, complements, weights = gauss_rule(exact_node_count(n_features))
    assert nodes.size == max(1, -(-n_features // 2))
    assert np.all(weights > 0) and np.all(np.diff(nodes) > 0)
    # cos^2 + sin^2 of the half angle: a few ulps, as NumPy's trigonometric functions give.
    np.testing.assert_allclose(nodes + complements, 1.0, rtol=0, atol=4 * 2.2e-16)
    # Beta integrals: integral of t^q (1-t)^(d-1-q) = mu(q) = 1 / (d * comb(d - 1, q)).
    for q in {0, 1, 5, n_features - 2, n_features - 1} & set(range(n_features)):
        integral = np.sum(weights * nodes**q * complements ** (n_features - 1 - q))
        exact = 1.0 / (n_features * comb(n_features - 1, q, exact=True))
        # Evaluating t^q (1-t)^(d-1-q) costs about d rounding errors.
        assert abs(integral / exact - 1) < 4 * n_features * 2.2e-16


def test_large_d_is_finite_and_efficient():
    """d = 5000: the published recursion overflows here; the engine stays exact."""
    rng = np.random.default_rng(5000)
    Z = np.concatenate([rng.uniform(0.9, 1, (3, 5000)), rng.uniform(0, 1, (3, 5000))])
    weights = rng.normal(size=6)
    values = shapley_values(Z, weights)
    assert np.all(np.isfinite(values))
    gap = efficiency_gap(Z, weights)
    assert abs(values.sum() - gap) <= 1e-10 * game_scale(weights)
    with np.errstate(all="ignore"):
        assert not np.all(np.isfinite(recursion_shapley(Z[:1, :1100] * 0 + 0.999, [1.0])))


# ---------------------------------------------------------------- axioms (property-based)

factor_matrices = st.integers(1, 8).flatmap(
    lambda d: st.integers(1, 6).flatmap(
        lambda n: st.tuples(
            arrays(np.float64, (n, d), elements=st.floats(-1.5, 1.5)),
            arrays(np.float64, (n,), elements=st.floats(-10, 10)),
        )
    )
)


@settings(max_examples=150, deadline=None)
@given(factor_matrices)
def test_efficiency(game):
    Z, weights = game
    values = shapley_values(Z, weights)
    scale = game_scale(weights) * 1.5 ** Z.shape[1] + 1e-300
    assert abs(values.sum() - efficiency_gap(Z, weights)) <= RTOL * scale


@settings(max_examples=100, deadline=None)
@given(factor_matrices, st.data())
def test_symmetry(game, data):
    """Features with identical factors in every pair get identical values."""
    Z, weights = game
    j = data.draw(st.integers(0, Z.shape[1] - 1))
    Z = np.column_stack([Z, Z[:, j]])
    values = shapley_values(Z, weights)
    scale = game_scale(weights) * 1.5 ** Z.shape[1]
    assert abs(values[j] - values[-1]) <= RTOL * scale


@settings(max_examples=100, deadline=None)
@given(factor_matrices)
def test_dummy(game):
    """A feature whose factor is 1 in every pair is a dummy: value 0, others unchanged."""
    Z, weights = game
    values = shapley_values(np.column_stack([Z, np.ones(len(Z))]), weights)
    assert values[-1] == 0.0
    scale = game_scale(weights) * 1.5 ** Z.shape[1]
    assert_close(values[:-1], shapley_values(Z, weights), scale)


@settings(max_examples=100, deadline=None)
@given(factor_matrices, st.floats(-5, 5))
def test_linearity_in_weights(game, c):
    Z, weights = game
    other = np.cos(np.arange(len(weights)))
    combined = shapley_values(Z, weights + c * other)
    separate = shapley_values(Z, weights) + c * shapley_values(Z, other)
    scale = (game_scale(weights) + abs(c) * game_scale(other)) * 1.5 ** Z.shape[1]
    assert_close(combined, separate, scale)


@settings(max_examples=60, deadline=None)
@given(factor_matrices)
def test_backends_agree_with_enumeration(game):
    Z, weights = game
    expected = enumeration_shapley(Z, weights)
    scale = game_scale(weights) * 1.5 ** Z.shape[1] + 1e-300
    for backend in BACKENDS:
        assert_close(shapley_values(Z, weights, backend=backend), expected, scale)


# ---------------------------------------------------------------- input validation


@pytest.mark.parametrize(
    "Z, weights, message",
    [
        (np.ones(3), np.ones(3), "shape"),
        (np.ones((2, 2, 2, 2)), np.ones(2), "shape"),
        (np.ones((3, 0)), np.ones(3), "no features"),
        (np.array([[np.nan, 1.0]]), np.ones(1), "NaN"),
        (np.array([[np.inf, 1.0]]), np.ones(1), "NaN"),
        (np.ones((3, 2)), np.ones(4), "weights must have shape"),
        (np.ones((3, 2)), np.array([np.nan, 1, 1]), "weights contain NaN"),
    ],
)
def test_bad_input(Z, weights, message):
    with pytest.raises(ValueError, match=message):
        shapley_values(Z, weights)


def test_bad_chunk_size():
    with pytest.raises(ValueError, match="chunk_size"):
        shapley_values(np.ones((2, 2)), np.ones(2), chunk_size=0)


def test_bad_backend():
    with pytest.raises(ValueError, match="backend"):
        shapley_values(np.ones((2, 2)), np.ones(2), backend="gpu")


def test_no_pairs_gives_zeros():
    assert np.array_equal(shapley_values(np.ones((0, 3)), np.ones(0)), np.zeros(3))
    assert pair_contributions(np.ones((0, 3))).shape == (0, 3)


def test_one_player_gets_the_whole_difference():
    rng = np.random.default_rng(7)
    Z, removed = rng.uniform(0, 2, (2, 30, 1))
    weights = rng.normal(size=30)
    np.testing.assert_allclose(
        shapley_values(Z, weights, removed_factors=removed),
        [weights @ (Z[:, 0] - removed[:, 0])],
        rtol=1e-14,
    )


@pytest.mark.parametrize("n_points", [1, 3])
def test_removed_factors_per_pair_broadcast_over_points_are_not_copied_wrongly(n_points):
    # The model game's removed factor depends on the training point (the pair), not on the
    # row explained: a (pairs, d) array broadcast over the points, gathered chunk by chunk.
    rng = np.random.default_rng(8)
    Z = rng.uniform(0, 1, (n_points, 40, 4))
    removed = rng.uniform(0, 1, (40, 4))
    weights = rng.normal(size=(n_points, 40))
    expected = [shapley_values(Z[k], weights[k], removed_factors=removed) for k in range(n_points)]
    np.testing.assert_allclose(
        shapley_values(Z, weights, removed_factors=removed, chunk_size=7), expected, rtol=1e-13
    )


# ------------------------------------------------ point values: a kernel expansion, fused


def _expansion(seed, n_points, n_pairs, n_features, n_outputs, wide):
    rng = np.random.default_rng(seed)
    # Wide kernels (factors near their removed factors) take fewer nodes than ceil(d / 2).
    Z = rng.uniform(0.6 if wide else 0.0, 1.0, (n_points, n_pairs, n_features))
    removed = rng.uniform(0.6 if wide else 0.1, 1.0, (n_pairs, n_features))
    return Z, removed, rng.normal(size=(n_pairs, n_outputs))


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 5),
    st.integers(0, 30),
    st.integers(1, 9),
    st.integers(1, 3),
    st.booleans(),
    st.integers(0, 2**32 - 1),
)
def test_point_values_match_enumeration(n_points, n_pairs, n_features, n_outputs, wide, seed):
    Z, removed, weights = _expansion(seed, n_points, n_pairs, n_features, n_outputs, wide)
    # With removed factors r != 0, prod_S z prod_{not S} r = prod r * prod_S (z / r): the
    # game of the ratios with the weights times prod r.
    scaled = weights * removed.prod(axis=1)[:, None]
    expected = np.array(
        [
            [enumeration_shapley(Z[a] / removed, scaled[:, o]) for o in range(n_outputs)]
            for a in range(n_points)
        ]
    ).transpose(0, 2, 1)
    for backend in BACKENDS:
        actual = point_values(Z, removed, weights, backend=backend)
        assert actual.shape == (n_points, n_features, n_outputs)
        assert_close(actual, expected, game_scale(weights))


@settings(max_examples=30, deadline=None)
@given(st.integers(10, 60), st.booleans(), st.integers(0, 2**32 - 1))
def test_point_values_with_fewest_nodes_are_their_twin_and_the_general_solver(
    n_features, wide, seed
):
    Z, removed, weights = _expansion(seed, 3, 40, n_features, 2, wide)
    twin = point_values(Z, removed, weights, backend="numpy")  # the exact rule everywhere
    general = shapley_values(
        Z,
        np.broadcast_to(weights, (3, *weights.shape)),
        removed_factors=removed,
        tol=0,
    )
    assert_close(twin, general, game_scale(weights))
    for tol in (2.0**-53, 0.0):
        compiled = point_values(Z, removed, weights, backend="numba", tol=tol)
        assert_close(compiled, twin, game_scale(weights))


def test_point_values_take_fewer_nodes_only_where_the_bound_holds():
    Z, removed, weights = _expansion(0, 2, 30, 24, 1, wide=True)
    nodes, _, _, _, limits = point_rules(24, 2.0**-53)
    assert nodes.shape[0] == exact_node_count(24) and np.all(np.diff(limits) > 0)
    # Removed factors above 1 void the bound: every pair takes the exact rule.
    assert np.all(point_rules(24, 2.0**-53, bounded=False)[4] == -1.0)
    assert np.all(point_rules(24, 0.0)[4] == -1.0)
    large = removed * 1.5
    assert_close(
        point_values(Z, large, weights),
        point_values(Z, large, weights, backend="numpy"),
        game_scale(weights) * 1.5**24,
    )


def test_point_values_do_not_depend_on_threads(monkeypatch):
    monkeypatch.setattr("pkex_select._scheduling.MIN_PARALLEL_WORK", 0)
    Z, removed, weights = _expansion(1, 37, 50, 12, 2, wide=False)
    np.testing.assert_array_equal(
        point_values(Z, removed, weights, n_jobs=2), point_values(Z, removed, weights)
    )
