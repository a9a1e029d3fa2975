"""Ingest throughput at scale: ``python benchmarks/ingest_scale.py --n 100000 [--json]``.

Why it exists: issue 13 asks for >= 1,000 fragments/s at 100k fragments, embedding excluded,
and an earlier whole-benchmark run measured 253/s. This script measures only ingest, so a
change to ingest can be judged on its own, and says where the time goes.

What it does: synthesises N fragment files with ``synthesize`` from ``bench.py`` (loaded by
path, as ``workbench bench`` loads it), creates a workspace with bench.py's config
(``Workbench.init`` on a folder holding that ``workbench.yaml``), then times

1. ``Workbench.ingest`` of all N files in one call (actor ``curator``, as bench.py does);
2. a second ``Workbench.ingest`` of the same folder after 1% of the files were changed
   (a sentence appended to the body), so 99% are unchanged.

Each ingest reports fragments/s (files given / wall time), the process's CPU time (user +
system: what a busy shared machine changes least), the time per phase (measured by
wrapping the functions ingest calls: reading and validating files, planning, writing,
near-duplicate detection), and the process's peak RSS. Embedding is excluded by design:
ingest does not embed (the script checks that no embedding model was loaded and no vector
was stored). It is a benchmark, not a test: it asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import resource
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent


def _bench() -> ModuleType:
    """benchmarks/bench.py, loaded by path (it has no package), once."""
    key = "workbench_benchmarks_bench_for_ingest_scale"  # not the name `workbench bench` (or a test's stand-in) uses
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, HERE / "bench.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


class Phases:
    """Wall time spent inside named functions, each second counted once: time in a wrapped
    function called from another wrapped one is its own phase's, not the caller's."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self._stack: list[list] = []          # [phase name, when it last started counting]
        self._undo: list[tuple[Any, str, Any]] = []

    def wrap(self, owner: Any, attr: str, name: str) -> None:
        original = getattr(owner, attr, None)
        if original is None:  # a function renamed or removed: the phase is simply not reported
            return

        @functools.wraps(original)
        def timed(*args, **kwargs):
            now = time.perf_counter()
            if self._stack:
                outer = self._stack[-1]
                self.seconds[outer[0]] += now - outer[1]
            self._stack.append([name, now])
            try:
                return original(*args, **kwargs)
            finally:
                now = time.perf_counter()
                inner = self._stack.pop()
                self.seconds[inner[0]] += now - inner[1]
                if self._stack:
                    self._stack[-1][1] = now

        self._undo.append((owner, attr, original))
        setattr(owner, attr, timed)

    def take(self, total: float) -> dict[str, float]:
        out = {k: round(v, 3) for k, v in self.seconds.items()}
        out["other"] = round(total - sum(self.seconds.values()), 3)
        self.seconds.clear()
        return out

    def restore(self) -> None:
        for owner, attr, original in reversed(self._undo):
            setattr(owner, attr, original)
        self._undo.clear()


def instrument() -> Phases:
    from workbench.ingest import importer
    from workbench.retrieval import manager
    from workbench.service import curation, ingest
    from workbench.store import store

    phases = Phases()
    phases.wrap(importer, "read_files", "read_validate")              # parse, schema, secrets, semantics
    phases.wrap(store.Store, "hashes", "load_state")
    phases.wrap(store.Store, "ingested_files", "load_state")
    phases.wrap(store.Store, "fragments", "load_fragments")
    phases.wrap(importer, "plan_writes", "plan_authorize")
    phases.wrap(importer, "visible_ids", "links")
    phases.wrap(store.Store, "write_versions", "write_versions")
    phases.wrap(store.Store, "put_ingested_files", "write_files")
    phases.wrap(store.Store, "put_secret_override", "write_overrides")
    phases.wrap(curation.Curation, "dedupe", "near_duplicates")
    phases.wrap(manager.IndexManager, "simhashes", "simhashes")
    phases.wrap(ingest.Ingestion, "near_duplicate_warnings", "near_duplicates")
    return phases


def _count_calls(embedder: Any) -> dict[str, int]:
    """Count this workspace's embedder calls (load, encode, encode_query) by wrapping them on the
    instance, so a model another thread of the process loads is not counted."""
    calls = {"load": 0, "encode": 0, "encode_query": 0}
    for name in calls:
        method = getattr(embedder, name)

        def counted(*args: Any, _name: str = name, _method: Any = method, **kwargs: Any) -> Any:
            calls[_name] += 1
            return _method(*args, **kwargs)
        setattr(embedder, name, counted)
    return calls


def _rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def change_some(files: Path, ids: list[str], share: float = 0.01) -> list[str]:
    """Append a sentence to the body of every 1/share-th file; returns their ids."""
    step = max(1, round(1 / share))
    changed = ids[::step]
    for fid in changed:
        path = files / f"{fid}.md"
        path.write_text(path.read_text(encoding="utf-8").rstrip("\n") + "\n\nChanged for the ingest benchmark.\n",
                        encoding="utf-8")
    return changed


def _timed_ingest(wb, files: Path, phases: Phases) -> tuple[dict[str, Any], Any]:
    t, cpu = time.perf_counter(), time.process_time()
    report = wb.ingest([files], actor="curator")
    seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
    return {"seconds": round(seconds, 3), "cpu_s": round(cpu, 3), "phases_s": phases.take(seconds), "peak_rss_mb": _rss_mb(),
            "added": len(report.added), "updated": len(report.updated), "unchanged": len(report.unchanged),
            "errors": len(report.errors),
            "near_duplicate_warnings": sum("near-duplicate" in w["message"] for w in report.warnings)}, report


def run(n: int, *, workdir: Path | None = None, profile: str | None = None) -> dict[str, Any]:
    """Synthesise ``n`` files, ingest them, change 1%, ingest again; the figures as a dict.
    ``profile``: write cProfile stats of the first ingest to this file."""
    from workbench.service import Workbench

    bench = _bench()
    root = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="workbench-ingest-"))
    try:
        files, ws = root / "files", root / "ws"
        ws.mkdir(parents=True, exist_ok=True)
        (ws / "workbench.yaml").write_text(yaml.safe_dump(bench._config(), sort_keys=False), encoding="utf-8")
        t = time.perf_counter()
        ids = bench.synthesize(n, files)
        synth_s = time.perf_counter() - t
        rss_before = _rss_mb()
        phases = instrument()
        try:
            with Workbench.init(ws) as wb:
                embedder_calls = _count_calls(wb.embedder)
                if profile:
                    import cProfile

                    prof = cProfile.Profile()
                    prof.enable()
                first, report = _timed_ingest(wb, files, phases)
                if profile:
                    prof.disable()
                    prof.dump_stats(profile)
                if report.errors:
                    raise SystemExit(f"ingest reported errors: {report.errors[:3]}")
                changed = change_some(files, ids)
                second, report = _timed_ingest(wb, files, phases)
                if report.errors or len(report.updated) != len(changed):
                    raise SystemExit(f"re-ingest: {len(report.updated)} updated of {len(changed)} changed; "
                                     f"errors {report.errors[:3]}")
                stored_vectors = wb.store.embedding_count(wb.embedder.name)
                model_loaded = wb.index.model_loaded()  # process-wide: another thread may have loaded it
        finally:
            phases.restore()
        first["fragments_per_s"] = round(n / first["seconds"], 1)
        second["fragments_per_s"] = round(n / second["seconds"], 1)
        return {"fragments": n, "changed": len(changed), "synthesize_s": round(synth_s, 2),
                "rss_before_ingest_mb": rss_before, "initial": first, "reingest_1pct_changed": second,
                "embedding": {"model_loaded": model_loaded, "embedder_calls": dict(embedder_calls),
                              "vectors_stored": stored_vectors},
                "peak_rss_mb": _rss_mb()}
    finally:
        if workdir is None:
            shutil.rmtree(root, ignore_errors=True)


def _text(data: dict[str, Any]) -> str:
    lines = [(f"{data['fragments']} fragments (synthesised in {data['synthesize_s']} s); "
              f"embedding: model loaded {data['embedding']['model_loaded']}, "
              f"vectors stored {data['embedding']['vectors_stored']}")]
    for key, label in (("initial", "initial ingest"), ("reingest_1pct_changed", f"re-ingest, {data['changed']} changed")):
        r = data[key]
        lines.append(f"{label}: {r['seconds']} s ({r['cpu_s']} s CPU), {r['fragments_per_s']} fragments/s "
                     f"(added {r['added']}, updated {r['updated']}, unchanged {r['unchanged']}, "
                     f"near-duplicate warnings {r['near_duplicate_warnings']}), peak RSS {r['peak_rss_mb']} MB")
        for phase, seconds in sorted(r["phases_s"].items(), key=lambda kv: -kv[1]):
            lines.append(f"    {phase:<16} {seconds:8.3f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10000, help="fragments to synthesise and ingest (default 10000)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--workdir", type=Path, help="keep the files and workspace in this folder")
    parser.add_argument("--profile", help="write cProfile stats of the initial ingest to this file")
    args = parser.parse_args(argv)
    data = run(args.n, workdir=args.workdir, profile=args.profile)
    print(json.dumps(data, indent=2) if args.json else _text(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
