"""Model-X knockoffs: second-order Gaussian knockoffs, the knockoff filter, derandomised e-values.

A knockoff copy X~ of the features X is drawn so that swapping any set of columns with their
knockoffs leaves the joint distribution of [X, X~] unchanged, and X~ is independent of y
given X (Candes, Fan, Janson and Lv, 2018). A statistic W_j that changes sign when column j
is swapped with its knockoff (here the difference of their exact Shapley values in one game
on the 2d columns) is then positive or negative with equal probability for a feature
independent of y given the others, and the knockoff filter selects those with W_j above a
threshold at a false discovery rate it controls.

Second-order knockoffs match the first two moments: with Sigma the correlation of the
standardised features and S a block-diagonal matrix with ``2 Sigma - S`` positive definite,

    X~ = X - X Sigma^-1 S + Z C^T,     C C^T = 2 S - S Sigma^-1 S,   Z standard normal,

so that the covariance of [X, X~] is [[Sigma, Sigma - S], [Sigma - S, Sigma]]. The larger S,
the less X~ resembles X and the more power; S here maximises the entropy of the joint
distribution (``log det S + log det(2 Sigma - S)``, Gimenez and Zou 2019; Spector and Janson
2022 show it keeps power where the SDP choice loses it to near-duplicate features), by
coordinate descent with a closed form per feature and a one-dimensional root per group.

Groups of highly correlated features (Dai and Barber, 2016) get one block ``gamma_g
Sigma_gg`` of S and one statistic, the sum of their W; the filter then selects groups.

Several draws are combined by derandomised knockoffs (Ren and Barber, 2023): each draw's
knockoff+ threshold makes an e-value per group, ``n_groups * 1{W_g >= T} / (1 + #{W <= -T})``,
and the e-Benjamini-Hochberg procedure on their mean controls the false discovery rate
whatever the number of draws.
"""

from __future__ import annotations

import warnings
from numbers import Integral
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.optimize import brentq
from scipy.spatial.distance import squareform
from sklearn.covariance import ledoit_wolf
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LassoCV, MultiTaskLassoCV
from sklearn.utils import check_random_state

from ._sklearn_compat import Interval, StrOptions, validate_params

__all__ = [
    "derandomised_selection",
    "gaussian_knockoffs",
    "group_features",
    "group_labels",
    "knockoff_correlation",
    "knockoff_design",
    "KnockoffDesign",
    "knockoff_threshold",
    "lasso_statistic",
    "maxent_blocks",
    "sample_knockoffs",
]

# Features whose correlation (average linkage over |r|) is at least this form one group with
# groups="auto": near-copies are tested together, an AR(1) chain with rho = 0.8 is not.
GROUP_CORRELATION = 0.9
# Below this many samples per feature the sample correlation is shrunk (Ledoit-Wolf).
_SHRINK_BELOW_SAMPLES_PER_FEATURE = 2
# Coordinate descent of the entropy: sweeps at most, and the change in S that ends it.
_MAX_SWEEPS = 100
_SWEEP_TOL = 1e-10
# A correlation matrix whose smallest eigenvalue is at most this is singular.
_SINGULAR = 1e-10
# S is scaled by this so that 2 Sigma - S keeps a margin from singularity.
_MARGIN = 0.999


def knockoff_correlation(X: ArrayLike) -> tuple[np.ndarray, bool]:
    """The correlation matrix the knockoffs are built from, and whether it was shrunk.

    The sample correlation of the columns, or, with fewer than 2 samples per feature, the
    Ledoit-Wolf shrinkage of it (the sample matrix is then singular or nearly so). Shrinkage
    is not the default because it understates strong correlations, and knockoffs of a
    near-copy built from a weaker correlation let the copy through as a discovery.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)

    Returns
    -------
    correlation : ndarray of shape (n_features, n_features)
    shrunk : bool
    """
    return _correlation(_standardised(X))


def _standardised(X):
    """The columns of X centred and scaled to unit variance; constant ones refused."""
    X = np.asarray(X, dtype=np.float64)
    std = X.std(axis=0)
    if np.any(std == 0):
        raise ValueError("knockoffs need every feature to vary; drop the constant ones.")
    return (X - X.mean(axis=0)) / std


def _correlation(Z):
    """:func:`knockoff_correlation` of standardised columns Z."""
    n_samples, n_features = Z.shape
    if n_samples >= _SHRINK_BELOW_SAMPLES_PER_FEATURE * n_features:
        correlation, shrunk = Z.T @ Z / n_samples, False
    else:
        correlation, shrunk = ledoit_wolf(Z, assume_centered=True)[0], True
    scale = np.sqrt(np.diag(correlation))
    correlation = correlation / np.outer(scale, scale)
    np.fill_diagonal(correlation, 1.0)
    return correlation, shrunk


class KnockoffDesign(NamedTuple):
    """What the knockoffs of a data set are drawn from: the result of
    :func:`~pkex_select.knockoffs.knockoff_design`.

    Attributes
    ----------
    standardised : ndarray of shape (n_samples, n_features)
        The features, centred and scaled to unit variance.
    correlation : ndarray of shape (n_features, n_features)
        Sigma (:func:`~pkex_select.knockoffs.knockoff_correlation`).
    shrunk : bool
        Whether Sigma was shrunk.
    labels : ndarray of shape (n_features,)
        Each feature's group, 0, 1, ...
    S : ndarray of shape (n_features, n_features)
        The block-diagonal S (:func:`~pkex_select.knockoffs.maxent_blocks`).
    """

    standardised: np.ndarray
    correlation: np.ndarray
    shrunk: bool
    labels: np.ndarray
    S: np.ndarray

    def sample(self, n_draws, random_state=None):
        """``n_draws`` knockoffs, shape (n_draws, n_samples, n_features)."""
        return sample_knockoffs(
            self.standardised, self.correlation, self.S, n_draws, check_random_state(random_state)
        )


def knockoff_design(X: ArrayLike, groups: ArrayLike | str | None = None) -> KnockoffDesign:
    """Standardise X, and find its correlation, groups and maximum-entropy S.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Numeric features, none constant.
    groups : array-like of shape (n_features,), "auto" or None, default=None
        Group labels, "auto" for :func:`group_features` of the correlation, or None for
        single features.

    Returns
    -------
    KnockoffDesign
    """
    standardised = _standardised(X)
    correlation, shrunk = _correlation(standardised)
    if isinstance(groups, str):
        groups = group_features(correlation)
    labels = group_labels(groups, standardised.shape[1])
    return KnockoffDesign(
        standardised, correlation, shrunk, labels, maxent_blocks(correlation, labels)
    )


def group_features(correlation: ArrayLike, threshold: float = GROUP_CORRELATION) -> np.ndarray:
    """Group labels 0, 1, ...: features joined while their average absolute correlation is at
    least ``threshold`` (average linkage).

    Examples
    --------
    >>> import numpy as np
    >>> from pkex_select.knockoffs import group_features
    >>> group_features(np.array([[1, 0.95, 0], [0.95, 1, 0.1], [0, 0.1, 1]]))
    array([0, 0, 1])
    """
    correlation = np.asarray(correlation, dtype=np.float64)
    n_features = correlation.shape[0]
    if n_features == 1:
        return np.zeros(1, dtype=np.intp)
    distance = np.clip(1.0 - np.abs(correlation), 0.0, None)
    np.fill_diagonal(distance, 0.0)
    tree = linkage(squareform(distance, checks=False), method="average")
    labels = fcluster(tree, t=1.0 - threshold, criterion="distance")
    # Numbered in the order of the features' first members.
    _, first = np.unique(labels, return_index=True)
    relabel = {labels[i]: g for g, i in enumerate(np.sort(first))}
    return np.array([relabel[label] for label in labels], dtype=np.intp)


def group_labels(groups: ArrayLike | None, n_features: int) -> np.ndarray:
    """Group labels renumbered 0, 1, ... (None: every feature its own group)."""
    groups = np.arange(n_features) if groups is None else np.asarray(groups)
    if groups.shape != (n_features,):
        raise ValueError(f"groups must hold one label per feature ({n_features}).")
    _, labels = np.unique(groups, return_inverse=True)
    return labels.astype(np.intp)


def maxent_blocks(correlation: ArrayLike, groups: ArrayLike | None = None) -> np.ndarray:
    """The block-diagonal S of maximum entropy: ``S_gg = gamma_g Sigma_gg`` per group.

    Maximises ``log det S + log det(2 Sigma - S)`` over the gammas. With the others fixed,
    ``2 Sigma - S`` restricted to group g has Schur complement ``C - gamma Sigma_gg``, so the
    objective is ``|g| log gamma + sum_i log(mu_i - gamma)`` with mu_i the eigenvalues of
    ``Sigma_gg^-1 C``: its root is ``mu / 2`` for a single feature and a one-dimensional root
    for a group.

    Parameters
    ----------
    correlation : array-like of shape (n_features, n_features)
        Positive definite, with unit diagonal.
    groups : array-like of shape (n_features,), default=None
        A group label per feature; None: every feature alone.

    Returns
    -------
    S : ndarray of shape (n_features, n_features)

    Examples
    --------
    >>> import numpy as np
    >>> from pkex_select.knockoffs import maxent_blocks
    >>> np.diag(maxent_blocks(np.eye(3)))
    array([0.999, 0.999, 0.999])
    """
    sigma = np.asarray(correlation, dtype=np.float64)
    n_features = sigma.shape[0]
    labels = group_labels(groups, n_features)
    members = [np.flatnonzero(labels == g) for g in range(labels.max() + 1)]
    # A column that is a linear combination of others (up to rounding) has no knockoff but
    # itself: S would vanish with it.
    if np.linalg.eigvalsh(sigma).min() <= _SINGULAR:
        raise ValueError(
            "the features' correlation matrix is singular (a column is a linear combination "
            "of others): knockoffs cannot imitate it without copying it; drop the redundant "
            "columns."
        )
    # Start inside: half the largest equal gamma that keeps 2 Sigma - gamma D definite.
    diagonal_blocks = _blocks(sigma, members, np.ones(len(members)))
    root = np.linalg.cholesky(diagonal_blocks)
    whitened = np.linalg.solve(root, np.linalg.solve(root, sigma).T)
    gammas = np.full(len(members), min(1.0, np.linalg.eigvalsh(whitened).min()))
    for _ in range(_MAX_SWEEPS):
        inverse = np.linalg.inv(2.0 * sigma - _blocks(sigma, members, gammas))
        largest_change = 0.0
        for g, idx in enumerate(members):
            sigma_gg = sigma[np.ix_(idx, idx)]
            inverse_gg = inverse[np.ix_(idx, idx)]
            # The Schur complement of the block at gamma = 0.
            schur = np.linalg.inv(inverse_gg) + gammas[g] * sigma_gg
            mu = np.linalg.eigvals(np.linalg.solve(sigma_gg, schur)).real
            new = _entropy_root(mu)
            change, gammas[g] = new - gammas[g], new
            largest_change = max(largest_change, abs(change))
            # Woodbury: 2 Sigma - S changes by -change * Sigma_gg on the block.
            update = -change * sigma_gg
            columns = inverse[:, idx]
            middle = np.linalg.solve(np.eye(idx.size) + update @ inverse_gg, update)
            inverse -= columns @ middle @ columns.T
        if largest_change < _SWEEP_TOL:
            break
    return _MARGIN * _blocks(sigma, members, np.minimum(gammas, 1.0))


def _blocks(sigma, members, gammas):
    S = np.zeros_like(sigma)
    for idx, gamma in zip(members, gammas):
        S[np.ix_(idx, idx)] = gamma * sigma[np.ix_(idx, idx)]
    return S


def _entropy_root(mu):
    """The gamma in (0, min mu) where ``|g| / gamma = sum_i 1 / (mu_i - gamma)``."""
    top = float(mu.min())
    if mu.size == 1:
        return top / 2.0
    derivative = lambda gamma: mu.size / gamma - np.sum(1.0 / (mu - gamma))  # noqa: E731
    return brentq(derivative, top * 1e-12, top * (1.0 - 1e-12), xtol=1e-14 * top)


@validate_params(
    {
        "X": ["array-like"],
        "groups": ["array-like", StrOptions({"auto"}), None],
        "n_draws": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def gaussian_knockoffs(
    X: ArrayLike,
    *,
    groups: ArrayLike | str | None = None,
    n_draws: int = 1,
    random_state: int | np.random.RandomState | None = None,
) -> np.ndarray:
    """Second-order Gaussian knockoffs of the standardised columns of X.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Numeric features; they are standardised, and the knockoffs are on that scale.
    groups : array-like of shape (n_features,), "auto" or None, default=None
        Group labels (knockoffs exchangeable group by group), "auto" for
        :func:`group_features` of the correlation, or None for single features.
    n_draws : int, default=1
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    knockoffs : ndarray of shape (n_draws, n_samples, n_features)

    Examples
    --------
    >>> import numpy as np
    >>> from pkex_select.knockoffs import gaussian_knockoffs
    >>> X = np.random.default_rng(0).normal(size=(500, 3))
    >>> gaussian_knockoffs(X, random_state=0).shape
    (1, 500, 3)
    """
    return knockoff_design(X, groups).sample(n_draws, random_state)


def sample_knockoffs(Z, correlation, S, n_draws, rng):
    """``n_draws`` knockoffs of the standardised Z given Sigma and S (the module docstring);
    ``rng`` a NumPy RandomState. Shape (n_draws, n_samples, n_features)."""
    projection = np.linalg.solve(correlation, S)  # Sigma^-1 S
    conditional = 2.0 * S - S @ projection
    conditional = (conditional + conditional.T) / 2.0
    eigenvalues, vectors = np.linalg.eigh(conditional)
    root = vectors * np.sqrt(np.clip(eigenvalues, 0.0, None))
    mean = Z - Z @ projection
    noise = rng.standard_normal((n_draws, *Z.shape))
    return mean[None] + noise @ root.T


def lasso_statistic(original: ArrayLike, knockoff: ArrayLike, targets: ArrayLike):
    """The lasso coefficient-difference statistic and the lasso's cross-validated R^2.

    ``W_j = |b_j| - |b_j~|`` (Candes et al., 2018), b the coefficients of the lasso of
    ``targets`` on the columns [original, knockoff] at the penalty of least 5-fold
    cross-validated error (``LassoCV``; ``MultiTaskLassoCV`` for several outputs, with the
    norm of each column's coefficients). The lasso sees the columns in a canonical order, so
    that its coordinate descent, and so W, does not depend on which of a pair came first:
    swapping a column with its knockoff negates its W exactly.

    Parameters
    ----------
    original, knockoff : array-like of shape (n_samples, n_features)
        Standardised features and their knockoffs.
    targets : array-like of shape (n_samples, n_outputs)
        Centred outputs.

    Returns
    -------
    W : ndarray of shape (n_features,)
    r2 : float
        1 minus the least cross-validated mean squared error over the targets' variance.

    Examples
    --------
    >>> import numpy as np
    >>> from pkex_select.knockoffs import gaussian_knockoffs, lasso_statistic
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 6))
    >>> y = X[:, 0] - X[:, 1] + rng.normal(size=300)
    >>> Z = (X - X.mean(axis=0)) / X.std(axis=0)
    >>> W, r2 = lasso_statistic(Z, gaussian_knockoffs(X, random_state=0)[0], y[:, None])
    >>> np.flatnonzero(W > 0.5), round(r2, 1)
    (array([0, 1]), 0.6)
    """
    columns = np.hstack([original, knockoff])
    targets = np.asarray(targets, dtype=np.float64)
    order = np.lexsort(columns[::-1])
    with warnings.catch_warnings():
        # The path's smallest penalties may stop at the iteration limit: W then rests on
        # the same symmetric computation after any swap, so its guarantee stands.
        warnings.simplefilter("ignore", ConvergenceWarning)
        if targets.shape[1] == 1:
            lasso = LassoCV(cv=5).fit(columns[:, order], targets[:, 0])
            magnitudes = np.abs(lasso.coef_)
        else:
            lasso = MultiTaskLassoCV(cv=5).fit(columns[:, order], targets)
            magnitudes = np.linalg.norm(lasso.coef_, axis=0)
    in_place = np.empty_like(magnitudes)
    in_place[order] = magnitudes
    n_features = np.shape(original)[1]
    error = lasso.mse_path_.mean(axis=-1).min()
    return in_place[:n_features] - in_place[n_features:], float(1.0 - error / targets.var(0).mean())


def knockoff_threshold(W: ArrayLike, fdr: float, offset: int = 1) -> float:
    """The knockoff (offset 0) or knockoff+ (offset 1) threshold; inf when none qualifies.

    ``T = min{t in |W| : t > 0, (offset + #{W <= -t}) / max(1, #{W >= t}) <= fdr}``.

    Examples
    --------
    >>> from pkex_select.knockoffs import knockoff_threshold
    >>> knockoff_threshold([5, 4, 3, 2, 1, 0.5, -0.1], fdr=0.3)
    0.5
    """
    W = np.asarray(W, dtype=np.float64)
    for t in np.sort(np.abs(W[W != 0])):
        if (offset + np.sum(W <= -t)) / max(1, np.sum(W >= t)) <= fdr:
            return float(t)
    return np.inf


def derandomised_selection(W: ArrayLike, fdr: float, knockoff_fdr: float | None = None):
    """Selection from several knockoff draws by e-BH on the mean e-values (Ren and Barber).

    Parameters
    ----------
    W : array-like of shape (n_draws, n_groups)
        One statistic per group and draw.
    fdr : float in (0, 1)
        The false discovery rate the selection controls.
    knockoff_fdr : float, default=None
        The level of each draw's knockoff+ threshold; None: ``fdr``, with which one draw
        selects what knockoff+ selects.

    Returns
    -------
    selected : ndarray of bool, shape (n_groups,)
    e_values : ndarray of shape (n_groups,)
    thresholds : ndarray of shape (n_draws,)

    Examples
    --------
    >>> from pkex_select.knockoffs import derandomised_selection
    >>> selected, e_values, _ = derandomised_selection([[5, 4, 3, 2, 1, -0.5]], fdr=0.5)
    >>> selected
    array([ True,  True,  True,  True,  True, False])
    """
    W = np.atleast_2d(np.asarray(W, dtype=np.float64))
    n_groups = W.shape[1]
    level = fdr if knockoff_fdr is None else knockoff_fdr
    thresholds = np.array([knockoff_threshold(w, level) for w in W])
    negatives = np.array([np.sum(w <= -t) for w, t in zip(W, thresholds)])
    e_values = np.mean(n_groups * (W >= thresholds[:, None]) / (1.0 + negatives[:, None]), axis=0)
    # e-BH: the k largest e-values, for the largest k with e_(k) >= n_groups / (fdr k).
    order = np.argsort(-e_values, kind="stable")
    ranks = np.arange(1, n_groups + 1)
    passing = np.flatnonzero(e_values[order] >= n_groups / (fdr * ranks))
    selected = np.zeros(n_groups, dtype=bool)
    if passing.size:
        selected[order[: passing.max() + 1]] = True
    return selected, e_values, thresholds
