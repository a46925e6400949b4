"""How streamed work is cut into tasks and run: the package's one memory budget and one runner.

Every computation over many pairs (the engine's chunks of rows, the chunks of pairs of the
HSIC and MMD games, the explainer's batches of points) is cut by :func:`rows_per_task` and run
by :func:`run_tasks`, so memory stays bounded and ``n_jobs`` means the same everywhere.
"""

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import cache, partial
from numbers import Integral

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from threadpoolctl import ThreadpoolController

__all__ = [
    "beside",
    "blas_controller",
    "MIN_PARALLEL_WORK",
    "one_blas_thread",
    "progress_printer",
    "row_slices",
    "rows_per_task",
    "run_tasks",
    "TASK_BYTES",
    "task_runs",
]

# What one task may hold in its largest temporaries (a chunk of factors, its contributions,
# its weights; the NumPy path's tiles of leave-one-out products). Small enough for the caches;
# the circular shifts' chunks are whole diagonals, a few times larger (settle_allocator).
TASK_BYTES = 2**20
# What a run of tasks (task_runs) may hold in its results until they are taken.
RUN_BYTES = 8 * TASK_BYTES
# Below this many multiply-adds a thread pool costs more than it saves.
MIN_PARALLEL_WORK = 2e7


@cache
def blas_controller():
    """threadpoolctl's controller of the loaded thread pools, found once. Each
    ``threadpool_limits`` call walks every loaded library again, from a ctypes callback in
    which a Ctrl-C cannot be raised (it printed a traceback and was lost); the command line
    builds this with Ctrl-C held back. NumPy's and SciPy's BLAS, the ones the fits call, are
    loaded with the package (scikit-learn imports scipy.linalg)."""
    return ThreadpoolController()


def one_blas_thread():
    """A context in which BLAS runs on one thread (:func:`blas_controller`)."""
    return blas_controller().limit(limits=1, user_api="blas")


def rows_per_task(n_rows, row_bytes, n_jobs=None):
    """Rows of one task: as many as fit in ``TASK_BYTES``, and at least four tasks per worker."""
    rows = max(1, TASK_BYTES // max(1, row_bytes))
    workers = effective_n_jobs(n_jobs)
    if workers > 1:  # a few tasks per worker to balance the load
        rows = min(rows, max(1, -(-n_rows // (4 * workers))))
    return rows


def task_runs(tasks, result_bytes, n_jobs=None):
    """``tasks`` cut into runs of consecutive ones, each run one task of :func:`run_tasks`:
    one task a run on one worker; on several, runs of up to ``RUN_BYTES`` of results and at
    least four runs per worker. For tasks too short to hand to a thread one by one (a
    thread pool's hand-over took 0.03-0.04 ms under the GIL against 0.3 ms for a chunk of
    the ANOVA game's row sums at n = 2000); the caller takes a run's results in order."""
    workers = effective_n_jobs(n_jobs)
    per_run = 1
    if workers > 1:
        per_run = max(1, min(RUN_BYTES // max(1, result_bytes), len(tasks) // (4 * workers)))
    return [tasks[i : i + per_run] for i in range(0, len(tasks), per_run)]


def row_slices(n_rows, row_bytes, chunk_size=None, n_jobs=None):
    """Slices of ``chunk_size`` rows, or by default as many as :func:`rows_per_task` gives."""
    if chunk_size is not None:
        if not isinstance(chunk_size, Integral) or isinstance(chunk_size, bool) or chunk_size < 1:
            raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}.")
        rows = int(chunk_size)
    else:
        rows = rows_per_task(n_rows, row_bytes, n_jobs)
    return [slice(s, s + rows) for s in range(0, n_rows, rows)]


@cache
def settle_allocator():
    """Free one 24 MB array, once per process, so that the tasks' temporaries of a few MB
    are reused rather than returned to the system and faulted in again for every task.

    glibc's malloc serves blocks above its mmap threshold (128 kB at first) by mmap and
    trims its heap when more than twice that is free at its top; freeing a mapped block of
    up to 32 MB raises the threshold to its size (mallopt(3), "dynamic mmap threshold").
    Any process that once freed such an array is in that state; a fresh one is not, and
    there a tested fit at n = 2000 (the shifts' chunks of 2 MB) took 3.0 s, half of it in
    865,000 page faults, against 1.3 s after this. Elsewhere an untouched np.empty costs
    nothing."""
    np.empty(3 << 20)


def run_tasks(function, tasks, n_jobs=None, *, work=None):
    """``function(task)`` for every task, yielded in order as they finish.

    The tasks run in this thread when there is one worker, or when ``work`` (multiply-adds
    in all) is too small to share. Otherwise they run on threads (the kernels release the
    GIL): on a pool of this process's own under joblib's default backend, threading or a
    process backend, and through :mod:`joblib` under any other backend, so that
    ``joblib.parallel_config(backend="dask")`` moves the work to a cluster. Results are
    yielded one at a time, so that callers sum them without holding them all. ``tasks`` is
    a sequence (a ``range`` is not expanded into a list).
    """
    settle_allocator()
    tasks = tasks if hasattr(tasks, "__len__") else list(tasks)
    if len(tasks) <= 1 or (work is not None and work < MIN_PARALLEL_WORK):
        return map(function, tasks)
    workers = effective_n_jobs(n_jobs)
    if type(_active_backend()).__name__ in _THREADED_HERE:
        # joblib's threading backend starts a pool per call: 11-12 ms each on this project's
        # machine, against 3 ms for a fresh executor over 306 tasks. Process pools are
        # replaced by threads too: inside parallel_backend("loky") (as a grid search wraps
        # its folds) each chunk would become a process task that imports the package and
        # loads the compiled kernels again (47 s against 3.2 s measured).
        return map(function, tasks) if workers == 1 else _in_threads(function, tasks, workers)
    return Parallel(n_jobs=n_jobs, prefer="threads", return_as="generator")(
        delayed(function)(task) for task in tasks
    )


# The backends whose tasks run on threads of this process (_in_threads).
_THREADED_HERE = {"LokyBackend", "MultiprocessingBackend", "ThreadingBackend"}


def _in_threads(function, tasks, workers):
    """``function(task)`` for every task on ``workers`` threads, this one among them, yielded
    in order. Each thread takes the next task itself, at most ``2 * workers`` ahead of the
    one yielded next (as joblib's pre-dispatch), and the tasks not started are dropped when
    the caller stops or a task fails.

    The caller works rather than hands tasks out: with a pool of ``workers`` threads and
    this one waiting on each result in turn, a pass over the ANOVA game's row sums at
    n = 2000 (343 tasks) took 0.064-0.065 s on two cores against 0.048-0.053 s with every
    thread taking its own (0.083-0.097 s on one), and the gap grew with the number of
    tasks."""
    limit = 2 * workers
    state = threading.Condition()
    results, failed = {}, []
    taken = 0  # tasks handed out (the next one's index)
    yielded = 0  # results given to the caller
    stopped = False

    def take():
        """The index of the next task, or None when none may start now (under ``state``)."""
        nonlocal taken
        if stopped or failed or taken == len(tasks) or taken - yielded >= limit:
            return None
        taken += 1
        return taken - 1

    def run(index):
        try:
            result = function(tasks[index])
        except BaseException as error:  # raised in the caller, where the task is due
            with state:
                failed.append(index)
                results[index] = error
                state.notify_all()
            return
        with state:
            results[index] = result
            state.notify_all()

    def helper():
        while True:
            with state:
                index = take()
                while index is None:
                    if stopped or failed or taken == len(tasks):
                        return
                    state.wait()
                    index = take()
            run(index)

    helpers = [threading.Thread(target=helper, daemon=True) for _ in range(workers - 1)]
    for thread in helpers:
        thread.start()
    try:
        for index in range(len(tasks)):
            while True:
                with state:
                    if index in results:
                        result = results.pop(index)
                        yielded += 1
                        state.notify_all()
                        break
                    own = take()
                    if own is None:
                        state.wait()
                        continue
                run(own)
            if index in failed:
                raise result
            yield result
    finally:
        with state:
            stopped = True
            state.notify_all()
        for thread in helpers:
            thread.join()


def beside(function, n_jobs, *args, **kwargs):
    """``function(*args, **kwargs, n_jobs=...)`` beside the caller's own work: on a thread of
    its own (and one worker inside) when ``n_jobs`` gives two or more, else in the caller's
    thread when its result is first asked for. Returns a function that waits for the
    result (computed once, however often it is asked for).

    For a sequential piece of a fit that would leave the second core idle (the alignment,
    the ridge's eigendecomposition) while an independent one (a game's values) runs. The
    returned function's ``pending()`` is True while the result is being computed on its
    thread, so that the caller can do work of its own instead of waiting (never in the
    caller's thread: there, asking computes it); its ``then(function, *args, **kwargs)``
    queues more work on the same thread, after this, and returns its result function
    alike.
    """
    if effective_n_jobs(n_jobs) < 2:
        return _deferred(partial(function, *args, **kwargs, n_jobs=n_jobs), n_jobs)
    return _queued(ThreadPoolExecutor(1), function, args, kwargs)


def _deferred(call, n_jobs):
    result = cache(call)
    result.pending = lambda: False
    result.then = lambda function, *args, **kwargs: _deferred(
        partial(function, *args, **kwargs, n_jobs=n_jobs), n_jobs
    )
    return result


def _queued(executor, function, args, kwargs):
    # The executor's thread ends once nothing refers to the executor (the result functions
    # hold it, for ``then``).
    task = executor.submit(function, *args, **kwargs, n_jobs=1)

    def result():
        return task.result()

    result.pending = lambda: not task.done()
    result.then = lambda function, *args, **kwargs: _queued(executor, function, args, kwargs)
    return result


def _active_backend():
    from joblib.parallel import get_active_backend

    return get_active_backend()[0]


def progress_printer(name, verbose):
    """A ``progress(done, total)`` callback showing a progress bar on stderr, or None when
    ``verbose`` is 0.

    The bar is tqdm's when tqdm can be imported (with the time left), else a line rewritten
    at most every two seconds with the same estimate. Callers report ``progress(0, total)``
    before the first task, so the bar appears as soon as the work starts, and call
    ``progress.close()`` when the work stops early.
    """
    if not verbose:
        return None
    try:
        import tqdm  # noqa: F401
    except ImportError:
        return _ProgressLine(name)
    return _ProgressBar(name)


class _ProgressBar:
    """tqdm's bar, opened at ``progress(0, total)`` and closed when the work is done or
    interrupted (``close``), so that a message after an interruption starts on its own line."""

    def __init__(self, name):
        self.name, self.bar = name, None

    def __call__(self, done, total):
        from tqdm.auto import tqdm  # a widget in a notebook, the text bar in a terminal

        if self.bar is None or self.bar.total != total:
            self.close()
            self.bar = tqdm(
                total=total,
                desc=self.name,
                unit="chunk",
                file=sys.stderr,
                mininterval=0.5,
                smoothing=0.05,
            )
        self.bar.update(done - self.bar.n)
        if done == total:
            self.close()

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class _ProgressLine:
    """The progress line without tqdm: done/total, time spent and an estimate of the rest."""

    interval = 2.0

    def __init__(self, name):
        self.name = name
        self.start = self.shown = None
        self.pending = False  # a line without its newline is on the terminal

    def close(self):
        if self.pending:
            print(file=sys.stderr, flush=True)
            self.pending = False

    def __call__(self, done, total):
        now = time.monotonic()
        if done == 0 or self.start is None:
            self.start, self.shown = now, None
        if done not in (0, total) and self.shown is not None and now - self.shown < self.interval:
            return
        self.shown = now
        elapsed = now - self.start
        left = (
            f", about {_duration(elapsed * (total - done) / done)} left" if 0 < done < total else ""
        )
        end = "\n" if done == total or not sys.stderr.isatty() else ""
        self.pending = not end
        # One write with its end: print() writes the end apart, and an interruption between
        # the two writes left the next message on the progress line.
        sys.stderr.write(
            f"\r[{self.name}] {done}/{total} chunks of pairs, {_duration(elapsed)}{left}{end}"
        )
        sys.stderr.flush()


def _duration(seconds):
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
