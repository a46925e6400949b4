"""Which pairs of samples a Gram statistic sums over, cut into chunks that stream.

A plan has ``chunks`` (small descriptions: only running chunks hold memory) and
``pairs(chunk)``, which builds a chunk's pairs once, for its kernel factors and its weights
alike. "Block" means one thing here: a block of samples of the block estimator.
"""

from typing import NamedTuple

import numpy as np

from ._scheduling import rows_per_task

__all__ = [
    "AllPairs",
    "Pairs",
    "SampleBlocks",
]


class Pairs(NamedTuple):
    """The pairs ``(a[p], b[p])``, a < b, of one chunk of a plan."""

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

    members = None  # no sample blocks: every pair of the samples

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
        rows = np.arange(*chunk)
        counts = self.n_samples - 1 - rows
        a = np.repeat(rows, counts)
        # b runs a + 1, ..., n - 1 within each row.
        offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        return Pairs(a, a + 1 + offsets, rows=chunk)


class SampleBlocks:
    """Pairs within blocks of ``block_size`` samples, over ``n_repetitions`` partitions.

    Each repetition shuffles the samples and cuts them into n // B blocks of B samples (the
    remainder is left out of that repetition), as in block HSIC Lasso (Yamada et al., 2018).
    A chunk of the plan is a group of sample blocks holding about ``TASK_BYTES / pair_bytes``
    pairs.
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
        self.chunks = [self.members[s : s + per_task]
                       for s in range(0, len(self.members), per_task)]

    def pairs(self, members):
        return Pairs(members[:, self._upper[0]].ravel(), members[:, self._upper[1]].ravel(),
                     members=members)
