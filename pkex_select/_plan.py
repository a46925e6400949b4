"""Which pairs of samples a Gram statistic sums over, cut into blocks that stream.

A plan has ``blocks`` (small descriptions: only running blocks hold memory) and ``pairs(block)``,
which builds a block's pairs once, for its kernel factors and its weights alike.
"""

from typing import NamedTuple

import numpy as np

from ._engine import rows_per_task


class Pairs(NamedTuple):
    """The pairs ``(a[p], b[p])``, a < b, of one block of a plan."""

    a: np.ndarray
    b: np.ndarray
    # Set by AllPairs: the rows a = start, ..., stop - 1, each with every b > a, in order.
    rows: tuple | None = None
    # Set by SampleBlocks: the samples of each block, (n_blocks, B); the pairs are theirs.
    members: np.ndarray | None = None


class AllPairs:
    """All pairs a < b of ``n_samples`` samples, in blocks of consecutive rows a.

    A block holds about ``BLOCK_BYTES / pair_bytes`` pairs (at least one row), and there are
    at least four blocks per worker when ``n_jobs`` asks for parallelism.
    """

    members = None  # no sample blocks: every pair of the samples

    def __init__(self, n_samples, pair_bytes, n_jobs=None):
        self.n_samples = n_samples
        total = n_samples * (n_samples - 1) // 2
        max_pairs = max(n_samples, rows_per_task(total, pair_bytes, n_jobs))
        # Row a holds n - 1 - a pairs; cut the rows where the running count passes max_pairs.
        ends = np.cumsum(np.arange(n_samples - 1, 0, -1))
        self.blocks, start = [], 0
        while start < n_samples - 1:
            before = ends[start - 1] if start else 0
            stop = max(start + 1, int(np.searchsorted(ends, before + max_pairs, side="right")))
            self.blocks.append((start, stop))
            start = stop

    def pairs(self, block):
        rows = np.arange(*block)
        counts = self.n_samples - 1 - rows
        a = np.repeat(rows, counts)
        # b runs a + 1, ..., n - 1 within each row.
        offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        return Pairs(a, a + 1 + offsets, rows=block)


class SampleBlocks:
    """Pairs within blocks of ``block_size`` samples, over ``n_repetitions`` partitions.

    Each repetition shuffles the samples and cuts them into n // B blocks of B samples (the
    remainder is left out of that repetition), as in block HSIC Lasso (Yamada et al., 2018).
    A plan block is a group of sample blocks holding about ``BLOCK_BYTES / pair_bytes`` pairs.
    """

    def __init__(self, n_samples, block_size, n_repetitions, random_state, pair_bytes,
                 n_jobs=None):
        n_blocks = n_samples // block_size
        self.members = np.concatenate([
            random_state.permutation(n_samples)[: n_blocks * block_size]
            .reshape(n_blocks, block_size)
            for _ in range(n_repetitions)
        ])
        self._upper = np.triu_indices(block_size, k=1)
        per_task = rows_per_task(len(self.members), pair_bytes * self._upper[0].size, n_jobs)
        self.blocks = [self.members[s : s + per_task]
                       for s in range(0, len(self.members), per_task)]

    def pairs(self, members):
        return Pairs(members[:, self._upper[0]].ravel(), members[:, self._upper[1]].ravel(),
                     members=members)
