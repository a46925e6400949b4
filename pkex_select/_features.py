"""Features made ready for a Gram-statistic game, and the kernel factors of their pairs.

:func:`prepare_features` turns validated columns into one frozen :class:`PreparedFeatures`:
categorical columns become integer codes for the delta kernel, numeric ones are standardised,
and each gets its bandwidth and, per bandwidth scale, its kernel parameter. Its
:meth:`~PreparedFeatures.factors` (or :class:`GramFactors` for Gram matrices given by a user)
gives the kernel factors ``k_j(X[a, j], X[b, j])`` of any chunk of pairs.
"""

import math
import warnings
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ._integrals import NUMBA, compile_kernel
from ._plan import pairs_of_rows
from ._scheduling import run_tasks, task_runs
from ._spelling import spelled
from ._validation import encode_labels, outside_stacklevel, standardise
from .kernels import bandwidths, factor_of_difference, gamma_from_bandwidth, kernel_distances

__all__ = [
    "ANOVA_FULL_WEIGHT_FEATURES",
    "add_row_sums",
    "add_row_sums_numba",
    "add_row_sums_numpy",
    "anova_weight",
    "block_exponents_numba",
    "CentredFactors",
    "centre_blocks_numba",
    "centre_blocks_numpy",
    "centre_pairs_numba",
    "centre_pairs_numpy",
    "centre_rows",
    "centre_rows_numba",
    "centre_rows_numpy",
    "ChunkFactors",
    "DataFactors",
    "exponents_numba",
    "GramFactors",
    "JointFactors",
    "IdentifierColumnWarning",
    "PreparedFeatures",
    "non_numeric_message",
    "prepare_features",
    "resolve_scales",
    "row_exponents_numba",
    "with_bandwidths",
]


@dataclass(frozen=True)
class PreparedFeatures:
    """Columns ready for the pair game.

    Attributes
    ----------
    data : ndarray of shape (n_samples, n_features)
        Numeric columns standardised (zero mean, unit variance), categorical ones as integer
        codes.
    kernels : tuple of str
        The kernel factor of each column ("delta" for categorical ones).
    bandwidths : ndarray of shape (n_features,)
        In units of each column's standard deviation (1 for the delta kernel).
    scales : tuple of float
        The bandwidth scales; the numeric bandwidths are multiplied by each in turn.
    gammas : tuple of ndarray of shape (n_features,)
        The kernel parameters at each scale.
    constant : ndarray of bool of shape (n_features,)
        Columns with a single value: their factor is 1 on every pair.
    categorical : ndarray of bool of shape (n_features,)
    mismatch_factors : ndarray of shape (n_features,) or None
        The model game's factor of each categorical column on pairs whose values differ
        (aligned with y); None (or 0) is the delta kernel's. The statistic's games ignore it.
    additive_gammas : ndarray of shape (n_features,) or None
        The kernel parameter of each feature's additive term in the model game's ridge
        (``_ridge_game.additive_features``), 0 (or None) for none. The statistic's games
        ignore it.
    """

    data: np.ndarray
    kernels: tuple
    bandwidths: np.ndarray
    scales: tuple
    gammas: tuple
    constant: np.ndarray
    categorical: np.ndarray
    mismatch_factors: np.ndarray | None = None
    additive_gammas: np.ndarray | None = None

    def factors(self):
        """The kernel factors of pairs of these columns, at every scale (:class:`DataFactors`)."""
        return DataFactors(self.data, self.kernels, self.gammas, self.constant)


def resolve_scales(scales, n_numeric):
    """The bandwidth scales: "auto" is (1, sqrt(n_numeric)), or (1,) for one numeric column."""
    if isinstance(scales, str):
        return (1.0, math.sqrt(n_numeric)) if n_numeric > 1 else (1.0,)
    try:
        values = np.asarray(scales, dtype=np.float64)
    except (TypeError, ValueError):
        values = None
    if (
        values is None
        or values.ndim != 1
        or values.size == 0
        or not np.all(np.isfinite(values) & (values > 0))
    ):
        raise ValueError(
            f"scales must be 'auto' or a non-empty list of positive numbers; got {scales!r}."
        )
    return tuple(values.tolist())


def prepare_features(
    X,
    categorical,
    *,
    kernel="rbf",
    bandwidth="median",
    scales="auto",
    column_names=None,
    n_jobs=None,
):
    """Standardise, encode and give bandwidths to the columns of X.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Float columns, or objects where some columns are categorical.
    categorical : ndarray of bool of shape (n_features,)
        The columns compared by the delta kernel; they may hold any labels.
    kernel : {"rbf", "laplacian", "cauchy"}, default="rbf"
        The kernel factor of the numeric columns.
    bandwidth : {"median", "scott", "silverman", "std"} or float, default="median"
        The bandwidth rule (:func:`pkex_select.kernels.bandwidths`) on the standardised
        numeric columns.
    scales : "auto" or sequence of float, default="auto"
        See :func:`resolve_scales`.
    column_names : sequence of str, default=None
        Names for error messages; "column j" when None.
    n_jobs : int, default=None
        Threads of the numeric columns' standardisation (the same bits on any number).

    Returns
    -------
    PreparedFeatures
    """
    categorical = np.asarray(categorical, dtype=bool)
    numeric = ~categorical
    if categorical.any() or np.asarray(X).dtype == object:
        X = np.asarray(X, dtype=object)
        columns = np.empty(X.shape, dtype=np.float64)
        for j in range(X.shape[1]):
            name = str(column_names[j]) if column_names is not None else f"column {j}"
            if categorical[j]:
                columns[:, j] = encode_labels(X[:, j], f"categorical column {name}")[1]
                continue
            try:
                columns[:, j] = X[:, j].astype(np.float64)
            except (TypeError, ValueError):
                # pandas' NA does not convert: as NaN, the check below names it missing.
                missing = pd.isna(X[:, j])
                try:
                    X[~missing, j].astype(np.float64)
                except (TypeError, ValueError):
                    raise ValueError(non_numeric_message([name])) from None
                columns[:, j] = np.where(missing, np.nan, X[:, j]).astype(np.float64)
        if not np.all(np.isfinite(columns[:, numeric])):
            raise ValueError(_non_finite_message(columns, numeric, column_names))
    else:
        columns = np.asarray(X, dtype=np.float64)
    column_bandwidths = np.ones(columns.shape[1])  # the delta kernel has no width
    if numeric.all():
        columns, constant, column_bandwidths = _standardised(columns, bandwidth, n_jobs)
    else:  # columns is the encoded copy
        constant = np.all(columns == columns[:1], axis=0)
        _warn_identifiers(columns, categorical, column_names)
        columns[:, numeric] = standardise(columns[:, numeric])[0]
        if numeric.any():
            column_bandwidths[numeric] = bandwidths(columns[:, numeric], bandwidth)
    kernels = tuple("delta" if is_categorical else kernel for is_categorical in categorical)
    resolved = resolve_scales(scales, int(numeric.sum()))
    prepared = PreparedFeatures(columns, kernels, None, resolved, None, constant, categorical)
    return with_bandwidths(prepared, column_bandwidths)


def _non_finite_message(columns, numeric, column_names=None):
    """What to do about the missing or infinite values of ``columns``' numeric ones."""

    def rows_of(found):
        return ", ".join(
            f"{count} row{'s' if count > 1 else ''} of "
            + (str(column_names[j]) if column_names is not None else f"column {j}")
            for j, count in enumerate(found.sum(axis=0))
            if count and numeric[j]
        )

    found = [
        f"{what} in {rows}"
        for what, rows in (
            ("missing values (None, NaN or pd.NA)", rows_of(np.isnan(columns))),
            ("infinite values", rows_of(np.isinf(columns))),
        )
        if rows
    ]
    return (
        f"X has {' and '.join(found)}; impute them (SimpleImputer before the selector in a "
        "pipeline) or drop those rows first."
    )


def _standardised(columns, bandwidth, n_jobs=None):
    """Numeric ``columns`` standardised (in a new C-ordered array), the mask of the constant
    ones and their bandwidths by ``bandwidth``'s rule.

    Each group of columns is copied into Fortran order (whose sums along a column are
    NumPy's pairwise ones), standardised there and written back in rows; every column's
    arithmetic is its own, so the groups run on ``n_jobs`` threads with the bits of one.
    The fit's first piece, which nothing runs beside: 35 ms at 10^5 x 20 on one thread."""
    n_rows, n_columns = columns.shape
    standardised = np.empty((n_rows, n_columns))
    constant = np.empty(n_columns, dtype=bool)
    column_bandwidths = np.empty(n_columns)
    groups = [slice(g[0], g[-1] + 1) for g in np.array_split(np.arange(n_columns), 4) if g.size]

    def standardise_group(group):
        part, constant[group] = standardise(_fortran_copy(columns, group), in_place=True)
        standardised[:, group] = part
        column_bandwidths[group] = bandwidths(part, bandwidth)

    # About 20 operations per entry: the copies, the sums and the scaling.
    for _ in run_tasks(standardise_group, groups, n_jobs, work=20 * columns.size):
        pass
    return standardised, constant, column_bandwidths


def with_bandwidths(features, column_bandwidths):
    """``features`` with other bandwidths (the delta kernel's stay 1), at its scales."""
    gammas = tuple(
        np.array(
            [
                gamma_from_bandwidth(k, s if k == "delta" else s * scale)
                for k, s in zip(features.kernels, column_bandwidths)
            ]
        )
        for scale in features.scales
    )
    return replace(features, bandwidths=np.asarray(column_bandwidths), gammas=gammas)


# A delta-kernel column whose values are shared by fewer than this share of its pairs is
# nearly an identifier (a row ID, a date read as text, a numeric column with one text cell).
_IDENTIFIER_PAIR_SHARE = 0.01


class IdentifierColumnWarning(UserWarning):
    """A categorical column takes a different value in (nearly) every row."""


def _fortran_copy(X, columns=slice(None), rows=2**16):
    """A copy of the 2-D array ``X[:, columns]`` in Fortran order, ``rows`` rows at a time:
    NumPy's own C-to-Fortran copy reads X with strides of a row, 3x slower at 10^6 x 20."""
    if not X.flags.c_contiguous:
        return np.array(X[:, columns], order="F")
    transposed = np.empty((len(range(X.shape[1])[columns]), X.shape[0]))
    for start in range(0, X.shape[0], rows):
        transposed[:, start : start + rows] = X[start : start + rows, columns].T
    return transposed.T


def _warn_identifiers(columns, categorical, column_names):
    """Warn about categorical columns with (nearly) a distinct value in every row.

    Their delta factor is 0 on (nearly) every pair: in the baseline and observational games
    that zeroes the joint kernel, and so every value and the statistic (the model game
    aligns and usually drops it: ``_ridge_game.dropped_categories``); the ANOVA game
    centres it to about -1/n, close to the removed factor 1, so it costs the others little.
    """
    n = columns.shape[0]
    for j in np.flatnonzero(categorical):
        counts = np.unique(columns[:, j], return_counts=True)[1]
        equal_pairs = float((counts * (counts - 1.0)).sum()) / max(n * (n - 1.0), 1.0)
        if counts.size > 1 and equal_pairs < _IDENTIFIER_PAIR_SHARE:
            name = str(column_names[j]) if column_names is not None else f"column {j}"
            warnings.warn(
                f"categorical column {name} has {counts.size} distinct values in {n} rows: "
                f"only {equal_pairs:.2%} of its pairs of rows agree, like an identifier. Its "
                "delta kernel is 0 on almost every pair: the model game drops such a column "
                "where the ridge loses nothing without it, but in the 'baseline' and "
                "'observational' games it zeroes every value; drop it, or encode it as a "
                "number if it is one (a date, a count).",
                IdentifierColumnWarning,
                stacklevel=outside_stacklevel(),
            )


def non_numeric_message(columns):
    return (
        f"X has non-numeric values in {', '.join(map(str, columns))}. Declare such "
        "columns in categorical_features=[...] (they then get a delta kernel) or encode "
        "them as numbers."
    )


class DataFactors:
    """Kernel factors ``k_j(X[a, j], X[b, j])`` of pairs, from (standardised) numeric data.

    Categorical columns hold integer codes for the delta kernel. ``gammas`` holds one
    array of per-feature parameters per bandwidth scale; a call returns the factors of
    every scale, computed from one set of differences.
    """

    def __init__(self, X, kernels, gammas, constant=None):
        self.X, self.gammas = X, [np.asarray(g) for g in gammas]
        self.n_samples, self.n_features = X.shape
        self.constant = (
            np.zeros(self.n_features, dtype=bool) if constant is None else np.asarray(constant)
        )
        # The columns of each kernel, found once rather than for every chunk.
        self.kernels = np.asarray(kernels)
        self.columns = {k: np.flatnonzero(self.kernels == k) for k in set(self.kernels)}
        self._transposed = {}
        self._row_major = None
        # For the compiled pass: minus each parameter and each kernel's distance (see
        # _row_exponents_kernel; a delta kernel's match as the exponent -1 times 0 or inf).
        # None where a Cauchy factor or an infinite parameter (inf * 0 at equal values)
        # needs the factor-by-factor path.
        self._exponent_scales = self._distances_of = None
        delta = self.kernels == "delta"
        finite = all(np.all(np.isfinite(g[~delta])) for g in self.gammas)
        if finite and set(self.columns) <= {"rbf", "laplacian", "delta"}:
            self._exponent_scales = np.array([np.where(delta, -1.0, -g) for g in self.gammas])
            self._distances_of = np.select([self.kernels == "rbf", delta], [0, 2], 1)

    def _columns_of(self, kernel):
        """The features of ``kernel`` as contiguous rows, transposed once."""
        if kernel not in self._transposed:
            cols = self.columns[kernel]
            # Every column (one kernel): one copy, not a gather and a copy.
            source = self.X if cols.size == self.n_features else self.X[:, cols]
            self._transposed[kernel] = np.ascontiguousarray(source.T)
        return self._transposed[kernel]

    def _differences(self, pairs):
        X = self.X
        if pairs.rows is None:
            Z = X[pairs.a]
            Z -= X[pairs.b]
            return Z
        # All pairs of a row range: contiguous slices of X, no gather.
        Z = np.empty((pairs.a.size, self.n_features))
        offset = 0
        for a in range(*pairs.rows):
            count = X.shape[0] - 1 - a
            np.subtract(X[a + 1 :], X[a], out=Z[offset : offset + count])
            offset += count
        return Z

    @staticmethod
    def test_joints(pairs, scales):
        """The joint kernel of each scale on the pairs, as the overall test compares it."""
        return [np.prod(Z, axis=1) for Z in scales]

    def __call__(self, pairs):
        # Exponential factors at finite parameters: one compiled pass of exponents, then
        # NumPy's vectorised exp (the same bits as factors_numpy), for the pairs of a run of
        # rows, of circular diagonals or of sample blocks.
        if not NUMBA or self._exponent_scales is None:
            return self.factors_numpy(pairs)
        if self._row_major is None:  # the rows' values contiguous, as the pass reads them
            self._row_major = np.ascontiguousarray(self.X)
        exponents = np.empty((len(self.gammas), pairs.a.size, self.n_features))
        if pairs.rows is None:  # CircularPairs or SampleBlocks: pairs in any order
            pair_exponents_numba(
                self._row_major,
                pairs.a,
                pairs.b,
                self._distances_of,
                self._exponent_scales,
                exponents,
            )
        else:
            row_exponents_numba(
                self._row_major,
                np.asarray(pairs.rows),
                self._distances_of,
                self._exponent_scales,
                exponents,
            )
        return list(np.exp(exponents, out=exponents))

    def factors_numpy(self, pairs):
        """NumPy twin of the compiled pass of :meth:`__call__` (its path for Cauchy factors
        and infinite parameters): the differences once, then each scale's factors."""
        differences = self._differences(pairs)
        return [
            self._factors(differences.copy() if k < len(self.gammas) - 1 else differences, gamma)
            for k, gamma in enumerate(self.gammas)
        ]

    def joint(self, pairs):
        """The product of the factors on the pairs, at every scale, each as a column.

        The RBF and Laplacian factors multiply into one exponential of the weighted sum of
        their distances (one exp per pair instead of one per factor), summed in one
        compiled pass over runs of rows, or over blocks of samples whose rows are copied
        out first; Cauchy and delta factors are multiplied in.
        Infinite parameters, whose exponent would be inf * 0 on equal values, take the
        factor by factor product.
        """
        if not all(np.all(np.isfinite(gamma)) for gamma in self.gammas):
            return [np.prod(Z, axis=1, keepdims=True) for Z in self(pairs)]
        if set(self.columns) <= {"rbf", "laplacian"} and NUMBA:
            exponent = np.zeros((len(self.gammas), pairs.a.size))
            for kernel, cols in self.columns.items():
                gammas = np.array([gamma[cols] for gamma in self.gammas])
                if pairs.rows is None:
                    block_exponents_numba(
                        self.X, cols, pairs.members, kernel == "rbf", gammas, exponent
                    )
                    continue
                exponents_numba(
                    self._columns_of(kernel), pairs.rows, kernel == "rbf", gammas, exponent
                )
            return [np.exp(-total)[:, None] for total in exponent]
        differences = self._differences(pairs)
        exponent = [np.zeros(differences.shape[0]) for _ in self.gammas]
        for kernel in ("rbf", "laplacian"):
            if kernel in self.columns:
                cols = self.columns[kernel]
                distances = kernel_distances(differences[:, cols], kernel)
                for total, gamma in zip(exponent, self.gammas):
                    total += distances @ gamma[cols]
        agree = np.ones(differences.shape[0])
        if "delta" in self.columns:  # the same at every scale
            delta = factor_of_difference(differences[:, self.columns["delta"]], "delta")
            agree = np.prod(delta, axis=1)
        joints = []
        for total, gamma in zip(exponent, self.gammas):
            joint = np.exp(-total) * agree
            if "cauchy" in self.columns:
                cols = self.columns["cauchy"]
                joint *= np.prod(
                    factor_of_difference(differences[:, cols], "cauchy", gamma[cols]),
                    axis=1,
                )
            joints.append(joint[:, None])
        return joints

    def _factors(self, Z, gamma):
        if len(self.columns) == 1:
            return factor_of_difference(Z, next(iter(self.columns)), gamma)
        for kernel, cols in self.columns.items():
            Z[:, cols] = factor_of_difference(Z[:, cols], kernel, gamma[cols])
        return Z


class GramFactors:
    """Kernel factors of pairs read from per-feature Gram matrices, one stack per scale.

    ``K`` has shape (n_scales, n_features, n, n). A feature whose Gram matrix is all ones
    at every scale is constant: its factor is 1 on every pair.
    """

    def __init__(self, K):
        self.K = K
        self.n_features, self.n_samples = K.shape[1], K.shape[-1]
        self.constant = np.all(K == 1.0, axis=(0, 2, 3))

    test_joints = staticmethod(DataFactors.test_joints)

    def __call__(self, pairs):
        return [stack[:, pairs.a, pairs.b].T for stack in self.K]


class JointFactors:
    """The joint kernel of ``factors`` as one factor: the statistic's game with a single
    player, whose value is the statistic itself (one pass, no Shapley integrals)."""

    n_features = 1

    def __init__(self, factors):
        self.factors = factors
        self.n_samples = factors.n_samples
        self.constant = np.array([bool(np.all(factors.constant))])

    test_joints = staticmethod(DataFactors.test_joints)

    def __call__(self, pairs):
        if isinstance(self.factors, DataFactors):
            return self.factors.joint(pairs)
        return [np.prod(Z, axis=1, keepdims=True) for Z in self.factors(pairs)]


# Up to this many features the ANOVA factors are 1 + k~_j; beyond, 1 + (this / d) k~_j
# (python -m benchmarks.games.weight measured w = 0.25, 0.3, 0.5 and 1 at d = 20).
ANOVA_FULL_WEIGHT_FEATURES = 6


def anova_weight(n_features, weight="auto"):
    """The weight w of the centred kernels in the ANOVA factors ``1 + w k~_j``: ``weight``
    itself, or for "auto" 1 up to ``ANOVA_FULL_WEIGHT_FEATURES`` features, then 6 / d.

    ``1 + w k~_j`` is the ANOVA kernel with variance w (Durrande et al., 2013), so the game
    keeps its properties for any w > 0, and an interaction of q features carries w^q: a
    smaller w favours main effects over interactions. "auto" keeps the joint kernel's
    deviation from 1, about w sum_j |k~_j|, of the same size as d grows. With w = 1 the
    product of thousands of centred factors spans hundreds of orders of magnitude, its
    values are noise and the quadrature needs about d/2 nodes per pair; with w = 6/d the
    factors are near 1 (linear time per pair, the series path) and each value tends to w
    times the feature's own centred statistic plus interactions of order w^2
    (``python -m benchmarks.scale.high_d``). Already at d = 20, w = 1 let a group of
    correlated features outweigh the strongest single feature, and w = 6/d gives up part
    of a pure interaction's power (``python -m benchmarks.games.weight``).
    """
    if weight != "auto":
        return float(weight)
    return min(1.0, ANOVA_FULL_WEIGHT_FEATURES / max(n_features, 1))


class ChunkFactors(list):
    """A chunk's factors, one array per scale, with the joint kernels computed beside them
    by the pass that made them: ``joints`` (the product of these factors over the features)
    and ``test_joints`` (of the plain, uncentred ones), one array per scale."""

    def __init__(self, scales, joints, test_joints):
        super().__init__(scales)
        self.joints, self.test_joints = joints, test_joints


def centre_rows_numpy(Z, rows, n_samples, row_terms, total_terms, weight, constant):
    """U-centre, weight and shift in place the plain factors ``Z`` of the pairs of the rows
    ``range(*rows)`` of ``n_samples`` samples (:func:`~pkex_select._plan.pairs_of_rows`):
    ``1 + weight (z - r_a - r_b + T)``, 1 for a constant feature. Returns the products over
    the features of the plain and of the centred factors."""
    a, b = pairs_of_rows(rows, n_samples)[:2]
    return centre_pairs_numpy(Z, a, b, row_terms, total_terms, weight, constant)


def centre_pairs_numpy(Z, a, b, row_terms, total_terms, weight, constant):
    """:func:`centre_rows_numpy` for any pairs ``(a[p], b[p])``."""
    plain = np.prod(Z, axis=1)
    Z -= row_terms[a]
    Z -= row_terms[b]
    Z += total_terms
    Z[:, constant] = 0.0
    Z *= weight
    Z += 1.0
    return plain, np.prod(Z, axis=1)


def _centre_pair(Z, p, a, b, row_terms, total_terms, weight, constant, plain, centred):
    """Pair p of Z, between samples a and b, centred in place; its products into ``plain``
    and ``centred``."""
    plain_product = 1.0
    centred_product = 1.0
    for j in range(Z.shape[1]):
        z = Z[p, j]
        plain_product *= z
        if constant[j]:
            z = 1.0
        else:
            z = (z - row_terms[a, j] - row_terms[b, j] + total_terms[j]) * weight + 1.0
        Z[p, j] = z
        centred_product *= z
    plain[p] = plain_product
    centred[p] = centred_product


def _centre_rows_kernel(Z, rows, n_samples, row_terms, total_terms, weight, constant):
    """Compiled twin of :func:`centre_rows_numpy`: one pass over the pairs, the row terms
    read where the pairs are (a row's b run along ``row_terms``), no gathered copies."""
    plain = np.empty(Z.shape[0])
    centred = np.empty(Z.shape[0])
    a, b = rows[0], rows[0] + 1
    for p in range(Z.shape[0]):
        _centre_pair(Z, p, a, b, row_terms, total_terms, weight, constant, plain, centred)
        b += 1
        if b == n_samples:
            a += 1
            b = a + 1
    return plain, centred


def _centre_pairs_kernel(Z, a, b, row_terms, total_terms, weight, constant):
    """Compiled twin of :func:`centre_pairs_numpy`, as :func:`_centre_rows_kernel`."""
    plain = np.empty(Z.shape[0])
    centred = np.empty(Z.shape[0])
    for p in range(Z.shape[0]):
        _centre_pair(Z, p, a[p], b[p], row_terms, total_terms, weight, constant, plain, centred)
    return plain, centred


def centre_blocks_numpy(Z, block_size, weight, constant):
    """:func:`centre_pairs_numpy` for the pairs within blocks of ``block_size`` samples (a
    chunk of :class:`~pkex_select._plan.SampleBlocks`, each block's pairs a < b in order):
    U-centred over their block, as over the sample with n = B.

    With the blocks' unbiased HSIC weights a feature's first-order term is then exactly the
    unbiased HSIC of its kernel within each block, 0 in expectation for a feature y does not
    depend on. Double centring (H K H) within blocks of 20 made a noise feature's share
    -0.0074 on average, 19 standard errors below 0 (n = 2000, 40 data sets); U-centred,
    +0.00006 (0.2 standard errors).
    """
    first, second = np.triu_indices(block_size, k=1)
    blocks = Z.reshape(-1, first.size, Z.shape[1])
    # incidence[i, p] = 1 where sample i of the block is in its pair p.
    incidence = np.zeros((block_size, first.size))
    incidence[first, np.arange(first.size)] = 1.0
    incidence[second, np.arange(first.size)] = 1.0
    sums = np.matmul(incidence, blocks)  # (n_blocks, B, d): each sample's s_a
    row_terms = sums / (block_size - 2)
    total_terms = sums.sum(axis=1, keepdims=True) / ((block_size - 1) * (block_size - 2))
    plain = np.prod(Z, axis=1)
    # Into Z whatever its layout (the reshape of a transposed Z is a copy).
    Z[:] = (blocks - row_terms[:, first] - row_terms[:, second] + total_terms).reshape(Z.shape)
    Z[:, constant] = 0.0
    Z *= weight
    Z += 1.0
    return plain, np.prod(Z, axis=1)


def _centre_blocks_kernel(Z, block_size, weight, constant):
    """Compiled twin of :func:`centre_blocks_numpy`: per block, its samples' sums in one
    pass over its pairs, then each pair as :func:`_centre_rows_kernel` centres it."""
    n_upper = block_size * (block_size - 1) // 2
    plain = np.empty(Z.shape[0])
    centred = np.empty(Z.shape[0])
    row_terms = np.empty((block_size, Z.shape[1]))
    total_terms = np.empty(Z.shape[1])
    for first in range(0, Z.shape[0], n_upper):
        row_terms[:] = 0.0
        p = first
        for a in range(block_size):
            for b in range(a + 1, block_size):
                for j in range(Z.shape[1]):
                    row_terms[a, j] += Z[p, j]
                    row_terms[b, j] += Z[p, j]
                p += 1
        total_terms[:] = 0.0
        for a in range(block_size):
            for j in range(Z.shape[1]):
                total_terms[j] += row_terms[a, j]
        row_terms /= block_size - 2
        total_terms /= (block_size - 1) * (block_size - 2)
        p = first
        for a in range(block_size):
            for b in range(a + 1, block_size):
                _centre_pair(Z, p, a, b, row_terms, total_terms, weight, constant, plain, centred)
                p += 1
    return plain, centred


def add_row_sums_numpy(Z, rows, n_samples, total):
    """Add to ``total[a]`` the factors ``Z`` of every pair (a, b) of the rows
    ``range(*rows)`` (:func:`~pkex_select._plan.pairs_of_rows`), and to ``total[b]`` too."""
    offset = 0
    for a in range(*rows):  # row a's pairs are (a, a + 1), ..., (a, n - 1), in order
        count = n_samples - 1 - a
        segment = Z[offset : offset + count]
        total[a] += segment.sum(axis=0)
        total[a + 1 :] += segment
        offset += count


def _add_row_sums_kernel(Z, rows, n_samples, total):
    """Compiled twin of :func:`add_row_sums_numpy`, in one pass over the pairs."""
    a, b = rows[0], rows[0] + 1
    for p in range(Z.shape[0]):
        for j in range(Z.shape[1]):
            total[a, j] += Z[p, j]
            total[b, j] += Z[p, j]
        b += 1
        if b == n_samples:
            a += 1
            b = a + 1


def _exponents_kernel(columns, rows, squared, gammas, exponent):
    """Add to ``exponent[s, p]`` the sum over the features j of ``gammas[s, j] u_j`` for
    pair p, u = (a - b)^2 where ``squared``, else |a - b|, from the features as rows of
    ``columns``: the exponents :meth:`DataFactors.joint` otherwise sums from the pairs'
    differences, without them. The pairs are those of :func:`~pkex_select._plan.pairs_of_rows`
    for the rows ``range(*rows)``, in their order; a row's pairs read each feature's
    values contiguously."""
    n_features, n_samples = columns.shape
    start = 0
    for a in range(rows[0], rows[1]):
        count = n_samples - 1 - a
        for s in range(gammas.shape[0]):
            for j in range(n_features):
                value, gamma = columns[j, a], gammas[s, j]
                for offset in range(count):
                    difference = value - columns[j, a + 1 + offset]
                    u = difference * difference if squared else abs(difference)
                    exponent[s, start + offset] += gamma * u
        start += count


def _row_exponents_kernel(X, rows, distances_of, scaled, exponents):
    """The exponents ``scaled[s, j] u_j`` of the pairs of the rows ``range(*rows)`` (in the
    order of :func:`~pkex_select._plan.pairs_of_rows`) at every scale, into ``exponents``
    of shape (n_scales, n_pairs, n_features), from the rows of ``X`` (C order), with u by
    ``distances_of[j]``: 0 (a - b)^2, 1 |a - b|, 2 0 where a == b and inf elsewhere (the
    delta kernel, whose ``scaled`` is -1); ``scaled`` holds minus the kernel parameters.
    The operations of :func:`~pkex_select.kernels.factor_of_difference` on
    ``X[b] - X[a]`` in its order (compiled without fast-math: the same bits), in one pass
    instead of a subtraction per row and three passes per scale."""
    distances = np.empty(X.shape[1])
    p = 0
    for a in range(rows[0], rows[1]):
        for b in range(a + 1, X.shape[0]):
            _pair_exponents(X, p, a, b, distances_of, scaled, exponents, distances)
            p += 1


def _pair_exponents(X, p, a, b, distances_of, scaled, exponents, distances):
    """Pair p's exponents, between the rows a and b of X (``distances`` a work array)."""
    for j in range(X.shape[1]):
        difference = X[b, j] - X[a, j]
        if distances_of[j] == 0:
            distances[j] = difference * difference
        elif distances_of[j] == 1:
            distances[j] = abs(difference)
        else:
            distances[j] = 0.0 if difference == 0.0 else np.inf
    for s in range(scaled.shape[0]):
        for j in range(X.shape[1]):
            exponents[s, p, j] = distances[j] * scaled[s, j]


def _pair_exponents_kernel(X, a, b, distances_of, scaled, exponents):
    """:func:`_row_exponents_kernel` for any pairs ``(a[p], b[p])`` (a chunk of
    :class:`~pkex_select._plan.CircularPairs` or of sample blocks), the same operations in
    the same order."""
    distances = np.empty(X.shape[1])
    for p in range(a.size):
        _pair_exponents(X, p, a[p], b[p], distances_of, scaled, exponents, distances)


def _block_exponents_kernel(X, cols, members, squared, gammas, exponent):
    """:func:`_exponents_kernel` for blocks of samples drawn at random (a chunk of
    :class:`~pkex_select._plan.SampleBlocks`), from the rows of ``X`` at the columns
    ``cols``: the blocks' rows are copied out first, a few cache lines each, where the
    features as rows would cost a cache miss per sample and feature (1.9-2.8x the time from
    3000 to 10^6 samples), and 32 blocks' at a time, so that their scattered reads overlap
    rather than wait one block at a time (0.14-0.16 s against 0.23-0.36 s for one
    partition of 10^6 samples, d = 20). Each pair's exponent is summed over the features
    before it is added."""
    n_blocks, size = members.shape
    n_columns = cols.size
    group = 32
    copied = np.empty((group, size, n_columns))
    start = 0
    for first in range(0, n_blocks, group):
        for block in range(first, min(first + group, n_blocks)):
            for i in range(size):
                row = members[block, i]
                for j in range(n_columns):
                    copied[block - first, i, j] = X[row, cols[j]]
        for block in range(first, min(first + group, n_blocks)):
            block_rows = copied[block - first]
            for i in range(size - 1):
                for k in range(i + 1, size):
                    for s in range(gammas.shape[0]):
                        total = 0.0
                        for j in range(n_columns):
                            difference = block_rows[i, j] - block_rows[k, j]
                            u = difference * difference if squared else abs(difference)
                            total += gammas[s, j] * u
                        exponent[s, start] += total
                    start += 1


exponents_numba = compile_kernel(_exponents_kernel) if NUMBA else None
block_exponents_numba = compile_kernel(_block_exponents_kernel) if NUMBA else None
if NUMBA:  # the helper first, rounding as NumPy does like its callers
    _pair_exponents = compile_kernel(_pair_exponents, inline="always", fastmath=())
row_exponents_numba = compile_kernel(_row_exponents_kernel, fastmath=()) if NUMBA else None
pair_exponents_numba = compile_kernel(_pair_exponents_kernel, fastmath=()) if NUMBA else None
if NUMBA:  # the helper first: compiled kernels call compiled functions only
    _centre_pair = compile_kernel(_centre_pair, inline="always")
centre_rows_numba = compile_kernel(_centre_rows_kernel) if NUMBA else None
centre_pairs_numba = compile_kernel(_centre_pairs_kernel) if NUMBA else None
centre_blocks_numba = compile_kernel(_centre_blocks_kernel) if NUMBA else None
add_row_sums_numba = compile_kernel(_add_row_sums_kernel) if NUMBA else None
add_row_sums = add_row_sums_numba or add_row_sums_numpy
# The factors of all pairs of a chunk's rows are centred in one compiled pass.
centre_rows = centre_rows_numba or centre_rows_numpy
centre_pairs = centre_pairs_numba or centre_pairs_numpy
centre_blocks = centre_blocks_numba or centre_blocks_numpy


class CentredFactors:
    """ANOVA factors ``1 + w k~_j(a, b)`` of pairs, with ``k~_j`` the factor U-centred over
    the sample (Szekely and Rizzo's U-centred matrices, docs/design.md, section 2d) and ``w``
    the weight of :func:`anova_weight`:
    ``k~(a, b) = k(a, b) - s_a / (n - 2) - s_b / (n - 2) + T / ((n - 1) (n - 2))``, with ``s_a``
    the sum of a's factors with the other samples and T their total.

    Every row of a U-centred matrix sums to 0 off the diagonal, so by exchangeability each
    off-diagonal entry has mean 0 exactly: a feature independent of y and of the other
    features has Shapley value 0 in expectation, whatever the statistic's weights. Double
    centring (H K H) leaves a mean of about -(1 - mean k) / n off the diagonal; its values
    for friedman1's noise features averaged -0.0005 of the largest, 2.5 standard errors below
    0 (``python -m benchmarks.games``). Pairs within sample blocks (the block estimator) are
    U-centred over their block (:func:`centre_blocks_numpy`), from the block's own pairs, so that
    no pass over all pairs is needed.

    ``row_sums[s]`` (n_samples, n_features) holds each sample's ``s_a`` at scale s;
    ``weight`` is :func:`anova_weight`'s.
    """

    def __init__(self, factors, row_sums=None, weight="auto"):
        self.factors = factors
        self.n_features, self.n_samples = factors.n_features, factors.n_samples
        self.constant = factors.constant
        self.weight = anova_weight(self.n_features, weight)
        if row_sums is not None:
            n = self.n_samples
            self.row_terms = [sums / (n - 2) for sums in row_sums]
            self.total_terms = [sums.sum(axis=0) / ((n - 1) * (n - 2)) for sums in row_sums]

    @classmethod
    def measure(cls, plan, factors, n_jobs=None, weight="auto"):
        """U-centring over the whole sample: the row sums from one pass over the plan's pairs."""
        n = factors.n_samples
        if n < 4:  # with 3 samples every U-centred factor is exactly 0
            raise ValueError(
                f"{spelled('value_function', 'anova')} U-centres the factors, which needs at "
                f"least 4 samples; got {n}. Use {spelled('value_function', 'baseline')}."
            )

        def chunk_sums(chunk):
            # The pairs of rows start, ... (AllPairs) add only to the rows from start on.
            start, stop = chunk
            scales = factors(plan.pairs(chunk))
            sums = np.zeros((len(scales), n - start, factors.n_features))
            for Z, total in zip(scales, sums):
                add_row_sums(Z, (0, stop - start), n - start, total)
            return start, sums

        # The chunks' sums are added one by one in the plan's order (the same bits however
        # the chunks are shared among workers).
        row_sums = None
        runs = task_runs(plan.chunks, 8 * n * factors.n_features, n_jobs)
        for results in run_tasks(lambda run: [chunk_sums(c) for c in run], runs, n_jobs):
            for start, sums in results:
                if row_sums is None:
                    row_sums = np.zeros((len(sums), n, factors.n_features))
                row_sums[:, start:] += sums
        return cls(factors, list(row_sums), weight)

    def test_joints(self, pairs, scales):
        """The plain (uncentred) joint kernel of each scale: the overall test compares the
        standard kernel statistic whatever the game, because the centred joint kernel lost
        power to a change of correlation (0.26 against 0.37 at d = 5, n = 100 + 100;
        ``python -m benchmarks.power``, before 0.2). Taken from ``scales``
        (:class:`ChunkFactors`), where the pass that centred them computed it."""
        return scales.test_joints

    def __call__(self, pairs):
        scales = self.factors(pairs)
        joints, test_joints = [], []
        weighting = self.weight, self.constant
        for s, Z in enumerate(scales):
            if pairs.members is not None:  # SampleBlocks: centred within each block
                plain, centred = centre_blocks(Z, pairs.members.shape[1], *weighting)
            elif pairs.rows is None:  # CircularPairs
                plain, centred = centre_pairs(
                    Z, pairs.a, pairs.b, self.row_terms[s], self.total_terms[s], *weighting
                )
            else:
                plain, centred = centre_rows(
                    Z,
                    pairs.rows,
                    self.n_samples,
                    self.row_terms[s],
                    self.total_terms[s],
                    *weighting,
                )
            test_joints.append(plain)
            joints.append(centred)
        return ChunkFactors(scales, joints, test_joints)
