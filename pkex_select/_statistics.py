"""The kernel statistics attributed here: each its target, its pair plan and its pair weights.

Every statistic is ``sum_{a != b} W_ab K_ab`` for the feature Gram matrix K (docs/design.md,
section 1), a pair game over the pairs a < b with weight ``2 W_ab``. A statistic builds its
target from y (``target``: the target Gram matrix of HSIC, the sample codes of MMD), says which
samples it needs (``check``), which pairs it sums over (``plan``) and, for its target under
several ``permutations`` (index arrays of shape (n_perm, n_samples): row 0 the identity, the
others random) and its plan, the function from a chunk's :class:`~pkex_select._plan.Pairs` to
their weights under every permutation, shape (n_perm, n_pairs). Per-sample quantities are
permuted once, up front. A new statistic is one more class here.
"""

from numbers import Integral
from typing import NamedTuple

import numpy as np

from ._gram import TargetGram
from ._integrals import NUMBA, compile_kernel
from ._plan import AllPairs, SampleBlocks
from ._scheduling import row_slices
from ._sklearn_compat import Interval
from ._spelling import settable, spelled
from ._validation import datetimes_as_days, encode_labels, is_class_labels, standardise
from .kernels import bandwidths, gamma_from_bandwidth

__all__ = [
    "CENTRED_GAMES",
    "Cells",
    "HSIC",
    "MMD",
    "PairWeights",
    "PARAMETER_CONSTRAINTS",
    "permuted_entries_numba",
    "permuted_entries_numpy",
    "sample_entries_numba",
    "sample_entries_numpy",
    "SampleCodes",
    "VALUE_FUNCTIONS",
]

# The game: a removed feature's Gram matrix becomes ones ("baseline"), its mean (see Cells,
# "observational"), or the factors are centred and a removed one becomes 1 ("anova"), with
# only the interactions of at most two features kept ("pairwise_anova").
CENTRED_GAMES = ("anova", "pairwise_anova")
VALUE_FUNCTIONS = (*CENTRED_GAMES, "baseline", "observational")
# Constraints (scikit-learn's parameter validation) of the parameters every statistic takes.
PARAMETER_CONSTRAINTS = {
    "block_size": [Interval(Integral, 2, None, closed="left")],
    "n_repetitions": [Interval(Integral, 1, None, closed="left")],
}


# Up to this size the observed weight matrix of HSIC is kept whole when there are
# permutations (n = 4096): each permutation's weights are then gathered from it.
_DENSE_WEIGHT_BYTES = 2**27
_DENSE_WEIGHT_LEVELS = int((_DENSE_WEIGHT_BYTES // 8) ** 0.5)


def levels_of_samples(codes, permutations):
    """``codes[permutations].T`` in C order, (n_samples, n_perm): row s holds sample s's
    code under every permutation, contiguous. (Indexing by the transposed permutations
    gives the transpose's memory order; gathering into a C-ordered array is 10x slower
    than this gather and transposed copy of one byte per entry.)"""
    return np.ascontiguousarray(codes[permutations].T)


class PairWeights:
    """A statistic's pair weights under every permutation, for any chunk of pairs:
    ``weights(pairs)`` of shape (n_perm, n_pairs), and ``weights.products(pairs, columns)``,
    their product with columns of per-pair values (n_pairs, n_columns), which a statistic may
    compute without writing the weights out (``products``)."""

    def __init__(self, entries, products=None):
        self.entries, self._products = entries, products

    def __call__(self, pairs):
        return self.entries(pairs)

    def products(self, pairs, columns):
        if self._products is None:
            return self.entries(pairs) @ columns
        return self._products(pairs, columns)


def permuted_entries_numpy(table, permuted, a, b):
    """Entry (k, p) is ``table[permuted[k, a[p]], permuted[k, b[p]]]``: the weight of pair p
    under permutation k, with ``permuted[k]`` each sample's row of the table under it."""
    return table[permuted[:, a], permuted[:, b]]


def _permuted_entries_kernel(table, permuted, a, b):
    """Compiled twin of :func:`permuted_entries_numpy`, one permutation at a time.

    A chunk's pairs run along rows a (plan.AllPairs). Under one permutation a row's pairs
    read one row of the table at the places ``permuted[k, b]``: that row is copied to a
    buffer first, a sequential read, so that the scattered reads hit the cache rather than
    memory. Where a row's b are consecutive (every b > a, as AllPairs has them), the places
    are read from ``permuted[k]`` directly rather than through b: 20% less time. About 2 ns
    per weight for an n x n table of n = 3000 samples (NumPy's two-index gather: 20 ns).
    """
    # Runs of pairs with one a: run r is starts[r], ..., starts[r + 1] - 1.
    starts = np.empty(a.size + 1, dtype=np.int64)
    n_runs = 0
    for p in range(a.size):
        if p == 0 or a[p] != a[p - 1]:
            starts[n_runs] = p
            n_runs += 1
    starts[n_runs] = a.size
    # Per run, whether its b are consecutive, and then b[p] = p + shift.
    consecutive = np.ones(n_runs, dtype=np.bool_)
    shifts = np.empty(n_runs, dtype=np.int64)
    for r in range(n_runs):
        first = starts[r]
        shifts[r] = b[first] - first
        for p in range(first + 1, starts[r + 1]):
            if b[p] != b[p - 1] + 1:
                consecutive[r] = False
                break
    entries = np.empty((permuted.shape[0], a.size))
    row = np.empty(table.shape[1])
    for k in range(permuted.shape[0]):
        rows = permuted[k]
        weights = entries[k]
        for r in range(n_runs):
            first, stop, shift = starts[r], starts[r + 1], shifts[r]
            row[:] = table[rows[a[first]]]
            if consecutive[r]:
                for p in range(first, stop):
                    weights[p] = row[rows[p + shift]]
            else:
                for p in range(first, stop):
                    weights[p] = row[rows[b[p]]]
    return entries


permuted_entries_numba = compile_kernel(_permuted_entries_kernel) if NUMBA else None
permuted_entries = permuted_entries_numba or permuted_entries_numpy


def sample_entries_numpy(table, levels_by_sample, a, b):
    """Entry (p, k) is ``table[levels_by_sample[a[p], k], levels_by_sample[b[p], k]]``: the
    weight of pair p under permutation k, with ``levels_by_sample[s]`` sample s's row of
    the table under every permutation. For pairs in no order (sample blocks)."""
    return table[levels_by_sample[a], levels_by_sample[b]]


def _sample_entries_kernel(table, levels_by_sample, a, b):
    """Compiled twin of :func:`sample_entries_numpy`: a pair reads its two samples' rows of
    levels, contiguous whatever the pair, where permutation by permutation it would read
    two scattered entries of each permutation's row (8x faster for blocks over 10^5
    samples)."""
    n_perm = levels_by_sample.shape[1]
    entries = np.empty((a.size, n_perm))
    for p in range(a.size):
        first, second, weights = levels_by_sample[a[p]], levels_by_sample[b[p]], entries[p]
        for k in range(n_perm):
            weights[k] = table[first[k], second[k]]
    return entries


sample_entries_numba = compile_kernel(_sample_entries_kernel) if NUMBA else None
sample_entries = sample_entries_numba or sample_entries_numpy


_KERNEL_CODES = {"delta": 0, "rbf": 1, "laplacian": 2, "cauchy": 3}
# The kind of a target given as a Gram matrix, whose entries are read at sample indices.
_MATRIX = -1


def _block_exponents_kernel(values, block_size, kinds, gamma):
    """The exponent of the target kernel's exponential factors (RBF, Laplacian) for every
    pair of every block under every permutation, (n_pairs, n_perm), for NumPy's vectorised
    exp (:func:`block_weights`).

    ``values[block * block_size + i, o, k]`` is output o of the target at the sample in
    place i of the block under permutation k. Each output's exponent is ``-gamma u`` as
    :func:`~pkex_select.kernels.factor_of_difference` forms it; equal values add nothing
    (also at an infinite gamma).
    """
    n_outputs, n_perm = values.shape[1], values.shape[2]
    n_blocks = values.shape[0] // block_size
    n_upper = block_size * (block_size - 1) // 2
    exponents = np.zeros((n_blocks * n_upper, n_perm))
    # Output by output over all the pairs, each pair indexed in place: with one permutation
    # (the statistic alone) a row view or a branch per pair cost more than its arithmetic.
    for o in range(n_outputs):
        if kinds[o] != 1 and kinds[o] != 2:
            continue
        squared, scale = kinds[o] == 1, -gamma[o]
        q = 0
        for block in range(n_blocks):
            for i in range(block * block_size, (block + 1) * block_size):
                for j in range(i + 1, (block + 1) * block_size):
                    for k in range(n_perm):
                        diff = values[i, o, k] - values[j, o, k]
                        if diff != 0.0:
                            exponents[q, k] += scale * (diff * diff if squared else abs(diff))
                    q += 1
    return exponents


def _block_centring_kernel(values, block_size, kinds, gamma, matrix, scale, entries):
    """The block weights from ``entries`` (n_pairs, n_perm), in place: each pair's target
    kernel under every permutation (the exponential factors' product on entry; the other
    factors are applied here, and a user's matrix, kind -1, is read at the sample indices
    that ``values`` then holds), less the U-statistic's centring of its block, times
    ``scale``. Every step runs over the permutations contiguously."""
    n_outputs, n_perm = values.shape[1], values.shape[2]
    n_blocks = values.shape[0] // block_size
    n_upper = block_size * (block_size - 1) // 2
    # The factors that are not exponentials, output by output.
    for o in range(n_outputs):
        kind, g = kinds[o], gamma[o]
        if kind == 1 or kind == 2:
            continue
        q = 0
        for block in range(n_blocks):
            for a in range(block * block_size, (block + 1) * block_size):
                for b in range(a + 1, (block + 1) * block_size):
                    for k in range(n_perm):
                        first, second = values[a, o, k], values[b, o, k]
                        if kind == _MATRIX:
                            entries[q, k] = matrix[int(first), int(second)]
                        elif first != second:
                            diff = first - second
                            entries[q, k] *= 0.0 if kind == 0 else 1.0 / (1.0 + g * (diff * diff))
                    q += 1
    sums = np.empty((block_size, n_perm))
    total = np.empty(n_perm)
    for block in range(n_blocks):
        first_pair = block * n_upper
        sums[:] = 0.0
        q = first_pair
        for i in range(block_size):
            for j in range(i + 1, block_size):
                for k in range(n_perm):
                    sums[i, k] += entries[q, k]
                    sums[j, k] += entries[q, k]
                q += 1
        total[:] = 0.0
        for i in range(block_size):
            for k in range(n_perm):
                total[k] += sums[i, k]
        for i in range(block_size):
            for k in range(n_perm):
                constant = total[k] / ((block_size - 1) * (block_size - 2))
                sums[i, k] = sums[i, k] / (block_size - 2) - constant / 2.0
        q = first_pair
        for i in range(block_size):
            for j in range(i + 1, block_size):
                for k in range(n_perm):
                    entries[q, k] = scale * (entries[q, k] - sums[i, k] - sums[j, k])
                q += 1


def block_weights(values, block_size, kinds, gamma, matrix, scale):
    """Compiled twin of the NumPy block weights of :meth:`HSIC._block_weights`, as
    (n_pairs, n_perm), from ``values`` (places of the blocks, outputs, permutations; the
    sample indices where ``kinds`` is ``[_MATRIX]``, a user's Gram matrix ``matrix``).

    Three passes over a chunk's weights, each along the permutations: the exponents
    (compiled), NumPy's exp (vectorised, where a compiled loop calls the scalar exp), and
    the other factors, row sums and centring (compiled). At 10^5 samples 8.0 ns per pair and
    permutation; one permutation at a time, with the scalar exp, 14.6 ns (``python -m
    benchmarks.scale.permutations``).
    """
    if np.isin(kinds, (1, 2)).any():
        entries = block_exponents_numba(values, block_size, kinds, gamma)
        np.exp(entries, out=entries)
    else:  # exp(0), as those passes would give: a user's matrix, class columns, Cauchy
        n_pairs = values.shape[0] // block_size * (block_size * (block_size - 1) // 2)
        entries = np.ones((n_pairs, values.shape[2]))
    block_centring_numba(values, block_size, kinds, gamma, matrix, scale, entries)
    return entries


def _block_level_weights_kernel(members, levels_by_sample, table, identity, scale):
    """The block weights where the target takes few levels (class labels), as
    (n_pairs, n_perm): per block, the level counts under every permutation give each
    level's centring, each sample's centring under every permutation is looked up once, and
    a pair's weights are its table entry less its two samples' centrings, a loop over the
    permutations that vectorises (the table entry is an equality test where the table is
    the identity, as for class labels). ``levels_by_sample[s, k]`` is sample s's level under
    permutation k."""
    n_blocks, size = members.shape
    n_upper = size * (size - 1) // 2
    out = np.empty((n_blocks * n_upper, levels_by_sample.shape[1]))
    buffers = _level_buffers(size, table.shape[0], levels_by_sample.shape[1])
    for block in range(n_blocks):
        _fill_block_level_weights(
            out[block * n_upper : (block + 1) * n_upper],
            members[block],
            levels_by_sample,
            table,
            identity,
            scale,
            *buffers,
        )
    return out


def _block_level_products_kernel(members, levels_by_sample, table, identity, scale, columns):
    """``weights.T @ columns`` for the weights of :func:`_block_level_weights_kernel`, block
    by block: each block's weights (n_upper x n_perm) are built in a buffer that stays in the
    cache and multiplied there with the block's rows of ``columns``, so that the weights of
    the chunk are never written to memory and read back. Returns (n_perm, n_columns)."""
    n_blocks, size = members.shape
    n_upper = size * (size - 1) // 2
    n_perm = levels_by_sample.shape[1]
    sums = np.zeros((n_perm, columns.shape[1]))
    block_weights = np.empty((n_upper, n_perm))
    buffers = _level_buffers(size, table.shape[0], n_perm)
    for block in range(n_blocks):
        _fill_block_level_weights(
            block_weights, members[block], levels_by_sample, table, identity, scale, *buffers
        )
        rows = np.ascontiguousarray(columns[block * n_upper : (block + 1) * n_upper])
        sums += np.dot(block_weights.T, rows)
    return sums


def _level_buffers(size, n_levels, n_perm):
    """Work arrays of :func:`_fill_block_level_weights`: codes, shifts, counts, centres."""
    return (
        np.empty((size, n_perm), dtype=np.int32),
        np.empty((size, n_perm)),
        np.empty((n_levels, n_perm)),
        np.empty((n_levels, n_perm)),
    )


def _fill_block_level_weights(
    out, samples, levels_by_sample, table, identity, scale, codes, shifts, counts, centre
):
    """One block's weights under every permutation into ``out`` (n_upper, n_perm)."""
    n_perm = levels_by_sample.shape[1]
    size = samples.size
    n_levels = table.shape[0]
    counts[:] = 0.0
    for i in range(size):
        levels = levels_by_sample[samples[i]]
        for k in range(n_perm):
            c = np.int32(levels[k])
            codes[i, k] = c
            counts[c, k] += 1.0
    for k in range(n_perm):
        # A sample's row sum over the others of its block: L against every level, less
        # itself.
        total = 0.0
        for c in range(n_levels):
            row = -table[c, c]
            for other in range(n_levels):
                row += table[c, other] * counts[other, k]
            centre[c, k] = row
            total += counts[c, k] * row
        constant = total / ((size - 1) * (size - 2))
        for c in range(n_levels):
            centre[c, k] = centre[c, k] / (size - 2) - constant / 2.0
    for i in range(size):
        for k in range(n_perm):
            shifts[i, k] = centre[codes[i, k], k]
    p = 0
    for i in range(size):
        first_codes, first_shifts = codes[i], shifts[i]
        for j in range(i + 1, size):
            second_codes, second_shifts = codes[j], shifts[j]
            weights = out[p]
            if identity:
                for k in range(n_perm):
                    entry = 1.0 if first_codes[k] == second_codes[k] else 0.0
                    weights[k] = scale * (entry - first_shifts[k] - second_shifts[k])
            else:
                for k in range(n_perm):
                    entry = table[first_codes[k], second_codes[k]]
                    weights[k] = scale * (entry - first_shifts[k] - second_shifts[k])
            p += 1


block_exponents_numba = compile_kernel(_block_exponents_kernel) if NUMBA else None
block_centring_numba = compile_kernel(_block_centring_kernel) if NUMBA else None
if NUMBA:  # the helpers first: compiled kernels call compiled functions only
    _level_buffers = compile_kernel(_level_buffers)
    _fill_block_level_weights = compile_kernel(_fill_block_level_weights)
block_level_weights_numba = compile_kernel(_block_level_weights_kernel) if NUMBA else None
block_level_products_numba = compile_kernel(_block_level_products_kernel) if NUMBA else None
# Up to this many target levels the block weights come from a table per block.
_BLOCK_TABLE_LEVELS = 32


def _check_not_identifiers(codes):
    """Refuse class labels that are (nearly) all different: the target Gram matrix is then
    nearly the identity, and HSIC no longer depends on which row has which label."""
    n = codes.shape[0]
    for column in codes.T:
        n_classes = np.unique(column).size
        if n > 2 and n_classes > n / 2:
            raise ValueError(
                f"y has {n_classes} distinct class labels in {n} rows, so most classes have a "
                "single row and no dependence can be measured. If y is a quantity (a number "
                f"or date stored as text), convert it and use {spelled('target_kernel', 'rbf')}; "
                "if it is an identifier, it is not a target."
            )


class SampleCodes(NamedTuple):
    """The target of MMD: the sample labels and each row's integer code among them."""

    classes: np.ndarray
    codes: np.ndarray

    @property
    def n_samples(self):
        return self.codes.size


class Cells(NamedTuple):
    """Where the observational value function takes its kernel means.

    A removed feature's Gram matrix is replaced by its mean over each cell: the whole matrix
    for HSIC, the pairs of each two groups (P x P, Q x Q, P x Q) for MMD. Cells may depend on
    the permutation of the labels (MMD); then every array has one row per permutation, else
    one row.
    """

    pair_cells: object  # Pairs -> int array (n_cell_perm, n_pairs)
    diagonal_counts: np.ndarray  # (n_cell_perm, n_cells): diagonal entries in each cell
    diagonal_weights: np.ndarray  # (n_perm, n_cells): sum of W_aa over each cell's diagonal
    within: np.ndarray  # (n_cells,) bool: a cell on the diagonal, holding each pair twice


def _diagonal_count(plan, n_samples):
    return plan.n_blocks * plan.block_size if plan.blocked else n_samples


class _GramStatistic:
    """What HSIC and MMD share: their estimators, sample requirements and pair plans."""

    name = ""

    def __init__(self, estimate="biased", block_size=20, n_repetitions=10):
        self.estimate = estimate
        self.block_size = block_size
        self.n_repetitions = n_repetitions

    def check(self, n_samples):
        if n_samples < 2:
            raise ValueError(f"{self.name} needs at least 2 samples, got {n_samples}.")
        if self.estimate == "block" and n_samples < self.block_size:
            raise ValueError(
                f"{spelled('estimate', 'block')} needs at least {self.block_size} samples (one "
                f"block), got {n_samples}; use {spelled('estimate', 'biased')}"
                + (" or a smaller block_size." if settable("block_size") else ".")
            )
        if self.estimate == "block":
            # Repetitions beyond 100 times every pair cost more than the exact estimate by
            # far and add nothing to it (the default's 10 draw at most 10 times as many).
            blocks = self.n_repetitions * (n_samples // self.block_size)
            drawn = blocks * self.block_size * (self.block_size - 1)
            if drawn > 100 * n_samples * (n_samples - 1):
                raise ValueError(
                    f"n_repetitions={self.n_repetitions} partitions into blocks of "
                    f"{self.block_size} draw over 100 times every pair of the {n_samples} "
                    "samples; use estimate='biased' (every pair, exactly) or fewer "
                    "repetitions."
                )

    def plan(self, n_samples, random_state, pair_bytes, n_jobs=None):
        if self.estimate == "block":
            return SampleBlocks(
                n_samples, self.block_size, self.n_repetitions, random_state, pair_bytes, n_jobs
            )
        return AllPairs(n_samples, pair_bytes, n_jobs)

    def cells(self, target, permutations, plan):
        """The :class:`Cells` of the observational value function."""
        raise NotImplementedError


class HSIC(_GramStatistic):
    """HSIC(K, L): biased tr(KHLH)/(n-1)^2, unbiased (Song et al., 2012) or block estimate."""

    name = "HSIC"

    @staticmethod
    def target(y, kernel="auto", bandwidth="median", categorical=None):
        """The target Gram matrix of y (n_samples,) or (n_samples, n_outputs), as a kernel.

        ``kernel="auto"`` is the delta kernel for class labels and RBF for continuous
        outputs (:func:`~pkex_select._validation.is_class_labels`; ``categorical`` says which
        outputs have a categorical dtype); continuous outputs are standardised first.
        """
        Y = np.asarray(y)
        Y = Y.reshape(len(Y), -1)
        Y = datetimes_as_days(Y)
        if Y.dtype.kind in "iu":
            # From the minimum before float64: large integers (a uint64 above 2**63) would
            # otherwise round to a few values and pass for class labels.
            wide = Y.astype(np.uint64 if Y.dtype.kind == "u" else np.int64)
            # The difference is below 2**64; int64 may wrap, its bits read as uint64 do not.
            Y = (wide - wide.min(axis=0)).view(np.uint64).astype(np.float64)
        if kernel == "auto":
            categorical = (
                categorical
                if categorical is not None and len(categorical) == (Y.shape[1])
                else [False] * Y.shape[1]
            )
            # A constant output is neither labels nor continuous (its factor is 1 in either
            # kernel): the varying outputs decide.
            labels = [
                is_class_labels(column, categorical_dtype=is_categorical)
                for column, is_categorical in zip(Y.T, categorical)
                if not np.all(column == column[0])
            ]
            if all(labels):
                kernel = "delta"
            elif not any(labels):
                kernel = "rbf"
            else:
                raise ValueError(
                    "y mixes class labels and continuous outputs; set target_kernel to "
                    "'delta' (all labels) or a numeric kernel (all continuous)."
                )
        if kernel == "delta":
            Y = np.column_stack([encode_labels(column)[1] for column in Y.T]).astype(np.float64)
            _check_not_identifiers(Y)
            target_bandwidths = np.ones(Y.shape[1])
            constant = np.all(Y == Y[:1], axis=0)
        else:
            try:
                Y = Y.astype(np.float64)
            except (TypeError, ValueError):
                raise ValueError(
                    f"{spelled('target_kernel', kernel)} needs a numeric y; use "
                    f"{spelled('target_kernel', 'delta')} for labels."
                ) from None
            if not np.all(np.isfinite(Y)):
                raise ValueError("y contains NaN or infinity.")
            Y, constant = standardise(Y)
            target_bandwidths = bandwidths(Y, bandwidth)
        if np.all(constant):
            raise ValueError(
                "y is constant: HSIC is 0 for every feature and there is nothing to select."
            )
        gamma = np.atleast_1d(gamma_from_bandwidth(kernel, target_bandwidths))
        return TargetGram(
            Y=Y, kernels=[kernel] * Y.shape[1], gamma=gamma, bandwidths=target_bandwidths
        )

    def check(self, n_samples):
        super().check(n_samples)
        if self.estimate == "block" and self.block_size < 4:
            raise ValueError(
                f"estimate='block' averages the unbiased HSIC of blocks of block_size "
                f"samples, which needs block_size >= 4; got {self.block_size}."
            )
        if self.estimate == "unbiased" and n_samples < 4:
            raise ValueError(
                f"{spelled('estimate', 'unbiased')} needs at least 4 samples, got "
                f"{n_samples}; use {spelled('estimate', 'biased')}."
            )

    def weights(self, gram, permutations, plan, backend="auto"):
        """Pair weights for the target Gram matrix ``gram`` (a :class:`TargetGram`)."""
        if self.estimate == "block":
            return self._block_weights(gram, permutations, plan.n_blocks, backend)
        n = gram.n_samples
        if self.estimate == "biased":
            # (HLH)_ab = L_ab - m_a - m_b + mean(L); the row means of a permuted L are permuted.
            scale = 2.0 / (n - 1) ** 2
            observed_centre = gram.row_means - gram.row_means.mean() / 2.0
        else:
            # [tr(K~L~) + 1'K~1 1'L~1 / ((n-1)(n-2)) - 2/(n-2) 1'K~L~1] / (n(n-3)) with K~, L~
            # the Gram matrices without their diagonals: linear in K~ with these weights.
            row_sums = n * gram.row_means - gram.diagonal
            scale = 2.0 / (n * (n - 3))
            constant = row_sums.sum() / ((n - 1) * (n - 2))
            observed_centre = row_sums / (n - 2) - constant / 2.0

        if len(permutations) > 1:
            found = gram.levels(most=_DENSE_WEIGHT_LEVELS)
            if found is not None:
                return self._table_weights(gram, scale, observed_centre, *found, permutations)
        arguments = gram.arguments(permutations)
        centre = observed_centre[permutations]

        def weights(pairs):
            entries = gram.entries(arguments[:, pairs.a], arguments[:, pairs.b])
            return scale * (entries - centre[:, pairs.a] - centre[:, pairs.b])

        return weights

    @staticmethod
    def _table_weights(gram, scale, observed_centre, codes, representatives, permutations):
        """W_ab depends on a and b only through their target values, so under permutation k
        the weight of (a, b) is table[level of k_a, level of k_b]: one gather per pair and
        permutation instead of a kernel evaluation. The table is n x n for a continuous
        target, classes x classes for labels."""
        levels = gram.arguments(representatives[None])[0]
        level_centres = observed_centre[representatives]
        table = np.concatenate(
            [
                scale
                * (
                    gram.entries(levels[rows, None], levels[None, :])
                    - level_centres[rows, None]
                    - level_centres[None, :]
                )
                for rows in row_slices(representatives.size, 8 * representatives.size)
            ]
        )
        permuted = codes.astype(np.min_scalar_type(representatives.size))[permutations]

        def weights(pairs):
            return permuted_entries(table, permuted, pairs.a, pairs.b)

        return weights

    def cells(self, gram, permutations, plan):
        """One cell, the whole Gram matrix; the diagonal weights W_aa per permutation."""
        n = gram.n_samples
        n_perm = len(permutations)
        if self.estimate == "biased":
            # sum_a (HLH)_aa = tr(L) - n mean(L): the same in every permutation.
            trace = gram.diagonal.sum() - n * gram.row_means.mean()
            diagonal = np.full(n_perm, trace / (n - 1) ** 2)
        else:  # U-statistics (the unbiased one, per block for "block") have no diagonal terms
            diagonal = np.zeros(n_perm)

        def pair_cells(pairs):
            return np.zeros((1, pairs.a.size), dtype=np.intp)

        counts = np.array([[_diagonal_count(plan, n)]], dtype=np.float64)
        return Cells(pair_cells, counts, diagonal[:, None], np.array([True]))

    def _block_weights(self, gram, permutations, n_blocks_total, backend="auto"):
        """The mean over all sample blocks of the unbiased HSIC of each block.

        Per block of B samples, Song et al.'s U-statistic (the weights of the unbiased
        estimator with n = B): no diagonal terms, so a feature whose kernel is close to the
        identity (a column with many levels) gets no credit for it.
        """
        size = self.block_size
        scale = 2.0 / (size * (size - 3) * n_blocks_total)
        if backend != "numpy" and NUMBA and gram.matrix is None:
            found = gram.levels(most=_BLOCK_TABLE_LEVELS)
            if found is not None:
                codes, representatives = found
                levels = gram.arguments(representatives[None])[0]
                table = gram.entries(levels[:, None], levels[None, :])
                identity = bool(np.array_equal(table, np.eye(table.shape[0])))
                # Sample by sample, so that a block's samples read their levels under every
                # permutation as rows (n_samples, n_perm).
                levels_by_sample = levels_of_samples(
                    codes.astype(np.min_scalar_type(representatives.size)), permutations
                )

                def table_weights(pairs):
                    return block_level_weights_numba(
                        pairs.members.astype(np.int64), levels_by_sample, table, identity, scale
                    ).T

                def table_products(pairs, columns):
                    return block_level_products_numba(
                        pairs.members.astype(np.int64),
                        levels_by_sample,
                        table,
                        identity,
                        scale,
                        np.ascontiguousarray(columns),
                    )

                return PairWeights(table_weights, table_products)
        if backend != "numpy" and NUMBA:
            use_matrix = gram.matrix is not None
            matrix = gram.matrix if use_matrix else np.zeros((1, 1))
            codes = [_MATRIX] if use_matrix else [_KERNEL_CODES[k] for k in gram.kernels]
            kinds = np.array(codes, dtype=np.int64)
            gamma = np.zeros(1) if use_matrix else np.asarray(gram.gamma, dtype=np.float64)

            def compiled_weights(pairs):
                # Each place of each block under every permutation, (places, outputs, n_perm).
                places = permutations[:, pairs.members.ravel()]
                targets = places[..., None] if use_matrix else gram.Y[places]
                values = np.ascontiguousarray(targets.transpose(1, 2, 0), dtype=np.float64)
                return block_weights(values, size, kinds, gamma, matrix, scale).T

            return compiled_weights
        arguments = gram.arguments(permutations)
        upper = np.triu_indices(size, k=1)

        def weights(pairs):
            L = gram.within(arguments[:, pairs.members])  # (n_perm, n_blocks, B, B)
            row_sums = L.sum(axis=-1) - np.diagonal(L, axis1=-2, axis2=-1)
            constant = row_sums.sum(axis=-1, keepdims=True) / ((size - 1) * (size - 2))
            centre = row_sums / (size - 2) - constant / 2.0
            entries = L[..., upper[0], upper[1]] - centre[..., upper[0]] - centre[..., upper[1]]
            return scale * entries.reshape(len(permutations), -1)

        return weights


class MMD(_GramStatistic):
    """MMD^2 between the groups of samples named by integer codes.

    Two groups P, Q: biased (V-statistic) ``MMD^2 = c' K c`` with c = 1/n_P on P and -1/n_Q on
    Q; unbiased (U-statistic) without the diagonal, 1/(n_g (n_g - 1)) within a group. With G
    groups the statistic is the sum of MMD^2 over the G (G - 1) / 2 pairs of groups: within a
    group the weight is (G - 1)/n_g^2 (biased) or (G - 1)/(n_g (n_g - 1)) (unbiased), between
    groups g and h it is -1/(n_g n_h).

    "block" is the incomplete U-statistic (Blom, 1976; Janson, 1984) over the pairs within
    blocks of ``block_size`` samples drawn without regard to the labels, ``n_repetitions``
    times: the unbiased weights times the number of all pairs over the number drawn. It
    estimates the unbiased MMD^2 in O(n B) pairs, and because the pairs do not depend on the
    labels, a permutation of the labels re-weights the same pairs: the test stays exact.
    """

    name = "MMD"

    @staticmethod
    def target(y):
        """The :class:`SampleCodes` of the sample labels y, checked to name two usable samples."""
        y = np.asarray(y)
        if y.ndim != 1:
            y = y.ravel() if y.ndim == 2 and y.shape[1] == 1 else None
        if y is None:
            raise ValueError("y must be one label per row naming the sample it belongs to.")
        labels, codes = encode_labels(y, "y (the sample labels)")
        if labels.size < 2:
            raise ValueError(
                f"y names a single sample ({labels[0]!r}); MMD compares at least two samples."
            )
        counts = np.bincount(codes)
        if counts.min() < 2:
            small = [str(label) for label, count in zip(labels, counts) if count < 2]
            named = ", ".join(small[:5]) + (f" and {len(small) - 5} more" if len(small) > 5 else "")
            raise ValueError(
                f"every sample needs at least 2 rows; {len(small)} of the {labels.size} "
                f"labels have fewer ({named}). If y is a continuous target rather than sample "
                "labels, use HSICShapleySelector."
            )
        return SampleCodes(labels, codes)

    def weights(self, target, permutations, plan):
        codes = target.codes
        counts = np.bincount(codes).astype(np.float64)
        n_groups = counts.size
        # table[g, h] = 2 W_ab for a in group g and b in group h.
        table = -2.0 / np.outer(counts, counts)
        within = counts**2 if self.estimate == "biased" else counts * (counts - 1)
        np.fill_diagonal(table, 2.0 * (n_groups - 1) / within)
        if self.estimate == "block":
            n = codes.size
            drawn = plan.n_blocks * plan.block_size * (plan.block_size - 1) / 2
            table *= n * (n - 1) / 2 / drawn
        # Each sample's group in each permutation, in the smallest integer type that holds it
        # (n_perm by n_samples: the largest array of the test). Pairs of blocks read it
        # sample by sample, all pairs row by row.
        codes = codes.astype(np.min_scalar_type(n_groups))
        if plan.blocked:
            levels_by_sample = levels_of_samples(codes, permutations)

            def weights(pairs):
                return sample_entries(table, levels_by_sample, pairs.a, pairs.b).T

            def products(pairs, columns):
                # The entries come pair by pair, (n_pairs, n_perm): multiplied in that
                # layout, not transposed, the product runs 1.6x as fast.
                entries = sample_entries(table, levels_by_sample, pairs.a, pairs.b)
                return (np.ascontiguousarray(columns).T @ entries).T

            return PairWeights(weights, products)
        permuted = codes[permutations]

        def weights(pairs):
            return permuted_entries(table, permuted, pairs.a, pairs.b)

        return weights

    def cells(self, target, permutations, plan):
        """A cell per pair of groups (g, h), g <= h, numbered g * G + h, in every permutation."""
        codes = target.codes
        counts = np.bincount(codes).astype(np.float64)
        n_groups = counts.size
        permuted = codes.astype(np.intp)[permutations]
        grid = np.arange(n_groups * n_groups)
        within = grid // n_groups == grid % n_groups
        diagonal = np.zeros((len(permutations), grid.size))
        if self.estimate == "biased":  # W_aa = (G - 1) / n_g^2 on group g's diagonal
            diagonal[:, within] = (n_groups - 1) / counts
        if not plan.blocked:
            diagonal_counts = np.zeros((1, grid.size))
            diagonal_counts[0, within] = counts
        else:  # each group's samples in the blocks, counted as often as they are drawn
            drawn = plan.multiplicity()
            diagonal_counts = np.zeros((len(permutations), grid.size))
            diagonal_counts[:, within] = np.stack(
                [np.bincount(row, weights=drawn, minlength=n_groups) for row in permuted]
            )

        def pair_cells(pairs):
            first, second = permuted[:, pairs.a], permuted[:, pairs.b]
            return np.minimum(first, second) * n_groups + np.maximum(first, second)

        return Cells(pair_cells, diagonal_counts, diagonal, within)
