"""The team server's faults: killed with -9 in the middle of a load of edits and searches, then
restarted, every write it acknowledged is there and nothing is half-written; stopped with SIGTERM in
the middle of a write, it finishes the write (and commits every queued trace) before it exits."""

from __future__ import annotations

import http.client
import signal
import threading
import time

import pytest

from conftest import write_fragment
from server_support import start_server, stop_server

pytestmark = pytest.mark.process
EDITED = ["nw-rb-duplicate-charge", "nw-rb-refund-stuck-pending", "nw-adr-0007-idempotency-keys",
          "nw-note-postmortem-inc-2291"]


def test_kill_9_mid_load_keeps_every_acknowledged_write_whole(sample_workspace):
    running = start_server(sample_workspace)
    owner = running.owner
    acknowledged: list[tuple[str, int, str]] = []
    stop = threading.Event()
    errors: list[str] = []

    def editor(fid: str) -> None:
        n = 0
        while not stop.is_set():
            try:
                status, current, _ = running.call("GET", f"/api/v1/show?id={fid}&as=marco.bianchi", token=owner)
                if status != 200:
                    return
                n += 1
                marker = f"killmark-{fid}-{n}"
                status, body, _ = running.call("POST", "/api/v1/edit", {
                    "id": fid, "file": "-", "stdin": current["body"] + f"\n\n{marker}", "reason": f"load {n}",
                    "base": current["version"], "as": "marco.bianchi"}, token=owner)
                if status == 200:
                    acknowledged.append((fid, body["version"], marker))
                elif status != 409:
                    errors.append(f"{status} {body}")
            except (OSError, http.client.HTTPException):
                return  # the server is gone (a reply cut off by the kill is an HTTPException)

    def searcher() -> None:
        while not stop.is_set():
            try:
                running.call("POST", "/api/v1/search", {"query": "duplicate charge retry", "as": "marco.bianchi"},
                             token=owner)
            except (OSError, http.client.HTTPException):
                return

    threads = [threading.Thread(target=editor, args=(fid,)) for fid in EDITED] + \
        [threading.Thread(target=searcher) for _ in range(2)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while len(acknowledged) < 12 and time.monotonic() < deadline:
        time.sleep(0.05)
    stop_server(running, signal.SIGKILL)  # mid-load: requests are in flight
    stop.set()
    for t in threads:
        t.join(timeout=60)
    assert len(acknowledged) >= 12 and not errors, errors

    again = start_server(sample_workspace)  # the stale advert is ignored; the log is replayed
    try:
        for fid, version, marker in acknowledged:
            status, shown, _ = again.call("GET", f"/api/v1/show?id={fid}&version={version}&as=marco.bianchi",
                                          token=again.owner)
            assert status == 200 and marker in shown["body"], (fid, version)
        for fid in EDITED:
            history = again.call("GET", f"/api/v1/history?id={fid}&as=marco.bianchi", token=again.owner)[1]
            numbers = [v["version"] for v in history]
            assert numbers == list(range(1, len(numbers) + 1)), numbers  # no gap, nothing doubled
            current = again.call("GET", f"/api/v1/show?id={fid}&as=marco.bianchi", token=again.owner)[1]
            last = again.call("GET", f"/api/v1/show?id={fid}&version={numbers[-1]}&as=marco.bianchi",
                              token=again.owner)[1]
            assert current["version"] == numbers[-1] and current["body"] == last["body"]  # row and version agree
            mine = [a for a in acknowledged if a[0] == fid]
            assert numbers[-1] >= max(v for _, v, _ in mine)
        fid, version, marker = acknowledged[-1]
        found = again.call("POST", "/api/v1/search", {"query": marker, "as": "marco.bianchi", "k": 3},
                           token=again.owner)[1]
        assert fid in [h["id"] for h in found["hits"]]  # the rebuilt index serves the last acknowledged text
    finally:
        assert stop_server(again) == 0


def test_sigterm_finishes_the_write_in_flight(sample_workspace, tmp_path):
    folder = tmp_path / "many"
    for i in range(1500):
        write_fragment(folder, f"nw-bulk-{i:04d}", body=f"Bulk note {i} about invoices and ledgers.")
    running = start_server(sample_workspace)
    answer: dict = {}

    def ingest() -> None:
        answer["result"] = running.call("POST", "/api/v1/ingest", {"paths": [str(folder)], "as": "marco.bianchi"},
                                        token=running.owner)

    traced = [running.call("POST", "/api/v1/search", {"query": f"charged twice {i}", "as": "marco.bianchi"},
                           token=running.owner)[1]["trace_id"] for i in range(20)]
    worker = threading.Thread(target=ingest)
    worker.start()
    time.sleep(0.4)
    assert worker.is_alive(), "the ingest finished before SIGTERM: make it bigger"
    code = stop_server(running, signal.SIGTERM)
    worker.join(timeout=120)
    status, body, _ = answer["result"]
    assert status == 200 and body["added"] == 1500, body
    assert code == 0 and not (sample_workspace / "server.json").exists()
    from workbench import Workbench

    with Workbench.open(sample_workspace) as wb:
        assert len([f for f in wb.list(principal="marco.bianchi") if f.id.startswith("nw-bulk-")]) == 1500
        for trace_id in traced:  # traces are committed in batches by a writer thread: all of them, by the exit
            assert wb.trace(trace_id, principal="marco.bianchi")["trace_id"] == trace_id
