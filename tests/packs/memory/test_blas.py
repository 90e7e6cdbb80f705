"""The query path's one-BLAS-thread limit (``blas.py``): set and restored whatever thread asks, and never restored
under a product still running on another thread."""
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from palimpsest_memory.packs.memory.blas import single_blas_thread


def blas_threads() -> set[int]:
    return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}


def test_numpys_blas_is_found() -> None:
    assert blas_threads(), "numpy's BLAS is not visible to threadpoolctl"


def test_limits_and_restores_a_host_apps_own_setting() -> None:
    with threadpool_limits(limits=2, user_api="blas"):  # a host app's own setting, kept around the query path
        with single_blas_thread():
            assert blas_threads() == {1}
            with single_blas_thread():  # nested: the inner exit keeps the outer's limit
                pass
            assert blas_threads() == {1}
        assert blas_threads() == {2}
        with pytest.raises(ZeroDivisionError):
            with single_blas_thread():
                1 / 0
        assert blas_threads() == {2}


def test_every_long_lived_pool_thread_gets_the_limit() -> None:
    # pal serve and pal mcp run calls on a pool of threads that live on; threadpoolctl's own setter lets only the
    # first thread that set OpenBLAS's count set it again while it lives and silently ignores the others
    with ThreadPoolExecutor(2) as pool, threadpool_limits(limits=2, user_api="blas"):
        first, second = threading.Barrier(2), threading.Event()

        def inside(wait_for_second: bool) -> set[int]:
            first.wait()  # both pool threads are alive and distinct
            if wait_for_second:
                second.wait(10)
            with single_blas_thread():
                seen = blas_threads()
            if not wait_for_second:
                second.set()
            return seen

        a, b = pool.submit(inside, False), pool.submit(inside, True)
        assert a.result(10) == {1}
        assert b.result(10) == {1}  # the second thread's limit took effect too
        assert blas_threads() == {2}


def test_a_product_ending_on_one_thread_leaves_the_limit_to_one_still_running() -> None:
    with threadpool_limits(limits=2, user_api="blas"), ThreadPoolExecutor(1) as pool:
        entered, leave = threading.Event(), threading.Event()

        def long_product() -> set[int]:
            with single_blas_thread():
                entered.set()
                leave.wait(10)
                return blas_threads()

        running = pool.submit(long_product)
        assert entered.wait(10)
        with single_blas_thread():
            assert blas_threads() == {1}
        assert blas_threads() == {1}  # the other thread's product still runs: not restored under it
        leave.set()
        assert running.result(10) == {1}
        assert blas_threads() == {2}  # the last one out restored the host's setting
