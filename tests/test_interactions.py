"""Interaction indices and removal baselines of the pair game against their definitions."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from pkex_select import interaction_values, pair_contributions, shapley_values
from tests.references import general_coalition_values, interaction_reference

ORDER = {"SV": 1, "BV": 1, "SII": 2, "BII": 2, "STII": 2, "k-SII": 2, "Moebius": 2}


def _reference(Z, baseline, weights, index):
    values = general_coalition_values(Z, 1.0 if baseline is None else baseline, weights)
    return interaction_reference(values, Z.shape[1], index)


def _awkward_factors(rng, n_pairs, n_features):
    """Signed, zero, tiny and unit factors mixed with ordinary kernel values."""
    Z = rng.uniform(-1.5, 1.5, (n_pairs, n_features))
    Z[0] = 0.0
    Z[1, ::2] = 1e-200
    Z[2] = 1.0
    Z[3, 0] = -1.0
    return Z


@pytest.mark.parametrize("index", list(ORDER))
@pytest.mark.parametrize("n_features", [1, 2, 5, 12])
@pytest.mark.parametrize("with_baseline", [False, True])
def test_every_index_matches_enumeration(index, n_features, with_baseline):
    rng = np.random.default_rng(n_features)
    Z = _awkward_factors(rng, 30, n_features)
    weights = rng.normal(size=30)
    baseline = None
    if with_baseline:
        baseline = rng.uniform(-1, 1, Z.shape)
        baseline[4] = 0.0  # zero baselines with zero factors: f = 0 at every node
        Z[4] = 0.0
    got = interaction_values(
        Z, weights, index=index, max_order=ORDER[index], removed_factors=baseline
    )
    expected = _reference(Z, baseline, weights, index)
    scale = np.abs(expected).max()
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12 * scale)


@settings(max_examples=40, deadline=None)
@given(
    arrays(
        np.float64,
        st.tuples(st.integers(1, 6), st.integers(2, 8)),
        elements=st.floats(-2, 2, allow_subnormal=False),
    ),
    st.sampled_from(["SII", "BII", "STII", "k-SII", "Moebius"]),
    st.booleans(),
)
def test_property_pairwise_indices_match_enumeration(Z, index, with_baseline):
    rng = np.random.default_rng(Z.size)
    weights = rng.normal(size=Z.shape[0])
    baseline = rng.uniform(-1, 1, Z.shape) if with_baseline else None
    got = interaction_values(Z, weights, index=index, removed_factors=baseline)
    expected = _reference(Z, baseline, weights, index)
    np.testing.assert_allclose(got, got.T, rtol=0, atol=0)
    scale = max(np.abs(expected).max(), np.abs(weights).sum() * 1e-300)
    # The enumeration adds 2^d coalition values of size up to sum |w| max(1, |z|, |b|)^d: its
    # own rounding error, far above the values when they are tiny (found: z = -0.875 in 7
    # features, where the engine's BII diagonal equals the exact rational value and the
    # enumeration's is off by 1e-8 relative).
    largest = max(1.0, np.abs(Z).max(), 0.0 if baseline is None else np.abs(baseline).max())
    reference_error = (
        2.0 ** Z.shape[1]
        * Z.shape[1]
        * np.finfo(float).eps
        * np.abs(weights).sum()
        * largest ** Z.shape[1]
    )
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10 * scale + reference_error)


@pytest.mark.parametrize("index", ["STII", "k-SII"])
def test_efficiency_at_two_thousand_features(index):
    rng = np.random.default_rng(0)
    n_features = 2000
    support = rng.normal(size=(40, n_features))
    x = rng.normal(size=n_features)
    Z = np.exp(-((x - support) ** 2) / (2 * n_features))
    weights = rng.normal(size=40)
    values = interaction_values(Z, weights, index=index)
    total = weights @ np.prod(Z, axis=1) - weights.sum()
    assert abs(np.triu(values).sum() - total) <= 1e-10 * np.abs(weights).sum()


@pytest.mark.parametrize("index", ["SII", "STII", "BII"])
def test_adaptive_nodes_agree_with_the_exact_rule(index):
    rng = np.random.default_rng(3)
    n_features = 60
    X = rng.normal(size=(3, n_features))
    support = rng.normal(size=(200, n_features))
    Z = np.exp(-((X[:, None] - support[None]) ** 2) / n_features)
    weights = np.broadcast_to(rng.normal(size=200), (3, 200))
    fast = interaction_values(Z, weights, index=index)
    exact = interaction_values(Z, weights, index=index, tol=0)
    assert np.abs(fast - exact).max() <= 1e-14 * np.abs(weights[0]).sum()


def test_shapes_outputs_points_and_chunks():
    rng = np.random.default_rng(4)
    Z = rng.uniform(0, 1, (3, 25, 5))
    weights = rng.normal(size=(3, 25, 2))
    values = interaction_values(Z, weights, index="SII", chunk_size=7)
    assert values.shape == (3, 5, 5, 2)
    for k in range(3):
        for o in range(2):
            single = interaction_values(Z[k], weights[k, :, o], index="SII")
            np.testing.assert_allclose(values[k, :, :, o], single, rtol=1e-13, atol=1e-15)
    # The diagonal of SII is the Shapley values.
    np.testing.assert_allclose(
        np.diagonal(values, axis1=1, axis2=2),
        np.swapaxes(shapley_values(Z, weights), 1, 2),
        atol=1e-14,
    )
    assert interaction_values(Z[0], weights[0, :, 0], index="BV", max_order=1).shape == (5,)


def test_baseline_game_matches_enumeration_through_every_entry_point():
    rng = np.random.default_rng(5)
    Z, baseline = rng.uniform(0, 1, (50, 8)), rng.uniform(0.2, 1, (50, 8))
    weights = rng.normal(size=50)
    expected = _reference(Z, baseline, weights, "SV")
    np.testing.assert_allclose(
        shapley_values(Z, weights, removed_factors=baseline), expected, atol=1e-14
    )
    np.testing.assert_allclose(
        weights @ pair_contributions(Z, removed_factors=baseline), expected, atol=1e-14
    )
    np.testing.assert_allclose(
        shapley_values(Z, weights, removed_factors=baseline, backend="numpy"), expected, atol=1e-14
    )
    # A baseline broadcast along the pairs equals the full array.
    row = baseline[0]
    np.testing.assert_allclose(
        shapley_values(Z, weights, removed_factors=row),
        shapley_values(Z, weights, removed_factors=np.tile(row, (50, 1))),
    )


def test_invalid_arguments_are_explained():
    Z, weights = np.ones((3, 4)), np.ones(3)
    with pytest.raises(ValueError, match="index must be one of"):
        interaction_values(Z, weights, index="FSII")
    with pytest.raises(ValueError, match="max_order=2"):
        interaction_values(Z, weights, index="SII", max_order=1)
    with pytest.raises(ValueError, match="max_order=1"):
        interaction_values(Z, weights, index="SV")
    with pytest.raises(ValueError, match="does not broadcast"):
        interaction_values(Z, weights, removed_factors=np.ones(5))
    with pytest.raises(ValueError, match="removed_factors contains NaN"):
        shapley_values(Z, weights, removed_factors=np.full(4, np.nan))
    with pytest.raises(ValueError, match="weights must have shape"):
        interaction_values(Z, np.ones(4))


@pytest.mark.parametrize("index", ["SII", "BII", "STII", "k-SII", "Moebius"])
def test_every_index_matches_shapiq_exact_computer(index):
    shapiq = pytest.importorskip("shapiq")
    rng = np.random.default_rng(6)
    n_features = 6
    Z, baseline = rng.uniform(0, 1, (20, n_features)), rng.uniform(0, 1, (20, n_features))
    weights = rng.normal(size=20)

    def game(coalitions):
        coalitions = np.asarray(coalitions, dtype=bool)
        return np.array([weights @ np.prod(np.where(c, Z, baseline), axis=1) for c in coalitions])

    theirs = shapiq.ExactComputer(n_players=n_features, game=game)(index=index, order=2)
    ours = interaction_values(Z, weights, index=index, removed_factors=baseline)
    for i in range(n_features):
        assert ours[i, i] == pytest.approx(theirs[(i,)], abs=1e-13)
        for j in range(i + 1, n_features):
            assert ours[i, j] == pytest.approx(theirs[(i, j)], abs=1e-13)
