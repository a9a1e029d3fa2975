"""Follow the change log: how a server replica learns what other processes wrote.

One thread per store, on a connection of its own that LISTENs on ``workbench_changes``. A
notification is only a wake-up: after each one, and at least every ``POLL_S`` seconds without one
(a lost notification, a dropped connection, a proxy that does not pass them), it reads the log by
position. The position is a transaction id, not a row number: the rows read are those of
transactions with an xid from the last position up to the current snapshot's xmin, every one of
which has ended (committed: visible now; rolled back: gone), so a transaction that took its row
early and committed late is read when it ends, never skipped. After a disconnect it reconnects and
reads from the same position.

What it reads is reported as the set of kinds changed (``generation``, ``tokens``) with the
generation then current; the store keeps the generation, and the service decides what to do
(rebuild the index behind the readers, forget cached tokens). This module does no retrieval.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

POLL_S = 1.0
CHANNEL = "workbench_changes"
_READ = ("WITH s AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS upto) "
         "SELECT s.upto::text, (SELECT value FROM meta WHERE key = 'generation'), "
         "(SELECT array_agg(DISTINCT kind) FROM changes WHERE xid >= %s::xid8 AND xid < s.upto) FROM s")
_START = "SELECT pg_snapshot_xmin(pg_current_snapshot())::text, (SELECT value FROM meta WHERE key = 'generation')"


class Follower:
    """Reads the change log from ``position`` (an xid8, as text) and calls ``report(kinds, generation)``
    after each read that found changes."""

    def __init__(self, connect: Callable, report: Callable[[set[str], int], None], *, position: str | None = None,
                 poll_s: float = POLL_S):
        self.connect, self.report, self.poll_s = connect, report, poll_s
        self.position = position
        self.stopping = threading.Event()
        self.connected = threading.Event()
        self.reads = 0
        self.thread = threading.Thread(target=self._run, name="workbench-follow", daemon=True)

    def start(self) -> "Follower":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=10)

    def _run(self) -> None:
        while not self.stopping.is_set():
            con = None
            try:
                con = self.connect()
                con.execute(f"LISTEN {CHANNEL}")
                if self.position is None:
                    upto, generation = con.execute(_START).fetchone()
                    self.position = upto
                    self.report(set(), int(generation))
                self.connected.set()
                self._catch_up(con)
                while not self.stopping.is_set():
                    for _ in con.notifies(timeout=self.poll_s, stop_after=1):
                        break
                    self._catch_up(con)
            except Exception:  # noqa: BLE001 - the database went away: wait, reconnect, read from the position
                self.connected.clear()
                self.stopping.wait(min(self.poll_s, 1.0))
            finally:
                if con is not None:
                    try:
                        con.close()
                    except Exception:  # noqa: BLE001 - already broken
                        pass

    def _catch_up(self, con) -> None:
        upto, generation, kinds = con.execute(_READ, [self.position]).fetchone()
        self.reads += 1
        if kinds:
            self.report(set(kinds), int(generation))
        self.position = upto


def wait_until(predicate: Callable[[], bool], timeout: float, step: float = 0.01) -> bool:
    """Poll ``predicate`` until it holds or ``timeout`` seconds pass (tests and the server's start)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()
