"""Knockoff statistics, one shape each: ``statistic.fit(X, X_knockoff, target) -> W``.

W_j must change sign when column j is swapped with its knockoff (the flip-sign property the
knockoff filter rests on). Each statistic here sees the 2d columns [X, X~] as a set:

- :class:`ShapleyStatistic`: W_j = phi_j - phi_j~ in one game of the selector's statistic.
  The Shapley value is symmetric in the players, and each column's standardisation and
  bandwidth travel with it.
- :class:`LassoStatistic`: W_j = |b_j| - |b_j~| of a cross-validated lasso
  (:func:`pkex_select.knockoffs.lasso_statistic`).
- :class:`ModelStatistic`: the model game's, which with ``value_function="auto"`` gives way
  to the lasso where a lasso explains nearly as much as the kernel ridge.

After ``fit``, ``name_`` says which statistic gave W (the selector's
``knockoff_value_functions_``). A statistic reads the selector's settings (kernel, bandwidth
rule, target preparation, ``n_jobs``) and leaves its fitted attributes alone.
"""

import numpy as np
from sklearn.utils.validation import check_memory

from . import knockoffs
from ._ridge_game import MODEL_GAMES, explained_values, model_rows, ridge_fit

__all__ = ["LassoStatistic", "ModelStatistic", "ShapleyStatistic", "knockoff_statistic"]

# With value_function="auto" the model game's statistic gives way to the lasso's where the
# lasso explains at least this share of the variance the kernel ridge explains. On 15 data
# sets of each of eight of benchmarks.knockoffs' designs the share was 0.98-1.40 on linear
# responses, where the lasso has the most power, and 0.08-0.51 on nonlinear and interaction
# ones; the benchmark's 100 per design chose the lasso on 400 of 400 linear data sets and 1
# of 900 others.
LINEAR_SHARE = 0.9


def knockoff_statistic(selector, game, attribute):
    """The statistic of ``selector`` in ``game`` (``attribute``: the engine's, cached or not)."""
    if game in MODEL_GAMES:
        return ModelStatistic(selector, game, lasso_fallback=selector.value_function == "auto")
    return ShapleyStatistic(selector, game, attribute)


def _difference(values):
    """phi_j - phi_j~ from the values of the columns [X, X~]."""
    half = values.shape[0] // 2
    return values[:half] - values[half:]


def _prepared(selector, columns, target, game):
    """The columns at their bandwidth rule's bandwidths, and ready for ``game``: aligned
    with y where the rule says so, as the selector prepares its own features, without the
    set-aside features' terms (see HSICShapleySelector's ``value_function``)."""
    numeric = np.zeros(columns.shape[1], dtype=bool)
    memory = check_memory(None)
    features = selector._base_features(columns, numeric, game, memory)
    return features, selector._prepare_features(features, target, game, memory)


class ShapleyStatistic:
    """W_j = phi_j - phi_j~ in ``game`` (not a model game) on the columns [X, X~]."""

    def __init__(self, selector, game, attribute):
        self.selector, self.game, self.attribute = selector, game, attribute

    def fit(self, X, X_knockoff, target):
        selector = self.selector
        columns = np.hstack([X, X_knockoff])
        _, prepared = _prepared(selector, columns, target, self.game)
        values = self.attribute(
            selector._statistic(),
            prepared.factors(),
            target,
            scales=prepared.scales,
            n_permutations=0,
            correction=selector.correction,
            random_state=selector._random_state,
            n_jobs=selector.n_jobs,
            value_function=self.game,
            anova_weight=selector.anova_weight,
        ).values
        self.name_ = self.game
        return _difference(values)


class LassoStatistic:
    """W_j = |b_j| - |b_j~| of the lasso of the selector's ridge targets on [X, X~]."""

    def __init__(self, selector):
        self.selector = selector

    def fit(self, X, X_knockoff, target):
        targets = self.selector._ridge_targets(target, np.arange(X.shape[0]))
        W, self.r2_ = knockoffs.lasso_statistic(X, X_knockoff, targets)
        self.name_ = "lasso"
        return W


class ModelStatistic:
    """W_j = phi_j - phi_j~ in a model game (``"model"`` or ``"model+anova"``) on [X, X~].

    With ``lasso_fallback`` the lasso's W replaces it where the lasso's cross-validated R^2
    is at least ``LINEAR_SHARE`` of the kernel ridge's leave-one-out R^2. Both fits see the
    columns as a set, so the choice is the same after any swap and W keeps its flip-sign
    property; it is made before the explanation, which the lasso does not need.
    """

    def __init__(self, selector, game, lasso_fallback=False):
        self.selector, self.game, self.lasso_fallback = selector, game, lasso_fallback

    def fit(self, X, X_knockoff, target):
        selector = self.selector
        columns = np.hstack([X, X_knockoff])
        features, prepared = _prepared(selector, columns, target, self.game)
        rows = model_rows(*columns.shape, selector._random_state)
        factors, weights, kernel_r2 = ridge_fit(
            prepared.data[rows],
            prepared.kernels,
            prepared.gammas[0],
            selector._ridge_targets(target, rows),
            prepared.mismatch_factors,
        )
        if self.lasso_fallback:
            lasso = LassoStatistic(selector)
            W = lasso.fit(X, X_knockoff, target)
            if lasso.r2_ >= LINEAR_SHARE * kernel_r2:
                self.name_ = lasso.name_
                return W
        values = explained_values(factors, weights, selector.n_jobs)
        if self.game == "model+anova":
            memory = check_memory(None)
            anova_values = selector._anova_values(features, target, memory, selector.n_jobs)
            values = selector._model_anova_values(values, anova_values, prepared, target, memory)
        self.name_ = self.game
        return _difference(values)
