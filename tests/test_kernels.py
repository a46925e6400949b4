import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics.pairwise import laplacian_kernel, rbf_kernel

from pkex_select.kernels import (
    bandwidths,
    factor_tensor,
    gamma_from_bandwidth,
    gram_matrices,
    kernel_factor,
    median_of_distances,
)

rng = np.random.default_rng(0)
A = rng.normal(size=(7, 4))
B = rng.normal(size=(5, 4))


@pytest.mark.parametrize(
    "kernel, reference", [("rbf", rbf_kernel), ("laplacian", laplacian_kernel)]
)
def test_product_of_factors_is_the_sklearn_kernel(kernel, reference):
    Z = factor_tensor(A, B, kernel, gamma=0.3)
    np.testing.assert_allclose(Z.prod(axis=2), reference(A, B, gamma=0.3), rtol=1e-14)


def test_cauchy_and_delta_factors():
    np.testing.assert_allclose(kernel_factor(2.0, 0.0, "cauchy", 0.25), 0.5)
    assert kernel_factor(np.array([1, 2, 3]), 2, "delta").tolist() == [0.0, 1.0, 0.0]
    codes = np.array(["x", "y"], dtype=object)
    assert kernel_factor(codes[:, None], codes[None, :], "delta").tolist() == [[1, 0], [0, 1]]


def test_per_feature_kernels_and_gammas():
    gamma = np.array([0.1, 1.0, 2.0, 5.0])
    kernels = ["rbf", "laplacian", "cauchy", "delta"]
    Z = factor_tensor(A, B, kernels, gamma)
    for j, kernel in enumerate(kernels):
        expected = kernel_factor(A[:, None, j], B[None, :, j], kernel, gamma[j])
        np.testing.assert_array_equal(Z[:, :, j], expected)
    assert np.all((Z >= 0) & (Z <= 1))


def test_grams_agree_with_the_full_tensor():
    K = gram_matrices(A, "rbf", 0.5)
    assert K.shape == (4, 7, 7)
    np.testing.assert_allclose(np.diagonal(K, axis1=1, axis2=2), 1.0)
    np.testing.assert_allclose(K, np.swapaxes(K, 1, 2))


def test_bandwidth_rules():
    X = np.column_stack([rng.normal(size=400), 5 * rng.normal(size=400), np.ones(400)])
    for rule in ["median", "scott", "silverman", "std"]:
        s = bandwidths(X, rule)
        assert s.shape == (3,) and np.all(s > 0)
        assert 4 < s[1] / s[0] < 6  # scale equivariant
        assert s[2] == 1.0  # constant feature: harmless default
    # median of |a - b| for two independent N(0, 1) is sqrt(2) * 0.6745
    assert abs(bandwidths(X, "median")[0] - 0.954) < 0.1
    np.testing.assert_array_equal(bandwidths(X, 2.0), [2.0, 2.0, 2.0])
    binary = np.array([[0.0], [0.0], [0.0], [0.0], [1.0]])
    assert bandwidths(binary, "median")[0] == 1.0  # mostly ties: mean nonzero distance


def test_gamma_from_bandwidth_round_trips():
    s = np.array([0.5, 2.0])
    x = np.array([0.7])
    for kernel in ["rbf", "laplacian", "cauchy"]:
        gamma = gamma_from_bandwidth(kernel, s)
        value = kernel_factor(x, 0.0, kernel, gamma)
        assert np.all((value > 0) & (value < 1))
    np.testing.assert_allclose(
        kernel_factor(1.0, 0.0, "rbf", gamma_from_bandwidth("rbf", 1.0)), np.exp(-0.5)
    )


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: kernel_factor(1.0, 0.0, "poly"), "kernel must be one of"),
        (lambda: bandwidths(A, "nope"), "rule must be one of"),
        (lambda: bandwidths(A, -1.0), "positive"),
        (lambda: gamma_from_bandwidth("rbf", 0.0), "positive"),
        (lambda: factor_tensor(A, B[:, :2]), "same number of columns"),
        (lambda: factor_tensor(A, B, ["rbf"]), "4 features"),
        (lambda: factor_tensor(A, B, "rbf", gamma=[1.0, 2.0]), "gamma must"),
    ],
)
def test_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 700),
    st.sampled_from(["normal", "rounded", "few values", "heavy tails", "offset"]),
    st.integers(0, 2**32 - 1),
)
def test_median_of_distances_is_numpys_median_of_every_distance(size, shape, seed):
    """Bit for bit, through both of its paths (all distances below 80,000 pairs, the
    bracket above: from 401 values)."""
    rng = np.random.default_rng(seed)
    values = {
        "normal": lambda: rng.normal(size=size),
        "rounded": lambda: np.round(rng.normal(size=size), 1),
        "few values": lambda: rng.integers(0, 3, size).astype(float),
        "heavy tails": lambda: rng.standard_cauchy(size) * 1e6,
        "offset": lambda: 1e8 + rng.normal(size=size),
    }[shape]()
    a, b = np.triu_indices(size, k=1)
    expected = float(np.median(np.abs(values[a] - values[b]))) if a.size else 0.0
    assert median_of_distances(values) == expected


@pytest.mark.parametrize("kernels", [["rbf"] * 4, ["rbf", "laplacian", "cauchy", "delta"]])
def test_pair_factors_in_blocks_and_mapped_memory_are_the_whole_computation(kernels, monkeypatch):
    """Blocks of rows into a memory mapping of its own give, to the bit, the factors of one
    broadcast over all pairs."""
    import pkex_select.kernels as kernel_module

    rng = np.random.default_rng(3)
    A, B = rng.normal(size=(37, 4)), rng.normal(size=(29, 4))
    A[:, 3], B[:, 3] = rng.integers(0, 3, 37), rng.integers(0, 3, 29)
    gamma = np.array([0.3, np.inf, 2.0, 1.0])
    whole = np.stack(
        [
            kernel_module.kernel_factor(A[:, None, j], B[None, :, j], k, gamma[j])
            for j, k in enumerate(kernels)
        ],
        axis=-1,
    )
    monkeypatch.setattr(kernel_module, "_PAIR_FACTOR_BYTES", 8 * 29 * 4 * 5)  # 5 rows a block
    monkeypatch.setattr(kernel_module, "_MAPPED_FROM_BYTES", 1)
    blocked = kernel_module.pair_factors(A, B, kernels, gamma)
    assert blocked.shape == (37, 29, 4) and blocked.flags.writeable
    np.testing.assert_array_equal(blocked, whole)
    # Shared by threads, the blocks are the same to the bit.
    np.testing.assert_array_equal(kernel_module.pair_factors(A, B, kernels, gamma, 2), whole)


def _owner(array):
    while isinstance(array, np.ndarray):
        array = array.base
    return array


@pytest.mark.parametrize("through_libc", [True, False])
def test_a_fresh_mapping_lives_as_long_as_an_array_on_it(through_libc, monkeypatch):
    """The factor tensor's own mapping is writable, zeroed, and unmapped once the last view
    of it goes (not before: a view outliving its tensor must stay readable)."""
    import gc
    import weakref

    import pkex_select.kernels as kernel_module

    if through_libc and kernel_module._LIBC is None:
        pytest.skip("the libc path is Linux's")
    if not through_libc:
        monkeypatch.setattr(kernel_module, "_LIBC", None)
    tensor = kernel_module._fresh_mapping(8 * 2**18).reshape(2**9, 2**9)
    assert tensor.dtype == np.float64 and tensor.flags.writeable and not tensor.any()
    view = tensor[100:]
    owner = weakref.ref(_owner(tensor))
    tensor[:] = 2.0
    del tensor
    gc.collect()
    assert owner() is not None and view.sum() == 2.0 * view.size
    del view
    gc.collect()
    assert owner() is None
