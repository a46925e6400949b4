"""How work beside a fit's sequential chain runs (_scheduling.beside), how short tasks are
cut into runs (_scheduling.task_runs) and how the tasks' temporaries are allocated
(_scheduling.settle_allocator)."""

import platform
import subprocess
import sys
import threading

import pytest

from pkex_select._scheduling import beside


def _where(value, n_jobs):
    return value, n_jobs, threading.current_thread()


def test_with_two_workers_the_work_runs_on_its_own_thread_with_one_worker_inside():
    result = beside(_where, 2, "x")
    value, n_jobs, thread = result()
    assert (value, n_jobs) == ("x", 1) and thread is not threading.current_thread()


@pytest.mark.parametrize("n_jobs", [None, 1])
def test_with_one_worker_the_work_runs_here_when_its_result_is_asked_for(n_jobs):
    calls = []
    result = beside(lambda n_jobs: calls.append(threading.current_thread()) or n_jobs, n_jobs)
    assert calls == []
    assert result() == n_jobs and calls == [threading.current_thread()]
    assert result() == n_jobs and len(calls) == 1  # computed once


def test_an_error_beside_is_raised_where_the_result_is_asked_for():
    def failing(n_jobs):
        raise ValueError("no")

    result = beside(failing, 2)
    with pytest.raises(ValueError, match="no"):
        result()


def test_pending_says_whether_the_result_is_still_being_computed_beside():
    started, release = threading.Event(), threading.Event()

    def waiting(n_jobs):
        started.set()
        release.wait(10)
        return n_jobs

    result = beside(waiting, 2)
    started.wait(10)
    assert result.pending()
    release.set()
    assert result() == 1 and not result.pending()
    # In the caller's thread nothing runs elsewhere: asking computes it.
    assert not beside(waiting, 1).pending()


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_work_queued_with_then_runs_after_the_first_on_its_thread(n_jobs):
    order, release = [], threading.Event()

    def first(n_jobs):
        release.wait(10)
        order.append("first")
        return threading.current_thread()

    def second(label, n_jobs):
        order.append(label)
        return threading.current_thread(), n_jobs

    result = beside(first, n_jobs)
    queued = result.then(second, "second")
    if n_jobs == 2:
        assert queued.pending()  # behind the first, which waits
    release.set()
    thread, (queued_thread, inner_jobs) = result(), queued()
    assert order == ["first", "second"] and queued_thread is thread and not queued.pending()
    assert inner_jobs == 1 and (thread is threading.current_thread()) == (n_jobs == 1)


def test_tasks_on_threads_come_back_in_order_and_an_error_stops_the_rest():
    import time

    from pkex_select._scheduling import run_tasks

    def slow_first(task):  # the first tasks finish last
        time.sleep(0.02 * (5 - task) if task < 5 else 0)
        return task, threading.current_thread()

    results = list(run_tasks(slow_first, range(12), 2))
    assert [task for task, _ in results] == list(range(12))
    # Two threads took them, this one (which works rather than waits) and one beside.
    threads = {thread for _, thread in results}
    assert len(threads) == 2 and threading.current_thread() in threads

    started = []

    def failing(task):
        started.append(task)
        if task == 1:
            raise ValueError("task 1")
        time.sleep(0.01)
        return task

    with pytest.raises(ValueError, match="task 1"):
        list(run_tasks(failing, range(100), 2))
    assert len(started) < 10  # at most two tasks per worker ran ahead of the failed one


@pytest.mark.parametrize("n_tasks", [0, 1, 7, 100, 1001])
@pytest.mark.parametrize("result_bytes", [1, 2**20, 2**30])
@pytest.mark.parametrize("n_jobs", [1, 2, 3])
def test_task_runs_keep_every_task_in_order_within_the_memory_of_a_run(
    n_tasks, result_bytes, n_jobs
):
    from pkex_select._scheduling import RUN_BYTES, task_runs

    tasks = list(range(n_tasks))
    runs = task_runs(tasks, result_bytes, n_jobs)
    assert [task for run in runs for task in run] == tasks
    if n_jobs == 1 or result_bytes >= RUN_BYTES:
        assert all(len(run) == 1 for run in runs)  # one task a run, as without runs
    else:
        assert all(len(run) * result_bytes <= RUN_BYTES for run in runs)
        assert len(runs) >= min(n_tasks, 4 * n_jobs)


def test_another_joblib_backend_gets_the_tasks():
    """Under a backend of the user's (Dask, Ray, ...), the tasks go through joblib."""
    from joblib import parallel_config, register_parallel_backend
    from joblib._parallel_backends import ThreadingBackend

    from pkex_select._scheduling import run_tasks

    calls = []

    class RecordingBackend(ThreadingBackend):  # stands for a cluster's backend
        def configure(self, *args, **kwargs):  # each Parallel call configures its backend
            calls.append(kwargs.get("n_jobs", args[0] if args else None))
            return super().configure(*args, **kwargs)

    register_parallel_backend("recording", RecordingBackend)
    with parallel_config(backend="recording", n_jobs=2):
        assert list(run_tasks(lambda task: 2 * task, range(6))) == [0, 2, 4, 6, 8, 10]
    assert calls


# Tasks' temporaries of 2 MB, allocated and freed 50 times, as the circular shifts' chunks do.
_ALLOCATIONS = """
import resource, sys
import numpy as np
if sys.argv[1] == "settled":
    from pkex_select._scheduling import settle_allocator
    settle_allocator()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(50):
    arrays = [np.ones(1 << 18) for _ in range(4)]
    del arrays
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc thresholds")
def test_a_settled_allocator_reuses_the_tasks_temporaries_instead_of_faulting_them_in():
    faults = {
        state: int(
            subprocess.run(
                [sys.executable, "-c", _ALLOCATIONS, state],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        for state in ("fresh", "settled")
    }
    # 2 MB is 512 pages: a fresh process faults most of them in again each time.
    assert faults["fresh"] > 20 * 512
    assert faults["settled"] < faults["fresh"] / 10
