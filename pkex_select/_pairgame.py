"""Streaming evaluation of Gram-statistic pair games (HSIC, MMD) and their permutations.

A kernel statistic that is linear in the Gram matrix, ``T(K) = sum_{a,b} W_ab K_ab``, is a
pair game once ``K = prod_{j in S} K_j``. Diagonal pairs never contribute (every factor is 1
there) and W is symmetric, so the game runs over the pairs a < b with weight 2 W_ab. Every
entry point takes one path, :func:`attribute`: the statistic plans its pairs (_plan.py), each
chunk's pairs are built once, their kernel factors (_features.py) and their weights under
every permutation of the labels (_statistics.py) go to the engine, the per-chunk values are
summed, and the permutation tests (_pvalues.py) read the result. Memory stays bounded, and a
permutation costs one matrix-vector product per chunk.
"""

from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state

from ._engine import (
    contributions,
    order_two_contributions,
    point_values,
    weighted_contributions,
)
from ._features import CentredFactors, GramFactors, resolve_scales
from ._interactions import INDICES, assemble, chunk_interactions, order_two_interactions
from ._plan import CircularPairs
from ._pvalues import (
    CORRECTIONS,
    PermutationTests,
    permutation_tests,
    raised_maxt_pvalues,
    sequential_looks,
    settled,
)
from ._quadrature import DEFAULT_TOL
from ._scheduling import progress_printer, run_tasks
from ._shifts import ShiftSpectra, draw_shifts, shifted_rows, uses_shifts
from ._sklearn_compat import Interval, StrOptions
from ._spelling import spelled
from ._statistics import CENTRED_GAMES, VALUE_FUNCTIONS, PairWeights

# How many times TASK_BYTES the weights of one chunk may take (32 MiB).
_WEIGHT_BUDGET = 32

__all__ = [
    "attribute",
    "Attribution",
    "ATTRIBUTION_CONSTRAINTS",
    "draw_permutations",
    "gram_attribution",
    "gram_scales",
    "joint_kernel_std",
    "RemovedFactors",
    "solve",
]


@dataclass(frozen=True)
class Attribution:
    """The exact Shapley attribution of a kernel statistic, and its tests.

    Attributes
    ----------
    values : ndarray of shape (n_features,)
        Shapley values of the attributed statistic; they add up to ``statistic``.
    statistic : float
        The attributed statistic with all features: with one bandwidth scale the estimate
        itself, with several the sum over ``scales`` of the estimate divided by the standard
        deviation of its joint kernel over the pairs. Under the observational value
        function, that minus ``v(empty)``.
    scales : tuple of float
        The bandwidth scales attributed.
    interaction_values : ndarray of shape (n_features, n_features) or None
        The pairwise interaction index asked for (see
        :func:`pkex_select.interaction_values`), else None.
    tests : PermutationTests or None
        The permutation tests (with ``n_permutations > 0``), else None.
    """

    values: np.ndarray
    statistic: float
    scales: tuple
    interaction_values: np.ndarray | None = None
    tests: PermutationTests | None = None

    @property
    def shares(self):
        """Each value over the sum of the values' magnitudes (zeros where that is 0).

        Readable at any number of features, where the values' own scale is not, and
        bounded by 1 in magnitude in every game: their magnitudes add up to 1, and where no
        value is negative (the ANOVA game, up to sampling noise) they are the shares of the
        statistic. Dividing by the statistic instead would blow them up in the paper's
        game, whose values can nearly cancel (a top share of 0.71 beside five negative ones).
        """
        total = np.abs(self.values).sum()
        if total == 0 or not np.isfinite(total):
            return np.zeros_like(self.values)
        return self.values / total


class RemovedFactors:
    """Kernel means that replace removed factors (the observational value function).

    ``means[s, k, c, j]`` is the mean of feature j's Gram matrix (at scale s) over cell c
    under permutation k: its pairs counted as in the full matrix (twice in a diagonal cell)
    and its diagonal entries, which are 1. Diagonal entries are pairs too now: a removed
    feature changes them from 1 to the cell's mean, so each cell's diagonal is one more pair
    with factors 1 and the cell's diagonal weight.
    """

    def __init__(self, cells, means):
        self.cells, self.means = cells, means

    @classmethod
    def measure(cls, plan, factors, cells, n_jobs=None):
        """One pass over the plan's pairs to sum each feature's factors per cell."""
        n_cells = cells.within.size

        def task(chunk):
            pairs = plan.pairs(chunk)
            pair_cells = cells.pair_cells(pairs)
            # One-hot cell membership of each pair, per permutation: sums are matrix products.
            members = [np.eye(n_cells)[row].T for row in pair_cells]
            counts = np.stack([member.sum(axis=1) for member in members])
            sums = np.stack([np.stack([member @ Z for member in members]) for Z in factors(pairs)])
            return counts, sums

        counts = sums = 0.0
        for chunk_counts, chunk_sums in run_tasks(task, plan.chunks, n_jobs):
            counts, sums = counts + chunk_counts, sums + chunk_sums
        multiplicity = np.where(cells.within, 2.0, 1.0)
        entries = cells.diagonal_counts + multiplicity * counts
        total = cells.diagonal_counts[..., None] + multiplicity[:, None] * sums
        # An empty cell has no pairs; its mean is never used.
        means = np.divide(
            total, entries[..., None], out=np.ones_like(total), where=entries[..., None] > 0
        )
        return cls(cells, means)

    def factors(self, scale, permutation, pair_cells):
        """Removed factors of a chunk's pairs under one permutation (n_pairs, n_features)."""
        row = permutation if len(pair_cells) > 1 else 0
        return self.means[scale, row][pair_cells[row]]

    @property
    def by_permutation(self):
        """Whether the cells (and so the removed factors) change with the labels."""
        return self.means.shape[1] > 1

    def diagonal_values(self, scale, n_perm):
        """Shapley values of the diagonal pairs: (n_perm, n_features)."""
        means, weights = self.means[scale], self.cells.diagonal_weights
        ones = np.ones(means.shape[1:])
        if not self.by_permutation:
            return weighted_contributions(ones, weights, removed=means[0])
        return np.concatenate(
            [
                weighted_contributions(ones, weights[k : k + 1], removed=means[k])
                for k in range(n_perm)
            ]
        )

    def diagonal_interactions(self, scale, index, tol):
        means = self.means[scale, 0]
        weights = self.cells.diagonal_weights[0][:, None]
        return chunk_interactions(np.ones(means.shape), means, weights, index, tol)


def solve(
    plan,
    factors,
    weights,
    *,
    removed=None,
    interaction_index=None,
    n_jobs=None,
    progress=None,
    backend="auto",
    tol=DEFAULT_TOL,
    one_weighting=False,
    pairwise_only=False,
):
    """Shapley values of the statistic under every permutation of the labels, at every scale.

    Parameters
    ----------
    plan : AllPairs or SampleBlocks
    factors : callable Pairs -> list of Z of shape (n_pairs, n_features), one per scale
    weights : callable Pairs -> weights of shape (n_perm, n_pairs)
    removed : RemovedFactors or None
        The removed factors of the observational value function; 1 when None.
    interaction_index : str or None
        Also the pairwise interaction index of the observed labels (see
        :func:`pkex_select.interaction_values`).
    progress : callable (done, total) or None
        Called after each chunk.
    one_weighting : bool, default=False
        Whether ``weights`` has one row (no permutations).
    pairwise_only : bool, default=False
        Whether the game is truncated at pairwise interactions
        (:func:`~pkex_select._engine.order_two_contributions`; no removed factors).

    Returns
    -------
    values : ndarray of shape (n_scales, n_perm, n_features)
    statistics : ndarray of shape (n_scales, n_perm)
        Per scale, ``sum_p w_p prod_j k_pj`` with the plain kernel factors k
        (``factors.test_joints``; the ANOVA game's are centred, these are not): the standard
        kernel statistic without its part from the diagonal pairs, which is the same under
        every permutation. The values add up to it
        plus that constant; but where the joint kernel is nearly the identity (d
        median-width factors) the sum of the values is the constant plus a signal below its
        rounding error, so tests compare these instead.
    kernel_moments : ndarray of shape (n_scales, 3)
        Per scale, the number of pairs and the sums of the joint kernel ``prod_j z_pj``
        and of its square over the pairs.
    interactions : tuple of ndarray or None
        Per scale, the pairwise sums (n_scales, d, d) and order-one values (n_scales, d) of
        the interaction index, before :func:`~pkex_select._interactions.assemble`.
    """

    pair_weights = weights if isinstance(weights, PairWeights) else PairWeights(weights)
    by_permutation = removed is not None and removed.by_permutation
    # One weighting, the labels' own, and removed factors: each pair's values weighted and
    # summed in the compiled pass (point_values). Several: the contributions once, then
    # their products with every permutation's weights. Without removed factors the plan's
    # series path (linear in d for factors near 1) can be far cheaper than any quadrature:
    # at d = 10^4 the pass would take thousands of nodes per pair.
    weighted_pass = one_weighting and removed is not None and not by_permutation
    # The weights themselves where a game per permutation, an index or the weighted pass
    # needs them; else only their products with the pairs' values.
    needs_weights = by_permutation or interaction_index is not None or weighted_pass
    # What the weights multiply: each scale's plain joint kernel, then (unless the values
    # are weighted per permutation or in the compiled pass) its contributions.
    summed_values = not (by_permutation or weighted_pass)

    def task(chunk):
        pairs = plan.pairs(chunk)
        scales = factors(pairs)
        pair_cells = None if removed is None else removed.cells.pair_cells(pairs)
        chunk_weights = pair_weights(pairs) if needs_weights else None
        n_scales, (n_pairs, n_features) = len(scales), scales[0].shape
        values, moments = [], np.zeros((n_scales, 3))
        pairwise, order_one = [], []
        columns = np.empty((n_pairs, n_scales * (1 + n_features) if summed_values else n_scales))
        for s, joint in enumerate(factors.test_joints(pairs, scales)):
            columns[:, s] = joint
        joints = getattr(scales, "joints", None)  # where the factors' pass computed them
        for s, Z in enumerate(scales):
            joint = np.prod(Z, axis=1) if joints is None else joints[s]
            moments[s] = joint.size, joint.sum(), joint @ joint
            observed_removed = None if removed is None else removed.factors(s, 0, pair_cells)
            if by_permutation:
                # The removed factors change with the labels: one game per permutation.
                values.append(
                    np.concatenate(
                        [
                            weighted_contributions(
                                Z,
                                chunk_weights[k : k + 1],
                                removed=removed.factors(s, k, pair_cells),
                                backend=backend,
                            )
                            for k in range(len(chunk_weights))
                        ]
                    )
                )
            elif weighted_pass:
                weighted = point_values(Z[None], observed_removed, chunk_weights.T, backend=backend)
                values.append(weighted[0].T)
            else:
                start = n_scales + s * n_features
                contributions_of_scale = columns[:, start : start + n_features]
                if pairwise_only:
                    order_two_contributions(Z, contributions_of_scale, backend)
                else:
                    contributions_of_scale[:] = contributions(Z, observed_removed, backend)
            if interaction_index is not None:
                observed_weights = chunk_weights[0][:, None]
                chunk_pairwise, chunk_order_one = (
                    order_two_interactions(Z, observed_weights, interaction_index)
                    if pairwise_only
                    else chunk_interactions(
                        Z, observed_removed, observed_weights, interaction_index, tol
                    )
                )
                pairwise.append(chunk_pairwise[..., 0])
                order_one.append(chunk_order_one[:, 0])
        # Every weighted sum in one matrix product: the weights (n_perm, n_pairs) are the
        # large operand, so they are read once.
        extra = (np.array(pairwise), np.array(order_one)) if interaction_index else None
        if not summed_values:
            return np.asarray(values), (chunk_weights @ columns).T, moments, extra
        sums = (
            pair_weights.products(pairs, columns)
            if chunk_weights is None
            else chunk_weights @ columns
        )
        # Split into statistics and values once summed over the chunks: the main thread adds
        # the contiguous sums (n_perm, n_columns) in a third of the time of the split views.
        return sums, moments, extra

    # The first draw inside the try: an interruption during it still closes the bar, so
    # the caller's message does not land on the bar's line.
    try:
        if progress is not None:
            progress(0, len(plan.chunks))
        *totals, interactions = _sum_chunks(
            run_tasks(task, plan.chunks, n_jobs), progress, len(plan.chunks)
        )
    finally:
        if progress is not None and hasattr(progress, "close"):
            progress.close()  # a bar left open by an interruption ends its line
    if summed_values:  # the weighted sums of each scale's joint kernel and contributions
        sums, moments = totals
        n_scales = len(moments)
        statistics = sums[:, :n_scales].T
        values = sums[:, n_scales:].reshape(len(sums), n_scales, -1).transpose(1, 0, 2)
    else:
        values, statistics, moments = totals
    if removed is not None:
        values = values + np.array(
            [removed.diagonal_values(s, values.shape[1]) for s in range(values.shape[0])]
        )
        if interaction_index is not None:
            diagonal = [
                removed.diagonal_interactions(s, interaction_index, tol)
                for s in range(values.shape[0])
            ]
            interactions = (
                interactions[0] + np.array([p[..., 0] for p, _ in diagonal]),
                interactions[1] + np.array([o[:, 0] for _, o in diagonal]),
            )
    return values, statistics, moments, interactions


def _sum_chunks(results, progress, n_chunks):
    """The sums of :func:`solve`'s per-chunk results (arrays, then the interactions or
    None), reporting progress after each."""
    sums, interactions = None, None
    for done, (*chunk_sums, extra) in enumerate(results, start=1):
        if sums is None:  # 0.0 + the first chunk's, as a sum from 0.0 (which turns -0.0 to 0.0)
            sums = [np.add(0.0, chunk) for chunk in chunk_sums]
        else:  # in place, in the chunks' order
            for total, chunk in zip(sums, chunk_sums):
                total += chunk
        if extra is not None:
            interactions = (
                extra
                if interactions is None
                else (interactions[0] + extra[0], interactions[1] + extra[1])
            )
        if progress is not None:
            progress(done, n_chunks)
    return (*sums, interactions)


def joint_kernel_std(moments):
    """Standard deviation of the joint kernel over the pairs, from :func:`solve`'s moments."""
    count, total, squares = moments.T
    mean = total / count
    return np.sqrt(np.maximum(squares / count - mean**2, 0.0))


def attribute(
    statistic,
    factors,
    target,
    *,
    scales=(1.0,),
    n_permutations=0,
    correction="maxT",
    random_state=None,
    n_jobs=None,
    progress=None,
    value_function="baseline",
    anova_weight="auto",
    interactions=None,
    alpha=None,
):
    """Shapley values of ``statistic`` for the observed target, and their permutation tests.

    The one path from every entry point to the engine: plan the pairs, then solve. The
    random state draws the plan (block estimators) first, then the permutations, so that a
    function and an estimator given the same seed attribute the same statistic. With
    several bandwidth scales the statistic is the sum over scales of the statistic divided
    by the standard deviation of its joint kernel over the pairs (:func:`joint_kernel_std`),
    so that no scale dominates the others; a scale whose kernel has no spread adds nothing.

    ``value_function="anova"`` centres every factor (``_features.CentredFactors``: one pass
    over the pairs for the row means first, or per block for the block estimator); the
    weights and permutations are those of the baseline game. ``"pairwise_anova"`` keeps only
    its interactions of at most two features (``_engine.order_two_contributions``).
    With fewer permutations than samples (:func:`~pkex_select._shifts.uses_shifts`) the
    permutations are circular shifts along a random order, drawn after the plan, and every
    shift comes from one pass over the circular diagonals of that order (``_shifts.py``).
    ``value_function="observational"`` replaces a removed feature's Gram matrix by its mean
    over each of the statistic's cells (one pass over the pairs first). Where the cells
    depend on the labels (MMD), each permutation is a game of its own: the test costs one
    engine pass per permutation instead of one matrix product.

    Parameters
    ----------
    statistic : HSIC or MMD
    factors : DataFactors or GramFactors
        The kernel factors of any chunk of pairs, one array per scale, and the joint kernels
        the overall test compares (``test_joints``).
    target : TargetGram or SampleCodes
        The statistic's target.
    scales : tuple of float, default=(1.0,)
        The bandwidth scale of each of the factors' arrays (the overall test gives the
        widest its own share).
    n_permutations : int, default=0
    correction : {"maxT", "holm", "fdr_bh"}, default="maxT"
    random_state, n_jobs, progress, value_function, anova_weight, interactions
        As in the estimators.
    alpha : float, default=None
        The level the tests' decisions are taken at. With the maxT correction random
        permutations (not shifts) then run in stages, looking after each but the last
        (:func:`~pkex_select._pvalues.sequential_looks`: 157 and 471 at 0.05) whether every
        decision at ``alpha`` is settled (:func:`~pkex_select._pvalues.settled`), and
        stopping where it is: the tests are then those of the permutations so far, an exact
        permutation test of coarser resolution; else those of all ``n_permutations``, as
        without ``alpha``.

    Returns
    -------
    Attribution
    """
    n_samples = target.n_samples
    statistic.check(n_samples)
    rng = check_random_state(random_state)
    # A chunk's weights under every permutation may take _WEIGHT_BUDGET task budgets: the
    # product that re-weights its pairs runs twice as fast over 4000 pairs as over 400.
    pair_bytes = 8 * max(factors.n_features, (n_permutations + 1) // _WEIGHT_BUDGET)
    plan = statistic.plan(n_samples, rng, pair_bytes, n_jobs)
    shifting = uses_shifts(plan, n_permutations, value_function, interactions)
    if shifting:
        order, shifts = draw_shifts(n_samples, n_permutations, rng)
    else:
        _check_permutation_memory(n_samples, n_permutations)
        permutations = draw_permutations(n_samples, n_permutations, rng)
    removed = None
    if value_function in CENTRED_GAMES:
        if plan.blocked and plan.block_size < 4:
            raise ValueError(
                f"value_function={value_function!r} U-centres the factors within each block, "
                "which needs block_size >= 4 (with 3 every U-centred factor is 0); got "
                f"{plan.block_size}."
            )
        factors = (
            CentredFactors(factors, weight=anova_weight)
            if plan.blocked
            else CentredFactors.measure(plan, factors, n_jobs, anova_weight)
        )
    elif value_function == "observational":
        removed = RemovedFactors.measure(
            plan, factors, statistic.cells(target, permutations, plan), n_jobs
        )
    pairwise_only = value_function == "pairwise_anova"
    # Shifts cost one pass whatever their number: no looks.
    sequential = alpha is not None and correction == "maxT" and removed is None and not shifting
    looks = dict(sequential_looks(alpha, n_permutations)) if sequential else {}
    done, parts, tests = 0, [], None
    for last in [*looks, n_permutations]:
        if shifting:
            # A pair holds a column of values per feature and scale, and their spectra.
            circular = CircularPairs(order, 8 * factors.n_features, n_jobs)
            identity = np.arange(n_samples)[None]
            weights = ShiftSpectra(statistic.weights(target, identity, circular), n_samples)
            stage_values, stage_statistics, stage_moments, stage_pairs = solve(
                circular,
                factors,
                weights,
                n_jobs=n_jobs,
                progress=progress,
                pairwise_only=pairwise_only,
            )
            stage_values = shifted_rows(stage_values, n_samples, shifts)
            stage_statistics = shifted_rows(stage_statistics, n_samples, shifts)
        else:
            # The observed labels (row 0) and this stage's permutations.
            rows = np.r_[0, np.arange(done + 1, last + 1)]
            stage_values, stage_statistics, stage_moments, stage_pairs = solve(
                plan,
                factors,
                statistic.weights(target, permutations[rows], plan),
                removed=removed,
                interaction_index=interactions,
                n_jobs=n_jobs,
                progress=progress,
                one_weighting=len(rows) == 1,
                pairwise_only=pairwise_only,
            )
        if not parts:
            moments, pair_values = stage_moments, stage_pairs
            if len(stage_values) == 1:
                scale_weights = np.ones(1)
            else:
                std = joint_kernel_std(moments)
                scale_weights = np.divide(1.0, std, out=np.zeros_like(std), where=std > 0)
        else:  # the observed row once
            stage_values, stage_statistics = stage_values[:, 1:], stage_statistics[:, 1:]
        parts.append((stage_values, stage_statistics))
        done = last
        # Every permutation so far, each scale weighted as in the sum.
        scale_values = np.concatenate([v for v, _ in parts], axis=1) * scale_weights[:, None, None]
        scale_statistics = (
            np.concatenate([s for _, s in parts], axis=1) * scale_weights[:, None]
        ).T
        if last in looks:
            family = ~factors.constant
            tests = permutation_tests(
                scale_values, scale_statistics, tuple(scales), correction, family
            )
            features, overall = settled(
                tests.adjusted_pvalues[family],
                tests.pvalue,
                last,
                alpha,
                risk=looks[last],
                keep_pvalues=raised_maxt_pvalues(scale_values, family)[family],
            )
            if overall and features.all():
                break  # these tests are the fit's
            tests = None
    interaction_matrix = None
    if interactions is not None:
        pairwise = np.tensordot(scale_weights, pair_values[0], axes=1)
        order_one = np.tensordot(scale_weights, pair_values[1], axes=1)
        interaction_matrix = assemble(
            pairwise[None, ..., None], order_one[None, :, None], interactions
        )[0, ..., 0]
    observed = scale_values[:, 0].sum(axis=0)
    if n_permutations and tests is None:
        tests = permutation_tests(
            scale_values, scale_statistics, tuple(scales), correction, ~factors.constant
        )
    return Attribution(observed, float(observed.sum()), tuple(scales), interaction_matrix, tests)


# The permutations are held as one int32 array; beyond this a test is refused with the count
# that fits rather than ending in NumPy's allocation error (or a machine swapping).
_PERMUTATION_BYTES = 2**31


def _check_permutation_memory(n_samples, n_permutations):
    needed = 4 * (n_permutations + 1) * n_samples
    if needed > _PERMUTATION_BYTES:
        most = _PERMUTATION_BYTES // (4 * n_samples) - 1
        raise ValueError(
            f"{spelled('n_permutations', n_permutations)} over {n_samples} samples needs "
            f"{needed / 2**30:.3g} GiB for the permutations alone; use at most {most} "
            "(999 give p-values down to 0.001)."
        )


def draw_permutations(n_samples, n_permutations, random_state):
    """The identity followed by ``n_permutations`` random permutations of the samples.

    32-bit indices: the permutations are the largest array of a permutation test (n_samples
    by n_permutations + 1), and halving it matters at 10^5 samples and more.
    """
    index_type = np.int32 if n_samples < 2**31 else np.intp
    permutations = np.empty((n_permutations + 1, n_samples), dtype=index_type)
    permutations[0] = np.arange(n_samples)
    for k in range(1, n_permutations + 1):
        permutations[k] = random_state.permutation(n_samples)
    return permutations


def gram_scales(scales, n_stacks):
    """The scale of each stack of Gram matrices given to a function: 1, 2, ... by default."""
    if scales is None:
        return tuple(float(s) for s in range(1, n_stacks + 1))
    values = resolve_scales(scales, n_stacks)
    if len(values) != n_stacks:
        raise ValueError(
            f"scales names {len(values)} scales for {n_stacks} stacks of Gram matrices in K."
        )
    return values


def gram_attribution(statistic, K, target, *, scales, return_result, verbose, name, **options):
    """What the functions on Gram matrices share: the attribution of validated ``K``
    (n_scales, d, n, n), returned whole or as its values."""
    attribution = attribute(
        statistic,
        GramFactors(K),
        target,
        scales=gram_scales(scales, K.shape[0]),
        progress=progress_printer(name, verbose),
        **options,
    )
    return attribution if return_result else attribution.values


# The parameters of attribute() that the functions on Gram matrices pass on, with the
# estimators' names and constraints.
ATTRIBUTION_CONSTRAINTS = {
    "value_function": [StrOptions(set(VALUE_FUNCTIONS))],
    "anova_weight": [StrOptions({"auto"}), Interval(Real, 0, 1, closed="right")],
    "scales": ["array-like", None],
    "n_permutations": [Interval(Integral, 0, None, closed="left")],
    "correction": [StrOptions(set(CORRECTIONS))],
    "interactions": [StrOptions(set(INDICES) - {"SV", "BV"}), None],
    "random_state": ["random_state"],
    "n_jobs": [Integral, None],
    "verbose": ["verbose"],
    "return_result": ["boolean"],
}
