"""Committing traces off a search's hot path (store/retrieval.py's ``put_trace`` uses both).

In the team server (a shared store) ``_TraceWriter`` commits queued traces on a thread of its own,
many per transaction. Elsewhere (one process holding the workspace: the CLI, the TUI, MCP, a
notebook) a store queues its traces in memory and commits them in one transaction at the points
``RetrievalQueries.put_trace`` lists (at most ``TRACE_DEFER_MAX`` traces or ``TRACE_DEFER_S``
behind, and always before a read of traces, a write, ``release``, ``close`` and the interpreter's
exit). The SQL is the traces table's one INSERT, shared by both stores.
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref

_INSERT_TRACE = "INSERT INTO traces VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
TRACE_DEFER_MAX = 32   # traces queued outside the team server before one commit stores them (see put_trace)
TRACE_DEFER_S = 1.0    # ... or a trace put this long after the first queued one commits them all
_deferred_lock = threading.Lock()
_WITH_DEFERRED: "weakref.WeakSet" = weakref.WeakSet()  # stores holding queued traces, for the exit hook


@atexit.register
def _commit_at_exit() -> None:
    """The interpreter exits with a workspace still open: its queued traces are committed."""
    for store in list(_WITH_DEFERRED):
        try:
            store.commit_deferred_traces()
        except Exception:  # noqa: BLE001 - the file may be gone or closed: nothing more to do at exit
            pass


class DeferredTraces:
    """The queue of a store's traces outside the team server (mixed into the stores' queries;
    the host provides ``transaction``, ``_many`` and ``_depth``)."""

    # Outside the team server a search's trace is not committed on its own (an autocommit INSERT:
    # one WAL fsync, ~4 ms of a ~7 ms search). It is queued in this process and committed, many in
    # one transaction, at the first of: TRACE_DEFER_MAX queued; a trace put TRACE_DEFER_S after the
    # first queued one; any read of traces (``trace``, counts, usage, purge: all settle first);
    # the next write transaction (committed just before it); ``release`` (a face letting go of the
    # file); ``flush_traces``; ``close``; and the interpreter's exit. A trace is readable the moment
    # its search returns; a process killed outright loses at most the queued ones (< 1 s, < 32).
    _deferred: list

    def commit_deferred_traces(self) -> int:
        """Commit the traces queued in this process now (one transaction); how many."""
        with _deferred_lock:
            rows = self.__dict__.get("_deferred") or []
            self._deferred = []
            _WITH_DEFERRED.discard(self)
        if not rows:
            return 0
        try:
            with self.transaction("store traces"):
                self._many(_INSERT_TRACE, rows)
        except BaseException:
            with _deferred_lock:  # kept for the next try (close tries once more)
                self._deferred = rows + self._deferred
                self._deferred_since = time.monotonic()
                _WITH_DEFERRED.add(self)
            raise
        return len(rows)

    def deferred_trace(self, trace_id: str) -> list | None:
        with _deferred_lock:
            for row in self.__dict__.get("_deferred") or ():
                if row[0] == trace_id:
                    return row
        return None

    def defer_trace(self, row: list) -> None:
        """Queue a trace row; commit the queue when it is full or its first row is old enough."""
        with _deferred_lock:
            queued = self.__dict__.setdefault("_deferred", [])
            queued.append(row)
            if len(queued) == 1:
                self._deferred_since = time.monotonic()
                _WITH_DEFERRED.add(self)
            due = len(queued) >= TRACE_DEFER_MAX or time.monotonic() - self._deferred_since >= TRACE_DEFER_S
        if due:
            self.commit_deferred_traces()
