"""HSIC Shapley values and HSICShapleySelector."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from pkex_select import HSICShapleySelector, hsic_shapley_values
from pkex_select._plan import SampleBlocks
from pkex_select.kernels import gram_matrices
from tests.references import SKLEARN_CHECK_BUGS, shapley_from_coalition_values

rng = np.random.default_rng(0)


def biased_hsic(K, L):
    n = len(L)
    H = np.eye(n) - 1.0 / n
    return np.trace(K @ H @ L @ H) / (n - 1) ** 2


def unbiased_hsic(K, L):
    n = len(L)
    Kt, Lt = K - np.diag(np.diag(K)), L - np.diag(np.diag(L))
    return (
        np.trace(Kt @ Lt)
        + Kt.sum() * Lt.sum() / ((n - 1) * (n - 2))
        - 2.0 / (n - 2) * Kt.sum(axis=0) @ Lt.sum(axis=1)
    ) / (n * (n - 3))


def enumerated_values(K, statistic):
    d = K.shape[0]
    values = np.empty(2**d)
    for mask in range(2**d):
        members = [j for j in range(d) if mask >> j & 1]
        values[mask] = statistic(np.prod(K[members], axis=0) if members else np.ones(K.shape[1:]))
    return shapley_from_coalition_values(values, d), values


@pytest.fixture(scope="module")
def grams():
    X = rng.normal(size=(24, 5))
    y = X[:, 0] * X[:, 1] + np.sin(X[:, 2]) + 0.1 * rng.normal(size=24)
    return gram_matrices(X, "rbf", 0.4), gram_matrices(y[:, None], "rbf", 0.5)[0]


@pytest.mark.parametrize(
    "estimator, statistic", [("biased", biased_hsic), ("unbiased", unbiased_hsic)]
)
def test_matches_enumeration_and_adds_up_to_hsic(grams, estimator, statistic):
    K, L = grams
    expected, game = enumerated_values(K, lambda Km: statistic(Km, L))
    values = hsic_shapley_values(K, L, estimate=estimator)
    scale = np.abs(game).max()
    np.testing.assert_allclose(values, expected, rtol=0, atol=1e-12 * scale)
    assert abs(game[0]) < 1e-15  # v(empty) = 0: centring removes constants
    assert abs(values.sum() - game[-1]) < 1e-12 * scale


def test_block_estimator_matches_enumeration(grams):
    K, L = grams
    members = SampleBlocks(24, 6, 2, np.random.RandomState(3), pair_bytes=8).members

    def block_statistic(Km):  # the mean of the blocks' unbiased HSIC
        return np.mean([unbiased_hsic(Km[np.ix_(m, m)], L[np.ix_(m, m)]) for m in members])

    expected, game = enumerated_values(K, block_statistic)
    values = hsic_shapley_values(
        K, L, estimate="block", block_size=6, n_repetitions=2, random_state=3
    )
    np.testing.assert_allclose(values, expected, rtol=0, atol=1e-12 * np.abs(game).max())


def test_constant_feature_is_a_dummy(grams):
    K, L = grams
    K = np.concatenate([K, np.ones((1,) + K.shape[1:])])
    assert hsic_shapley_values(K, L)[-1] == 0.0
    X = np.column_stack([rng.normal(size=(50, 3)), np.full(50, 7.0)])
    selector = HSICShapleySelector().fit(X, X[:, 0] ** 2)
    assert selector.shapley_values_[-1] == 0.0


def test_selector_is_the_gram_matrix_function_on_standardised_data():
    # One path for both: the same statistic, plan and permutations from the same seed.
    X = rng.normal(size=(60, 4)) * [1, 10, 100, 0.1]
    y = X[:, 1] ** 2 + 0.1 * rng.normal(size=60)
    block = {"block_size": 12, "n_repetitions": 2, "random_state": 5}
    for estimator, params in [("biased", {}), ("unbiased", {}), ("block", block)]:
        selector = HSICShapleySelector(
            estimate=estimator, scales=[1], value_function="baseline", **params
        ).fit(X, y)
        Xs = (X - X.mean(0)) / X.std(0)
        ys = (y - y.mean()) / y.std()
        K = gram_matrices(Xs, "rbf", selector.gammas_)
        L = gram_matrices(ys[:, None], "rbf", 1 / (2 * selector.target_bandwidth_[0] ** 2))[0]
        expected = hsic_shapley_values(K, L, estimate=estimator, **params)
        np.testing.assert_allclose(selector.shapley_values_, expected, rtol=1e-11, atol=1e-16)
        assert np.isclose(selector.hsic_, selector.shapley_values_.sum(), rtol=1e-12)
    # Rankings do not follow the units of the features.
    rescaled = HSICShapleySelector().fit(X * [1e3, 1e-3, 1, 1], y)
    np.testing.assert_allclose(
        rescaled.shapley_values_, HSICShapleySelector().fit(X, y).shapley_values_, rtol=1e-9
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_finds_main_effects(seed):
    data = np.random.default_rng(seed)
    X = data.normal(size=(400, 40))
    y = np.sin(2 * X[:, 3]) + X[:, 17] ** 2
    selector = HSICShapleySelector(n_features_to_select=2).fit(X, y)
    assert set(selector.get_support(indices=True)) == {3, 17}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_finds_an_interaction_that_marginal_filters_miss(seed):
    from sklearn.feature_selection import f_classif, mutual_info_classif

    data = np.random.default_rng(seed)
    X = data.normal(size=(600, 20))
    y = np.sign(X[:, 5] * X[:, 9])
    selector = HSICShapleySelector(n_features_to_select=2).fit(X, y)
    assert set(selector.get_support(indices=True)) == {5, 9}
    # The marginal filters do not rank 5 and 9 on top (they carry no main effect).
    f_top = set(np.argsort(-f_classif(X, y)[0])[:2])
    mi_top = set(np.argsort(-mutual_info_classif(X, y, random_state=seed))[:2])
    assert f_top != {5, 9} and mi_top != {5, 9}


def test_permutation_pvalues():
    X = rng.normal(size=(150, 6))
    y = X[:, 0] + 0.5 * rng.normal(size=150)
    selector = HSICShapleySelector(
        n_permutations=199, random_state=0, value_function="baseline"
    ).fit(X, y)
    assert selector.pvalues_.shape == (6,)
    assert selector.pvalues_[0] == 1 / 200 and selector.pvalue_ == 1 / 200
    assert np.all(selector.pvalues_[1:] > 0.01)
    # Each permutation is the statistic of the permuted target: check one by refitting. With
    # fewer permutations than samples they are circular shifts along a random order.
    from pkex_select._shifts import draw_shifts, shift_permutations

    orders = shift_permutations(*draw_shifts(150, 1, np.random.RandomState(0)))[1]
    refit = HSICShapleySelector(value_function="baseline").fit(X, y[orders])
    reference = HSICShapleySelector(
        n_permutations=1, random_state=0, value_function="baseline"
    ).fit(X, y)
    permuted_exceeds = refit.shapley_values_ >= reference.shapley_values_
    np.testing.assert_array_equal(reference.pvalues_, np.where(permuted_exceeds, 1.0, 0.5))
    # The null distribution is kept: the values of every permutation, and what p counts.
    np.testing.assert_allclose(
        reference.null_distribution_[0], refit.shapley_values_, rtol=1e-12, atol=1e-17
    )
    assert selector.null_distribution_.shape == (199, 6)
    counts = np.sum(selector.null_distribution_ >= selector.shapley_values_, axis=0)
    np.testing.assert_array_equal(selector.pvalues_, (1 + counts) / 200)


def test_permutation_ties_count_up_to_rounding():
    from pkex_select._pvalues import permutation_pvalues

    observed = 0.1 + 0.2  # a permutation reproducing it by another summation order
    values = np.array([[observed, 1.0], [0.3, 1.0 - 1e-9], [0.29, 1.0 - 1e-9]])
    np.testing.assert_array_equal(permutation_pvalues(values), [2 / 3, 1 / 3])


def test_permutation_pvalues_are_uniform_ish_under_the_null():
    X = rng.normal(size=(80, 30))
    y = rng.normal(size=80)
    selector = HSICShapleySelector(n_permutations=99, random_state=1).fit(X, y)
    assert 0.0 < np.mean(selector.pvalues_ <= 0.1) < 0.3


def test_selection_by_count_fraction_and_threshold():
    X = rng.normal(size=(100, 7))
    y = X[:, 0] + X[:, 1] ** 2
    fitted = HSICShapleySelector(n_features_to_select=0.3).fit(X, y)
    assert fitted.get_support().sum() == 3  # ceil(0.3 * 7)
    assert sorted(fitted.ranking_) == list(range(1, 8))
    assert HSICShapleySelector(n_features_to_select=10).fit(X, y).get_support().all()
    cut = np.sort(fitted.shapley_values_)[-2]
    by_threshold = HSICShapleySelector(threshold=cut).fit(X, y)
    assert by_threshold.get_support().sum() == 2
    np.testing.assert_array_equal(fitted.scores_, fitted.shapley_values_)


def test_parallel_jobs_and_block_estimator():
    # One seed for both: without one, the subsamples of the model game's checks (200 of
    # these 300 rows) are drawn afresh by each fit, and a check near its bar may flip.
    X = rng.normal(size=(300, 5))
    y = np.cos(X[:, 2]) + 0.1 * rng.normal(size=300)
    one = HSICShapleySelector(n_jobs=1, random_state=0).fit(X, y)
    two = HSICShapleySelector(n_jobs=2, random_state=0).fit(X, y)
    np.testing.assert_allclose(one.shapley_values_, two.shapley_values_, rtol=1e-12)
    block = HSICShapleySelector(estimate="block", random_state=0).fit(X, y)
    assert block.ranking_[2] == 1


def test_dask_backend():
    distributed = pytest.importorskip("distributed")
    from joblib import parallel_config

    X = rng.normal(size=(200, 4))
    y = X[:, 1] ** 2
    expected = HSICShapleySelector().fit(X, y).shapley_values_
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        with distributed.Client(cluster), parallel_config(backend="dask"):
            values = HSICShapleySelector(n_jobs=2).fit(X, y).shapley_values_
    np.testing.assert_allclose(values, expected, rtol=1e-12)


def test_a_process_backend_around_a_fit_runs_its_chunks_in_threads():
    """parallel_backend("loky") around a fit (as grid searches are wrapped): the chunks stay
    in this process, where the compiled kernels are loaded, and the values are the same."""
    import os

    from joblib import parallel_backend

    from pkex_select._scheduling import run_tasks

    with parallel_backend("loky", n_jobs=2):
        pids = set(run_tasks(lambda _: os.getpid(), range(8)))
        X = rng.normal(size=(200, 4))
        values = HSICShapleySelector().fit(X, X[:, 1] ** 2).shapley_values_
    assert pids == {os.getpid()}
    expected = HSICShapleySelector().fit(X, X[:, 1] ** 2).shapley_values_
    np.testing.assert_allclose(values, expected, rtol=1e-12)


def test_pipeline_grid_search_and_pandas_output():
    X = pd.DataFrame(rng.normal(size=(120, 6)), columns=[f"g{j}" for j in range(6)])
    y = (X["g2"] - X["g4"] > 0).astype(int)
    pipe = Pipeline([("select", HSICShapleySelector()), ("svc", SVC())])
    search = GridSearchCV(pipe, {"select__n_features_to_select": [1, 2, 3]}, cv=3).fit(X, y)
    assert search.best_params_["select__n_features_to_select"] >= 2
    selector = HSICShapleySelector(n_features_to_select=2).set_output(transform="pandas")
    out = selector.fit(X, y).transform(X)
    assert list(out.columns) == ["g2", "g4"]
    assert list(selector.get_feature_names_out()) == ["g2", "g4"]


def test_categorical_columns_use_the_delta_kernel():
    n = 200
    colour = rng.choice(["red", "green", "blue"], size=n)
    X = pd.DataFrame({"colour": colour, "noise": rng.normal(size=n)})
    y = (colour == "red").astype(float) + 0.1 * rng.normal(size=n)
    with pytest.raises(ValueError, match="colour.*categorical_features"):
        HSICShapleySelector(categorical_features=None).fit(X, y)
    assert HSICShapleySelector().fit(X, y).kernels_ == ["delta", "rbf"]  # "from_dtype"
    selector = HSICShapleySelector(n_features_to_select=1, categorical_features=["colour"])
    selector.fit(X, y)
    assert selector.kernels_ == ["delta", "rbf"]
    assert list(selector.get_feature_names_out()) == ["colour"]
    by_index = HSICShapleySelector(categorical_features=[0]).fit(X, y)
    np.testing.assert_allclose(by_index.shapley_values_, selector.shapley_values_)


@pytest.mark.parametrize(
    "X, y, error, message",
    [
        (np.array([[np.nan, 1.0], [1.0, 2.0], [0.0, 1.0]]), [0, 1, 0], ValueError, "NaN"),
        (np.ones((1, 3)), [1.0], ValueError, "minimum of 2"),
        (rng.normal(size=(10, 2)), np.ones(10), ValueError, "constant"),
        (
            np.array([["a", "1"], ["b", "2"], ["c", "3"]], dtype=object),
            [0, 1, 0],
            ValueError,
            "categorical_features",
        ),
        (scipy.sparse.csr_matrix(np.eye(5)), np.arange(5), TypeError, "(?i)sparse"),
        (rng.normal(size=(3, 2)), [0.0, 1.0, 2.0], ValueError, "at least 4 samples"),
    ],
)
def test_bad_input(X, y, error, message):
    estimator = "unbiased" if "4 samples" in message else "biased"
    with pytest.raises(error, match=message):
        HSICShapleySelector(estimate=estimator).fit(X, y)


def test_bad_gram_matrices(grams):
    K, L = grams
    with pytest.raises(ValueError, match="shape"):
        hsic_shapley_values(K[0], L)
    with pytest.raises(ValueError, match="unit diagonal"):
        hsic_shapley_values(2 * K, L)
    with pytest.raises(ValueError, match="symmetric"):
        hsic_shapley_values(K, L + np.triu(L, 1))
    with pytest.raises(ValueError, match="estimate"):
        hsic_shapley_values(K, L, estimate="linear")


@parametrize_with_checks(
    [
        HSICShapleySelector(),
        HSICShapleySelector(estimate="unbiased", n_permutations=3, random_state=0),
        HSICShapleySelector(estimate="block", block_size=4, random_state=0),
        HSICShapleySelector(bandwidth="alignment", scales=[1], random_state=0),
    ],
    expected_failed_checks=lambda estimator: SKLEARN_CHECK_BUGS,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def _cached_attributions(folder):
    return {path.parent for path in folder.rglob("output.pkl") if "attribute" in str(path)}


def test_memory_caches_the_ranking_across_selection_parameters(tmp_path):
    from joblib import Memory

    from pkex_select import MMDShapleyAttributor

    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 6))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + 0.2 * rng.normal(size=120)
    plain = HSICShapleySelector(n_permutations=19, random_state=0).fit(X, y)
    for memory in (str(tmp_path / "a"), Memory(tmp_path / "b", verbose=0)):
        folder = tmp_path / ("a" if isinstance(memory, str) else "b")
        fits = [
            HSICShapleySelector(
                k, threshold=t, n_permutations=19, random_state=0, memory=memory, n_jobs=j
            ).fit(X, y)
            for k, t, j in [(2, None, None), (4, None, 2), (1, 0.0, None)]
        ]
        assert len(_cached_attributions(folder)) == 1  # one ranking for three selections
        for fitted in fits:
            np.testing.assert_array_equal(fitted.shapley_values_, plain.shapley_values_)
            np.testing.assert_array_equal(fitted.adjusted_pvalues_, plain.adjusted_pvalues_)
        assert [f.get_support().sum() for f in fits] == [2, 4, (plain.scores_ >= 0).sum()]
        # The default k-fit: the statistic and, beside the model game, the ANOVA game.
        HSICShapleySelector(kernel="laplacian", memory=memory).fit(X, y)
        assert len(_cached_attributions(folder)) == 3
    labels = (y > 0).astype(int)
    MMDShapleyAttributor(1, memory=str(tmp_path / "c")).fit(X, labels)
    MMDShapleyAttributor(3, memory=str(tmp_path / "c")).fit(X, labels)
    assert len(_cached_attributions(tmp_path / "c")) == 1
    with pytest.raises(ValueError, match="'memory' parameter"):
        HSICShapleySelector(memory=3).fit(X, y)


@pytest.mark.parametrize("options", [{}, {"n_permutations": 19}])
def test_memory_reuses_the_ranking_without_a_seed(tmp_path, options):
    """random_state=None, the default: a refit with another k is found in the cache (the
    model game subsamples its 1000 rows from a seed of the data), not drawn again."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(1100, 4))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + 0.2 * rng.normal(size=1100)
    memory = str(tmp_path / "cache")
    first = HSICShapleySelector(1, memory=memory, **options).fit(X, y)
    cached = {path for path in (tmp_path / "cache").rglob("output.pkl")}
    second = HSICShapleySelector(3, memory=memory, **options).fit(X, y)
    assert {path for path in (tmp_path / "cache").rglob("output.pkl")} == cached
    np.testing.assert_array_equal(first.shapley_values_, second.shapley_values_)
    assert second.get_support().sum() == 3
    # Other data, another seed: the cache grows.
    HSICShapleySelector(1, memory=memory, **options).fit(X[:-1], y[:-1])
    assert len(set((tmp_path / "cache").rglob("output.pkl"))) > len(cached)
    # Without memory, random_state=None still draws afresh.
    unseeded = HSICShapleySelector(1).fit(X, y)
    assert not hasattr(HSICShapleySelector(1), "_random_state")
    assert unseeded._random_state is None


@pytest.mark.parametrize("constant", [5.0, 0.0])
def test_a_constant_output_column_does_not_decide_the_target_kernel(constant):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(80, 3))
    continuous = X[:, 0] + 0.1 * rng.normal(size=80)
    labels = (X[:, 1] > 0).astype(int)
    for outputs, kernel in [(continuous, "rbf"), (labels, "delta")]:
        Y = np.column_stack([outputs, np.full(80, constant)])
        fitted = HSICShapleySelector(1, value_function="anova", scales=[1]).fit(X, Y)
        alone = HSICShapleySelector(1, value_function="anova", scales=[1]).fit(X, outputs)
        assert fitted.target_kernel_ == kernel
        np.testing.assert_allclose(fitted.shapley_values_, alone.shapley_values_, rtol=1e-12)


def test_the_fit_runs_blas_on_one_thread(monkeypatch):
    """Its BLAS calls are small: threads would only oversubscribe them."""
    from threadpoolctl import threadpool_info

    from pkex_select import _selection

    seen = []
    original = _selection.ShapleySelectorBase._fit

    def recording(self, X, y):
        seen.extend(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas")
        return original(self, X, y)

    monkeypatch.setattr(_selection.ShapleySelectorBase, "_fit", recording)
    X = np.random.default_rng(0).normal(size=(40, 3))
    HSICShapleySelector(2).fit(X, X[:, 0])
    assert seen and set(seen) == {1}


def test_the_fit_finds_the_thread_pools_once(monkeypatch):
    """The loaded libraries are walked once, not at every fit (a Ctrl-C during the walk is
    lost, and the command line does it with Ctrl-C held back)."""
    import threadpoolctl

    from pkex_select import _scheduling

    _scheduling.blas_controller.cache_clear()
    built = []
    original = threadpoolctl.ThreadpoolController.__init__

    def counting(self, *args, **kwargs):
        built.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(threadpoolctl.ThreadpoolController, "__init__", counting)
    X = np.random.default_rng(0).normal(size=(40, 3))
    for _ in range(3):
        HSICShapleySelector(2).fit(X, X[:, 0])
    assert len(built) == 1


@pytest.mark.parametrize("threshold", ["mean", "median", "1.5*mean", " 0.5 * median "])
def test_threshold_strings_follow_select_from_model(threshold):
    from sklearn.feature_selection._from_model import _calculate_threshold

    rng = np.random.default_rng(5)
    X = rng.normal(size=(120, 6))
    X[:, 5] = 1.0  # constant: never selected, and left out of the mean
    y = X[:, 0] + 0.5 * X[:, 1] + 0.1 * rng.normal(size=120)
    fitted = HSICShapleySelector(threshold=threshold).fit(X, y)
    values = fitted.shapley_values_[:5]
    expected = values >= _calculate_threshold(None, values, threshold.replace(" ", ""))
    np.testing.assert_array_equal(fitted.get_support(), np.r_[expected, False])
