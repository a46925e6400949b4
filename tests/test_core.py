"""The functional core: the plan of the engine, the compiled kernels against their NumPy twins,
and the functions on Gram matrices against the estimators for every option."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pkex_select import (
    Attribution,
    HSICShapleySelector,
    MMDShapleyAttributor,
    PermutationTests,
    _integrals,
    _statistics,
    hsic_shapley_values,
    interaction_values,
    mmd_shapley_values,
    pair_contributions,
    shapley_values,
)
from pkex_select._engine import integrate, plan_integrals
from pkex_select._plan import SampleBlocks, pairs_of_rows
from pkex_select._quadrature import gauss_rule
from pkex_select.kernels import gram_matrices

# --------------------------------------------------------------------------- the plan


def _factors_for(path, rng):
    """Pairs whose plan takes ``path`` (the thresholds are the plan's own, not guessed)."""
    if path == "exact":  # narrow kernels: every pair needs about ceil(d / 2) nodes
        return rng.uniform(0, 0.1, (400, 60))
    if path == "series":  # wide kernels at large d
        return 1 - rng.uniform(0, 1e-3, (400, 1000))
    if path == "one rule":  # wide kernels but one factor too far from 1 for the series
        Z = 1 - rng.uniform(0, 1e-3, (400, 100))
        Z[:, 0] = rng.uniform(0.2, 0.3, 400)
        return Z
    # Mixed widths: some pairs need few nodes, others many.
    Z = np.concatenate(
        [
            1 - rng.uniform(0, 1e-3, (300, 100)),
            1 - rng.uniform(0, 0.05, (200, 100)),
            rng.uniform(0, 1, (100, 100)),
        ]
    )
    rng.shuffle(Z)
    return Z


def _described(plan):
    return (
        plan.path,
        None if plan.rule is None else plan.rule[0].size,
        plan.n_terms,
        [(tuple(rows), n_nodes) for rows, n_nodes in plan.groups],
    )


@pytest.mark.parametrize("path", ["exact", "one rule", "grouped", "series"])
def test_every_path_is_reached_and_both_backends_take_it(path):
    Z = _factors_for(path, np.random.default_rng(0))
    plan = plan_integrals(Z)
    assert plan.path == path
    assert _described(plan_integrals(Z, backend="numpy")) == _described(plan)
    exact = integrate(plan_integrals(Z, tol=0), Z)
    for backend in ["numba", "numpy"]:
        np.testing.assert_allclose(
            integrate(plan, Z, backend=backend),
            exact,
            rtol=0,
            atol=4 * Z.shape[1] * np.finfo(float).eps,
        )


def test_grouped_plan_covers_every_pair_once():
    Z = _factors_for("grouped", np.random.default_rng(1))
    plan = plan_integrals(Z)
    rows = np.concatenate([group_rows for group_rows, _ in plan.groups])
    np.testing.assert_array_equal(np.sort(rows), np.arange(Z.shape[0]))
    assert len({n for _, n in plan.groups}) >= 3


def test_tolerance_zero_and_removed_factors_above_one_take_the_exact_rule():
    Z = _factors_for("series", np.random.default_rng(2))
    assert plan_integrals(Z, tol=0).path == "exact"
    assert plan_integrals(Z, np.full(Z.shape, 1.5)).path == "exact"
    # Removed factors other than 1 never take the series (it assumes 1).
    assert plan_integrals(Z, np.full(Z.shape, 0.999)).path != "series"


# ------------------------------------------------------- compiled kernels and their twins


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 40),
    st.integers(1, 70),
    st.integers(1, 12),
    st.booleans(),
    st.integers(0, 2**32 - 1),
)
def test_compiled_quadrature_kernel_is_its_numpy_twin(n_rows, n_features, n_nodes, removed, seed):
    rng = np.random.default_rng(seed)
    Z = rng.uniform(-1.5, 1.5, (n_rows, n_features))
    Z[rng.random(Z.shape) < 0.1] = 0.0
    R = rng.uniform(-1, 1, Z.shape) if removed else None
    rule = gauss_rule(n_nodes)
    twin = _integrals.loo_integrals_numpy(Z, R, *rule)
    scale = np.abs(twin).max(initial=1.0)
    compiled = _integrals.loo_integrals_numba(Z, R, *rule)
    np.testing.assert_allclose(
        compiled, twin, rtol=0, atol=8 * n_features * np.finfo(float).eps * scale
    )


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 40),
    st.integers(1, 300),
    st.integers(1, 12),
    st.integers(1, 30),
    st.integers(0, 2**32 - 1),
)
def test_compiled_series_kernel_is_its_numpy_twin(n_rows, n_features, n_nodes, n_terms, seed):
    rng = np.random.default_rng(seed)
    Z = 1 - rng.uniform(-0.5, 0.5, (n_rows, n_features))
    nodes, _, weights = gauss_rule(n_nodes)
    twin = _integrals.series_integrals_numpy(Z, nodes, weights, n_terms)
    compiled = _integrals.series_integrals_numba(Z, nodes, weights, n_terms)
    scale = np.abs(twin).max(initial=1.0)
    np.testing.assert_allclose(
        compiled, twin, rtol=0, atol=8 * (n_features + n_terms) * np.finfo(float).eps * scale
    )


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 50), st.booleans(), st.integers(0, 2**32 - 1))
def test_compiled_deviations_are_their_numpy_twin(n_rows, n_features, removed, seed):
    rng = np.random.default_rng(seed)
    Z = rng.uniform(-1, 1, (n_rows, n_features))
    R = rng.uniform(-1, 1, Z.shape) if removed else None
    sums, largest, above = _integrals.deviations_numba(Z, R)
    twin_sums, twin_largest, twin_above = _integrals.deviations_numpy(Z, R)
    np.testing.assert_allclose(sums, twin_sums, rtol=1e-14)
    assert largest == twin_largest and above == twin_above


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 30), min_size=0, max_size=2),
    st.integers(0, 60),
    st.booleans(),
    st.integers(0, 2**32 - 1),
)
def test_compiled_feature_products_are_their_numpy_twin(leading, n_features, strided, seed):
    rng = np.random.default_rng(seed)
    Z = rng.uniform(-1.5, 1.5, (*leading, n_features))
    Z[rng.random(Z.shape) < 0.05] = 0.0
    if strided:  # not contiguous: the NumPy twin takes it
        Z = np.repeat(Z, 2, axis=-1)[..., ::2]
    products = _integrals.feature_products(Z)
    twin = _integrals.feature_products_numpy(Z)
    assert products.shape == twin.shape == Z.shape[:-1]
    # d multiplications, each rounded, in either order.
    np.testing.assert_allclose(
        products, twin, rtol=2 * max(n_features, 1) * np.finfo(float).eps, atol=0
    )


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 60),
    st.integers(1, 8),
    st.integers(0, 200),
    st.sampled_from([np.uint8, np.int16, np.intp]),
    st.booleans(),
    st.integers(0, 2**32 - 1),
)
def test_compiled_permuted_weights_are_their_numpy_twin(
    n_samples, n_perm, n_pairs, dtype, in_rows, seed
):
    rng = np.random.default_rng(seed)
    levels = int(rng.integers(1, n_samples + 1))
    table = rng.normal(size=(levels, levels))
    permuted = rng.integers(0, levels, (n_perm, n_samples)).astype(dtype)
    a = rng.integers(0, n_samples, n_pairs)
    a = np.sort(a) if in_rows else a  # rows of pairs, as plans give them, or any order
    b = rng.integers(0, n_samples, n_pairs)
    compiled = _statistics.permuted_entries_numba(table, permuted, a, b)
    np.testing.assert_array_equal(
        compiled, _statistics.permuted_entries_numpy(table, permuted, a, b)
    )
    # A chunk of AllPairs: every b > a along consecutive rows, read through permuted[k].
    first = int(rng.integers(0, n_samples))
    chunk = pairs_of_rows((first, int(rng.integers(first, n_samples)) + 1), n_samples)
    np.testing.assert_array_equal(
        _statistics.permuted_entries_numba(table, permuted, chunk.a, chunk.b),
        _statistics.permuted_entries_numpy(table, permuted, chunk.a, chunk.b),
    )
    by_sample = np.ascontiguousarray(permuted.T)
    np.testing.assert_array_equal(
        _statistics.sample_entries_numba(table, by_sample, a, b).T,
        _statistics.sample_entries_numpy(table, by_sample, a, b).T,
    )
    np.testing.assert_array_equal(
        _statistics.sample_entries_numpy(table, by_sample, a, b).T, compiled
    )


@settings(max_examples=60, deadline=None)
@given(
    st.integers(4, 40),
    st.integers(1, 8),
    st.floats(0.05, 1.0),
    st.integers(0, 2**32 - 1),
)
def test_compiled_row_centring_is_its_numpy_twin(n_samples, n_features, weight, seed):
    from pkex_select._features import (
        add_row_sums_numba,
        add_row_sums_numpy,
        centre_rows_numba,
        centre_rows_numpy,
    )

    rng = np.random.default_rng(seed)
    start = int(rng.integers(0, n_samples - 1))
    stop = int(rng.integers(start + 1, n_samples))
    n_pairs = pairs_of_rows((start, stop), n_samples).a.size
    Z = rng.uniform(0, 1, (n_pairs, n_features))
    row_terms = rng.uniform(0, 0.5, (n_samples, n_features))
    total_terms = rng.uniform(0, 0.5, n_features)
    constant = rng.random(n_features) < 0.3
    twin_Z = Z.copy()
    compiled = centre_rows_numba(
        Z, (start, stop), n_samples, row_terms, total_terms, weight, constant
    )
    twin = centre_rows_numpy(
        twin_Z, (start, stop), n_samples, row_terms, total_terms, weight, constant
    )
    np.testing.assert_allclose(Z, twin_Z, rtol=1e-14, atol=1e-15)
    np.testing.assert_array_equal(Z[:, constant], 1.0)
    for products, twin_products in zip(compiled, twin):
        np.testing.assert_allclose(products, twin_products, rtol=1e-13, atol=1e-300)
    sums, twin_sums = np.zeros((2, n_samples, n_features))
    add_row_sums_numba(Z, (start, stop), n_samples, sums)
    add_row_sums_numpy(Z, (start, stop), n_samples, twin_sums)
    np.testing.assert_allclose(sums, twin_sums, rtol=1e-13)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(3, 40),
    st.lists(st.sampled_from(["rbf", "laplacian", "cauchy", "delta"]), min_size=1, max_size=8),
    st.integers(1, 2),
    st.booleans(),
    st.integers(0, 2**32 - 1),
)
def test_compiled_joint_kernel_is_its_numpy_twin(n_samples, kernels, n_scales, blocked, seed):
    """DataFactors.joint sums the exponential kernels' exponents in one compiled pass over
    runs of rows, or over blocks of samples drawn at random; the NumPy path (differences,
    distances, matrix-vector products) and the product of the factors agree with it."""
    from pkex_select import _features

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_samples, len(kernels)))
    delta = np.array(kernels) == "delta"
    X[:, delta] = rng.integers(0, 3, (n_samples, delta.sum()))
    gammas = [rng.uniform(0.01, 2.0, len(kernels)) for _ in range(n_scales)]
    factors = _features.DataFactors(X, kernels, gammas)
    if blocked:
        block_size = int(rng.integers(2, n_samples + 1))
        plan = SampleBlocks(n_samples, block_size, 3, np.random.RandomState(seed), 8)
        pairs = plan.pairs(plan.chunks[0])
    else:
        start = int(rng.integers(0, n_samples - 1))
        pairs = pairs_of_rows((start, int(rng.integers(start + 1, n_samples))), n_samples)
    compiled = factors.joint(pairs)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_features, "NUMBA", False)
        twin = factors.joint(pairs)
    for joint, twin_joint, scale in zip(compiled, twin, factors(pairs)):
        np.testing.assert_allclose(joint, twin_joint, rtol=1e-13, atol=1e-300)
        np.testing.assert_allclose(joint[:, 0], np.prod(scale, axis=1), rtol=1e-12, atol=1e-300)


@settings(max_examples=80, deadline=None)
@given(
    st.integers(3, 40),
    st.lists(st.sampled_from(["rbf", "laplacian", "cauchy", "delta"]), min_size=1, max_size=8),
    st.integers(1, 3),
    st.sampled_from(["finite", "zero", "inf"]),
    st.booleans(),
    st.integers(0, 2**32 - 1),
)
def test_compiled_factor_pass_is_its_numpy_twin_to_the_bit(
    n_samples, kernels, n_scales, extreme, fortran, seed
):
    """DataFactors computes the factors of runs of rows and of sample blocks in one compiled
    pass (exponents, then NumPy's exp) where every kernel is RBF, Laplacian or delta at
    finite parameters, else factor by factor in NumPy: the two give the same bits, ties and
    codes included."""
    from pkex_select._features import DataFactors

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_samples, len(kernels)))
    X[rng.random(n_samples) < 0.3] = X[0]  # tied rows: differences of exactly 0
    delta = np.array(kernels) == "delta"
    X[:, delta] = rng.integers(0, 3, (n_samples, delta.sum()))
    gammas = [rng.uniform(0.01, 2.0, len(kernels)) for _ in range(n_scales)]
    if extreme != "finite":  # a constant factor (gamma 0) or a delta-like one (inf)
        gammas[-1][int(rng.integers(len(kernels)))] = 0.0 if extreme == "zero" else np.inf
    factors = DataFactors(np.asfortranarray(X) if fortran else X, kernels, gammas)
    start = int(rng.integers(0, n_samples - 1))
    pairs = pairs_of_rows((start, int(rng.integers(start + 1, n_samples))), n_samples)
    compiled = factors(pairs)
    assert len(compiled) == n_scales
    for scale, twin in zip(compiled, factors.factors_numpy(pairs)):
        np.testing.assert_array_equal(scale, twin)
    # The pairs within sample blocks (the block estimate), in any order of samples.
    blocks = SampleBlocks(n_samples, 3, 2, np.random.RandomState(seed % 1000), pair_bytes=8)
    for chunk in blocks.chunks:
        block_pairs = blocks.pairs(chunk)
        for scale, twin in zip(factors(block_pairs), factors.factors_numpy(block_pairs)):
            np.testing.assert_array_equal(scale, twin)
    finite = all(np.all(np.isfinite(g[~delta])) for g in gammas)  # delta ignores its gamma
    compiled_path = finite and "cauchy" not in kernels
    assert (factors._exponent_scales is not None) == compiled_path


def test_the_exact_anova_pass_takes_its_joint_kernels_from_the_centring():
    """The ANOVA game's chunks carry the products of their plain and centred factors, over
    all pairs and within sample blocks; they equal the products computed from the factors
    anew."""
    from pkex_select._features import CentredFactors, ChunkFactors, prepare_features
    from pkex_select._plan import AllPairs

    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 4))
    X[:, 3] = 1.0  # constant
    features = prepare_features(
        X, np.zeros(4, bool), kernel="rbf", bandwidth="median", scales="auto"
    )
    exact = CentredFactors.measure(AllPairs(30, 8 * 4), features.factors(), weight=0.5)
    blocks = SampleBlocks(30, 5, 2, np.random.RandomState(0), pair_bytes=8 * 4)
    within_blocks = CentredFactors(features.factors(), weight=0.5)  # centred per block
    for plan, centred in ((AllPairs(30, 8 * 4), exact), (blocks, within_blocks)):
        for pairs in map(plan.pairs, plan.chunks):
            scales = centred(pairs)
            assert isinstance(scales, ChunkFactors)
            plain = [np.prod(Z, axis=1) for Z in features.factors()(pairs)]
            for joint, test_joint, again, Z in zip(
                scales.joints, centred.test_joints(pairs, scales), plain, scales
            ):
                np.testing.assert_allclose(test_joint, again, rtol=1e-14)
                np.testing.assert_allclose(joint, np.prod(Z, axis=1), rtol=1e-14)
                np.testing.assert_array_equal(Z[:, 3], 1.0)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_the_anova_row_sums_add_each_chunk_in_the_plans_order_on_any_number_of_workers(n_jobs):
    """CentredFactors.measure's row sums are every sample's factors with the others; the
    chunks' sums are added in the plan's order whether a worker takes them one by one or in
    runs, so that they have the bits of that order's sequential sum."""
    from pkex_select._features import CentredFactors, prepare_features
    from pkex_select._plan import AllPairs

    rng = np.random.default_rng(7)
    n = 150
    features = prepare_features(
        rng.normal(size=(n, 3)), np.zeros(3, bool), kernel="rbf", scales=(0.5, 1.0)
    )
    factors = features.factors()
    plan = AllPairs(n, 2**20)  # chunks of a row or two: several runs on two workers
    assert len(plan.chunks) > 8
    sequential = np.zeros((2, n, 3))
    for chunk in plan.chunks:
        pairs = plan.pairs(chunk)
        chunk_sums = np.zeros((2, n, 3))
        for Z, total in zip(factors(pairs), chunk_sums):  # a sample's pairs in order
            np.add.at(total, pairs.b, Z)  # (a, b) with a before b
            np.add.at(total, pairs.a, Z)
        sequential += chunk_sums
    centred = CentredFactors.measure(plan, factors, n_jobs)
    for terms, sums in zip(centred.row_terms, sequential):
        np.testing.assert_array_equal(terms, sums / (n - 2))


def test_numpy_backend_covers_every_path_end_to_end():
    rng = np.random.default_rng(3)
    for path in ["exact", "one rule", "grouped", "series"]:
        Z = _factors_for(path, rng)
        weights = rng.normal(size=Z.shape[0])
        compiled = shapley_values(Z, weights)
        twin = shapley_values(Z, weights, backend="numpy")
        scale = np.abs(weights).sum()
        np.testing.assert_allclose(twin, compiled, rtol=0, atol=1e-14 * scale)


# ------------------------------------------------------------------------- renamed names


def test_baseline_keyword_is_deprecated_for_removed_factors():
    rng = np.random.default_rng(4)
    Z, R = rng.uniform(0, 1, (2, 20, 5))
    weights = rng.normal(size=20)
    expected = shapley_values(Z, weights, removed_factors=R)
    with pytest.warns(FutureWarning, match="removed_factors"):
        np.testing.assert_array_equal(shapley_values(Z, weights, baseline=R), expected)
    with pytest.warns(FutureWarning, match="removed_factors"):
        np.testing.assert_array_equal(
            weights @ pair_contributions(Z, baseline=R),
            weights @ pair_contributions(Z, removed_factors=R),
        )
    with pytest.warns(FutureWarning, match="removed_factors"):
        np.testing.assert_array_equal(
            interaction_values(Z, weights, baseline=R),
            interaction_values(Z, weights, removed_factors=R),
        )
    with pytest.raises(TypeError, match="not both"), pytest.warns(FutureWarning):
        shapley_values(Z, weights, removed_factors=R, baseline=R)


# ---------------------------------------------- the functions against the estimators

rng = np.random.default_rng(5)
X = rng.normal(size=(70, 4))
y_continuous = X[:, 0] + np.sin(2 * X[:, 1]) + 0.3 * rng.normal(size=70)
y_groups = np.repeat(["before", "after"], 35)
X_shifted = X.copy()
X_shifted[35:, 2] += 1.0


def _estimator_grams(estimator, X):
    """The Gram matrices an estimator attributes: per scale, of the standardised data."""
    Xs = (X - X.mean(axis=0)) / X.std(axis=0)
    bandwidths = estimator.bandwidths_
    return np.stack(
        [
            gram_matrices(Xs, "rbf", 1.0 / (2.0 * (bandwidths * scale) ** 2))
            for scale in estimator.scales_
        ]
    )


def _assert_same(result, estimator, statistic):
    assert isinstance(result, Attribution)
    np.testing.assert_allclose(
        result.values,
        estimator.shapley_values_,
        rtol=1e-12,
        atol=1e-12 * np.abs(estimator.shapley_values_).max(),
    )
    assert result.statistic == pytest.approx(getattr(estimator, statistic), rel=1e-12)
    assert result.scales == estimator.scales_
    if estimator.interactions is not None:
        np.testing.assert_allclose(
            result.interaction_values,
            estimator.interaction_values_,
            rtol=1e-12,
            atol=1e-12 * np.abs(estimator.interaction_values_).max(),
        )
    if estimator.n_permutations:
        assert isinstance(result.tests, PermutationTests)
        np.testing.assert_array_equal(result.tests.pvalues, estimator.pvalues_)
        np.testing.assert_array_equal(result.tests.adjusted_pvalues, estimator.adjusted_pvalues_)
        assert result.tests.pvalue == estimator.pvalue_
        np.testing.assert_allclose(
            result.tests.null_distribution,
            estimator.null_distribution_,
            rtol=1e-12,
            atol=1e-12 * (np.abs(estimator.null_distribution_).max()),
        )
        np.testing.assert_allclose(
            result.tests.statistics,
            estimator.statistics_,
            rtol=1e-12,
            atol=1e-12 * np.abs(estimator.statistics_).max(),
        )
    else:
        assert result.tests is None


OPTIONS = [
    {"value_function": "baseline"},
    {"estimate": "unbiased", "n_permutations": 29, "correction": "holm"},
    {"estimate": "block", "block_size": 10, "n_repetitions": 2, "n_permutations": 19},
    {"value_function": "observational", "n_permutations": 19, "correction": "fdr_bh"},
    {"value_function": "baseline", "n_permutations": 19},
    {"interactions": "SII", "scales": [1.0]},
    {"interactions": "k-SII", "scales": [0.5, 1.0, 3.0], "n_permutations": 19},
]


@pytest.mark.parametrize("options", OPTIONS)
def test_hsic_function_is_the_selector_for_every_option(options):
    selector = HSICShapleySelector(random_state=0, **options).fit(X, y_continuous)
    ys = (y_continuous - y_continuous.mean()) / y_continuous.std()
    L = gram_matrices(ys[:, None], "rbf", 1.0 / (2.0 * selector.target_bandwidth_**2))[0]
    function_options = {k: v for k, v in options.items() if k != "scales"}
    function_options["value_function"] = selector.value_function_
    result = hsic_shapley_values(
        _estimator_grams(selector, X),
        L,
        scales=selector.scales_,
        random_state=0,
        return_result=True,
        **function_options,
    )
    _assert_same(result, selector, "hsic_")


@pytest.mark.parametrize("options", OPTIONS)
def test_mmd_function_is_the_attributor_for_every_option(options):
    attributor = MMDShapleyAttributor(random_state=0, **options).fit(X_shifted, y_groups)
    function_options = {k: v for k, v in options.items() if k != "scales"}
    function_options["value_function"] = attributor.value_function_
    result = mmd_shapley_values(
        _estimator_grams(attributor, X_shifted),
        y_groups,
        scales=attributor.scales_,
        random_state=0,
        return_result=True,
        **function_options,
    )
    _assert_same(result, attributor, "mmd_")


def test_functions_return_values_by_default_and_take_one_stack_or_several():
    K = gram_matrices(X, "rbf", 0.5)
    values = mmd_shapley_values(K, y_groups)
    np.testing.assert_array_equal(values, mmd_shapley_values(K[None], y_groups))
    assert values.shape == (4,)
    two = mmd_shapley_values(
        np.stack([K, gram_matrices(X, "rbf", 0.05)]), y_groups, return_result=True
    )
    assert two.scales == (1.0, 2.0)
    np.testing.assert_allclose(two.values.sum(), two.statistic, rtol=1e-12)


@pytest.mark.parametrize(
    "scales, message",
    [
        ([1.0], "names 1 scales for 2 stacks"),
        ([1.0, -2.0], "positive numbers"),
        ([1.0, "a"], "positive numbers"),
    ],
)
def test_function_scales_are_validated(scales, message):
    K = np.stack([gram_matrices(X, "rbf", 0.5)] * 2)
    with pytest.raises(ValueError, match=message):
        mmd_shapley_values(K, y_groups, scales=scales)


def test_selector_scales_name_the_parameter():
    with pytest.raises(ValueError, match="scales must be 'auto' or a non-empty list"):
        HSICShapleySelector(scales=["a"]).fit(X, y_continuous)


def test_every_module_all_lists_what_the_others_import():
    """``__all__`` tells the truth: each name a module of the package imports from a private
    module (or reads from it as ``module.name``) is in that module's ``__all__``, and each
    name there exists. Public modules' ``__all__`` is their documented API instead."""
    import ast
    import importlib
    from pathlib import Path

    import pkex_select

    package = Path(pkex_select.__file__).resolve().parent
    imported = {}
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                imported.setdefault(node.module, set()).update(a.name for a in node.names)
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id.startswith("_")
                and (package / f"{node.value.id}.py").exists()
            ):
                imported.setdefault(node.value.id, set()).add(node.attr)
    for module_name, names in imported.items():
        if not module_name.startswith("_"):
            continue
        module = importlib.import_module(f"pkex_select.{module_name}")
        assert hasattr(module, "__all__"), f"{module_name} has no __all__"
        assert names <= set(module.__all__), (module_name, sorted(names - set(module.__all__)))
        assert all(hasattr(module, name) for name in module.__all__), module_name


@pytest.mark.parametrize("estimator", ["biased", "unbiased"])
@pytest.mark.parametrize("target", ["continuous", "classes", "ties"])
def test_permuted_weights_gathered_from_the_observed_matrix_are_the_kernel_weights(
    estimator, target, monkeypatch
):
    """With permutations, HSIC's weights come from a table of the observed weights between
    target levels (one gather per pair and permutation): n x n for a continuous target,
    classes x classes for labels, one row per distinct value for a target with ties. Without
    the table (large n) they are evaluated per pair."""
    y = {
        "continuous": y_continuous,
        "classes": y_continuous > 0,
        "ties": np.round(y_continuous, 1),
    }[target]
    options = {"estimator": estimator, "n_permutations": 49, "random_state": 0}
    gathered = HSICShapleySelector(**options).fit(X, y)
    monkeypatch.setattr("pkex_select._statistics._DENSE_WEIGHT_BYTES", 0)
    evaluated = HSICShapleySelector(**options).fit(X, y)
    scale = np.abs(evaluated.null_distribution_).max()
    np.testing.assert_allclose(
        gathered.null_distribution_, evaluated.null_distribution_, rtol=0, atol=1e-13 * scale
    )
    np.testing.assert_array_equal(gathered.pvalues_, evaluated.pvalues_)
    assert gathered.pvalue_ == evaluated.pvalue_


def test_scikit_learns_private_names_are_imported_in_one_module():
    import ast
    from pathlib import Path

    import pkex_select

    package = Path(pkex_select.__file__).resolve().parent
    importers = set()
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sklearn"):
                private = any(part.startswith("_") for part in node.module.split("."))
                if private or any(alias.name.startswith("_") for alias in node.names):
                    importers.add(path.name)
    assert importers == {"_sklearn_compat.py"}


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 300),
    st.integers(0, 12),
    st.sampled_from(["C", "F"]),
    st.integers(1, 64),
    st.integers(0, 2**32 - 1),
)
def test_standardise_in_column_blocks_and_in_place_keeps_the_bits(
    n_rows, n_columns, order, block_columns, seed
):
    """standardise takes its standard deviations a few Fortran-ordered columns at a time,
    and scales the caller's own copy in place: the bits of the whole-array computation."""
    from pkex_select import _validation

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_columns)) * rng.uniform(1e-3, 1e5, n_columns)
    X[:, rng.random(n_columns) < 0.2] = 2.5  # constant columns
    X = np.asarray(X, order=order)
    constant = np.all(X == X[:1], axis=0)
    exponent = np.frexp(np.maximum(X.max(axis=0, initial=0.0), -X.min(axis=0, initial=0.0)))[1]
    expected = np.ldexp(X, -exponent)
    expected -= expected.mean(axis=0)
    std = expected.std(axis=0)
    expected /= np.where(constant | (std == 0), 1.0, std)
    expected[:, constant] = 0.0
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_validation, "_STD_BLOCK_BYTES", 8 * max(1, n_rows) * block_columns)
        copy = X.copy(order="K")
        scaled, found = _validation.standardise(copy, in_place=True)
        np.testing.assert_array_equal(scaled, expected)
        np.testing.assert_array_equal(found, constant)
        assert scaled is copy
        np.testing.assert_array_equal(_validation.standardise(X)[0], expected)


def test_the_fortran_copy_is_a_copy_in_fortran_order():
    from pkex_select._features import _fortran_copy

    X = np.random.default_rng(0).normal(size=(1001, 7))
    for source in (X, X[::2], np.asfortranarray(X)):
        for columns in (slice(None), slice(2, 5)):
            copy = _fortran_copy(source, columns, rows=100)
            assert copy.flags.f_contiguous and not np.shares_memory(copy, source)
            np.testing.assert_array_equal(copy, source[:, columns])


@settings(max_examples=30, deadline=None)
@given(
    st.integers(2, 200),
    st.integers(1, 9),
    st.sampled_from(["C", "F"]),
    st.sampled_from(["median", "silverman"]),
    st.integers(0, 2**32 - 1),
)
def test_numeric_columns_prepared_on_threads_keep_the_bits(n_rows, n_columns, order, rule, seed):
    """prepare_features standardises groups of columns on n_jobs threads: the bits of
    standardise (on Fortran-ordered columns, whose sums are pairwise) and bandwidths on all
    columns at once, in a C-ordered array."""
    from pkex_select import _scheduling
    from pkex_select._features import prepare_features
    from pkex_select._validation import standardise
    from pkex_select.kernels import bandwidths

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_columns)) * rng.uniform(1e-3, 1e5, n_columns)
    X[:, rng.random(n_columns) < 0.2] = -1.5  # constant columns
    X = np.asarray(X, order=order)
    expected, constant = standardise(np.asfortranarray(X))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_scheduling, "MIN_PARALLEL_WORK", 0)  # threads even for tiny data
        for n_jobs in (None, 2):
            prepared = prepare_features(X, np.zeros(n_columns, bool), bandwidth=rule, n_jobs=n_jobs)
            assert prepared.data.flags.c_contiguous
            np.testing.assert_array_equal(prepared.data, expected)
            np.testing.assert_array_equal(prepared.constant, constant)
            np.testing.assert_array_equal(prepared.bandwidths, bandwidths(expected, rule))
