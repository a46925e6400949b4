"""The multi-scale statistic, the block MMD estimator and the aggregated overall test."""

import numpy as np
import pytest

from pkex_select import (
    HSICShapleySelector,
    MMDShapleyAttributor,
    _integrals,
    hsic_shapley_values,
    mmd_shapley_values,
)
from pkex_select._plan import SampleBlocks, subsample_rows
from pkex_select._pvalues import overall_pvalue, studentise
from pkex_select.kernels import gram_matrices
from tests.references import shapley_from_coalition_values

rng = np.random.default_rng(0)


def joint_spread(K):
    joint = np.prod(K, axis=0)
    return joint[np.triu_indices(joint.shape[0], k=1)].std()


def standardised(X):
    return (X - X.mean(0)) / X.std(0)


def test_hsic_over_scales_is_the_sum_of_normalised_games():
    X = rng.normal(size=(50, 4))
    y = X[:, 0] * X[:, 1] + 0.2 * rng.normal(size=50)
    selector = HSICShapleySelector(scales=[1, 2.5], value_function="baseline").fit(X, y)
    assert selector.scales_ == (1.0, 2.5)
    Xs, ys = standardised(X), standardised(y)
    L = gram_matrices(ys[:, None], "rbf", 1 / (2 * selector.target_bandwidth_[0] ** 2))[0]
    expected = 0.0
    for scale in selector.scales_:
        K = gram_matrices(Xs, "rbf", 1 / (2 * (selector.bandwidths_ * scale) ** 2))
        expected = expected + hsic_shapley_values(K, L) / joint_spread(K)
    np.testing.assert_allclose(selector.shapley_values_, expected, rtol=1e-11)
    assert np.isclose(selector.hsic_, expected.sum(), rtol=1e-12)


def test_default_scales_are_one_and_root_d():
    """(1, sqrt(d)), but one scale where the default ranks by the paper's game untested."""
    X = rng.normal(size=(40, 9))
    for options in ({"value_function": "anova"}, {"value_function": "baseline"}, {"alpha": 0.5}):
        assert HSICShapleySelector(**options).fit(X, X[:, 0]).scales_ == (1.0, 3.0)
    assert HSICShapleySelector().fit(X, X[:, 0]).scales_ == (1.0,)
    assert HSICShapleySelector(value_function="anova").fit(X[:, :1], X[:, 0]).scales_ == (1.0,)
    with pytest.raises(ValueError, match="scales must be"):
        HSICShapleySelector(scales=[1, -2]).fit(X, X[:, 0])


def test_mmd_over_scales_is_the_sum_of_normalised_games():
    X = rng.normal(size=(40, 3))
    X[20:, 2] += 1.0
    y = np.repeat([0, 1], 20)
    attributor = MMDShapleyAttributor(estimate="unbiased", value_function="baseline").fit(X, y)
    Xs = standardised(X)
    expected = 0.0
    for scale in attributor.scales_:
        K = gram_matrices(Xs, "rbf", 1 / (2 * (attributor.bandwidths_ * scale) ** 2))
        expected = expected + mmd_shapley_values(K, y, estimate="unbiased") / joint_spread(K)
    np.testing.assert_allclose(attributor.shapley_values_, expected, rtol=1e-11)


def block_mmd(Km, y, members):
    """The incomplete U-statistic written out: unbiased MMD^2 weights on the drawn pairs."""
    labels = np.unique(y)
    counts = {label: np.sum(y == label) for label in labels}
    n = len(y)
    total, drawn = 0.0, 0
    for block in members:
        for i in range(len(block)):
            for k in range(i + 1, len(block)):
                a, b = block[i], block[k]
                if y[a] == y[b]:
                    weight = 1 / (counts[y[a]] * (counts[y[a]] - 1))
                else:
                    weight = -1 / (counts[y[a]] * counts[y[b]])
                total += 2 * weight * Km[a, b]
                drawn += 1
    return total * (n * (n - 1) / 2) / drawn


def test_block_mmd_matches_enumeration_of_its_statistic():
    X = rng.normal(size=(30, 4))
    X[15:, 1] += 0.7
    y = np.repeat(["p", "q"], 15)
    K = gram_matrices(X, "rbf", 0.4)
    members = SampleBlocks(30, 6, 2, np.random.RandomState(4), pair_bytes=8).members
    game = np.array(
        [
            block_mmd(
                np.prod(K[[j for j in range(4) if m >> j & 1]], axis=0) if m else np.ones((30, 30)),
                y,
                members,
            )
            for m in range(16)
        ]
    )
    expected = shapley_from_coalition_values(game, 4)
    values = mmd_shapley_values(
        K, y, estimate="block", block_size=6, n_repetitions=2, random_state=4
    )
    np.testing.assert_allclose(values, expected, rtol=0, atol=1e-12 * np.abs(game).max())
    # The attributor on the same data and seed attributes the same statistic.
    attributor = MMDShapleyAttributor(
        estimate="block",
        block_size=6,
        n_repetitions=2,
        value_function="baseline",
        random_state=4,
        scales=[1],
    ).fit(X, y)
    Ks = gram_matrices(standardised(X), "rbf", attributor.gammas_)
    np.testing.assert_allclose(
        attributor.shapley_values_,
        mmd_shapley_values(Ks, y, estimate="block", block_size=6, n_repetitions=2, random_state=4),
        rtol=1e-11,
    )


def test_block_mmd_is_unbiased_for_the_unbiased_statistic():
    X = np.random.default_rng(0).normal(size=(60, 3))
    X[30:, 0] += 1.0
    y = np.repeat([0, 1], 30)
    K = gram_matrices(X, "rbf", 0.5)
    exact = mmd_shapley_values(K, y, estimate="unbiased")
    draws = np.array(
        [
            mmd_shapley_values(
                K, y, estimate="block", block_size=10, n_repetitions=20, random_state=seed
            )
            for seed in range(200)
        ]
    )
    # Each pair is drawn with the same probability, so the mean is the exact value: over
    # 200 draws it stays within 4 Monte-Carlo standard errors of it.
    standard_error = draws.std(axis=0, ddof=1) / np.sqrt(len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - exact) < 4 * standard_error)
    assert np.all(standard_error < 0.15 * np.abs(exact))  # and the check has teeth


def overall_by_definition(values, statistics, scales):
    """Reject for the smallest rank p-value divided by its share: 1/2 for the widest scale,
    1/3 for the largest studentised feature statistic, 1/6 shared by the other scales."""
    widest = int(np.argmax(scales))
    columns = [statistics[:, widest], studentise(values).max(1)]
    shares = [1 / 2, 1 / 3]
    for k in range(len(scales)):
        if k != widest:
            columns.append(statistics[:, k])
            shares.append(1 / 6 / (len(scales) - 1))
    n = len(values)
    scores = []
    for column, share in zip(columns, shares):
        ranks = np.array(
            [np.sum(column >= column[b] - 1e-12 * abs(column[b])) / n for b in range(n)]
        )
        scores.append(ranks / share)
    smallest = np.min(scores, axis=0)
    return (1 + np.sum(smallest[1:] <= smallest[0])) / n


@pytest.mark.parametrize("seed", range(4))
def test_overall_pvalue_by_definition(seed):
    data = np.random.default_rng(seed)
    values = data.normal(size=(100, 6)) + 0.3
    values[0, seed] += 2.5 * seed
    statistics = np.column_stack([values.sum(1), data.normal(size=100), data.normal(size=100)])
    statistics[0, 1] += seed  # a second statistic with a signal of its own
    for scales in ([1.0], [1.0, 2.0], [3.0, 1.0, 2.0]):
        columns = statistics[:, : len(scales)]
        assert overall_pvalue(values, columns, scales) == pytest.approx(
            overall_by_definition(values, columns, scales)
        )


@pytest.mark.parametrize("seed", range(3))
def test_overall_pvalue_is_exact_whichever_order_is_observed(seed):
    # The scores are symmetric functions of the set of orders, so taking each order in turn
    # as the observed one gives each its rank: at most k of n orders get p <= k / n, the
    # exact validity of a permutation test (no assumption on the statistics' dependence).
    data = np.random.default_rng(seed)
    values = data.normal(size=(60, 4))
    statistics = np.column_stack([values.sum(1), data.normal(size=60)])
    scales = [1.0, 2.0]
    pvalues = []
    for k in range(60):
        order = np.r_[k, np.delete(np.arange(60), k)]
        pvalues.append(overall_pvalue(values[order], statistics[order], scales))
    pvalues = np.sort(pvalues)
    assert np.all(pvalues >= np.arange(1, 61) / 60 - 1e-12)
    assert pvalues[0] == 1 / 60  # and the bound is attained: the test is not conservative


def test_overall_pvalue_follows_the_signal_to_its_statistic():
    # Each statistic alone, with the others pure noise, is found at its share of the level.
    data = np.random.default_rng(0)
    values = data.normal(size=(200, 5))
    statistics = data.normal(size=(200, 2))
    quiet = overall_pvalue(values, statistics, [1.0, 2.0])
    assert quiet > 0.05
    for boost in ("widest", "feature", "narrow"):
        boosted_values, boosted = values.copy(), statistics.copy()
        if boost == "widest":
            boosted[0, 1] = 10.0
        elif boost == "narrow":
            boosted[0, 0] = 10.0
        else:
            boosted_values[0, 3] = 10.0
        # The observed order ranks first of 200 under the boosted statistic, so its score
        # is 1/200 / share; a permuted order scores as low only if it ranks near the top
        # under a statistic with a larger share: at most 5 of them for the narrow scale's
        # 1/6 (ranks 1-3 under the widest scale, 1-2 under the feature statistic).
        assert overall_pvalue(boosted_values, boosted, [1.0, 2.0]) <= 0.03, boost


def test_tests_compare_the_statistic_not_the_rounded_sum_of_values():
    # The sum of the values is the statistic plus a constant (the diagonal pairs' part).
    # Where the joint kernel is nearly the identity (d = 100 median-width factors) that
    # constant swamps the statistic, and comparing the sums across permutations compared
    # rounding errors: the single-scale test once rejected 17-41% of null data sets
    # (benchmarks/power). statistics_ is the statistic itself, in every order.
    X = rng.normal(size=(30, 3))
    y = np.repeat([0, 1], 15)
    attributor = MMDShapleyAttributor(
        scales=[1], n_permutations=20, random_state=0, value_function="baseline"
    ).fit(X, y)
    K = np.prod(gram_matrices(standardised(X), "rbf", attributor.gammas_), axis=0)
    c = np.where(y == 0, 1 / 15, -1 / 15)
    off_diagonal = c @ K @ c - c @ c  # MMD^2 without the diagonal pairs
    assert attributor.statistics_[0, 0] == pytest.approx(off_diagonal, rel=1e-12)
    sums = np.concatenate(
        [[attributor.shapley_values_.sum()], attributor.null_distribution_.sum(axis=1)]
    )
    np.testing.assert_allclose(sums - attributor.statistics_[:, 0], c @ c, rtol=1e-10)


def test_overall_test_sees_a_shift_in_one_feature_of_twenty():
    # The single-scale statistic misses it (its joint kernel is nearly the identity).
    data = np.random.default_rng(1)
    X = data.normal(size=(300, 20))
    X[150:, 0] += 0.6
    y = np.repeat([0, 1], 150)
    attributor = MMDShapleyAttributor(n_permutations=199, random_state=0).fit(X, y)
    assert attributor.pvalue_ <= 0.01
    assert np.argmax(attributor.shapley_values_) == 0


@pytest.mark.parametrize("with_tqdm", [True, False])
def test_verbose_shows_progress_from_the_start_with_the_time_left(with_tqdm, capsys, monkeypatch):
    import sys

    if with_tqdm:
        pytest.importorskip("tqdm")
    else:
        monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm raises ImportError
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 3))
    HSICShapleySelector(verbose=1).fit(X, X[:, 0])
    shown = capsys.readouterr().err
    total = shown.split("/")[1].split()[0].strip("[]| ")
    assert int(total) > 1
    if with_tqdm:
        assert "HSICShapleySelector:   0%" in shown and f"{total}/{total} [" in shown
    else:
        lines = [line for line in shown.replace("\r", "\n").splitlines() if line]
        assert lines[0].startswith(f"[HSICShapleySelector] 0/{total} chunks of pairs, 0 s")
        assert lines[-1].startswith(f"[HSICShapleySelector] {total}/{total} chunks")


def test_sample_blocks_are_rebuilt_per_chunk_so_memory_is_bounded():
    from pkex_select._scheduling import TASK_BYTES

    pair_bytes = TASK_BYTES // 30  # 10 pairs per block of 5: three blocks per chunk
    plan = SampleBlocks(23, 5, 7, np.random.RandomState(0), pair_bytes=pair_bytes)
    assert plan.n_blocks == 4 * 7 and len(plan.chunks) == 10
    members = plan.members
    assert members.shape == (28, 5)
    for r in range(7):  # each repetition is a partition: 4 disjoint blocks
        assert np.unique(members[4 * r : 4 * r + 4]).size == 20
    # Chunks straddle repetitions; rebuilt twice, they are the same blocks.
    np.testing.assert_array_equal(np.concatenate([plan.blocks(s) for s in plan.chunks]), members)
    np.testing.assert_array_equal(plan.multiplicity(), np.bincount(members.ravel(), minlength=23))
    pairs = plan.pairs(plan.chunks[1])
    assert pairs.a.size == 30 and np.all(pairs.a != pairs.b)
    # A billion repetitions cost nothing until their chunks run.
    huge = SampleBlocks(1000, 20, 10**9, np.random.RandomState(0), pair_bytes=64)
    assert isinstance(huge.chunks, range) and huge.n_blocks == 5 * 10**10


def test_auto_estimator_is_exact_below_a_second_of_work_and_block_above():
    from pkex_select._selection import resolve_estimate, resolve_repetitions

    assert resolve_estimate("auto", 2000, 20, 20, "auto") == "biased"
    assert resolve_estimate("auto", 2100, 20, 20, "auto") == "block"
    assert resolve_estimate("auto", 100_000, 5, 20, "auto") == "block"
    # Given partitions holding a quarter of all pairs or more save nothing.
    assert resolve_estimate("auto", 3000, 20, 20, 40) == "biased"
    assert resolve_estimate("auto", 200, 10_000, 20, "auto") == "biased"
    assert resolve_estimate("unbiased", 10**6, 20, 20, "auto") == "unbiased"
    # "auto" partitions draw the exact estimate's pairs at the switch, 2 x 10^6 at d = 20:
    # never fewer pairs past the switch than before it, and at least 10 partitions.
    switch_pairs = 2000 * 1999 / 2
    for n in (2100, 3000, 10_000, 20_000):
        repetitions = resolve_repetitions("auto", n, 20, 20)
        assert switch_pairs <= repetitions * (n // 20) * 190 < switch_pairs + n * 190 / 20 * 20
    assert resolve_repetitions("auto", 100_000, 20, 20) == 10
    assert resolve_repetitions(3, 100_000, 20, 20) == 3
    assert resolve_repetitions("auto", 25, 20, 20) == 10  # at most every pair once, >= 10
    # Where the pairs give only the statistic (the model games), the budget's pairs, in at
    # least one partition: never fewer pairs than at the switch, and no more than one
    # partition beyond them.
    for n in (2100, 30_000, 100_000, 10**6):
        repetitions = resolve_repetitions("auto", n, 20, 20, statistic_only=True)
        drawn = repetitions * (n // 20) * 190
        assert switch_pairs <= drawn < switch_pairs + (n // 20) * 190 or repetitions == 1
    assert resolve_repetitions("auto", 10**6, 20, 20, statistic_only=True) == 1
    assert resolve_repetitions("auto", 10**6, 20, 20, True, statistic_only=True) == 10
    rng = np.random.default_rng(0)
    X = rng.normal(size=(8000, 5))  # 3.2e7 pairs x 5 features: above the budget
    y = (X[:, 0] > 0).astype(int)
    fitted = [
        HSICShapleySelector(1).fit(X[:300], y[:300]),
        HSICShapleySelector(1).fit(X, y),
        MMDShapleyAttributor(1).fit(X, y),
        HSICShapleySelector(1, estimate="unbiased").fit(X[:300], y[:300]),
    ]
    assert [f.estimate_ for f in fitted] == ["biased", "block", "block", "unbiased"]
    assert all(f.get_support(indices=True)[0] == 0 for f in fitted)


@pytest.mark.skipif(not _integrals.NUMBA, reason="needs numba")
@pytest.mark.parametrize(
    "target", ["labels", "two label columns", "few values", "two outputs", "cauchy", "matrix"]
)
@pytest.mark.parametrize("n", [60, 400])  # 10 and 66 blocks per partition
def test_compiled_block_weights_match_numpy(target, n):
    from pkex_select._gram import TargetGram
    from pkex_select._statistics import HSIC

    rng = np.random.default_rng(5)
    if target == "labels":
        gram = HSIC.target(rng.integers(0, 3, n))
    elif target == "two label columns":  # 6 levels of the table path
        gram = HSIC.target(np.column_stack([rng.integers(0, 3, n), rng.integers(0, 2, n)]))
    elif target == "few values":  # 4 levels whose table is not the identity
        gram = HSIC.target(rng.choice([0.0, 0.7, 1.9, 3.0], n), kernel="rbf")
        assert gram.levels()[1].size == 4
    elif target == "two outputs":  # 60 levels: the kernel path
        gram = HSIC.target(rng.normal(size=(n, 2)), kernel="laplacian")
        gram.Y[:3] = gram.Y[3]  # ties: factor exactly 1
    elif target == "cauchy":  # no exponential factor: no exponent pass
        gram = HSIC.target(rng.normal(size=n), kernel="cauchy")
    else:
        values = rng.normal(size=n)
        gram = TargetGram(np.exp(-(np.subtract.outer(values, values) ** 2)))
    statistic = HSIC("block", block_size=6, n_repetitions=3)
    plan = statistic.plan(n, np.random.RandomState(0), pair_bytes=8)
    permutations = np.vstack([np.arange(n), *[rng.permutation(n) for _ in range(4)]])
    compiled = statistic.weights(gram, permutations, plan)
    twin = statistic.weights(gram, permutations, plan, backend="numpy")
    for chunk in plan.chunks:
        pairs = plan.pairs(chunk)
        expected = twin(pairs)
        np.testing.assert_allclose(compiled(pairs), expected, rtol=1e-12, atol=1e-15)
        # The products with per-pair columns, where the statistic computes them itself.
        columns = rng.normal(size=(pairs.a.size, 3))
        products = getattr(compiled, "products", lambda pairs, c: compiled(pairs) @ c)
        np.testing.assert_allclose(
            products(pairs, columns), expected @ columns, rtol=1e-12, atol=1e-14
        )


def test_mmd_block_products_match_the_weights():
    from pkex_select._statistics import MMD

    rng = np.random.default_rng(6)
    n = 60
    target = MMD.target(rng.integers(0, 3, n))
    statistic = MMD("block", block_size=6, n_repetitions=3)
    plan = statistic.plan(n, np.random.RandomState(0), pair_bytes=8)
    permutations = np.vstack([np.arange(n), *[rng.permutation(n) for _ in range(4)]])
    weights = statistic.weights(target, permutations, plan)
    for chunk in plan.chunks:
        pairs = plan.pairs(chunk)
        columns = rng.normal(size=(pairs.a.size, 3))
        np.testing.assert_allclose(
            weights.products(pairs, columns), weights(pairs) @ columns, rtol=1e-12, atol=1e-14
        )


def test_target_levels_beyond_most_are_none():
    from pkex_select._gram import TargetGram
    from pkex_select._statistics import HSIC

    rng = np.random.default_rng(6)
    labels = rng.integers(0, 3, 500)
    codes, representatives = HSIC.target(labels).levels(most=3)
    np.testing.assert_array_equal(labels[representatives][codes], labels)
    assert HSIC.target(labels).levels(most=2) is None
    # Many levels, the first rows alike: the look at the first rows does not decide.
    late = np.r_[np.zeros(100), rng.normal(size=400)]
    assert HSIC.target(late, kernel="rbf").levels(most=32) is None
    assert HSIC.target(late, kernel="rbf").levels(most=500)[1].size == 401
    assert HSIC.target(rng.normal(size=(500, 2)), kernel="rbf").levels(most=32) is None
    assert TargetGram(np.eye(40)).levels(most=32) is None
    assert TargetGram(np.eye(20)).levels(most=32)[1].size == 20


@pytest.mark.parametrize("seed", [0, 7, np.int64(3), 2**32 - 1])
def test_a_seeded_subsample_is_the_draw_of_its_seed(seed):
    """With an int seed the subsamples come from one cached permutation; they are the rows
    RandomState(seed).choice draws without replacement, for every size."""
    for n_samples, most in [(5000, 1000), (5000, 400), (30, 29), (10**5, 600)]:
        expected = np.random.RandomState(seed).choice(n_samples, most, replace=False)
        np.testing.assert_array_equal(subsample_rows(n_samples, most, seed), np.sort(expected))
    random_state = np.random.RandomState(seed)
    expected = np.random.RandomState(seed).choice(50, 10, replace=False)
    np.testing.assert_array_equal(subsample_rows(50, 10, random_state), np.sort(expected))
