"""The features a kernel model fitted to y uses (``value_function="model"``).

The statistic's games value a coalition by how much its kernel alone depends on y. Which k
features a model should use is a question about a model, so this game asks one: a kernel
ridge regression of y on every feature (the product kernel at the given bandwidths, the
ridge penalty chosen by exact leave-one-out error over a grid on the rows of
:func:`check_rows`: :func:`check_penalty`) is explained row by row, each removed feature's
factor replaced by its mean over the rows (the observational value function of
:class:`~pkex_select.ProductKernelExplainer`), and a feature's value is its mean absolute
Shapley value over the rows, summed over the outputs: how far, on average, it moves the
fitted function, in units of the standardised target. The values are exact Shapley values
of each row's game; the model is fitted on the rows of :func:`model_rows` (up to 1000) and
explained on those of :func:`explained_points` (500 of them, evenly spaced). A categorical
column's factor is 1 on pairs that agree and its aligned ``mismatch_factors`` entry on
pairs that differ, so that an identifier does not reduce the kernel to its diagonal (a
model that memorises y, with every value on the ID).

A feature the alignment sets aside (widens until its factor is about 1) enters the ridge as a
term of its own added to the product kernel where that lowers the ridge's leave-one-out
error by more than 2% (:func:`additive_features`): an even effect (``|x|``, ``cos 2x``)
beside others, which the product kernel cannot take without making every other feature
more local. A term of feature j alone moves only j's Shapley value, by its own part of the
fit. An effect finer than the median heuristic's width (``sin 6x`` over four periods) is
tried as a term at a half, a quarter or an eighth of it, where the ridge's residuals show
it (:func:`_finer_terms`). A pure interaction whose features the alignment set aside goes
back into the product kernel at the median heuristic's width, where the residuals show the
pair (:func:`_restored_pair`).

A feature the model ignores gets 0; no value is negative, so shares compare directly.
"""

import warnings
from dataclasses import dataclass
from functools import partial

import numpy as np
import scipy.linalg
from joblib import effective_n_jobs

from ._engine import point_values
from ._features import DataFactors
from ._integrals import NUMBA, compile_kernel, feature_products
from ._pair_evidence import dependence_scores, pair_scores
from ._plan import subsample_rows
from ._scheduling import TASK_BYTES, run_tasks
from ._validation import outside_stacklevel
from .kernels import gamma_from_bandwidth, kernel_distances, pair_factors

__all__ = [
    "MIN_MODEL_SAMPLES",
    "MODEL_GAMES",
    "additive_features",
    "additive_terms",
    "check_penalty",
    "check_rows",
    "drop_one_gains",
    "drop_rows",
    "dropped_categories",
    "explained_points",
    "explained_values",
    "ModelFactors",
    "model_factors",
    "model_rows",
    "model_values",
    "most_model_rows",
    "ridge_fit",
    "ridge_targets",
    "set_aside_fits",
]

# The factor tensor of the rows' pairs takes 8 * rows^2 * d bytes: at most about 200 MB (of
# which model_factors holds the explained rows', at most half beyond 500 rows).
_TENSOR_ENTRIES = 25_000_000
# The leave-one-out error that chooses the penalty is fitted on n - 1 rows: with fewer than 3
# of them every feature separates the rows alike and the values say nothing.
MIN_MODEL_SAMPLES = 4
_MAX_ROWS = 1000
# A joint kernel within this of 0 (or 1) on every pair of distinct rows is degenerate.
_DEGENERATE = 1e-12
# The model game's value of a feature is its mean absolute Shapley value over at most this
# many of the ridge's rows (the point pass costs rows^2 d: at 1000 rows 0.16 s of a 1.05 s
# fit at n = 3000, d = 20).
_EXPLAINED_POINTS = 500

# Ridge penalties tried, relative to the kernel's unit diagonal.
_PENALTIES = 10.0 ** np.arange(-4.0, 2.01, 0.5)
# A feature widened more than e^this below its median-heuristic parameter was set aside.
_SET_ASIDE = 3.0
# additive_features: a set-aside feature enters the ridge as a term of its own,
# ADDITIVE_WEIGHT times its factor at the median-heuristic parameter added to the product
# kernel, where that lowers the leave-one-out error by more than _ADDITIVE_GAIN. Of the gains
# 0, 0.01, 0.02, 0.03, 0.05 and 0.1 at weight 0.3 (and the weight 1 at 0.03), the selection
# study's tuning half ranked 0.02 first (benchmarks/selection/results/rules.md).
_ADDITIVE_GAIN = 0.02
ADDITIVE_WEIGHT = 0.3
# Without the ANOVA game's evidence every set-aside feature is tried, the noise among them:
# at 2% a noise column of friedman1 (n = 300, d = 10) enters. The bar is then that of the
# restoring check the terms replaced; the tuning half ranks the model game alone ahead with
# it (mean rank 4.57 and 3.47 at k = 20% and 40%, against 4.90 and 3.60 at 2%).
_ADDITIVE_GAIN_UNVETTED = 0.1
# With the ANOVA game's evidence, the candidates tried: the fewest of 3, 5 and 8 that left
# python -m benchmarks.selection.planted as with every candidate tried, when set-aside
# features were put back into the product (3 let a noise column above a relevant copy at
# n = 200), and one eigendecomposition each.
_SET_ASIDE_TRIES = 5
# _finer_terms: the bandwidth divisors tried, the rows scored (every second check row),
# the score a column needs to be tried, the columns tried at most (an eigendecomposition
# each). On python -m benchmarks.selection.varied's high_frequency design (sin 6x) the
# planted column's terms lowered the ridge's error by 76-85% at half and a quarter of the
# median width and it scored 11.0-11.4 at those two;
# on its two_fine design (two sin 6x) the planted columns scored 3.6-8.9 there and 7.2-14.9
# at an eighth. On 68 data sets of other designs no noise column scored above 9.0, 90% of
# the largest ones below 4.1 (benchmarks/selection/results/rules.md).
_FINER_DIVISORS = (2.0, 4.0, 8.0)
_FINER_STEP = 2
_FINER_SCORE = 8.0
_FINER_TRIES = 2
# _restored_pair: the score the best pair of set-aside features needs against the ridge's
# residuals (on the rows _finer_terms scores) to be tried back in the product kernel. On
# benchmarks.selection.varied's even_classes design (classes split at the median of |x0| +
# cos 2 x1 + x2 x3, n = 1000) the alignment set the interaction aside on 3 of 20 data sets;
# its pair scored 15-29 and, put back at the median width, lowered the ridge's error by
# 18-29%, where the best noise pairs (of 300-600) scored 4.1-9.3 and raised it by 2-27%
# (benchmarks/selection/results/rules.md). It enters at the unvetted bar, 10%.
_PAIR_SCORE = 8.0
# dropped_categories keeps a categorical column only where the leave-one-out error without
# it is more than this share above the error with it.
_CATEGORY_GAIN = 0.01
# The rows of additive_features and dropped_categories: one eigendecomposition per column
# tried.
_CHECK_ROWS = 400
# The rows of drop_one_gains: one eigendecomposition per candidate, up to 12 a fit. At 400
# rows they took 0.2 s of a 0.55 s fit at n = 500, d = 20 (0.05 s at 200); the selection
# study's fold scores are the same with either.
_DROP_ROWS = 200


# The games of a kernel ridge fitted to y: its explanation, and beside it the ANOVA game.
MODEL_GAMES = ("model", "model+anova")


def most_model_rows(n_features):
    """The most rows the model is fitted on: 1000, fewer beyond 25 features (to bound
    memory): 500 at d = 100, 353 at 200, 158 at 1000."""
    return min(_MAX_ROWS, int((_TENSOR_ENTRIES / max(n_features, 1)) ** 0.5))


def model_rows(n_samples, n_features, random_state=None):
    """The rows the model is fitted and explained on: all up to
    :func:`most_model_rows`, else a uniform subsample, sorted."""
    return subsample_rows(n_samples, most_model_rows(n_features), random_state)


def check_rows(n_samples, random_state=None):
    """The rows :func:`additive_features` and :func:`dropped_categories` decide on: up to
    400, uniformly, sorted."""
    return subsample_rows(n_samples, _CHECK_ROWS, random_state)


def drop_rows(n_samples, random_state=None):
    """The rows :func:`drop_one_gains` decides on: up to 200, uniformly, sorted."""
    return subsample_rows(n_samples, _DROP_ROWS, random_state)


def ridge_targets(columns, kernels):
    """The outputs the ridge fits: continuous target columns as they are (standardised by
    the statistic), a column of class codes as one indicator per class (one for two
    classes), each centred."""
    outputs = []
    for column, kernel in zip(np.asarray(columns, dtype=np.float64).T, kernels):
        if kernel == "delta":
            levels = np.unique(column)
            indicators = np.equal.outer(column, levels[: 1 if levels.size == 2 else None])
            outputs.append(indicators.astype(np.float64))
        else:
            outputs.append(column[:, None])
    targets = np.hstack(outputs)
    return targets - targets.mean(axis=0)


def _factor_tensor(data, kernels, gammas, mismatch_factors=None, n_jobs=None, rows=None):
    """Kernel factors of every pair of rows (:func:`~pkex_select.kernels.pair_factors`),
    (n_rows, n_rows, n_features), or of the ``rows`` given with every row,
    (len(rows), n_rows, n_features); a "delta" column's factor on pairs that differ is its
    ``mismatch_factors`` entry (default 0)."""
    gammas = np.asarray(gammas, dtype=np.float64)
    first = data if rows is None else data[rows]
    factors = pair_factors(first, data, list(kernels), gammas, n_jobs)
    if mismatch_factors is not None:
        kernels = np.asarray(kernels)
        for j in np.flatnonzero((kernels == "delta") & (np.asarray(mismatch_factors) > 0)):
            # 1 where the values agree, the mismatch factor where they differ.
            factors[..., j] *= 1.0 - mismatch_factors[j]
            factors[..., j] += mismatch_factors[j]
    return factors


def _joint_kernel(data, kernels, gammas, mismatch_factors=None, backend="auto"):
    """The product kernel on the rows' pairs, ``np.prod(_factor_tensor(...), axis=2)``
    equal to rounding: the exponents of the RBF and Laplacian factors are summed first, one
    exponential per pair instead of one per pair and feature (4 ms against 16 ms at 400 rows
    and 20 features), in one compiled pass over the pairs of distinct rows. Its NumPy twin
    (``backend="numpy"``: a pass over all pairs per feature) gives the same bits in 3x the
    time (8 ms against 2.5 ms in one run at 400 rows, d = 20)."""
    kernels = np.asarray(kernels)
    gammas = np.asarray(gammas, dtype=np.float64)
    exponential = np.isin(kernels, ("rbf", "laplacian"))
    columns = np.flatnonzero(exponential)
    if backend != "numpy" and NUMBA:
        exponent = np.empty((data.shape[0], data.shape[0]))
        joint_exponents_numba(
            np.ascontiguousarray(data[:, columns], dtype=np.float64),
            kernels[columns] == "rbf",
            gammas[columns],
            exponent,
        )
    else:
        exponent = np.zeros((data.shape[0], data.shape[0]))
        for j in columns:
            distances = kernel_distances(np.subtract.outer(data[:, j], data[:, j]), kernels[j])
            # Equal values keep exponent 0 for any gamma (inf * 0 would be NaN).
            exponent += np.multiply(distances, gammas[j], out=distances, where=distances != 0)
    K = np.exp(np.negative(exponent, out=exponent), out=exponent)
    others = np.flatnonzero(~exponential)
    if others.size:
        mismatch = None if mismatch_factors is None else np.asarray(mismatch_factors)[others]
        K *= np.prod(_factor_tensor(data[:, others], kernels[others], gammas[others], mismatch), 2)
    return K


def _joint_exponents_kernel(rows, squared, gammas, exponent):
    """The exponents of :func:`_joint_kernel`'s NumPy path into ``exponent`` (n_rows,
    n_rows), each pair of distinct rows once: ``gammas[j] u_j`` summed over the columns of
    ``rows`` in order, u = (a - b)^2 where ``squared``, else |a - b|, equal values adding
    nothing (compiled without fast-math: the same bits)."""
    n_rows, n_columns = rows.shape
    for a in range(n_rows):
        exponent[a, a] = 0.0
        for b in range(a + 1, n_rows):
            total = 0.0
            for j in range(n_columns):
                difference = rows[a, j] - rows[b, j]
                u = difference * difference if squared[j] else abs(difference)
                if u != 0.0:
                    total += u * gammas[j]
            exponent[a, b] = exponent[b, a] = total


joint_exponents_numba = compile_kernel(_joint_exponents_kernel, fastmath=()) if NUMBA else None


def _leave_one_out(K, targets):
    """Kernel ridge regression's smallest exact leave-one-out mean squared error over the
    penalties, that penalty, and K's eigendecomposition (one serves every penalty)."""
    eigenvalues, eigenvectors = np.linalg.eigh(K)
    decomposition = eigenvalues, eigenvectors, eigenvectors.T @ targets
    squared = np.square(eigenvectors)  # the hat matrix's diagonal at every penalty
    best_error, best_penalty = np.inf, _PENALTIES[0]
    for penalty in _PENALTIES:
        residuals = _held_out_residuals(targets, decomposition, squared, penalty)
        error = np.mean(np.square(residuals))
        if error < best_error:
            best_error, best_penalty = error, penalty
    return best_error, best_penalty, decomposition


def _held_out_residuals(targets, decomposition, squared, penalty):
    """The ridge's leave-one-out residuals at ``penalty``, from :func:`_leave_one_out`'s
    ``decomposition`` of K (``squared``: its eigenvectors squared)."""
    eigenvalues, eigenvectors, projected = decomposition
    shrink = eigenvalues / (eigenvalues + penalty)
    residuals = targets - eigenvectors @ (shrink[:, None] * projected)
    return residuals / (1.0 - squared @ shrink)[:, None]


def _ridge_weights(K, targets):
    """Dual coefficients of kernel ridge regression at the leave-one-out penalty, and its
    leave-one-out mean squared error."""
    error, penalty, (eigenvalues, eigenvectors, projected) = _leave_one_out(K, targets)
    return eigenvectors @ (projected / (eigenvalues + penalty)[:, None]), error


def _weights_at(K, targets, penalty):
    """Dual coefficients of kernel ridge regression at ``penalty``: one Cholesky
    factorisation (0.012 s at 1000 rows, where an eigendecomposition takes 0.126 s; through
    ``solve`` 0.017 s, which also estimates the condition number)."""
    shifted = K.copy()
    shifted.flat[:: K.shape[0] + 1] += penalty
    try:
        factor = scipy.linalg.cho_factor(shifted, overwrite_a=True, check_finite=False)
        return scipy.linalg.cho_solve(factor, targets, check_finite=False)
    except np.linalg.LinAlgError:  # rounding left K + penalty I short of positive definite
        return scipy.linalg.solve(K + penalty * np.eye(K.shape[0]), targets, assume_a="sym")


def check_penalty(data, kernels, gammas, targets, mismatch_factors=None, additive_gammas=None):
    """The penalty of least leave-one-out error for the ridge of :func:`ridge_fit` (the
    product kernel and the additive terms of ``additive_gammas``) on the rows given (up to
    400: :func:`check_rows`), at which :func:`model_values` fits its rows.

    One eigendecomposition of 400 rows instead of one of 1000 (0.012 s against 0.126 s).
    The penalty is the noise variance of the ridge's Gaussian-process reading, a property
    of the data rather than of how many rows there are; on the selection study it changed 6
    of 155 selections at k = 20% and 8 at 40% (the changelog has the ranks)."""
    K = _joint_kernel(data, kernels, gammas, mismatch_factors)
    if additive_gammas is not None and np.any(additive_gammas):
        K += additive_terms(data, kernels, additive_gammas)[1].sum(axis=2)
    return float(_leave_one_out(K, targets)[1])


def dropped_categories(data, kernels, gammas, targets, mismatch_factors):
    """The categorical columns the ridge predicts as well without: their factor becomes 1.

    The alignment keeps a part of an identifier's delta kernel (its factor on pairs that
    differ stays below 1), because that part adds to the Gram matrix's diagonal, and the
    centred alignment counts the diagonal. To the ridge it is only more penalty, but the
    Shapley values then credit the column with the fit's memorised part. Each categorical
    column, the one with the most values first, is dropped (factor 1 on every pair) unless
    that raises the ridge's leave-one-out error by more than 1%, on the rows given.

    Returns
    -------
    ndarray of shape (n_features,)
        ``mismatch_factors`` with the dropped columns' set to 1.
    """
    mismatch_factors = np.array(mismatch_factors, dtype=np.float64)
    categorical = np.flatnonzero((np.asarray(kernels) == "delta") & (mismatch_factors < 1.0))
    if categorical.size == 0:
        return mismatch_factors
    factors = _factor_tensor(data, kernels, gammas, mismatch_factors)
    error = _leave_one_out(feature_products(factors), targets)[0]
    levels = [np.unique(data[:, j]).size for j in categorical]
    for j in categorical[np.argsort(levels)[::-1]]:
        trial = factors.copy()
        trial[..., j] = 1.0
        trial_error = _leave_one_out(feature_products(trial), targets)[0]
        if trial_error <= (1.0 + _CATEGORY_GAIN) * error:
            error, factors, mismatch_factors[j] = min(error, trial_error), trial, 1.0
    return mismatch_factors


def _taken_in_turn(order, K, targets, trial_kernel, gain, n_jobs, known_fits=None):
    """The candidates of ``order`` taken one by one where ``trial_kernel(K, j)`` lowers the
    ridge's leave-one-out error by more than ``gain`` (a share), each against ``K`` with
    those taken before, the penalty of least leave-one-out error of ``K`` with them, and
    ``K`` with them.

    With ``n_jobs``, one candidate per worker is tried at once against the same kernel
    (with ``K``'s own fit beside the first of them); after one is taken, the later ones of
    its batch are tried again against the new kernel, so the answer is that of trying them
    one by one, to the last bit. Larger batches waste more fits where one is taken: at
    10^5 rows of friedman1 (the first of five taken), four per worker took five rounds of
    fits where one per worker takes three. ``known_fits``: the leave-one-out (error, penalty) of
    ``K`` (key None) and of some trials, not computed again.
    """
    known_fits = dict(known_fits or {})

    def fit(j, K):  # j None: K itself
        if j in known_fits:
            return known_fits[j]
        return _leave_one_out(K if j is None else trial_kernel(K, j=j), targets)[:2]

    order = list(order)
    workers = effective_n_jobs(n_jobs)
    current = fit(None, K) if None in known_fits or workers == 1 or not order else None
    taken = []
    while order:
        batch = order[: max(1, workers - (current is None))]
        jobs = batch if current is not None else [None, *batch]
        work = sum(j not in known_fits for j in jobs) * 4 * K.shape[0] ** 3  # eigh each
        fits = list(run_tasks(partial(fit, K=K), jobs, n_jobs, work=work))
        if current is None:
            current, fits = fits[0], fits[1:]
        for j, trial in zip(batch, fits):
            order.remove(j)
            if trial[0] < (1.0 - gain) * current[0]:
                current, K = trial, trial_kernel(K, j=j)
                known_fits = {}  # they were against the kernel before
                taken.append(j)
                break  # the rest of the batch was tried against the kernel before
    return taken, current[1], K


def _additive_trial(K, data, kernels, term_gammas, j):
    """``K`` plus feature j's additive term (:func:`additive_terms`) at ``term_gammas[j]``."""
    return K + ADDITIVE_WEIGHT * _term_factor(data, kernels, term_gammas, j)


def _term_factor(data, kernels, term_gammas, j):
    return _factor_tensor(data[:, [j]], [kernels[j]], term_gammas[[j]])[..., 0]


def additive_terms(data, kernels, additive_gammas):
    """The ridge's additive terms: the columns with a positive ``additive_gammas`` entry and
    ``ADDITIVE_WEIGHT`` times each one's factor at it on the rows' pairs, (n_rows, n_rows,
    n_terms)."""
    columns = np.flatnonzero(np.asarray(additive_gammas) > 0)
    factors = _factor_tensor(
        data[:, columns], np.asarray(kernels)[columns], np.asarray(additive_gammas)[columns]
    )
    return columns, ADDITIVE_WEIGHT * factors


def drop_one_gains(
    data,
    kernels,
    gammas,
    targets,
    candidates,
    mismatch_factors=None,
    additive_gammas=None,
    n_jobs=None,
):
    """How much the ridge's leave-one-out error rises without each candidate feature.

    The ridge of :func:`ridge_fit` (the product kernel and the additive terms of
    ``additive_gammas``) is fitted on the rows given with every feature, and again with each
    candidate's factor 1 and its term, if any, left out: one eigendecomposition each.

    Returns
    -------
    ndarray of shape (len(candidates),)
        Each candidate's error over the error with every feature, less 1 (negative where
        the ridge predicts better without it; inf where it predicts the rows without error
        with every feature and not without the candidate).
    """
    kernels = np.asarray(kernels)
    gammas = np.asarray(gammas, dtype=np.float64)
    mismatch = None if mismatch_factors is None else np.asarray(mismatch_factors)
    candidates = np.asarray(candidates, dtype=int)
    terms = {}
    if additive_gammas is not None and np.any(additive_gammas):
        columns, term_factors = additive_terms(data, kernels, additive_gammas)
        terms = dict(zip(columns, np.moveaxis(term_factors, 2, 0)))
    # The other features' kernel once and each candidate's factor apart: a trial is then a
    # few products of the rows' pairs, not a kernel over every feature.
    rest = np.setdiff1d(np.arange(kernels.size), candidates)
    rest_kernel = _joint_kernel(
        data[:, rest], kernels[rest], gammas[rest], None if mismatch is None else mismatch[rest]
    )
    candidate_factors = np.moveaxis(
        _factor_tensor(
            data[:, candidates],
            kernels[candidates],
            gammas[candidates],
            None if mismatch is None else mismatch[candidates],
        ),
        2,
        0,
    ).copy()

    def error_without(j):  # j None: every feature
        K = rest_kernel.copy()
        for candidate, factor in zip(candidates, candidate_factors):
            if candidate != j:
                K *= factor
        for i, term in terms.items():
            if i != j:
                K += term
        return _leave_one_out(K, targets)[0]

    work = (candidates.size + 1) * 4 * data.shape[0] ** 3  # an eigendecomposition each
    error, *errors = run_tasks(error_without, [None, *candidates], n_jobs, work=work)
    errors = np.array(errors)
    if error == 0:
        return np.where(errors > 0, np.inf, 0.0)
    return errors / error - 1.0


def _candidates(kernels, gammas, median_gammas, evidence=None):
    """The set-aside features :func:`additive_features` tries, in the order it tries them."""
    with np.errstate(divide="ignore"):
        widened = np.log(np.asarray(gammas) / median_gammas)
    numeric = np.asarray(kernels) != "delta"
    candidates = np.flatnonzero(numeric & (widened < -_SET_ASIDE))
    if evidence is None:
        return candidates[np.argsort(widened[candidates], kind="stable")]
    evidence = np.asarray(evidence)
    candidates = candidates[evidence[candidates] > 0]
    return candidates[np.argsort(-evidence[candidates], kind="stable")[:_SET_ASIDE_TRIES]]


def additive_features(
    data,
    kernels,
    gammas,
    median_gammas,
    targets,
    mismatch_factors=None,
    evidence=None,
    n_jobs=None,
    known_fits=None,
    return_penalty=False,
):
    """The features that enter the ridge as terms of their own (:func:`additive_terms`):
    those the alignment set aside that the ridge predicts better with.

    The alignment widens away a feature whose effect is even (``|x|``, ``cos 2x``) beside
    others: in a product kernel j's effect multiplies every pair's similarity by j's factor,
    which makes the kernel more local in every other feature at once, and the alignment
    finds the kernel aligns better with y without it. Put back into the product at its
    median-heuristic parameter, such a feature lowers the ridge's leave-one-out error by
    0.3% at the median on a planted design at n = 200 (``python -m
    benchmarks.selection.set_aside_gains``); as a term of its own, 0.3 times its factor
    added to the product kernel, by 9%, and it costs the other features nothing. So each
    feature widened more than e^3 below its median-heuristic parameter, most widened first,
    enters as a term where that lowers the error by more than 2%, on the rows given (about
    400: one eigendecomposition per candidate), each against the kernel with the terms
    taken before.

    Categorical columns (``mismatch_factors``, see :func:`_factor_tensor`) are never tried:
    their alignment has no median-heuristic counterpart.

    With ``evidence`` (each feature's value in the ANOVA game, about 0 for a feature y
    does not depend on), only the five candidates of largest positive evidence are tried,
    largest first: the alignment widens the noise features too, and trying each costs an
    eigendecomposition. Without it, every candidate is tried and the error must drop by
    more than 10%.

    With ``n_jobs`` the candidates are tried in batches, with the answer of trying them one
    by one (:func:`_taken_in_turn`). ``known_fits`` (from :func:`set_aside_fits` on the
    same arguments) are leave-one-out fits computed before, which are not computed again.

    With ``evidence``, a numeric feature not taken, set aside or not, may then enter at a
    finer width (:func:`_finer_terms`), and a pair of set-aside features without a term
    the product kernel again, at their median-heuristic parameters (:func:`_restored_pair`).

    Returns
    -------
    additive_gammas : ndarray of shape (n_features,)
        Each feature's term's kernel parameter (its median-heuristic one, or a finer one),
        0 for a feature without a term.
    penalty : float or None
        With ``return_penalty``: :func:`check_penalty` of these rows with the terms taken,
        where the trials found it: with at most one term taken and no pair restored (else
        the kernel is summed there in another order), else None.
    product_gammas : ndarray of shape (n_features,)
        With ``return_penalty``: the product kernel's parameters, ``gammas`` with a restored
        pair's median-heuristic ones.
    """
    gammas = np.asarray(gammas, dtype=np.float64)
    median_gammas = np.asarray(median_gammas, dtype=np.float64)
    order = _candidates(kernels, gammas, median_gammas, evidence)
    term_gammas = np.zeros(gammas.size)
    product_gammas = gammas.copy()
    penalty = None
    numeric = np.flatnonzero(np.asarray(kernels) != "delta")
    if order.size or (evidence is not None and numeric.size):
        product = K = _joint_kernel(data, kernels, gammas, mismatch_factors)
    if order.size:
        trial = partial(_additive_trial, data=data, kernels=kernels, term_gammas=median_gammas)
        gain = _ADDITIVE_GAIN if evidence is not None else _ADDITIVE_GAIN_UNVETTED
        taken, penalty, K = _taken_in_turn(order, K, targets, trial, gain, n_jobs, known_fits)
        term_gammas[taken] = median_gammas[taken]
    rest = np.setdiff1d(numeric, np.flatnonzero(term_gammas))
    if evidence is not None and numeric.size:
        residual_gram = _residual_gram(K, targets)
        taken, finer_gammas, finer_penalty, K = _finer_terms(
            K, data, kernels, median_gammas, targets, numeric, residual_gram, term_gammas, n_jobs
        )
        if taken:
            # A term replaced is summed in another order than check_penalty sums it.
            replaced = np.any(term_gammas[taken] > 0)
            term_gammas[taken] = finer_gammas[taken]
            penalty = None if replaced else finer_penalty
        set_aside = np.intersect1d(_candidates(kernels, gammas, median_gammas), rest)
        pair = _restored_pair(
            K,
            product,
            data,
            kernels,
            median_gammas,
            targets,
            np.setdiff1d(set_aside, taken),
            residual_gram,
        )
        if pair is not None:
            product_gammas[pair] = median_gammas[pair]
            penalty = None  # check_penalty's kernel is summed in another order
    penalty = penalty if np.count_nonzero(term_gammas) <= 1 else None
    if not return_penalty:
        return term_gammas
    return term_gammas, penalty, product_gammas


def _finer_terms(
    K, data, kernels, median_gammas, targets, columns, residual_gram, term_gammas, n_jobs=None
):
    """The ``columns`` that enter the ridge of kernel ``K`` as terms at a finer width than
    the median heuristic's. Where a feature's effect is finer than that width (``sin 6x``
    over four periods), neither the ANOVA game nor a term at it sees the feature (or the term
    takes a little of it), and the alignment widens it away or, alone with y (``sin 8x``),
    keeps it at a width too wide for it. A column with a term in ``K`` already (at
    ``term_gammas``, the median width) is tried with the finer term in its place.

    The residuals of the ridge show it. On every ``_FINER_STEP``-th row, each column's
    factor at its median-heuristic bandwidth divided by each of ``_FINER_DIVISORS`` is
    scored against the ridge's leave-one-out residuals there (``residual_gram``, from
    :func:`_residual_gram`; :func:`~pkex_select._pair_evidence.dependence_scores`);
    the ``_FINER_TRIES`` columns of largest score, where it reaches ``_FINER_SCORE``, are
    tried at their best width, each entering where it lowers the leave-one-out error by
    more than ``_ADDITIVE_GAIN_UNVETTED``.

    Returns
    -------
    taken : list of int
    finer_gammas : ndarray of shape (n_features,)
        Each column's parameter at its best width (0 elsewhere).
    penalty : float or None
        The penalty of least leave-one-out error of ``K`` with the terms taken; None where
        none was tried.
    K : ndarray of shape (n_rows, n_rows)
        ``K`` with the terms taken.
    """
    finer_gammas, scores = _finer_scores(data, kernels, median_gammas, columns, residual_gram)
    order = columns[np.argsort(-scores, kind="stable")[:_FINER_TRIES]]
    order = order[scores[np.searchsorted(columns, order)] >= _FINER_SCORE]
    if order.size == 0:
        return [], finer_gammas, None, K

    def trial(K, j):
        if term_gammas[j] == 0:
            return _additive_trial(K, data, kernels, finer_gammas, j)
        finer = _term_factor(data, kernels, finer_gammas, j)
        return K + ADDITIVE_WEIGHT * (finer - _term_factor(data, kernels, term_gammas, j))

    taken, penalty, K = _taken_in_turn(order, K, targets, trial, _ADDITIVE_GAIN_UNVETTED, n_jobs)
    return taken, finer_gammas, penalty, K


def _residual_gram(K, targets):
    """The linear kernel of the leave-one-out residuals of the ridge of kernel ``K`` on
    every ``_FINER_STEP``-th row (the ridge refitted there), which :func:`_finer_terms` and
    :func:`_restored_pair` score the features against; None on fewer than 4 such rows (too
    few to U-centre)."""
    rows = slice(None, None, _FINER_STEP)
    subsample = targets[rows]
    if subsample.shape[0] < 4:
        return None
    _, penalty, decomposition = _leave_one_out(K[rows, rows], subsample)
    squared = np.square(decomposition[1])
    residuals = _held_out_residuals(subsample, decomposition, squared, penalty)
    return residuals @ residuals.T


def _finer_scores(data, kernels, median_gammas, columns, residual_gram):
    """Each of ``columns``' best score against the ridge's residuals (:func:`_finer_terms`)
    and the kernel parameter it is reached at: ``term_gammas`` (n_features,), 0 off
    ``columns``, and ``scores`` (len(columns),), all -inf without ``residual_gram``."""
    term_gammas = np.zeros(median_gammas.size)
    best_scores = np.full(columns.size, -np.inf)
    if residual_gram is None:
        return term_gammas, best_scores
    kernels = np.asarray(kernels)
    values = data[::_FINER_STEP, columns]
    constant = np.ptp(values, axis=0) == 0
    for divisor in _FINER_DIVISORS:
        # The parameter of each column's bandwidth over the divisor.
        narrower = [
            gamma_from_bandwidth(k, 1.0 / divisor) / gamma_from_bandwidth(k, 1.0)
            for k in kernels[columns]
        ]
        trial_gammas = median_gammas[columns] * np.array(narrower)
        scores = dependence_scores(
            DataFactors(values, kernels[columns], [trial_gammas], constant), residual_gram
        )
        better = scores > best_scores
        term_gammas[columns[better]], best_scores[better] = trial_gammas[better], scores[better]
    return term_gammas, best_scores


def _restored_pair(K, product, data, kernels, median_gammas, targets, columns, residual_gram):
    """The pair of ``columns`` (features the alignment set aside, without a term) that
    enters the product kernel again at its median-heuristic parameters, or None.

    A pure interaction (``x_i x_j`` with no main effect) has nothing the alignment's sweeps
    see feature by feature, and neither a term of one feature nor a finer width takes it;
    the ridge's residuals show it as a pair. Of every pair of ``columns``, the one of
    largest score against the residuals (``residual_gram``; the ANOVA game's pair dividend
    over its spread, :func:`~pkex_select._pair_evidence.pair_scores`), where it reaches
    ``_PAIR_SCORE``, is tried: ``product`` (the product kernel part of ``K``) times the
    pair's factors, the terms of ``K`` beside it, and it enters where that lowers the
    leave-one-out error by more than ``_ADDITIVE_GAIN_UNVETTED``."""
    if residual_gram is None or columns.size < 2:
        return None
    kernels = np.asarray(kernels)
    values = data[::_FINER_STEP, columns]
    scores = pair_scores(
        DataFactors(
            values, kernels[columns], [median_gammas[columns]], np.ptp(values, axis=0) == 0
        ),
        residual_gram,
        columns.size,
    )
    scores[np.tril_indices(columns.size)] = -np.inf  # each pair once, no feature with itself
    first, second = np.unravel_index(np.argmax(scores), scores.shape)
    if scores[first, second] < _PAIR_SCORE:
        return None
    pair = columns[[first, second]]
    factors = _factor_tensor(data[:, pair], kernels[pair], median_gammas[pair])
    trial = K + product * (factors[..., 0] * factors[..., 1] - 1.0)
    if (
        _leave_one_out(trial, targets)[0]
        < (1.0 - _ADDITIVE_GAIN_UNVETTED) * _leave_one_out(K, targets)[0]
    ):
        return pair
    return None


def set_aside_fits(pending, data, kernels, gammas, median_gammas, targets, mismatch_factors=None):
    """The first leave-one-out fits (error, penalty) :func:`additive_features` needs,
    computed while ``pending()`` is True: the aligned kernel's (key None) and, most widened
    first, each set-aside feature's trial against it.

    A fit whose ANOVA game runs beside the alignment waits for its values, which choose
    the features tried (``evidence``); this is work for that wait, at most one trial of it
    wasted.
    """
    median_gammas = np.asarray(median_gammas, dtype=np.float64)
    candidates = _candidates(kernels, gammas, median_gammas)
    fits = {}
    if candidates.size == 0 or not pending():
        return fits
    K = _joint_kernel(data, kernels, gammas, mismatch_factors)
    fits[None] = _leave_one_out(K, targets)[:2]
    for j in candidates:
        if not pending():
            break
        trial = _additive_trial(K, data, kernels, median_gammas, j)
        fits[j] = _leave_one_out(trial, targets)[:2]
    return fits


@dataclass(frozen=True)
class ModelFactors:
    """What the model game needs of the factor tensor Z of its rows' pairs (n_rows, n_rows,
    n_features), without holding all of it (:func:`model_factors`).

    Attributes
    ----------
    points : ndarray of int or None
        The explained rows (:func:`explained_points`; None: all).
    point_factors : ndarray of shape (n_points, n_rows, n_features)
        ``Z[points]``.
    kernel : ndarray of shape (n_rows, n_rows)
        The product kernel, Z's product over the features.
    means : ndarray of shape (n_rows, n_features)
        Z's mean over its first axis: each removed factor of the observational game.
    """

    points: np.ndarray | None
    point_factors: np.ndarray
    kernel: np.ndarray
    means: np.ndarray


def model_factors(data, kernels, gammas, mismatch_factors=None, n_jobs=None):
    """The factors :func:`ridge_fit` fits on and :func:`explained_values` explains.

    Beyond ``_EXPLAINED_POINTS`` rows only the explained rows of the tensor are kept; the
    others' rows are built in blocks for their products and means, then dropped (Z is
    symmetric, so a row's mean is its column's). At 1000 rows and d = 20 that holds 80 MB
    instead of 160 MB and takes 0.10 s instead of 0.12 s on one thread, with the same
    bits."""
    points = explained_points(data.shape[0])
    tensor = partial(_factor_tensor, data, kernels, gammas, mismatch_factors, n_jobs)
    if points is None:
        factors = tensor()
        return ModelFactors(None, factors, feature_products(factors), factors.mean(axis=0))
    point_factors = tensor(rows=points)
    kernel = np.empty((data.shape[0], data.shape[0]))
    means = np.empty(data.shape)
    kernel[points], means[points] = feature_products(point_factors), point_factors.mean(axis=1)
    others = np.setdiff1d(np.arange(data.shape[0]), points)
    block = max(1, TASK_BYTES // (8 * data.size))
    for start in range(0, others.size, block):
        rows = others[start : start + block]
        factors = tensor(rows=rows)
        kernel[rows], means[rows] = feature_products(factors), factors.mean(axis=1)
    return ModelFactors(points, point_factors, kernel, means)


def ridge_fit(
    data,
    kernels,
    gammas,
    targets,
    mismatch_factors=None,
    n_jobs=None,
    after_factors=None,
    factors=None,
    terms=None,
    penalty=None,
):
    """The kernel ridge regression :func:`model_values` explains: its factors
    (:func:`model_factors`), the dual coefficients at ``penalty`` or, if None, at the
    penalty of least leave-one-out error on these rows, and then the leave-one-out R^2 (1
    minus the mean squared error over the targets' variance; None with a ``penalty`` given).
    Parameters as there, ``terms`` the second of :func:`additive_terms`; ``n_jobs`` threads
    share the factors, and ``after_factors()`` is called after them, before the
    factorisation, which runs on one."""
    if factors is None:
        factors = model_factors(data, kernels, gammas, mismatch_factors, n_jobs)
    if after_factors is not None:
        after_factors()
    K = factors.kernel if terms is None else factors.kernel + terms.sum(axis=2)
    _warn_degenerate(K)
    if penalty is not None:
        return factors, _weights_at(K, targets, penalty), None
    weights, error = _ridge_weights(K, targets)
    return factors, weights, float(1.0 - error / np.var(targets, axis=0).mean())


def _warn_degenerate(K):
    """Warn where the joint kernel is the identity or constant over the pairs of rows: the
    ridge then memorises y or fits its mean, every feature moves it alike, and a selection
    by value is arbitrary."""
    n_rows = K.shape[0]
    if n_rows < 2:
        return
    # Every entry off the diagonal, as a view (K is symmetric): no gather of the pairs.
    pairs = np.ascontiguousarray(K).reshape(-1)[1:].reshape(n_rows - 1, n_rows + 1)[:, :-1]
    smallest, largest = pairs.min(), pairs.max()
    if _DEGENERATE < smallest and largest < 1.0 - _DEGENERATE:
        return
    if largest <= _DEGENERATE:
        shape = "the identity (no two rows alike: bandwidths far too small)"
    elif smallest >= 1.0 - _DEGENERATE:
        shape = "constant (every two rows alike: bandwidths far too large)"
    else:
        return
    warnings.warn(
        f"The model game's joint kernel is {shape}, so every feature moves the kernel "
        "ridge alike and a selection by value is arbitrary. Leave bandwidth='auto' (aligned "
        "with y) or give bandwidths near the features' spread.",
        UserWarning,
        stacklevel=outside_stacklevel(),
    )


def explained_points(n_rows):
    """The rows whose explanations :func:`model_values` averages: all up to
    ``_EXPLAINED_POINTS``, else that many evenly spaced (the rows are a uniform subsample
    already, or the data's own; either way a fit without a seed stays deterministic)."""
    if n_rows <= _EXPLAINED_POINTS:
        return None
    return np.linspace(0, n_rows - 1, _EXPLAINED_POINTS).round().astype(np.intp)


def explained_values(factors, weights, n_jobs=None, additive=None):
    """Mean absolute observational Shapley value of each feature in the fit of
    :func:`ridge_fit` (its :class:`ModelFactors` and ``weights``), summed over the outputs,
    over the explained rows. ``additive``: the pair :func:`additive_terms` returns, the
    fit's terms of one feature."""
    points = factors.points
    values = point_values(factors.point_factors, factors.means, weights, n_jobs=n_jobs)
    if additive is not None:
        # A term of feature j alone moves only j's value: its own part of the fit, less
        # that part with the factor at its mean.
        for j, term in zip(additive[0], np.moveaxis(additive[1], 2, 0)):
            rows = term if points is None else term[points]
            values[:, j] += (rows - term.mean(axis=0)) @ weights
    return np.abs(values).sum(axis=-1).mean(axis=0)


def model_values(
    data,
    kernels,
    gammas,
    targets,
    mismatch_factors=None,
    n_jobs=None,
    after_factors=None,
    factors=None,
    additive_gammas=None,
    penalty=None,
):
    """Mean absolute observational Shapley value of each feature in a kernel ridge fit,
    over up to ``_EXPLAINED_POINTS`` of its rows (:func:`explained_points`).

    Parameters
    ----------
    data : ndarray of shape (n_rows, n_features)
        Standardised numeric columns and integer-coded categorical ones.
    kernels : sequence of str
        Each column's kernel.
    gammas : ndarray of shape (n_features,)
        The kernel parameters.
    targets : ndarray of shape (n_rows, n_outputs)
        Centred outputs (:func:`ridge_targets`).
    mismatch_factors : ndarray of shape (n_features,), default=None
        The categorical columns' factors on pairs that differ (None: 0, the delta kernel).
    n_jobs : int, default=None
    after_factors : callable, default=None
        Called once the factors are built (to start work beside the
        eigendecomposition, which runs on one thread).
    factors : ModelFactors, default=None
        The factors of these rows and parameters (:func:`model_factors`), built before
        (while the ANOVA game runs beside).
    additive_gammas : ndarray of shape (n_features,), default=None
        The kernel parameter of each feature's additive term (:func:`additive_terms`), 0
        for none.
    penalty : float, default=None
        The ridge penalty (:func:`check_penalty`); None: the one of least leave-one-out
        error on these rows.

    Returns
    -------
    ndarray of shape (n_features,)
    """
    additive = None
    if additive_gammas is not None and np.any(additive_gammas):
        additive = additive_terms(data, kernels, additive_gammas)
    factors, weights, _ = ridge_fit(
        data,
        kernels,
        gammas,
        targets,
        mismatch_factors,
        n_jobs,
        after_factors,
        factors,
        None if additive is None else additive[1],
        penalty,
    )
    return explained_values(factors, weights, n_jobs, additive)
