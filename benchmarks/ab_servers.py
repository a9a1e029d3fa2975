"""Two versions of the team server side by side, the same requests interleaved:
``python benchmarks/ab_servers.py BASE_TREE BASE_WS HEAD_TREE HEAD_WS [--requests 400] [--clients 1]``.

Each tree is a checkout with its own ``.venv`` (``git worktree add ../wt-base COMMIT`` and a venv),
each workspace a copy of one built workspace (``load.py --workspace`` builds one; copy it before the
newer code migrates it). Both servers run at once, so a busy neighbour slows both alike; requests
go in blocks of 20 to one and then the other, the order alternating. Each request is a search with a
new text (no query-vector cache hit) followed by ``info``. With ``--clients 1`` it also reports each
server's CPU per search+info pair (from /proc), the figure least moved by neighbours. A benchmark:
it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

WORDS = ("deploy retry rollback incident payments ledger cache timeout queue billing auth token rotate secret "
         "schema migration index backup restore alert pager runbook latency error budget").split()


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _start(tree: Path, ws: Path, log: Path) -> tuple[subprocess.Popen, str, str]:
    with open(log, "w") as err:
        proc = subprocess.Popen([str(tree / ".venv" / "bin" / "workbench"), "--workspace", str(ws), "server",
                                 "--port", "0", "--quiet"], stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            record = json.loads((ws / "server.json").read_text())
            if record.get("pid") == proc.pid:
                return proc, record["url"], (ws / "server.token").read_text().strip()
        except (OSError, ValueError):
            pass
        time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"the server in {tree} did not start: {log.read_text()[-2000:]}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in ("base_tree", "base_ws", "head_tree", "head_ws"):
        p.add_argument(name, type=Path)
    p.add_argument("--requests", type=int, default=400)
    p.add_argument("--clients", type=int, default=1)
    args = p.parse_args()
    sides = {"base": (args.base_tree, args.base_ws), "head": (args.head_tree, args.head_ws)}
    servers = {who: _start(tree.resolve(), ws.resolve(), ws.resolve().parent / f"ab-{who}.log")
               for who, (tree, ws) in sides.items()}
    rng = random.Random(7)
    queries = [" ".join(rng.sample(WORDS, 4)) + f" q{i}" for i in range(args.requests)]
    times = {who: {"search": [], "info": []} for who in sides}
    cpu = {who: 0.0 for who in sides}
    clients = {who: httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
               for who, (_, url, token) in servers.items()}

    def one(who: str, query: str) -> None:
        t = time.perf_counter()
        clients[who].post("/api/v1/search", json={"query": query, "k": 10}).raise_for_status()
        times[who]["search"].append(time.perf_counter() - t)
        t = time.perf_counter()
        clients[who].get("/api/v1/info").raise_for_status()
        times[who]["info"].append(time.perf_counter() - t)

    try:
        for who in sides:
            for q in ("warm one", "warm two", "warm three"):
                one(who, q)
            times[who] = {"search": [], "info": []}
        with ThreadPoolExecutor(args.clients) as pool:
            for block in range(0, len(queries), 20):
                order = list(sides) if (block // 20) % 2 == 0 else list(sides)[::-1]
                for who in order:
                    before = _cpu_s(servers[who][0].pid)
                    list(pool.map(lambda q: one(who, q), queries[block:block + 20]))
                    cpu[who] += _cpu_s(servers[who][0].pid) - before
    finally:
        for proc, _, _ in servers.values():
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
    out = {"clients": args.clients, "requests": args.requests, "load_average": os.getloadavg()}
    for who in sides:
        out[who] = {op: {"p50_ms": round(1000 * statistics.median(xs), 2),
                         "p90_ms": round(1000 * sorted(xs)[int(0.9 * len(xs))], 2)} for op, xs in times[who].items()}
        out[who]["server_cpu_ms_per_pair"] = round(1000 * cpu[who] / args.requests, 2)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
