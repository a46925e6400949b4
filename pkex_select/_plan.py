"""Which pairs of samples a Gram statistic sums over, cut into chunks that stream.

A plan has ``chunks`` (small descriptions: only running chunks hold memory) and
``pairs(chunk)``, which builds a chunk's pairs once, for its kernel factors and its weights
alike. "Block" means one thing here: a block of samples of the block estimator. The model
game and the bandwidth alignment sum over the pairs of a subsample of rows
(:func:`subsample_rows`).
"""

from functools import lru_cache
from numbers import Integral
from typing import NamedTuple

import numpy as np
from sklearn.utils import check_random_state

from ._scheduling import rows_per_task

__all__ = [
    "AllPairs",
    "CircularPairs",
    "Pairs",
    "pairs_of_rows",
    "SampleBlocks",
    "subsample_rows",
]


def subsample_rows(n_samples, most, random_state=None):
    """All rows up to ``most``, else ``most`` of them drawn uniformly; sorted."""
    if n_samples <= most:
        return np.arange(n_samples)
    if isinstance(random_state, Integral):
        return np.sort(_seeded_permutation(n_samples, int(random_state))[:most])
    return np.sort(check_random_state(random_state).choice(n_samples, most, replace=False))


@lru_cache(maxsize=1)
def _seeded_permutation(n_samples, seed):
    """``RandomState(seed).permutation(n_samples)``, whose first rows are what
    ``choice(n_samples, most, replace=False)`` draws: a fit's six subsamples from one seed
    share it, drawn once (a permutation of 10^6 rows took 25 ms)."""
    order = np.random.RandomState(seed).permutation(n_samples)
    order.flags.writeable = False
    return order


class Pairs(NamedTuple):
    """The pairs ``(a[p], b[p])`` of one chunk of a plan (a < b but in
    :class:`CircularPairs`)."""

    a: np.ndarray
    b: np.ndarray
    # Set by AllPairs: the rows a = start, ..., stop - 1, each with every b > a, in order.
    rows: tuple | None = None
    # Set by SampleBlocks: the samples of each block, (n_blocks, B); the pairs are theirs.
    members: np.ndarray | None = None


class AllPairs:
    """All pairs a < b of ``n_samples`` samples, in chunks of consecutive rows a.

    A chunk holds about ``TASK_BYTES / pair_bytes`` pairs (at least one row), and there are
    at least four chunks per worker when ``n_jobs`` asks for parallelism.
    """

    blocked = False  # every pair of the samples, no sample blocks

    def __init__(self, n_samples, pair_bytes, n_jobs=None):
        self.n_samples = n_samples
        total = n_samples * (n_samples - 1) // 2
        max_pairs = max(n_samples, rows_per_task(total, pair_bytes, n_jobs))
        # Row a holds n - 1 - a pairs; cut the rows where the running count passes max_pairs.
        ends = np.cumsum(np.arange(n_samples - 1, 0, -1))
        self.chunks, start = [], 0
        while start < n_samples - 1:
            before = ends[start - 1] if start else 0
            stop = max(start + 1, int(np.searchsorted(ends, before + max_pairs, side="right")))
            self.chunks.append((start, stop))
            start = stop

    def pairs(self, chunk):
        return pairs_of_rows(chunk, self.n_samples)


class CircularPairs:
    """All pairs of ``n_samples`` samples along the circular diagonals of an ``order``.

    Diagonal t holds the pairs ``(order[i], order[(i + t) % n])`` for i = 0, ..., n - 1
    (for t = n / 2 only i < n / 2, whose pairs the others repeat); diagonals 1, ..., n // 2
    hold every pair once. A chunk is a run of whole diagonals, about ``TASK_BYTES /
    pair_bytes`` pairs, so that a statistic can transform each diagonal along i (the
    shift test of :func:`~pkex_select._pairgame.attribute`).
    """

    blocked = False

    def __init__(self, order, pair_bytes, n_jobs=None):
        self.order = np.asarray(order)
        self.n_samples = n = self.order.size
        per_task = rows_per_task(n // 2, n * pair_bytes, n_jobs)
        self.chunks = [(t, min(t + per_task, n // 2 + 1)) for t in range(1, n // 2 + 1, per_task)]

    def diagonal_lengths(self, chunk):
        """The number of pairs of each diagonal of the chunk."""
        n = self.n_samples
        return [n // 2 if 2 * t == n else n for t in range(*chunk)]

    def pairs(self, chunk):
        n, positions = self.n_samples, np.arange(self.n_samples)
        first = np.concatenate([positions[:length] for length in self.diagonal_lengths(chunk)])
        second = np.concatenate(
            [
                (positions[:length] + t) % n
                for t, length in zip(range(*chunk), self.diagonal_lengths(chunk))
            ]
        )
        return Pairs(self.order[first], self.order[second])


def pairs_of_rows(rows, n_samples):
    """The pairs (a, b), b > a, of the rows ``range(*rows)`` of ``n_samples`` samples, row
    by row and b in order: a chunk of :class:`AllPairs`."""
    starts = np.arange(*rows)
    counts = n_samples - 1 - starts
    a = np.repeat(starts, counts)
    # b runs a + 1, ..., n - 1 within each row.
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return Pairs(a, a + 1 + offsets, rows=tuple(rows))


class SampleBlocks:
    """Pairs within blocks of ``block_size`` samples, over ``n_repetitions`` partitions.

    Each repetition shuffles the samples and cuts them into n // B blocks of B samples (the
    remainder is left out of that repetition), as in block HSIC Lasso (Yamada et al., 2018).
    A chunk of the plan is a run of consecutive blocks (numbered over all repetitions)
    holding about ``TASK_BYTES / pair_bytes`` pairs. Repetition r's shuffle is drawn from
    (one seed, r), so a chunk's blocks are rebuilt when it runs and memory stays bounded
    whatever ``n_repetitions`` is.
    """

    blocked = True

    def __init__(self, n_samples, block_size, n_repetitions, random_state, pair_bytes, n_jobs=None):
        self.n_samples, self.block_size = n_samples, block_size
        self.blocks_per_repetition = n_samples // block_size
        self.n_blocks = self.blocks_per_repetition * n_repetitions
        self._seed = int(random_state.randint(np.iinfo(np.int32).max))
        self._upper = np.triu_indices(block_size, k=1)
        self._per_task = rows_per_task(self.n_blocks, pair_bytes * self._upper[0].size, n_jobs)
        self.chunks = range(0, self.n_blocks, self._per_task)
        # Chunks of one repetition run one after another: keep its last few shuffles.
        self._repetition = lru_cache(maxsize=4)(self._draw_repetition)

    def _draw_repetition(self, repetition):
        order = np.random.default_rng([self._seed, repetition]).permutation(self.n_samples)
        return order[: self.blocks_per_repetition * self.block_size].reshape(
            self.blocks_per_repetition, self.block_size
        )

    def blocks(self, start):
        """The samples of the blocks of the chunk that starts at block ``start``, (n, B)."""
        stop = min(start + self._per_task, self.n_blocks)
        per = self.blocks_per_repetition
        return np.concatenate(
            [
                self._repetition(r)[max(start - r * per, 0) : min(stop - r * per, per)]
                for r in range(start // per, (stop - 1) // per + 1)
            ]
        )

    @property
    def members(self):
        """The samples of every block, (n_blocks, B): all of them at once (for inspection)."""
        return np.concatenate([self.blocks(start) for start in self.chunks])

    def multiplicity(self):
        """How many blocks each sample is in, over all repetitions (one pass, O(n) memory)."""
        return sum(
            (
                np.bincount(self.blocks(start).ravel(), minlength=self.n_samples)
                for start in self.chunks
            ),
            np.zeros(self.n_samples, dtype=np.int64),
        )

    def pairs(self, start):
        members = self.blocks(start)
        return Pairs(
            members[:, self._upper[0]].ravel(), members[:, self._upper[1]].ravel(), members=members
        )
