"""How work beside a fit's sequential chain runs (_scheduling.beside)."""

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
