"""MMD Shapley values and MMDShapleyAttributor."""

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from pkex_select import MMDShapleyAttributor, attribute_shift, mmd_shapley_values
from pkex_select.kernels import gram_matrices
from tests.references import SKLEARN_CHECK_BUGS, shapley_from_coalition_values

rng = np.random.default_rng(0)


def mmd2(K, y, estimator):
    """MMD^2 summed over pairs of samples, straight from its definition."""
    total = 0.0
    for p, q in itertools.combinations(np.unique(y), 2):
        P, Q = y == p, y == q
        Kpp, Kqq, Kpq = K[np.ix_(P, P)], K[np.ix_(Q, Q)], K[np.ix_(P, Q)]
        if estimator == "biased":
            total += Kpp.mean() + Kqq.mean() - 2 * Kpq.mean()
        else:
            n_p, n_q = P.sum(), Q.sum()
            total += (
                (Kpp.sum() - np.trace(Kpp)) / (n_p * (n_p - 1))
                + (Kqq.sum() - np.trace(Kqq)) / (n_q * (n_q - 1))
                - 2 * Kpq.mean()
            )
    return total


@pytest.mark.parametrize("estimator", ["biased", "unbiased"])
@pytest.mark.parametrize("labels", [[0] * 9 + [1] * 12, list("aabbbcccc") * 2 + ["a", "c", "c"]])
def test_matches_enumeration_and_adds_up_to_mmd(estimator, labels):
    y = np.array(labels)
    X = rng.normal(size=(len(y), 5)) + (y == y[0])[:, None] * [0.8, 0, 0, 0.3, 0]
    K = gram_matrices(X, "rbf", 0.3)
    d = K.shape[0]
    game = np.array(
        [
            mmd2(
                np.prod(K[[j for j in range(d) if m >> j & 1]], axis=0)
                if m
                else np.ones(K.shape[1:]),
                y,
                estimator,
            )
            for m in range(2**d)
        ]
    )
    expected = shapley_from_coalition_values(game, d)
    values = mmd_shapley_values(K, y, estimate=estimator)
    scale = np.abs(game).max()
    np.testing.assert_allclose(values, expected, rtol=0, atol=1e-12 * scale)
    assert abs(game[0]) < 1e-14 and abs(values.sum() - game[-1]) < 1e-12 * scale


def test_attributor_matches_the_gram_function_and_the_convenience():
    X = rng.normal(size=(60, 4))
    X[30:, 0] += 1.0
    y = np.repeat(["ref", "new"], 30)
    Xs = (X - X.mean(0)) / X.std(0)
    for estimator in ["biased", "unbiased"]:
        attributor = MMDShapleyAttributor(
            estimate=estimator, scales=[1], value_function="baseline"
        ).fit(X, y)
        expected = mmd_shapley_values(
            gram_matrices(Xs, "rbf", attributor.gammas_), y, estimate=estimator
        )
        np.testing.assert_allclose(attributor.shapley_values_, expected, rtol=1e-11, atol=1e-16)
        assert np.isclose(attributor.mmd_, expected.sum())
    assert list(attributor.classes_) == ["new", "ref"]
    shifted = attribute_shift(
        X[:30], X[30:], estimate="unbiased", scales=[1], value_function="baseline"
    )
    np.testing.assert_allclose(shifted.shapley_values_, attributor.shapley_values_, rtol=1e-12)


def test_finds_a_mean_shift_and_a_variance_change_and_spares_null_features():
    n = 300
    reference = rng.normal(size=(n, 10))
    current = rng.normal(size=(n, 10))
    current[:, 2] += 0.6  # mean shift
    current[:, 7] *= 1.8  # variance change, same mean
    attributor = attribute_shift(
        reference, current, n_features_to_select=2, n_permutations=299, random_state=0
    )
    assert set(attributor.get_support(indices=True)) == {2, 7}
    assert attributor.pvalue_ < 0.01
    assert attributor.pvalues_[2] < 0.01 and attributor.pvalues_[7] < 0.01
    null = np.delete(attributor.pvalues_, [2, 7])
    assert np.mean(null < 0.05) <= 0.25


def test_a_null_comparison_is_not_significant():
    X = rng.normal(size=(200, 6))
    y = np.repeat([0, 1], 100)
    attributor = MMDShapleyAttributor(n_permutations=199, random_state=2).fit(X, y)
    assert attributor.pvalue_ > 0.05
    assert np.mean(attributor.pvalues_ < 0.05) <= 1 / 3


def test_correlation_change_is_shared_by_both_features():
    n = 400
    reference = rng.normal(size=(n, 4))
    z = rng.normal(size=n)
    current = rng.normal(size=(n, 4))
    current[:, 0] = z
    current[:, 1] = z + 0.2 * rng.normal(size=n)  # same marginals, new dependence
    current[:, 1] /= current[:, 1].std()
    attributor = attribute_shift(reference, current, n_features_to_select=2)
    assert set(attributor.get_support(indices=True)) == {0, 1}


def test_three_samples_are_the_sum_over_pairs_of_samples():
    X = rng.normal(size=(90, 3))
    X[60:, 1] += 1.0
    y = np.repeat(["a", "b", "c"], 30)
    K = gram_matrices((X - X.mean(0)) / X.std(0), "rbf", 0.5)
    total = mmd_shapley_values(K, y)
    by_pair = sum(
        mmd_shapley_values(K[:, mask][:, :, mask], y[mask])
        for p, q in itertools.combinations("abc", 2)
        for mask in [np.isin(y, [p, q])]
    )
    # The statistic is the sum of the two-sample statistics, so (linearity) are its values.
    np.testing.assert_allclose(total.sum(), mmd2(np.prod(K, axis=0), y, "biased"), rtol=1e-12)
    np.testing.assert_allclose(total, by_pair, rtol=1e-12)


def test_pandas_output_keeps_names():
    X = pd.DataFrame(rng.normal(size=(80, 3)), columns=["age", "income", "score"])
    X.loc[40:, "income"] += 2.0
    y = np.repeat(["2023", "2024"], 40)
    attributor = MMDShapleyAttributor(n_features_to_select=1).set_output(transform="pandas")
    out = attributor.fit_transform(X, y)
    assert list(out.columns) == ["income"]


@pytest.mark.parametrize(
    "X, y, message",
    [
        (np.array([[np.inf, 0.0]] + [[0.0, 1.0]] * 5), [0, 0, 0, 1, 1, 1], "NaN|infinity"),
        (np.ones((5, 2)), [0, 0, 0, 0, 1], "at least 2 rows"),
        (np.ones((5, 2)), [3] * 5, "single sample"),
        (rng.normal(size=(6, 2)), rng.normal(size=6), "at least 2 rows"),
    ],
)
def test_bad_input(X, y, message):
    with pytest.raises(ValueError, match=message):
        MMDShapleyAttributor().fit(X, y)


def test_bad_convenience_input():
    with pytest.raises(ValueError, match="same number of columns"):
        attribute_shift(np.ones((3, 2)), np.ones((3, 3)))
    with pytest.raises(ValueError, match="same columns"):
        attribute_shift(pd.DataFrame({"a": [1.0, 2.0]}), pd.DataFrame({"b": [1.0, 2.0]}))


# With string and categorical input declared (text and category columns get the delta
# kernel), these checks draw y with a label on a single row, which MMD refuses: a sample of
# one row has no spread to compare.
_ONE_ROW_SAMPLES = "a sample label on one row: MMD needs at least 2 rows per sample"
_EXPECTED_FAILURES = {
    check: _ONE_ROW_SAMPLES
    for check in (
        "check_dont_overwrite_parameters",
        "check_f_contiguous_array_estimator",
        "check_methods_sample_order_invariance",
        "check_methods_subset_invariance",
        "check_dict_unchanged",
        "check_fit2d_predict1d",
    )
} | SKLEARN_CHECK_BUGS


@parametrize_with_checks(
    [
        MMDShapleyAttributor(),
        MMDShapleyAttributor(estimate="unbiased", n_permutations=3, random_state=0),
    ],
    expected_failed_checks=lambda estimator: _EXPECTED_FAILURES,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_a_continuous_y_gets_a_short_error_with_the_count_and_examples():
    X = rng.normal(size=(10_000, 2))
    with pytest.raises(ValueError, match="10000 of the 10000 labels have fewer") as error:
        MMDShapleyAttributor().fit(X, rng.normal(size=10_000))
    assert len(str(error.value)) < 400 and "and 9995 more" in str(error.value)


def test_attribute_shift_names_an_empty_sample():
    X = rng.normal(size=(20, 3))
    with pytest.raises(ValueError, match="The second sample has no rows"):
        attribute_shift(X, X[:0])
    with pytest.raises(ValueError, match="The first sample has no rows"):
        attribute_shift(X[:0], X)


def test_attribute_shift_refuses_a_sparse_sample_with_what_to_do():
    import scipy.sparse

    X = rng.normal(size=(20, 3))
    with pytest.raises(TypeError, match=r"The first sample is a sparse matrix.*toarray"):
        attribute_shift(scipy.sparse.csr_matrix(X), X)
    with pytest.raises(TypeError, match=r"The second sample is a sparse matrix.*toarray"):
        attribute_shift(X, scipy.sparse.csr_array(X))


def test_identical_samples_name_no_drifting_feature():
    import pandas as pd

    rng = np.random.default_rng(0)
    P = pd.DataFrame(rng.normal(size=(60, 4)), columns=list("abcd"))
    with pytest.warns(UserWarning, match="Only 0 of the 1 features asked for"):
        shift = attribute_shift(P, P.copy())
    assert shift.get_support().sum() == 0
    # Two draws of one distribution: whatever is selected has a positive value.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        other = attribute_shift(P, pd.DataFrame(rng.normal(size=(60, 4)), columns=list("abcd")))
    assert np.all(other.shapley_values_[other.get_support()] > 0)


@pytest.mark.parametrize("as_text", ["{:.3f}".format, str])
def test_a_column_of_numbers_in_one_sample_and_text_in_the_other_is_refused(as_text):
    import pandas as pd

    rng = np.random.default_rng(1)
    P = pd.DataFrame(rng.normal(size=(40, 3)), columns=["a", "b", "c"])
    Q = pd.DataFrame(rng.normal(size=(40, 3)), columns=["a", "b", "c"])
    with pytest.raises(ValueError, match="'b' hold numbers in one sample and text"):
        attribute_shift(P, Q.assign(b=Q.b.map(as_text)))
    with pytest.raises(ValueError, match="'b' hold numbers in one sample and text"):
        attribute_shift(P.assign(b=P.b.map(as_text)), Q)
