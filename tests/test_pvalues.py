"""Permutation p-values and their multiplicity corrections, against direct computations."""

import warnings

import numpy as np
import pytest
from scipy.stats import false_discovery_control

from pkex_select import HSICShapleySelector, MMDShapleyAttributor
from pkex_select._pvalues import (
    adjusted_pvalues,
    holm_pvalues,
    maxt_pvalues,
    permutation_pvalues,
)

rng = np.random.default_rng(0)


def maxt_by_definition(values):
    """Westfall-Young step-down maxT, written out feature by feature."""
    z = (values - values.mean(0)) / values.std(0)  # over all orders, the observed included
    observed, permuted = z[0], z[1:]
    order = np.argsort(-observed)
    adjusted = np.empty(len(order))
    previous = 0.0
    for k, j in enumerate(order):
        rest = order[k:]
        count = np.sum(permuted[:, rest].max(axis=1) >= observed[j] * (1 - 1e-13))
        previous = max(previous, (1 + count) / (1 + len(permuted)))
        adjusted[j] = previous
    return adjusted


def holm_by_definition(p):
    m = len(p)
    order = np.argsort(p)
    adjusted = np.empty(m)
    running = 0.0
    for k, j in enumerate(order):
        running = max(running, min(1.0, (m - k) * p[j]))
        adjusted[j] = running
    return adjusted


@pytest.mark.parametrize("seed", range(5))
def test_corrections_match_their_definitions(seed):
    data = np.random.default_rng(seed)
    values = data.normal(size=(200, 7)) * data.uniform(0.5, 3, size=7)
    values[0, :3] += [4.0, 2.5, 1.0]
    np.testing.assert_array_equal(maxt_pvalues(values), maxt_by_definition(values))
    p = permutation_pvalues(values)
    np.testing.assert_allclose(holm_pvalues(p), holm_by_definition(p))
    family = np.ones(7, dtype=bool)
    np.testing.assert_allclose(
        adjusted_pvalues(values, "fdr_bh", family), false_discovery_control(p, method="bh")
    )
    # maxT is never below the raw p-value, and its first step is the global maxT test.
    adjusted = maxt_pvalues(values)
    assert np.all(adjusted >= p - 1e-15)


def test_constant_features_leave_the_family():
    values = rng.normal(size=(100, 4))
    values[:, 2] = 0.0
    for correction in ["maxT", "holm", "fdr_bh"]:
        with_constant = adjusted_pvalues(values, correction, np.array([1, 1, 0, 1], bool))
        without = adjusted_pvalues(values[:, [0, 1, 3]], correction, np.ones(3, bool))
        assert with_constant[2] == 1.0
        np.testing.assert_array_equal(with_constant[[0, 1, 3]], without)


def test_alpha_selects_by_adjusted_pvalue():
    # Data of its own: those drawn after the tests above have a null feature at a raw p of
    # 0.005 whose adjusted p-value falls either side of 0.05 with the draw of permutations.
    X = np.random.default_rng(0).normal(size=(300, 20))
    X[150:, 4] += 0.8
    y = np.repeat([0, 1], 150)
    attributor = MMDShapleyAttributor(n_permutations=199, alpha=0.05, random_state=0).fit(X, y)
    assert list(attributor.get_support(indices=True)) == [4]
    assert attributor.adjusted_pvalues_[4] <= 0.05
    np.testing.assert_array_equal(attributor.get_support(), attributor.adjusted_pvalues_ <= 0.05)
    holm = MMDShapleyAttributor(
        n_permutations=999, alpha=0.05, correction="holm", random_state=0
    ).fit(X, y)
    assert np.all(holm.adjusted_pvalues_ >= holm.pvalues_)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"alpha": 0.05, "n_permutations": 0}, "n_permutations=0 runs no permutations"),
        ({"alpha": 0.05, "n_permutations": 9, "threshold": 0.0}, "one of threshold, alpha and fdr"),
        ({"alpha": 1.5, "n_permutations": 9}, "alpha"),
        ({"correction": "bonferroni", "n_permutations": 9}, "correction"),
    ],
)
def test_alpha_needs_permutations(params, message):
    with pytest.raises(ValueError, match=message):
        HSICShapleySelector(**params).fit(rng.normal(size=(40, 3)), rng.normal(size=40))


def test_alpha_alone_gets_permutations_that_can_reject():
    X = rng.normal(size=(120, 20))
    y = X[:, 3] + 0.3 * rng.normal(size=120)
    default = HSICShapleySelector(alpha=0.05, random_state=0).fit(X, y)
    # 999 at most: the maxT decisions stop at a look (157, 471) where all are settled.
    assert default.n_permutations_ in (157, 471, 999)
    assert default.null_distribution_.shape[0] == default.n_permutations_
    assert 3 in default.get_support(indices=True)
    # Holm over 20 features needs 20 / (1 + B) <= alpha / 2: B = 799.
    holm = HSICShapleySelector(alpha=0.05, correction="holm", random_state=0).fit(X, y)
    assert holm.n_permutations_ == 999
    strict = HSICShapleySelector(alpha=0.01, correction="holm", random_state=0).fit(X, y)
    assert strict.n_permutations_ == 3999
    assert 3 in strict.get_support(indices=True)
    assert HSICShapleySelector().fit(X, y).n_permutations_ == 0


def test_too_few_permutations_for_the_correction_warn_with_the_count_needed():
    X = rng.normal(size=(60, 20))
    y = X[:, 0] + 0.3 * rng.normal(size=60)
    with pytest.warns(UserWarning, match="Use n_permutations=799 or more"):
        fitted = HSICShapleySelector(
            alpha=0.05, correction="holm", n_permutations=199, random_state=0
        ).fit(X, y)
    assert fitted.adjusted_pvalues_.min() >= 20 / 200  # the warning's reason
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        HSICShapleySelector(alpha=0.05, n_permutations=199, random_state=0).fit(X, y)


def test_setting_alpha_after_a_fit_without_permutations_says_to_refit():
    X = rng.normal(size=(60, 4))
    fitted = HSICShapleySelector().fit(X, X[:, 0])
    fitted.set_params(alpha=0.05)
    with pytest.raises(ValueError, match="fit again with alpha set"):
        fitted.get_support()


def test_family_wise_error_under_the_null():
    # 60 comparisons of two samples from one distribution, d = 10: the uncorrected
    # p-values flag some feature in about 40% of them; maxT in about 5%.
    flagged_raw = flagged_maxt = 0
    for seed in range(60):
        data = np.random.default_rng(seed)
        X = data.normal(size=(60, 10))
        attributor = MMDShapleyAttributor(n_permutations=99, random_state=seed).fit(
            X, np.repeat([0, 1], 30)
        )
        flagged_raw += np.any(attributor.pvalues_ <= 0.05)
        flagged_maxt += np.any(attributor.adjusted_pvalues_ <= 0.05)
    assert flagged_raw >= 12  # the correction has something to correct
    assert flagged_maxt <= 9  # 5% of 60 is 3; 9 is beyond the 99.5% binomial quantile


@pytest.mark.parametrize("seed", range(3))
def test_maxt_controls_the_family_wise_error_exactly(seed):
    # Studentising is a symmetric function of the set of orders, so under the complete
    # null every order is as likely to be the observed one. Taking each in turn, at most k
    # of the n orders flag any feature at level k / n: the family-wise error is at most
    # the level, exactly, whatever the dependence between features.
    data = np.random.default_rng(seed)
    shared = data.normal(size=(80, 1))
    values = data.normal(size=(80, 6)) + shared  # correlated features
    smallest = []
    for k in range(80):
        order = np.r_[k, np.delete(np.arange(80), k)]
        smallest.append(maxt_pvalues(values[order]).min())
    smallest = np.sort(smallest)
    assert np.all(smallest >= np.arange(1, 81) / 80 - 1e-12)
    assert smallest[0] == 1 / 80


def test_feature_statistics_take_the_larger_studentised_value_over_scales():
    from pkex_select._pvalues import feature_statistics, studentise

    rng = np.random.default_rng(0)
    one_scale = rng.normal(size=(1, 50, 4))
    np.testing.assert_array_equal(feature_statistics(one_scale), one_scale[0])
    two_scales = rng.normal(size=(2, 50, 4)) * [[[1.0]], [[100.0]]]
    expected = np.maximum(studentise(two_scales[0]), studentise(two_scales[1]))
    np.testing.assert_array_equal(feature_statistics(two_scales), expected)


def test_selector_tests_each_feature_at_its_best_scale():
    from pkex_select import MMDShapleyAttributor
    from pkex_select._pvalues import feature_statistics, permutation_pvalues

    rng = np.random.default_rng(1)
    X = rng.normal(size=(120, 6))
    X[60:, 2] += 0.6
    y = np.repeat([0, 1], 60)
    fitted = {
        scale: MMDShapleyAttributor(scales=[scale], n_permutations=49, random_state=0).fit(X, y)
        for scale in (1.0, np.sqrt(6))
    }
    both = MMDShapleyAttributor(n_permutations=49, random_state=0).fit(X, y)
    scale_values = np.stack(
        [np.vstack([f.shapley_values_, f.null_distribution_]) for f in fitted.values()]
    )
    weights = np.array(
        [both.statistics_[0, k] / fitted[s].statistics_[0, 0] for k, s in enumerate(fitted)]
    )
    # The two-scale fit's values are the single-scale games, each normalised, summed.
    np.testing.assert_allclose(
        np.tensordot(weights, scale_values, axes=1)[0], both.shapley_values_, rtol=1e-10
    )
    np.testing.assert_allclose(both.pvalues_, permutation_pvalues(feature_statistics(scale_values)))


def test_settled_decisions_are_far_from_alpha_on_either_side():
    from pkex_select._pvalues import first_stage, settled

    B = first_stage(0.05)  # p = (1 + c) / (1 + B)
    assert B == 153 and 0.95**B <= 0.4e-3 < 0.95 ** (B - 1)
    p = (1 + np.array([0, 1, 5, 10, 20, 25, 150])) / (1 + B)
    features, overall = settled(p, p[0], B, 0.05, risk=1e-3)
    np.testing.assert_array_equal(features, [True, False, False, False, False, True, True])
    assert overall
    assert not settled(p, p[1], B, 0.05, risk=1e-3)[1]
    # A smaller risk settles fewer; the keepings share theirs among the features.
    assert settled(p, p[0], B, 0.05, risk=1e-6)[0].sum() < features.sum()
    assert settled(np.repeat(p[5], 10**4), p[0], B, 0.05, risk=1e-3)[0].sum() == 0
    assert settled(np.repeat(p[5], 10), p[0], B, 0.05, risk=1e-3)[0].all()


def test_looks_share_the_risk_and_leave_permutations_after_them():
    from pkex_select._pvalues import first_stage, sequential_looks

    looks = sequential_looks(0.05, 999, risk=1e-3)
    assert [count for count, _ in looks] == [157, 471]
    assert sum(share for _, share in looks) == pytest.approx(1e-3)
    assert looks[0][0] == first_stage(0.05, looks[0][1])
    assert [count for count, _ in sequential_looks(0.05, 400)] == [157]  # 471 > 400 / 2
    assert sequential_looks(0.05, 199) == []  # nothing left after the first look


def test_settled_decisions_err_together_at_most_at_the_risk():
    """The worst cases of settled's proof, simulated: counts binomial at alpha (p* = alpha,
    so every feature must be rejected) err by a settled keep of some feature; counts just
    above alpha (every feature kept) err by a settled rejection. With the maxT step-down's
    running maxima, each at most its share of the risk."""
    from pkex_select._pvalues import first_stage, settled

    rng = np.random.default_rng(0)
    alpha, risk, m, draws = 0.05, 0.05, 20, 10**5  # a large risk, so errors are seen
    B = first_stage(alpha, risk)
    # Whether each count is settled among m features, and which way (rejected or kept).
    every_count = np.arange(B + 1)
    settles = np.array(
        [settled(np.full(m, (1 + c) / (1 + B)), 0.5, B, alpha, risk)[0][0] for c in every_count]
    )
    rejects = settles & ((1 + every_count) / (1 + B) <= alpha)
    keeps = settles & ~rejects
    for q, wrong_way, share in ((alpha, keeps, 0.2), (alpha + 1e-9, rejects, 0.4)):
        counts = np.maximum.accumulate(rng.binomial(B, q, size=(draws, m)), axis=1)
        wrong = wrong_way[counts].any(axis=1).mean()
        bound = share * risk
        assert wrong <= bound + 3 * np.sqrt(bound / draws)
        assert wrong > bound / 10  # the case is a worst one: errors happen


def test_raised_pvalues_are_at_most_the_adjusted_ones():
    from pkex_select._pvalues import adjusted_pvalues, raised_maxt_pvalues, studentise

    rng = np.random.default_rng(3)
    scale_values = rng.standard_t(3, size=(2, 158, 8))  # heavy-tailed nulls, two scales
    scale_values[:, 0, :3] += 4.0  # three features with a signal
    family = np.ones(8, bool)
    stacked = np.max([studentise(v) for v in scale_values], axis=0)
    raised = raised_maxt_pvalues(scale_values, family)
    adjusted = adjusted_pvalues(stacked, "maxT", family)
    assert np.all(raised <= adjusted) and np.any(raised < adjusted)


def _friedman(n=600, seed=0):
    from sklearn.datasets import make_friedman1

    return make_friedman1(n, 10, noise=1.0, random_state=seed)


def test_alpha_stops_after_the_first_stage_when_every_decision_is_settled():
    from pkex_select import HSICShapleySelector

    X, y = _friedman()
    fitted = HSICShapleySelector(alpha=0.05, random_state=0).fit(X, y)
    assert fitted.n_permutations_ == 157
    everything = HSICShapleySelector(n_permutations=999, random_state=0).fit(X, y)
    assert everything.n_permutations_ == 999  # without alpha every permutation runs
    np.testing.assert_array_equal(fitted.get_support(), everything.adjusted_pvalues_ <= 0.05)
    np.testing.assert_allclose(fitted.shapley_values_, everything.shapley_values_, rtol=1e-12)


def test_unsettled_decisions_run_every_permutation_and_match_one_stage(monkeypatch):
    from pkex_select import HSICShapleySelector, _pairgame

    X, y = _friedman(300, 1)
    monkeypatch.setattr(
        _pairgame,
        "settled",
        lambda p, pvalue, b, alpha, risk, keep_pvalues: (np.zeros(len(p), bool), False),
    )
    staged = HSICShapleySelector(alpha=0.05, random_state=0).fit(X, y)
    monkeypatch.setattr(_pairgame, "sequential_looks", lambda alpha, n_permutations: [])
    whole = HSICShapleySelector(alpha=0.05, random_state=0).fit(X, y)
    assert staged.n_permutations_ == whole.n_permutations_ == 999
    np.testing.assert_allclose(staged.adjusted_pvalues_, whole.adjusted_pvalues_, rtol=1e-12)
    np.testing.assert_allclose(staged.pvalue_, whole.pvalue_, rtol=1e-12)
    np.testing.assert_allclose(staged.shapley_values_, whole.shapley_values_, rtol=1e-12)
