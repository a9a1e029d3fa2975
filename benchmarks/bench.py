"""`workbench bench`: a latency benchmark on a synthetic workspace of realistic fragments.

Fragments are recombined from the sample corpus (titles, bodies, identifiers perturbed)
across 4 orgs × 5 repos × 3 personas, with two years of dates and real links. Vectors
are made from real MiniLM embeddings of the sample corpus's sections (mean of a
fragment's sections, renormalised) so a 100k workspace builds in minutes; latency does
not depend on the vector values. Queries are the golden queries, embedded for real: the
headline times new questions (the query-vector cache emptied before each timed call; the warm-up
asks reworded texts, never the timed ones), and the cache-hit path (the same texts asked again)
is reported apart, as ``cached_search_ms``.

It measures our path (bm25s + numpy exact dense) and, in the same run, the
DuckDB-native path (FTS + exact SQL cosine scan) through the same pipeline, and reports
p50/p95 per stage, end to end, ingest throughput, re-ingest and rebuild times, and
peak memory. Also, per embedder backend (onnx, torch), query embedding p50/p95 and the
corpus embedding rate (embedding.py); the cold CLI, `workbench search` as a fresh process
on the sample workspace and on the synthetic one (cold.py); and the TUI's first paint.
With ``busy`` > 0 every latency figure is measured a second time with that many busy-loop
processes running (busy.py), reported under ``"busy"``.

It lives in the checkout, not in the package: it reads ``sample_corpus/`` next to this folder,
runs ``firstpaint.py`` from this folder as a script, and keeps its benchmark-only SQL in
``bench_sql.py`` (and its other parts in busy.py, cold.py and embedding.py). `workbench bench`
loads this file by path (``importlib.util.spec_from_file_location``) and calls ``run``, so it
imports ``workbench`` as an installed package and its siblings by path, never relatively.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import re
import resource
import shutil
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import numpy as np
import yaml

ORGS, REPOS, PERSONAS = 4, 5, 3
HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parent / "sample_corpus"
FIRSTPAINT = HERE / "firstpaint.py"


def _sibling(name: str) -> ModuleType:
    """Load ``HERE/name.py`` by path (this file is loaded by path too, so it has no package)."""
    key = f"workbench_benchmarks_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, HERE / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


def _pct(values: list[float]) -> dict[str, float]:
    arr = np.asarray(values, dtype=np.float64)
    return {"p50": round(float(np.percentile(arr, 50)), 3), "p95": round(float(np.percentile(arr, 95)), 3)}


def _config() -> dict[str, Any]:
    orgs = [{"name": f"org{o}", "repos": [f"repo{r}" for r in range(REPOS)],
             "personas": [f"persona{p}" for p in range(PERSONAS)]} for o in range(ORGS)]
    principals = [{"name": f"lead{o}", "orgs": [f"org{o}"], "repos": [f"org{o}/*"], "personas": [f"org{o}/*"],
                   "lead_of": [f"org=org{o}"]} for o in range(ORGS)]
    principals.append({"name": "agent", "kind": "agent", "orgs": ["org0"], "repos": ["org0/repo0", "org0/repo1"],
                       "personas": ["org0/persona0"]})
    # the sync service that ingests the corpus: a service writes only within its grants
    principals.append({"name": "curator", "kind": "service", "orgs": [f"org{o}" for o in range(ORGS)],
                       "repos": [f"org{o}/*" for o in range(ORGS)], "personas": [f"org{o}/*" for o in range(ORGS)],
                       "writes": [f"org=org{o}" for o in range(ORGS)]})
    return {"name": "bench", "default_principal": "lead0", "orgs": orgs, "principals": principals}


def synthesize(n: int, out: Path, seed: int = 7) -> list[str]:
    """Write ``n`` fragment files under ``out``; returns their ids."""
    from workbench.ingest.files import parse_fragment, render
    from workbench.models import Content, Scope

    rng = random.Random(seed)
    templates = [parse_fragment(p.read_text(encoding="utf-8"), file=str(p))
                 for p in sorted((SAMPLE / "fragments").rglob("*.md"))]
    templates = [t for t in templates if t.content.status == "active"]
    ids = [f"bench-{i:06d}" for i in range(n)]
    start = datetime(2024, 12, 1)
    digits = re.compile(r"\d{3,4}")
    out.mkdir(parents=True, exist_ok=True)
    for i, fid in enumerate(ids):
        t = templates[i % len(templates)]
        other = templates[rng.randrange(len(templates))]
        org = f"org{i % ORGS}"
        roll = rng.random()
        scope = Scope(org, repo=f"repo{rng.randrange(REPOS)}" if roll < 0.6 else None,
                      persona=f"persona{rng.randrange(PERSONAS)}" if 0.45 < roll < 0.75 else None)
        paragraph = other.content.body.split("\n\n")[rng.randrange(max(1, other.content.body.count("\n\n") + 1))]
        body = digits.sub(lambda m: str(rng.randrange(10 ** (len(m.group(0)) - 1), 10 ** len(m.group(0)))),
                          t.content.body) + "\n\n" + paragraph
        links = tuple(ids[j] for j in {rng.randrange(n) for _ in range(rng.randrange(4))} if j != i)
        details = t.content.details
        content = Content(kind=t.content.kind, title=f"{t.content.title} ({scope.repo or org} #{i})", body=body,
                          scope=scope, owner=f"lead{i % ORGS}", tags=t.content.tags, links=links,
                          details=details)
        updated = start + timedelta(days=rng.randrange(0, 720), minutes=rng.randrange(1440))
        (out / f"{fid}.md").write_text(render(fid, content, created=updated - timedelta(days=30), updated=updated),
                                       encoding="utf-8")
    return ids


def _section_pool(embedder, size: int = 600) -> list[np.ndarray]:
    from workbench.ingest.files import parse_fragment
    from workbench.retrieval.text import sections

    texts = []
    for path in sorted((SAMPLE / "fragments").rglob("*.md")):
        body = parse_fragment(path.read_text(encoding="utf-8"), file=str(path)).content.body
        texts.extend(s.text for s in sections(body))
    return list(embedder.encode(texts[:size]))


def seed_vectors(wb, pool: list[np.ndarray], seed: int = 7) -> None:
    """Give every indexed text a vector made from real section embeddings (see module doc)."""
    rng = np.random.default_rng(seed)
    index = wb.search_index()
    have = set(wb.store.embeddings(wb.embedder.name, None)) if index.hashes else set()
    todo = [h for h in dict.fromkeys(index.hashes) if h not in have]
    pool_arr = np.stack(pool)
    for start in range(0, len(todo), 20000):
        chunk = todo[start:start + 20000]
        picks = rng.integers(0, len(pool_arr), size=(len(chunk), 3))
        vecs = pool_arr[picks].mean(axis=1) + rng.normal(0, 0.01, size=(len(chunk), pool_arr.shape[1]))
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        wb.store.put_embeddings(wb.embedder.name, chunk, vecs.astype(np.float32))


def run(n: int, *, queries: int = 100, workdir: Path | None = None, progress: Callable[[str], None] | None = None,
        keep: bool = False, tui_runs: int = 3, idle_s: float = 10.0, busy: int = 0, cold_runs: int = 5,
        corpus_texts: int = 256, scan_rows: int = 0) -> dict[str, Any]:
    """The benchmark at ``n`` fragments (see the module docstring); ``tui_runs`` and ``idle_s`` set
    how many times the TUI probes run and how long the "open after idle" spell lasts.

    ``busy`` > 0 measures every latency figure twice, idle and then with that many busy-loop
    processes running (busy.py; they never outlive the block), and reports the second set under
    ``"busy"`` with the same keys. ``cold_runs`` timed cold `workbench search` processes per
    workspace (0 skips them); ``corpus_texts`` texts for the corpus embedding rate. ``scan_rows`` > 0
    also runs dense_scan.py (exact float32 against int8 with exact re-scoring, top 100) on that many
    synthetic vectors, in a process of its own (idle, and busy when ``busy``), under ``"dense_scan"``."""
    from workbench.service import Workbench

    say = progress or (lambda msg: None)
    busy_mod, cold, emb = _sibling("busy"), _sibling("cold"), _sibling("embedding")
    started = {"at": datetime.now().astimezone().isoformat(timespec="seconds"),
               "load_avg": [round(x, 2) for x in os.getloadavg()]}
    root = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="workbench-bench-"))
    measured: dict[str, dict[str, Any]] = {"idle": {}, "busy": {}}

    def phases(name: str, label: str, measure: Callable[[], Any]) -> None:
        """``measure()`` idle, then (with ``busy``) again under the busy loops."""
        say(label)
        measured["idle"][name] = measure()
        if busy:
            say(f"{label}, with {busy} busy process{'es' if busy > 1 else ''}")
            with busy_mod.busy(busy):
                measured["busy"][name] = measure()

    try:
        files, ws, sample = root / "files", root / "ws", root / "sample"
        ws.mkdir(parents=True, exist_ok=True)
        (ws / "workbench.yaml").write_text(yaml.safe_dump(_config(), sort_keys=False), encoding="utf-8")
        say(f"writing {n} synthetic fragment files")
        synthesize(n, files)
        golden = yaml.safe_load((SAMPLE / "golden.yaml").read_text(encoding="utf-8"))["queries"]
        texts = [q["query"] for q in golden if "paths" not in q][:queries]
        say("sample workspace (for the cold CLI and the corpus embedding rate)")
        with Workbench.init(sample, config=SAMPLE / "workbench.yaml") as swb:
            sample_report = swb.ingest([SAMPLE / "fragments"], actor="kb.sync")
            assert not sample_report.errors, sample_report.errors[:3]
            swb.warm()  # as `workbench index` (the Makefile's workspace) leaves it
            corpus = emb.corpus_texts(swb, "kb.sync", corpus_texts)  # the sync service sees it all
        with Workbench.open(ws) as wb:
            say("ingest")
            t = time.perf_counter()
            report = wb.ingest([files], actor="curator")
            ingest_s = time.perf_counter() - t
            assert not report.errors, report.errors[:3]
            t = time.perf_counter()
            wb.ingest([files], actor="curator")
            reingest_s = time.perf_counter() - t
            say("vectors")
            seed_vectors(wb, _section_pool(wb.embedder, size=min(600, max(32, n // 4))))
            t = time.perf_counter()
            index = wb.search_index()
            index.vectors()
            index.lexical("bm25s")
            index_build_s = time.perf_counter() - t
            for text in warm_up_texts(texts):  # the code paths and most hits' fragments touched once (first
                wb.search(text, principal="agent", trace=False)  # touch is ~2 ms a block at 10k), never the timed texts
            wb.search("warm up", principal="agent", lexical="duckdb-fts", dense="duckdb", trace=False)
            phases("ours", "queries (new texts: the query-vector cache emptied before each)",
                   lambda: _measure(wb, texts, lexical="bm25s", dense="numpy"))
            phases("ours_cached", "queries again, their vectors cached (the cache-hit path)",
                   lambda: _measure(wb, texts, lexical="bm25s", dense="numpy", cached=True))
            phases("base", "baseline (DuckDB FTS + exact SQL scan; new texts too)",
                   lambda: _measure(wb, texts, lexical="duckdb-fts", dense="duckdb"))
            say("one edit, one rebuild")
            first = wb.list(principal="lead0")[0]
            marker = "zebrafinch quokka"  # words no other fragment has: the edit is what a search finds
            wb.edit(first.id, first.body + f"\n\nEdited for the benchmark: {marker}.", reason="bench", actor="lead0")
            t = time.perf_counter()
            rebuilt = wb.search_index()
            rebuild_index_ms = (time.perf_counter() - t) * 1000
            t = time.perf_counter()
            rebuilt.lexical("bm25s")
            lexical_rebuild_ms = (time.perf_counter() - t) * 1000
            second = wb.list(principal="lead0")[1]
            wb.edit(second.id, second.body + f"\n\nEdited again: {marker} wombat.", reason="bench", actor="lead0")
            t = time.perf_counter()  # from the edit's commit to a search (of the default pipeline) that finds it
            found = wb.search(f"{marker} wombat", principal="lead0", trace=False)
            edit_visible_ms = (time.perf_counter() - t) * 1000
            if not found.hits or found.hits[0].id != second.id:
                raise RuntimeError(f"the edited fragment {second.id} was not found first after the edit")
            dense_paths = dense_comparison(rebuilt, wb, n)
            wb.warm()  # as `workbench index` leaves it (and the TUI, once its model has loaded)
            backend = getattr(wb.embedder, "backend", "torch")
            peak_rss_mb = _peak_rss_mb()  # before this process loads the other backend too
            made = emb.embedders()
            phases("query_embed_ms", "query embedding per backend", lambda: emb.query_embedding(made, texts))
            say(f"corpus embedding per backend ({len(corpus)} texts)")
            corpus_rate = emb.corpus_rate(made, corpus)
            agreement = emb.agreement(made, texts)
        phases("tui_first_paint_s", "TUI first paint", lambda: _tui(ws, texts[0], first.id, tui_runs, idle_s, say))
        if cold_runs:
            phases("cold_cli", f"cold CLI: {cold_runs} fresh `workbench search` processes per workspace",
                   lambda: _cold(cold, sample, ws, cold_runs, backend))
        phases("long_lived", "a long-lived process: open, warm searches, edits, peak RSS (long_lived.py)",
               lambda: _sibling("long_lived").child(ws, len(texts)))
        figures = {phase: _figures(found) for phase, found in measured.items() if found}
        idle = figures["idle"]
        result = {
            "fragments": n, "queries": len(texts), "principal": "agent", "visible_share": idle.pop("visible_share"),
            **idle,
            "ingest_fragments_per_s": round(n / ingest_s, 1), "ingest_s": round(ingest_s, 2),
            "reingest_unchanged_s": round(reingest_s, 2), "index_build_s": round(index_build_s, 2),
            "edit_rebuild_index_ms": round(rebuild_index_ms, 1), "lexical_rebuild_ms": round(lexical_rebuild_ms, 1),
            "edit_visible_ms": round(edit_visible_ms, 1),
            "dense_paths": dense_paths, "embedder_backend": backend, "corpus_embed": corpus_rate,
            "backend_agreement_min_cosine": agreement,
            "peak_rss_mb": peak_rss_mb, "peak_rss_mb_end": _peak_rss_mb(),
            "busy_processes": busy, "busy": None,
            "machine": {"cpus": os.cpu_count(), "started_at": started["at"], "load_avg_start": started["load_avg"],
                        "load_avg_end": [round(x, 2) for x in os.getloadavg()]},
        }
        if busy:
            result["busy"] = {k: v for k, v in figures["busy"].items() if k != "visible_share"}
        if scan_rows:
            say(f"dense scan on {scan_rows:,} synthetic vectors (dense_scan.py)")
            result["dense_scan"] = dense_scan(scan_rows, busy=bool(busy))
        return result
    finally:
        if not keep and workdir is None:
            shutil.rmtree(root, ignore_errors=True)


def dense_scan(rows: int, *, busy: bool, queries: int = 50) -> dict[str, Any]:
    """dense_scan.py's figures at ``rows`` vectors, from a process of its own (its GBs of vectors
    must not count in this process's peak RSS)."""
    import subprocess

    cmd = [sys.executable, str(HERE / "dense_scan.py"), "--n", str(rows), "--queries", str(queries)]
    done = subprocess.run(cmd + (["--busy"] if busy else []), capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(done.stdout)["runs"][0]


def _peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _figures(found: dict[str, Any]) -> dict[str, Any]:
    """One phase's latency figures under the result's keys."""
    ours, base, hit = found["ours"], found["base"], found["ours_cached"]
    ours_p50, base_p50 = ours["search_ms"]["p50"], base["search_ms"]["p50"]
    out = {"visible_share": ours["visible_share"], "search_ms": ours["search_ms"], "stages_ms": ours["stages_ms"],
           "query_cache_hits": ours["query_cache_hits"],
           "cached_search_ms": hit["search_ms"], "cached_stages_ms": hit["stages_ms"],
           "cached_query_cache_hits": hit["query_cache_hits"],
           "baseline_search_ms": base["search_ms"], "baseline_stages_ms": base["stages_ms"],
           "speedup_p50": round(base_p50 / ours_p50, 2) if ours_p50 else None,
           "query_embed_ms": found["query_embed_ms"], "tui_first_paint_s": found["tui_first_paint_s"]}
    for key in ("cold_cli", "long_lived"):
        if key in found:
            out[key] = found[key]
    return out


def _tui(ws: Path, query: str, fragment_id: str, runs: int, idle_s: float, say: Callable[[str], None]) -> dict:
    paint = first_paint(ws, "lead0", runs=runs)
    say("TUI: first search after launch, open after idle, quit")
    paint["flow"] = tui_flow(ws, "lead0", query, fragment_id, runs=runs, idle_s=idle_s)
    return paint


def _cold(cold: ModuleType, sample: Path, ws: Path, runs: int, backend: str) -> dict[str, Any]:
    """Cold `workbench search` on the sample workspace (as marco.bianchi) and the synthetic one (as
    agent), with the workspace's embedder; and on the sample with torch when that is not the default."""
    out = {"sample": cold.cold_cli(sample, "marco.bianchi", runs), "synthetic": cold.cold_cli(ws, "agent", runs)}
    if backend != "torch":
        out["sample_torch"] = cold.cold_cli(sample, "marco.bianchi", runs, env={"WORKBENCH_EMBEDDER": "torch"})
    return out


def first_paint(workspace: Path, principal: str, runs: int = 3) -> dict[str, Any]:
    """Seconds from spawning `python benchmarks/firstpaint.py` to the browse screen painted
    (interpreter start and imports included); the median of ``runs``."""
    import subprocess

    times, rows = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        out = subprocess.run([sys.executable, str(FIRSTPAINT), str(workspace), principal],
                             capture_output=True, text=True, timeout=300)
        if out.returncode != 0 or "painted" not in out.stdout:
            return {"error": (out.stderr or out.stdout).strip().splitlines()[-1:]}
        times.append(time.perf_counter() - start)
        rows = int(out.stdout.split()[-1])
    return {"median_s": round(float(np.median(times)), 3), "max_s": round(max(times), 3), "rows": rows}


def tui_flow(workspace: Path, principal: str, query: str, fragment_id: str, runs: int = 3,
             idle_s: float = 10.0) -> dict[str, Any]:
    """`python benchmarks/firstpaint.py WS PRINCIPAL --full QUERY ID`, as a user would use the TUI
    (model loading in the background): seconds from spawn to the first search result, to open a
    fragment after 10 s idle, and from pressing quit to the process's end; medians of ``runs``."""
    import json
    import os
    import subprocess

    found: dict[str, list[float]] = {"first_search_s": [], "open_after_idle_s": [], "open_after_idle_settled_s": [],
                                     "quit_s": []}
    for _ in range(runs):
        env = {**os.environ, "WORKBENCH_PROBE_T0": repr(time.time()), "WORKBENCH_PROBE_IDLE_S": repr(idle_s)}
        proc = subprocess.Popen([sys.executable, str(FIRSTPAINT), str(workspace), principal,
                                 "--full", query, fragment_id], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env)
        data = None
        for line in proc.stdout:
            if line.startswith("{"):
                data = json.loads(line)
        proc.wait(timeout=300)
        ended = time.time()
        if data is None:
            return {"error": proc.stderr.read().strip().splitlines()[-1:]}
        found["first_search_s"].append(data["first_search_s"])
        found["open_after_idle_s"].append(data["open_after_idle_s"])
        found["open_after_idle_settled_s"].append(data["open_after_idle_settled_s"])
        found["quit_s"].append(ended - data["quit_at"])
    return {name: {"median": round(float(np.median(v)), 3), "max": round(max(v), 3)} for name, v in found.items()}


def warm_up_texts(texts: list[str]) -> list[str]:
    """The warm-up's questions: each timed text reworded (its words in reverse order), so the warm-up
    reads much the same fragments but never puts a timed text's vector in the cache."""
    return [" ".join(reversed(t.split())) + " ?" for t in texts]


def _measure(wb, texts: list[str], *, lexical: str, dense: str, cached: bool = False,
             principal: str = "agent") -> dict[str, Any]:
    """p50/p95 of ``Workbench.search`` per stage and end to end. The headline (``cached`` False)
    is what a new question costs: the query-vector cache is emptied before every timed call, so
    each pays its query embedding. ``cached``: the cache-hit path (an agent asking the same question
    again): each text is asked once untimed, then timed. ``query_cache_hits`` counts the timed calls
    the cache answered (0 for the headline; a test holds it to that)."""
    from workbench.retrieval.compose import compose

    totals, stages = [], {"embed": [], "lexical": [], "dense": [], "fusion": [], "compose": []}
    index = wb.search_index()
    visible = float(index.visible(wb.principal(principal)).mean()) if index.ids else 0.0
    embedder = wb.embedder
    if cached:
        for text in texts:
            wb.search(text, principal=principal, lexical=lexical, dense=dense, trace=False)
    hits_before = embedder.cache_hits
    for text in texts:
        if not cached:
            embedder.forget_queries()
        t = time.perf_counter()
        result = wb.search(text, principal=principal, lexical=lexical, dense=dense)
        totals.append((time.perf_counter() - t) * 1000)
        for name in ("embed", "lexical", "dense", "fusion"):
            stages[name].append(result.stages_ms.get(name, 0.0))
        t = time.perf_counter()
        compose([], result.hits, result.avoid, budget=3200, query=text, count=wb.index.tokens.count,
                count_many=wb.index.tokens.count_many)  # as `context` counts: memoised per workspace
        stages["compose"].append((time.perf_counter() - t) * 1000)
    return {"search_ms": _pct(totals), "stages_ms": {k: _pct(v) for k, v in stages.items()},
            "visible_share": round(visible, 3), "query_cache_hits": embedder.cache_hits - hits_before}


def dense_comparison(index, wb, n: int, k: int = 100, trials: int = 30) -> dict[str, Any]:
    """Exact numpy scan vs DuckDB exact SQL scan vs (for n <= 20000) VSS HNSW, with recall vs exact.
    The SQL paths run on a connection of their own to the workspace (see bench_sql.py)."""
    sql = _sibling("bench_sql")
    vectors = index.vectors()
    k = min(k, len(vectors) - 1)
    rng = np.random.default_rng(3)
    qs = vectors[rng.integers(0, len(vectors), size=trials)] + rng.normal(0, 0.05, size=(trials, vectors.shape[1]))
    qs = (qs / np.linalg.norm(qs, axis=1, keepdims=True)).astype(np.float32)
    out: dict[str, Any] = {}
    times, exact = [], []
    for q in qs:
        t = time.perf_counter()
        sims = vectors @ q
        top = np.argpartition(-sims, k)[:k]
        times.append((time.perf_counter() - t) * 1000)
        exact.append({index.hashes[i] for i in top})
    out["numpy_exact_ms"] = _pct(times)
    times = []
    con = sql.open_database(wb.store.path)
    try:
        for q in qs:
            t = time.perf_counter()
            sql.exact_scan_all(con, wb.embedder.name, q, k)
            times.append((time.perf_counter() - t) * 1000)
        out["duckdb_exact_ms"] = _pct(times)
        if n <= 20000:
            out["hnsw"] = sql.hnsw_probe(con, wb.embedder.name, qs, k, exact)
    finally:
        con.close()
    out["chosen"] = "numpy exact (fastest, exact, scope-filtered before top-k)"
    return out
