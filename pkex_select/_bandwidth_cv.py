"""Per-feature bandwidths chosen by cross-validation on y (``bandwidth="cv"``).

The median heuristic gives every feature a bandwidth from its own spread, whatever it does
for y: a feature y does not depend on keeps a factor well below 1 on most pairs, and a
relevant one may be far too wide or too narrow for what it does. The bandwidths that let
the product kernel predict y best are found as kernel regression finds them: minimise the
leave-one-out error of the Nadaraya-Watson estimate

    y^_a = sum_{b != a} K_ab y_b / sum_{b != a} K_ab,    K_ab = prod_j k_j(x_aj, x_bj),

over the log kernel parameters of the numeric features (L-BFGS-B with the exact gradient, on
up to 600 rows; class labels one-hot encoded, numeric targets standardised). A feature y
does not depend on is smoothed out: its bandwidth grows until its factor is 1 on nearly
every pair (Hall, Li and Racine, "Nonparametric estimation of regression functions in the
presence of irrelevant regressors", Rev. Econ. Stat. 89, 2007), and a relevant one gets the
width at which it predicts best beside the others. A small penalty on the joint kernel's
narrowness breaks the ties between features that carry the same information.
"""

import numpy as np
from scipy.optimize import minimize
from sklearn.utils import check_random_state

from .kernels import factor_of_difference

__all__ = ["cv_bandwidths", "cv_rows"]

# Subsample pairs times features: about 50 MB per float64 array.
_PAIR_FEATURES = 6_000_000
_MAX_ROWS = 600
# The penalty on the narrowness of the joint kernel, lambda sum_j gamma_j mean(u_j): the mean
# of -log K over pairs for the RBF and Laplacian kernels, against a loss relative to the
# target's variance.
_PENALTY = 0.005
# A bandwidth s enters gamma as s^-power.
_POWER = {"rbf": 2.0, "cauchy": 2.0, "laplacian": 1.0}
# log gamma moves at most this far below (wider) or above (narrower) the median heuristic's:
# e^-12 makes a factor 1 to 5 digits on standardised data, e^5 nearly a delta kernel.
_WIDER, _NARROWER = 12.0, 5.0


def cv_rows(n_samples, n_features, random_state=None):
    """The rows the cross-validation runs on: all of them up to 600 (fewer beyond 20
    features, to bound memory), else a uniform subsample, sorted."""
    most = min(_MAX_ROWS, int((2 * _PAIR_FEATURES / max(n_features, 1)) ** 0.5) + 1)
    if n_samples <= most:
        return np.arange(n_samples)
    return np.sort(check_random_state(random_state).choice(n_samples, most, replace=False))


def _distances(differences, kernel):
    """u in each factor k(gamma u): squared differences for the RBF and Cauchy kernels,
    absolute ones for the Laplacian."""
    return np.abs(differences) if kernel == "laplacian" else np.square(differences)


def _factor_and_slope(distances, kernel, gamma):
    """The factors at ``gamma`` and d log k / d log gamma: exp(-gamma u) with slope -gamma u,
    or, for the Cauchy kernel, 1 / (1 + gamma u) with slope k - 1."""
    scaled = gamma * distances
    if kernel == "cauchy":
        factors = 1.0 / (1.0 + scaled)
        return factors, factors - 1.0
    return np.exp(-scaled), -scaled


def cv_bandwidths(data, kernels, bandwidths, gammas, target_columns):
    """Bandwidths of the numeric features that minimise the leave-one-out error.

    Parameters
    ----------
    data : ndarray of shape (n_rows, n_features)
        Standardised numeric columns and integer-coded categorical ones, on the rows of
        :func:`cv_rows`.
    kernels : sequence of str
        Each column's kernel; "delta" columns keep their factor (they have no width).
    bandwidths, gammas : ndarray of shape (n_features,)
        The starting bandwidths (the median heuristic's) and their kernel parameters; they
        also set the bounds.
    target_columns : ndarray of shape (n_rows, n_columns)
        The target on those rows as numbers to predict: standardised values, and class
        labels one-hot encoded.

    Returns
    -------
    ndarray of shape (n_features,)
        The cross-validated bandwidths; those of "delta" columns and of columns constant on the rows
        are returned as given.
    """
    n_rows, n_features = data.shape
    first, second = np.triu_indices(n_rows, k=1)
    varying = np.ptp(data, axis=0) > 0
    widths = np.flatnonzero(varying & np.array([k != "delta" for k in kernels]))
    fixed = np.ones(first.size)
    for j in np.flatnonzero(varying & np.array([k == "delta" for k in kernels])):
        fixed *= factor_of_difference(data[first, j] - data[second, j], "delta")
    distances = [_distances(data[first, j] - data[second, j], kernels[j]) for j in widths]
    start = np.log(np.asarray(gammas, dtype=np.float64)[widths])
    mean_distances = np.array([u.mean() for u in distances])
    slopes = np.empty((first.size, widths.size))

    targets = target_columns - target_columns.mean(axis=0)
    scale = np.sum(targets**2)
    # A row with no neighbour left is predicted by the mean (0 once centred).
    floor = 1e-12 * n_rows

    def loo_loss(log_gammas):
        joint = fixed.copy()
        for i, j in enumerate(widths):
            factors, slopes[:, i] = _factor_and_slope(
                distances[i], kernels[j], np.exp(log_gammas[i])
            )
            joint *= factors
        K = np.zeros((n_rows, n_rows))
        K[first, second] = joint
        K += K.T
        sums = K.sum(axis=1) + floor
        predictions = K @ targets / sums[:, None]
        errors = targets - predictions
        # d loss / d K_ab for row a's prediction; a pair's factor enters rows a and b.
        row_terms = -2.0 * (errors @ targets.T - np.sum(errors * predictions, axis=1)[:, None])
        row_terms /= sums[:, None]
        pair_gradient = (row_terms[first, second] + row_terms[second, first]) * joint
        narrowness = _PENALTY * np.exp(log_gammas) * mean_distances
        return (
            np.sum(errors**2) / scale + narrowness.sum(),
            narrowness + slopes.T @ pair_gradient / scale,
        )

    fitted = np.array(bandwidths, dtype=np.float64)
    if widths.size:
        # From the median heuristic: a wide start hides what a feature does on a short scale
        # (sin(3x) is flat at widths of several sd).
        result = minimize(
            loo_loss,
            start,
            jac=True,
            method="L-BFGS-B",
            bounds=list(zip(start - _WIDER, start + _NARROWER)),
            options={"maxiter": 100},
        )
        powers = np.array([_POWER[kernels[j]] for j in widths])
        fitted[widths] *= np.exp((start - result.x) / powers)
    return fitted
