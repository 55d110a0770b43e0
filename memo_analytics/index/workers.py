"""Worker processes for the work of both cores — an import's parses, a reindex's rows — that never
leave their parent waiting, and never outlive it (issue 16 point 4).

- **A worker dies with its parent** (:func:`die_with_parent`): a ``memo reindex`` or ``memo
  import`` killed by SIGKILL leaves no worker behind (a left worker would go on parsing, and
  hold the vault lock it inherited).
- **Ctrl-C stops the parent, not the workers**: the workers ignore SIGINT (their tracebacks would
  fill the terminal); the parent, interrupted, drops the queued tasks and kills its workers
  rather than waiting for every queued parse to finish (:func:`worker_processes`).
- **A worker killed while it sends a result** (the out-of-memory killer picks the largest
  process, and a worker is at its largest while it sends a large parse) leaves half a message
  in the pipe all workers send their results through: CPython's pool reads on for the rest for
  ever and never reports the pool broken, so its caller, and the interpreter's exit, would wait
  for ever too. :func:`wait_for` notices a dead worker the pool has not reported within
  :data:`STUCK_AFTER_SECONDS` and ends the pool — its workers killed and the parent's end of
  that pipe closed, so the pool reads the end of the pipe, and fails every pending task with
  ``BrokenProcessPool`` — and the caller goes on without it, as after any worker's death.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as WaitedTooLong
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from multiprocessing import get_context
from typing import Any, Callable, ContextManager, Iterator

_PR_SET_PDEATHSIG = 1
#: How often (s) a worker checks that the process that started it still runs.
WATCHDOG_INTERVAL_S = 0.5
#: How long (s) a worker may lie dead without its pool reporting it before the pool is ended.
#: The pool reports an ordinary death at once; only a death in the middle of sending waits.
STUCK_AFTER_SECONDS = 1.0
#: How often (s) a wait looks at the workers.
_POLL_SECONDS = 0.25


def die_with_parent(parent_pid: int) -> None:
    """Worker initializer: a worker ends as soon as the process that started it ends.

    On Linux the kernel sends the worker SIGKILL when its parent dies
    (``PR_SET_PDEATHSIG``, through ``prctl``); everywhere a daemon thread checks every
    :data:`WATCHDOG_INTERVAL_S` seconds that the parent is still its parent and exits
    otherwise.
    """
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # no prctl in this libc: the watchdog alone
            pass
    if os.getppid() != parent_pid:  # the parent died before the line above ran
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="memo-parent-watchdog", daemon=True).start()


def _watch_parent(parent_pid: int) -> None:
    while True:
        time.sleep(WATCHDOG_INTERVAL_S)
        if os.getppid() != parent_pid:
            os._exit(1)


def _start(parent_pid: int, initializer: Callable[..., None] | None, initargs: tuple) -> None:
    die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    if initializer is not None:
        initializer(*initargs)


@contextmanager
def worker_processes(workers: int, initializer: Callable[..., None] | None = None,
                     initargs: tuple = ()) -> Iterator[ProcessPoolExecutor]:
    """``workers`` processes forked now (``concurrent.futures`` pool), each started with
    ``initializer(*initargs)``, dying with this process and deaf to Ctrl-C. Wait for their
    results with :func:`wait_for`. On leaving — at the end, or on an error or Ctrl-C — the
    tasks not started are dropped and the workers killed: nothing of theirs is waited for that
    the caller did not take already."""
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=get_context("fork"), initializer=_start,
                               initargs=(os.getpid(), initializer, initargs))
    try:
        yield pool
    finally:
        _end(pool)


def wait_for(future: Future, pool: ProcessPoolExecutor, timeout: float | None = None) -> Any:
    """``future.result(timeout)`` for a task of ``pool`` that cannot wait for ever on a worker
    killed while it sent its result (module docstring): such a pool is ended, and this raises
    ``BrokenProcessPool`` as for any worker's death.

    Raises
    ------
    concurrent.futures.process.BrokenProcessPool
        A worker of ``pool`` died.
    concurrent.futures.TimeoutError
        ``timeout`` seconds passed first.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    dead_since: float | None = None
    while True:
        step = _POLL_SECONDS if deadline is None else max(0.0, min(_POLL_SECONDS, deadline - time.monotonic()))
        try:
            return future.result(timeout=step)
        except WaitedTooLong:
            if deadline is not None and time.monotonic() >= deadline:
                raise
        if _dead_unreported(pool):
            dead_since = dead_since if dead_since is not None else time.monotonic()
            if time.monotonic() - dead_since >= STUCK_AFTER_SECONDS:
                _kill(pool)  # the pool reads the end of its pipe: the future fails, the next turn raises
        else:
            dead_since = None


def in_order(pool: ProcessPoolExecutor, fn: Callable[..., Any], tasks: list[tuple],
             idle: Callable[[], ContextManager] | None = None, idle_after: float = 0.0) -> Iterator[Any]:
    """``fn(*task)`` for each of ``tasks``, in order: every task is queued on ``pool`` now, and
    the results are waited for one by one (:func:`wait_for`); once a worker has died, the tasks
    not done yet run in this process. With ``idle``, a wait longer than ``idle_after`` seconds
    goes on inside ``idle()`` (an import leaves the vault lock free meanwhile)."""
    futures = [pool.submit(fn, *task) for task in tasks]
    return _collected(pool, fn, tasks, futures, idle, idle_after)


def _collected(pool: ProcessPoolExecutor, fn: Callable[..., Any], tasks: list[tuple], futures: list[Future],
               idle: Callable[[], ContextManager] | None, idle_after: float) -> Iterator[Any]:
    done = 0
    try:
        for future in futures:
            if idle is None:
                value = wait_for(future, pool)
            else:
                try:
                    value = wait_for(future, pool, idle_after)
                except WaitedTooLong:
                    with idle():
                        value = wait_for(future, pool)
            done += 1
            yield value
    except BrokenProcessPool:  # a worker was killed (out of memory?): the rest is done here
        for task in tasks[done:]:
            yield fn(*task)


def _dead_unreported(pool: ProcessPoolExecutor) -> bool:
    processes = getattr(pool, "_processes", None) or {}
    return not getattr(pool, "_broken", False) and any(p.exitcode is not None for p in list(processes.values()))


def _kill(pool: ProcessPoolExecutor) -> None:
    """Kill every worker of ``pool`` and close this process's end of the pipe they send results
    through: the pool's reader, even in the middle of a message, reads the end of the pipe."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        if process.exitcode is None:
            process.kill()
    writer = getattr(getattr(pool, "_result_queue", None), "_writer", None)
    if writer is not None and not writer.closed:
        writer.close()


def _end(pool: ProcessPoolExecutor) -> None:
    """Drop ``pool``'s tasks not started and kill its workers (before the shutdown, which lets go
    of them): whatever they still do, nobody waits for."""
    thread = getattr(pool, "_executor_manager_thread", None)
    if thread is not None:  # a task was submitted: the workers run
        _kill(pool)
    pool.shutdown(wait=False, cancel_futures=True)
    if thread is not None:
        thread.join()
