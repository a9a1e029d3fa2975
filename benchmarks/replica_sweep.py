"""Throughput of 1 and N replicas, side by side: ``python benchmarks/replica_sweep.py [--fragments 10000]
[--replicas 2] [--rates 20,40,60,80,100,120] [--seconds 20]``.

For each rate (agent requests per second in all, Poisson), ``load.py`` runs against the same
PostgreSQL workspace with 1 replica and then with ``--replicas`` (``server --workers N``), in
turn (so both meet the same machine), and records the achieved throughput and search p95. The
figure reported is, per replica count, the highest throughput whose search p95 stayed within
``--p95-ms`` (50), and its ratio. Past the first rate at which both exceed it, it stops. A
benchmark: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def one(args, replicas: int, rate: float) -> dict:
    cmd = [sys.executable, str(HERE / "load.py"), "--fragments", str(args.fragments), "--store", args.store,
           "--workspace", args.workspace, "--replicas", str(replicas), "--rate", str(rate), "--seconds",
           str(args.seconds), "--curator-pause", "10", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"load.py failed: {out.stderr[-2000:]}")
    r = json.loads(out.stdout[out.stdout.index("{"):])
    search = r["operations"].get("search", {})
    return {"replicas": replicas, "rate": rate, "throughput": r["throughput_per_s"], "search_p95": search.get("p95"),
            "search_p50": search.get("p50"), "errors": r["errors"], "lost": r["lost_updates"],
            "server_cores": r.get("server_cores_used"), "postgres_cores": r.get("postgres_cores_used"),
            "generator_cores": r.get("load_generator_cores_used"), "load_average": r.get("load_average")}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fragments", type=int, default=10000)
    p.add_argument("--replicas", type=int, default=2)
    p.add_argument("--rates", default="20,40,60,80,100,120,150")
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--p95-ms", type=float, default=50)
    p.add_argument("--store", default="local")
    p.add_argument("--workspace", default=str(Path.home() / ".cache" / "workbench" / "sweep" / "ws"))
    args = p.parse_args()
    runs, best = [], {1: 0.0, args.replicas: 0.0}
    for rate in (float(x) for x in args.rates.split(",")):
        over = 0
        for replicas in (1, args.replicas):
            r = one(args, replicas, rate)
            runs.append(r)
            print(json.dumps(r), flush=True)
            if r["search_p95"] is not None and r["search_p95"] <= args.p95_ms and not r["errors"]:
                best[replicas] = max(best[replicas], r["throughput"])
            else:
                over += 1
        if over == 2:
            break
    ratio = round(best[args.replicas] / best[1], 2) if best[1] else None
    print(json.dumps({"best_throughput_within_p95": best, "ratio": ratio, "p95_ms": args.p95_ms,
                      "fragments": args.fragments}))


if __name__ == "__main__":
    main()
