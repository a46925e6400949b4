"""Renamed parameters keep working, with a FutureWarning that says how to write them now."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_friedman1

from pkex_select import (
    HSICShapleySelector,
    MMDShapleyAttributor,
    hsic_shapley_values,
    mmd_shapley_values,
)
from pkex_select.kernels import gram_matrices


@pytest.fixture(scope="module")
def data():
    return make_friedman1(n_samples=80, n_features=5, random_state=0)


@pytest.mark.parametrize("Estimator", [HSICShapleySelector, MMDShapleyAttributor])
def test_estimator_is_now_estimate(Estimator, data):
    X, y = data
    if Estimator is MMDShapleyAttributor:
        y = np.arange(len(y)) % 2
    now = Estimator(estimate="unbiased", random_state=0).fit(X, y)
    with pytest.warns(FutureWarning, match="Use estimate='unbiased'"):
        before = clone(Estimator(estimator="unbiased", random_state=0)).fit(X, y)
    np.testing.assert_array_equal(before.shapley_values_, now.shapley_values_)
    assert before.estimate_ == "unbiased"
    with pytest.warns(FutureWarning, match="estimator_ was renamed estimate_"):
        assert before.estimator_ == "unbiased"


def test_the_functions_take_the_old_name_too(data):
    X, y = data
    K = gram_matrices(X, "rbf", 0.5)
    L = gram_matrices(y[:, None], "rbf", 0.5)[0]
    with pytest.warns(FutureWarning, match="estimator was renamed estimate") as caught:
        old = hsic_shapley_values(K, L, estimator="unbiased")
    assert caught[0].filename == __file__  # the caller's line, not a wrapper's
    np.testing.assert_array_equal(old, hsic_shapley_values(K, L, estimate="unbiased"))
    labels = np.arange(len(y)) % 2
    with pytest.warns(FutureWarning):
        old = mmd_shapley_values(K, labels, estimator="block", block_size=8, random_state=0)
    new = mmd_shapley_values(K, labels, estimate="block", block_size=8, random_state=0)
    np.testing.assert_array_equal(old, new)


def test_the_new_name_alone_warns_nothing(data, recwarn):
    HSICShapleySelector(estimate="biased", random_state=0).fit(*data)
    assert not [w for w in recwarn if issubclass(w.category, FutureWarning)]
