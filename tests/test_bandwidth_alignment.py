"""bandwidth="alignment": per-feature bandwidths that align the product kernel with y's."""

import numpy as np
import pytest
from scipy.optimize import approx_fprime

from pkex_select import HSICShapleySelector, MMDShapleyAttributor
from pkex_select import _bandwidth_alignment as alignment
from pkex_select.kernels import factor_of_difference, gamma_from_bandwidth, kernel_distances

rng = np.random.default_rng(3)
KERNELS = ["rbf", "laplacian", "cauchy", "rbf", "delta"]


def _data(n=60):
    X = rng.standard_normal((n, 5))
    X[:, 4] = rng.integers(0, 3, n)
    y = np.sin(X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.standard_normal(n)
    return X, np.exp(-(np.subtract.outer(y, y) ** 2))


def _loss(monkeypatch, X, target_gram, gammas, align_categories=False):
    """The objective aligned_bandwidths hands to the optimiser."""
    captured = {}

    def capture(function, start, **options):
        captured["function"], captured["start"] = function, start
        return type("Result", (), {"x": start})

    monkeypatch.setattr(alignment, "minimize", capture)
    alignment.aligned_bandwidths(X, KERNELS, np.ones(5), gammas, target_gram, align_categories)
    # The objective takes the columns in their canonical order; these take them in X's.
    order = alignment.canonical_order(X, KERNELS, np.arange(5 if align_categories else 4))
    inverse = np.argsort(order)

    def in_column_order(log_gammas):
        value, gradient = captured["function"](log_gammas[order])
        return value, gradient[inverse]

    return in_column_order, captured["start"][inverse]


def _direct_loss(X, target_gram, log_gammas, align_categories=False):
    """-log of the centred alignment, from dense Gram matrices; an aligned delta column's
    factor is exp(-gamma [a != b])."""
    K = np.ones((X.shape[0], X.shape[0]))
    for j, kernel in enumerate(KERNELS):
        diff = X[:, None, j] - X[None, :, j]
        if kernel == "delta" and align_categories:
            K *= np.exp(-np.exp(log_gammas[j]) * (diff != 0))
            continue
        gamma = np.exp(log_gammas[j]) if kernel != "delta" else 1.0
        K *= factor_of_difference(diff, kernel, gamma)
    H = np.eye(X.shape[0]) - 1.0 / X.shape[0]
    centred, centred_target = H @ K @ H, H @ target_gram @ H
    return -np.log(np.sum(centred * centred_target) / np.linalg.norm(centred))


def test_the_loss_is_minus_the_log_alignment_plus_the_narrowness_penalty(monkeypatch):
    X, target_gram = _data()
    gammas = np.array([0.5, 1.0, 0.7, 0.5, 1.0])
    loss, start = _loss(monkeypatch, X, target_gram, gammas)
    point = start + rng.normal(scale=0.3, size=start.size)
    penalty = sum(
        alignment._PENALTY
        * np.exp(point[j])
        * np.mean(
            kernel_distances(X[:, None, j] - X[None, :, j], KERNELS[j])[
                np.triu_indices(X.shape[0], 1)
            ]
        )
        for j in range(4)
    )
    expected = _direct_loss(X, target_gram, np.r_[point, 0.0]) + penalty
    np.testing.assert_allclose(loss(point)[0], expected, rtol=1e-12)


def test_an_aligned_categorical_column_is_exp_of_minus_gamma_where_values_differ(monkeypatch):
    X, target_gram = _data()
    gammas = np.array([0.5, 1.0, 0.7, 0.5, 1.0])
    loss, start = _loss(monkeypatch, X, target_gram, gammas, align_categories=True)
    assert start.size == 5
    point = start + rng.normal(scale=0.3, size=start.size)
    distances = [kernel_distances(X[:, None, j] - X[None, :, j], KERNELS[j]) for j in range(4)] + [
        X[:, None, 4] != X[None, :, 4]
    ]
    upper = np.triu_indices(X.shape[0], 1)
    penalty = sum(
        alignment._PENALTY * np.exp(point[j]) * np.mean(distances[j][upper]) for j in range(5)
    )
    expected = _direct_loss(X, target_gram, point, align_categories=True) + penalty
    np.testing.assert_allclose(loss(point)[0], expected, rtol=1e-12)


def test_an_identifier_is_widened_to_a_factor_near_one():
    X, target_gram = _data(200)
    X[:, 4] = np.arange(200)
    bandwidths, mismatch = alignment.aligned_bandwidths(
        X, KERNELS, np.ones(5), np.array([0.5, 1.0, 0.7, 0.5, 1.0]), target_gram, True
    )
    assert mismatch[4] > 0.5 and np.all(mismatch[:4] == 0)
    _, fixed = alignment.aligned_bandwidths(
        X, KERNELS, np.ones(5), np.array([0.5, 1.0, 0.7, 0.5, 1.0]), target_gram
    )
    np.testing.assert_array_equal(fixed, 0.0)


@pytest.mark.parametrize("align_categories", [False, True])
def test_the_gradient_matches_finite_differences(monkeypatch, align_categories):
    X, target_gram = _data()
    loss, start = _loss(
        monkeypatch, X, target_gram, np.array([0.5, 1.0, 0.7, 0.5, 1.0]), align_categories
    )
    for _ in range(3):
        point = start + rng.normal(scale=0.5, size=start.size)
        numeric = approx_fprime(point, lambda p: loss(p)[0], 1e-7)
        np.testing.assert_allclose(loss(point)[1], numeric, rtol=1e-4, atol=1e-8)


def test_irrelevant_features_are_widened():
    n = 300
    X = rng.standard_normal((n, 6))
    y = X[:, 0] + np.tanh(2 * X[:, 1]) + 0.2 * rng.standard_normal(n)
    fitted = HSICShapleySelector(2, bandwidth="alignment", scales=[1], random_state=0).fit(X, y)
    median = HSICShapleySelector(2, bandwidth="median").fit(X, y).bandwidths_
    ratio = fitted.bandwidths_ / median
    assert np.all(ratio[2:] > 5 * ratio[:2].max())
    assert set(fitted.get_support(indices=True)) == {0, 1}
    np.testing.assert_allclose(
        fitted.gammas_, gamma_from_bandwidth("rbf", fitted.bandwidths_), rtol=1e-15
    )


def test_more_rows_than_the_subsample_are_drawn_by_random_state():
    X = rng.standard_normal((700, 3))
    y = X[:, 0] + 0.1 * rng.standard_normal(700)
    first = HSICShapleySelector(1, bandwidth="alignment", random_state=1).fit(X, y).bandwidths_
    again = HSICShapleySelector(1, bandwidth="alignment", random_state=1).fit(X, y).bandwidths_
    other = HSICShapleySelector(1, bandwidth="alignment", random_state=2).fit(X, y).bandwidths_
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    assert alignment.alignment_rows(700, 3, 0).size == 600
    assert alignment.alignment_rows(10_000, 100, 0).size < 600  # the pair budget


def test_categorical_and_constant_columns_keep_their_bandwidth():
    n = 200
    X = np.column_stack([rng.standard_normal(n), np.ones(n), rng.integers(0, 3, n)])
    y = X[:, 0] + X[:, 2] + 0.1 * rng.standard_normal(n)
    fitted = HSICShapleySelector(
        2, bandwidth="alignment", categorical_features=[2], scales=[1], random_state=0
    ).fit(X, y)
    assert fitted.bandwidths_[1] == 1.0 and fitted.bandwidths_[2] == 1.0
    assert fitted.shapley_values_[1] == 0.0
    assert set(fitted.get_support(indices=True)) == {0, 2}


def test_class_labels_and_the_attributor():
    n = 200
    X = rng.standard_normal((n, 4))
    labels = np.where(X[:, 1] > 0, "yes", "no")
    selector = HSICShapleySelector(1, bandwidth="alignment", random_state=0).fit(X, labels)
    assert selector.get_support(indices=True).tolist() == [1]
    samples = np.repeat([0, 1], n // 2)
    shifted = X + samples[:, None] * np.r_[0, 0, 1.5, 0]
    attributor = MMDShapleyAttributor(1, bandwidth="alignment", random_state=0).fit(
        shifted, samples
    )
    assert attributor.get_support(indices=True).tolist() == [2]


@pytest.mark.parametrize("options", [{"alpha": 0.05}, {"n_permutations": 19}])
def test_tests_refuse_bandwidths_chosen_with_y(options):
    X = rng.standard_normal((50, 3))
    with pytest.raises(ValueError, match="bandwidth='alignment' chooses the bandwidths with y"):
        HSICShapleySelector(bandwidth="alignment", **options).fit(X, X[:, 0])


def _objective_inputs(n_rows, kernels, seed):
    """Random rows as aligned_bandwidths hands them to the objective, with a delta column
    that is not aligned (its factors fixed) and a target's centred Gram matrix."""
    generator = np.random.default_rng(seed)
    first, second = np.triu_indices(n_rows, k=1)
    X = generator.standard_normal((n_rows, len(kernels)))
    for j, kernel in enumerate(kernels):
        if kernel == "delta":
            X[:, j] = generator.integers(0, 3, n_rows)
    y = np.sin(X[:, 0]) + generator.standard_normal(n_rows)
    target = np.exp(-(np.subtract.outer(y, y) ** 2))
    target -= target.mean(axis=0)
    target -= target.mean(axis=1)[:, None]
    codes = generator.integers(0, 4, n_rows)
    fixed = (codes[first] == codes[second]).astype(np.float64)
    return (X, kernels, fixed, target[first, second], np.trace(target)), generator


@pytest.mark.parametrize(
    "kernels", [["rbf"] * 6, ["cauchy", "delta", "laplacian", "rbf", "cauchy", "laplacian"]]
)
def test_the_compiled_objective_is_its_numpy_twin(kernels):
    pytest.importorskip("numba")
    inputs, generator = _objective_inputs(90, kernels, 4)
    numpy_twin = alignment.PenalisedLogAlignment(*inputs, compiled=False)
    compiled = alignment.PenalisedLogAlignment(*inputs, compiled=True)
    for _ in range(5):
        point = np.log(generator.uniform(0.01, 2.0, len(kernels)) / len(kernels))
        value, gradient = compiled(point)
        expected_value, expected_gradient = numpy_twin(point)
        np.testing.assert_allclose(value, expected_value, rtol=1e-12)
        scale = np.abs(expected_gradient).max()
        np.testing.assert_allclose(gradient, expected_gradient, rtol=0, atol=1e-12 * scale)


def test_the_compiled_objective_does_not_depend_on_the_number_of_threads(monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setattr(alignment, "_CHUNK_PAIRS", 97)  # many chunks, a short last one
    monkeypatch.setattr(alignment, "_MIN_PARALLEL_PAIR_FEATURES", 0)
    inputs, generator = _objective_inputs(120, ["cauchy", "delta", "laplacian", "rbf"], 5)
    objective = alignment.PenalisedLogAlignment(*inputs, compiled=True)
    point = np.log(generator.uniform(0.01, 2.0, 4) / 4)
    alone = objective(point)
    for threads in (2, 3):
        with objective.workers(threads):
            assert objective._executor is not None
            shared = objective(point)
        assert shared[0] == alone[0]
        np.testing.assert_array_equal(shared[1], alone[1])


@pytest.mark.parametrize("slow_anova", [False, True])
def test_a_fit_on_two_threads_aligns_the_same_bandwidths(monkeypatch, slow_anova):
    """n_jobs=2 shares the alignment's sweeps among threads and computes the ANOVA game and
    the statistic beside the model game. The bandwidths and the statistic are the same bit
    for bit; the values to rounding (the explanation's chunks of rows follow the workers).
    With a slow ANOVA game the statistic is computed while it runs (the path a large fit
    takes), which once chunked it by the workers and changed its last bits."""
    monkeypatch.setattr(alignment, "_MIN_PARALLEL_PAIR_FEATURES", 0)
    if slow_anova:
        import time

        from pkex_select._selection import ShapleySelectorBase

        anova_values = ShapleySelectorBase._anova_values

        def slow(self, *args, **kwargs):
            time.sleep(0.5)
            return anova_values(self, *args, **kwargs)

        monkeypatch.setattr(ShapleySelectorBase, "_anova_values", slow)
    X = rng.standard_normal((250, 6))
    y = np.abs(X[:, 0]) + X[:, 1] + 0.3 * rng.standard_normal(250)
    one = HSICShapleySelector(2, random_state=0, n_jobs=1).fit(X, y)
    two = HSICShapleySelector(2, random_state=0, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(two.bandwidths_, one.bandwidths_)
    assert two.hsic_ == one.hsic_
    np.testing.assert_allclose(two.shapley_values_, one.shapley_values_, rtol=1e-12)


def test_the_stopping_tolerance_leaves_the_selection_where_a_converged_run_puts_it(monkeypatch):
    """The alignment stops at a relative loss change of _FTOL, before its cap of 100
    iterations; run to convergence instead, the values move by less than 1% of the
    largest and the ranking of the relevant features is the same."""
    from sklearn.datasets import make_friedman1

    X, y = make_friedman1(400, 12, noise=1.0, random_state=0)
    iterations = []
    minimize = alignment.minimize

    def counted(*args, **kwargs):
        result = minimize(*args, **kwargs)
        iterations.append(result.nit)
        return result

    monkeypatch.setattr(alignment, "minimize", counted)
    stopped = HSICShapleySelector(5, random_state=0).fit(X, y).shapley_values_
    monkeypatch.setattr(alignment, "_FTOL", 1e-13)
    converged = HSICShapleySelector(5, random_state=0).fit(X, y).shapley_values_
    assert iterations[0] < 100 and iterations[0] < iterations[1]
    np.testing.assert_allclose(stopped, converged, rtol=0, atol=1e-2 * converged.max())
    assert list(np.argsort(-stopped)[:5]) == list(np.argsort(-converged)[:5])
