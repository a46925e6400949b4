"""The three questions: read once from the flat parameters, each with its own rule."""

import ast
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import make_friedman1

from pkex_select import HSICShapleySelector, MMDShapleyAttributor
from pkex_select._questions import FamilyWiseTest, Knockoffs, Ranking, question_of

PACKAGE = Path(__file__).parents[1] / "pkex_select"


@pytest.mark.parametrize(
    ("params", "question"),
    [
        ({}, Ranking),
        ({"n_features_to_select": 3}, Ranking),
        ({"threshold": "mean"}, Ranking),
        ({"n_permutations": 99}, Ranking),
        ({"alpha": 0.05}, FamilyWiseTest),
        ({"fdr": 0.1}, Knockoffs),
    ],
)
def test_the_parameters_ask_one_question(params, question):
    assert type(question_of(HSICShapleySelector(**params))) is question


@pytest.mark.parametrize(
    "params",
    [{"threshold": 0.1, "alpha": 0.05}, {"alpha": 0.05, "fdr": 0.1}, {"threshold": 0, "fdr": 0.1}],
)
def test_two_questions_at_once_are_refused(params):
    with pytest.raises(ValueError, match="Set one of threshold, alpha and fdr"):
        HSICShapleySelector(**params).fit(*make_friedman1(n_samples=40, random_state=0))


def test_the_estimators_read_the_question_only_through_question_of():
    """No module but _questions tests which of threshold, alpha and fdr is set."""
    for module in ("_selection.py", "hsic.py", "mmd.py"):
        tree = ast.parse((PACKAGE / module).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute):
                assert node.left.attr not in {"threshold", "alpha", "fdr"}, (module, node.lineno)


@pytest.fixture(scope="module")
def friedman():
    return make_friedman1(n_samples=200, n_features=8, random_state=0)


def test_each_question_selects_by_its_own_rule(friedman):
    X, y = friedman
    ranked = HSICShapleySelector(n_features_to_select=3, random_state=0).fit(X, y)
    assert set(ranked.get_support(indices=True)) == set(np.argsort(-ranked.shapley_values_)[:3])
    by_mean = HSICShapleySelector(threshold="mean", random_state=0).fit(X, y)
    values = by_mean.shapley_values_
    np.testing.assert_array_equal(by_mean.get_support(), values >= values.mean())
    tested = HSICShapleySelector(alpha=0.05, random_state=0).fit(X, y)
    assert tested.value_function_ == "pairwise_anova"
    np.testing.assert_array_equal(tested.get_support(), tested.adjusted_pvalues_ <= 0.05)
    knocked = HSICShapleySelector(fdr=0.2, random_state=0).fit(X, y)
    np.testing.assert_array_equal(
        knocked.get_support(), np.isin(knocked.knockoff_groups_, knocked.selected_groups_)
    )


def test_a_question_changed_after_fit_asks_for_a_refit(friedman):
    X, y = friedman
    selector = HSICShapleySelector(random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="fit again with alpha set"):
        selector.set_params(alpha=0.05).get_support()
    with pytest.raises(ValueError, match="fit again with fdr set"):
        selector.set_params(alpha=None, fdr=0.1).get_support()


def test_the_attributor_ranks_only_positive_values(friedman):
    X, _ = friedman
    labels = np.repeat([0, 1], 100)
    same = MMDShapleyAttributor(n_features_to_select=4, random_state=0)
    with pytest.warns(UserWarning, match="have a positive value"):
        same.fit(X, labels)
    assert np.all(same.shapley_values_[same.get_support()] > 0)


def test_a_wide_sample_is_ranked_by_the_model_game_where_its_rows_hold_it_all():
    """Beyond RANKED_GAME_MAX_FEATURES the model game ranks only where it is fitted on every
    row (and up to WHOLE_SAMPLE_MAX_FEATURES); the paper's game and the MMD's game, not
    model games, keep the width rule."""
    from pkex_select._questions import (
        RANKED_GAME_MAX_FEATURES,
        WHOLE_SAMPLE_MAX_FEATURES,
        resolve_value_function,
    )
    from pkex_select._ridge_game import most_model_rows

    wide, widest = RANKED_GAME_MAX_FEATURES + 1, WHOLE_SAMPLE_MAX_FEATURES
    for d in (wide, widest):
        rows = most_model_rows(d)
        assert resolve_value_function("auto", False, d, "model+anova", rows) == "model+anova"
        assert resolve_value_function("auto", False, d, "model+anova", rows + 1) == "anova"
        assert resolve_value_function("auto", False, d, "baseline", rows) == "anova"
    assert resolve_value_function("auto", False, widest + 1, "model", 10) == "anova"
    assert resolve_value_function("auto", False, wide, "model") == "anova"  # width alone
    assert resolve_value_function("auto", True, wide, "model+anova", 10) == "pairwise_anova"

    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, wide))
    y = X[:, 0] + 0.1 * rng.standard_normal(40)
    assert HSICShapleySelector().fit(X, y).value_function_ == "model+anova"
    assert MMDShapleyAttributor().fit(X, y > 0).value_function_ == "anova"
