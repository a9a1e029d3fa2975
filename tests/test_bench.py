"""The benchmark lives in the checkout (benchmarks/bench.py, outside the package), loaded by path
as `workbench bench` loads it; it runs end to end and reports the documented JSON (numbers are not
asserted: speed is measured in benchmarks, not in tests)."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
COLD_SH = BENCHMARKS / "cold.sh"
MARK = "workbench-bench-busy-loop"  # benchmarks/busy.py puts it in each loop's command line


def busy_loop(pid: int) -> bool:
    """Whether ``pid`` is a live (not zombie) busy loop of benchmarks/busy.py (read from /proc)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return MARK.encode() in cmdline and state != "Z"


def eventually(check, timeout: float = 10) -> bool:
    """``check()`` within ``timeout`` seconds (a process just spawned may still be in execve, with an
    empty /proc cmdline; one just killed may not be gone yet)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def busy_loops_of(parent: int) -> list[int]:
    """The live busy loops whose parent is ``parent``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == parent and busy_loop(int(entry.name)):
                found.append(int(entry.name))
    return found


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def load(name: str, folder: Path = BENCHMARKS):
    """``folder/name.py`` loaded by path, with no package and no sys.path entry (as the CLI does)."""
    spec = importlib.util.spec_from_file_location(f"test_bench_{name}", folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize("busy", [pytest.param(0, id="idle"), pytest.param(1, id="busy", marks=pytest.mark.deep)])
def test_bench_run_reports_the_documented_fields(tmp_path, monkeypatch, capsys, busy):
    """One small run, idle (make test) and with one busy process (make test-deep, twice as long): every
    figure, idle and busy, and the busy loop gone after."""
    bench = load("bench")
    busy_mod = bench._sibling("busy")
    real, started = busy_mod.busy, []

    @contextmanager
    def watched(n):
        with real(n) as pids:
            assert len(pids) == n and eventually(lambda: all(busy_loop(pid) for pid in pids))
            started.extend(pids)
            yield pids

    monkeypatch.setattr(busy_mod, "busy", watched)
    said: list[str] = []
    data = bench.run(60, queries=3, workdir=tmp_path / "bench", progress=said.append, tui_runs=1, idle_s=1.0,
                     busy=busy, cold_runs=1, corpus_texts=16)
    assert {"fragments", "search_ms", "stages_ms", "baseline_search_ms", "speedup_p50", "ingest_fragments_per_s",
            "peak_rss_mb"} <= set(data)
    assert set(data["stages_ms"]) == {"embed", "lexical", "dense", "fusion", "compose"}
    assert data["fragments"] == 60 and data["queries"] == 3 and data["search_ms"]["p50"] > 0
    dense = data["dense_paths"]
    assert dense["duckdb_exact_ms"]["p50"] > 0 and dense["hnsw"]["k"] == 59
    paint = data["tui_first_paint_s"]  # benchmarks/firstpaint.py, spawned as a script
    assert paint.get("rows", 0) > 0 and "error" not in paint["flow"], paint
    assert said[0] == "writing 60 synthetic fragment files" and "TUI first paint" in said
    # issue 13's figures: per embedder backend, the cold CLI, and all latency figures again with a busy core
    embed = data["query_embed_ms"]
    assert set(embed) == {"onnx", "torch"} and embed["torch"]["p50"] > 0, embed
    assert data["corpus_embed"]["torch"]["fragments_per_s"] > 0 and data["corpus_embed"]["torch"]["texts"] == 16
    assert data["embedder_backend"] in ("onnx", "torch") and data["peak_rss_mb_end"] >= data["peak_rss_mb"] > 0
    cold = data["cold_cli"]
    for name in ("sample", "synthetic"):
        assert "error" not in cold[name], cold[name]
        assert 0 < cold[name]["min_s"] <= cold[name]["median_s"] <= cold[name]["max_s"] and cold[name]["runs"] == 1
        assert 50 < cold[name]["peak_rss_mb"] < data["peak_rss_mb"], cold[name]  # the child's, not ours
    assert "--as marco.bianchi" in cold["sample"]["command"] and "--as agent" in cold["synthetic"]["command"]
    assert data["busy_processes"] == busy and len(started) == 7 * busy  # queries (new, cached), baseline, embedding, TUI, cold
    lived = data["long_lived"]  # benchmarks/long_lived.py's child process on the same workspace
    assert "error" not in lived, lived
    assert lived["fragments"] == 60 and lived["edit_visible_ms"]["median"] > 0 and lived["open_and_first_search_s"] > 0
    assert 50 < lived["rss_mb"]["first_search"] <= lived["peak_rss_mb"] < data["peak_rss_mb_end"]  # its own
    if busy:
        _busy_figures(data, started)
    else:
        assert data.get("busy") is None   # no busy phase asked for
    assert data["machine"]["cpus"] >= 1 and len(data["machine"]["load_avg_start"]) == 3
    json.dumps(data)  # the documented contract is JSON
    from workbench.cli.bench_command import print_result

    print_result(data)
    shown = capsys.readouterr().out
    assert "cold search (s)" in shown and "query embedding (ms)" in shown
    if busy:
        assert "busy p50" in shown
        assert "TUI first paint (1 busy)" in shown and "long-lived process (1 busy): open + first search" in shown


def _busy_figures(data, started):
    busy = data["busy"]
    assert set(busy) == {"search_ms", "stages_ms", "baseline_search_ms", "baseline_stages_ms", "speedup_p50",
                         "query_embed_ms", "tui_first_paint_s", "cold_cli", "long_lived", "query_cache_hits",
                         "cached_search_ms", "cached_stages_ms", "cached_query_cache_hits"}
    assert busy["query_cache_hits"] == 0 and busy["cached_query_cache_hits"] > 0   # new questions; then cache hits
    assert busy["search_ms"]["p50"] > 0 and busy["query_embed_ms"]["torch"]["p50"] > 0
    assert busy["cold_cli"]["sample"]["median_s"] > 0 and "error" not in busy["tui_first_paint_s"]["flow"]
    assert not [pid for pid in started if busy_loop(pid)] and not busy_loops_of(os.getpid())


def test_synthetic_fragments_are_valid_and_scoped(tmp_path):
    from workbench.ingest.files import parse_fragment

    ids = load("bench").synthesize(40, tmp_path)
    parsed = [parse_fragment((tmp_path / f"{i}.md").read_text(), file=i) for i in ids]
    assert {p.content.scope.org for p in parsed} == {"org0", "org1", "org2", "org3"}
    assert all(p.content.body for p in parsed) and len({p.content.content_hash() for p in parsed}) == 40


def test_bench_sql_scans_every_vector_and_probes_hnsw_without_keeping_it(tmp_path):
    """The benchmark's own SQL, on its own connection next to an open store (as in a run)."""
    from workbench.store import Store

    sql = load("bench_sql")
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(50, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    hashes = [f"h{i:02d}" for i in range(50)]
    store = Store(tmp_path / "wb.duckdb")
    try:
        store.put_embeddings("m", hashes, vectors)
        store.put_embeddings("other", ["x"], vectors[:1])
        con = sql.open_database(store.path)
        try:
            query = vectors[7]
            top = sql.exact_scan_all(con, "m", query, 5)
            expected = [hashes[i] for i in np.argsort(-(vectors @ query))[:5]]
            assert [h for h, _ in top] == expected and top[0] == ("h07", pytest.approx(1.0, abs=1e-5))
            exact = [set(expected)]
            probe = sql.hnsw_probe(con, "m", vectors[7:8], 5, exact)
            assert probe["k"] == 5 and probe["recall_at_k_vs_exact"] == 1.0 and probe["query_ms"]["p50"] >= 0
            assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'hnsw_probe'").fetchone()[0] == 0
        finally:
            con.close()
        assert store.embedding_count("m") == 50  # the store's own connection is untouched
    finally:
        store.close()


def test_bench_rejects_nonsense(cli):
    r = cli("bench", "--fragments", "0")
    assert r.returncode == 2 and "at least 10" in r.stderr


def test_bench_command_loads_the_benchmark_by_path(cli, tmp_path):
    """`workbench bench` loads bench.py from WORKBENCH_BENCHMARKS (default: the checkout's
    benchmarks/) and prints what its run(...) returns."""
    (tmp_path / "bench.py").write_text(
        "def run(n, *, queries=100, workdir=None, progress=None, keep=False):\n"
        "    progress('stub')\n"
        "    return {'fragments': n, 'queries': queries, 'workdir': str(workdir), 'stub': True}\n")
    r = cli("bench", "--fragments", "12", "--queries", "2", "--json", env={"WORKBENCH_BENCHMARKS": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"fragments": 12, "queries": 2, "workdir": "None", "stub": True}
    assert "stub" in r.stderr


def test_bench_command_passes_busy_and_cold_runs_on(cli, tmp_path):
    """`--busy N` and `--cold-runs R` reach run(...) (only when given: an older run() need not take
    them, as the stub above shows); out-of-range values are a one-line error."""
    (tmp_path / "bench.py").write_text(
        "def run(n, *, queries=100, workdir=None, progress=None, **options):\n"
        "    return {'options': options}\n")
    env = {"WORKBENCH_BENCHMARKS": str(tmp_path)}
    r = cli("bench", "--fragments", "12", "--busy", "2", "--cold-runs", "0", "--json", env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"options": {"busy": 2, "cold_runs": 0}}
    for bad in (["--busy", "33"], ["--busy=-1"], ["--cold-runs=-2"]):
        r = cli("bench", *bad, env=env)
        assert r.returncode == 2 and "--busy takes 0 to 32 processes" in r.stderr, (bad, r.stderr)


def test_busy_loops_spin_for_the_block_and_end_with_it_even_on_ctrl_c():
    busy = load("busy")
    with pytest.raises(KeyboardInterrupt):
        with busy.busy(2) as pids:
            assert len(set(pids)) == 2 and eventually(lambda: sorted(busy_loops_of(os.getpid())) == sorted(pids))
            deadline = time.monotonic() + 10
            while min(cpu_ticks(p) for p in pids) < 5 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert min(cpu_ticks(p) for p in pids) >= 5  # they burn CPU
            raise KeyboardInterrupt
    assert not [p for p in pids if busy_loop(p)] and not busy_loops_of(os.getpid())


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
def test_no_busy_loop_outlives_the_benchmark_process(sig):
    """Ctrl-C (the ``finally``) and kill -9 of the benchmark (the loop sees its parent gone)."""
    # a shell's background job (`cmd &`, as a CI runner may start the suite) ignores SIGINT, and a
    # child inherits that: restore the terminal's Ctrl-C behaviour first
    code = ("import importlib.util, signal, sys, time\n"
            "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
            f"spec = importlib.util.spec_from_file_location('busy', {str(BENCHMARKS / 'busy.py')!r})\n"
            "busy = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(busy)\n"
            "with busy.busy(1) as pids:\n    print(pids[0], flush=True)\n    time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    try:
        pid = int(proc.stdout.readline())
        assert eventually(lambda: busy_loop(pid))
        proc.send_signal(sig)
        proc.wait(timeout=30)
        assert eventually(lambda: not busy_loop(pid))
    finally:
        proc.kill()
        proc.wait()


def test_the_cold_timer_reports_the_child_own_usage(tmp_path):
    """Peak RSS is the command's own, not the (large) benchmark process's: a child spawned directly
    would start from its parent's RSS."""
    cold = load("cold")
    ballast = b"x" * (400 * 2**20)  # this process is big now
    small = cold.run_once([sys.executable, "-c", "pass"])
    big = cold.run_once([sys.executable, "-c", "b = b'x' * (300 * 2**20)"])
    assert len(ballast) and small["code"] == 0 and small["rss_mb"] < 150 and 300 <= big["rss_mb"] < 450
    assert 0 < small["wall_s"] < big["wall_s"] + 5 and small["cpu_s"] >= 0
    failed = cold.run_once([sys.executable, "-c", "import sys; sys.exit('no such thing')"])
    assert failed["code"] == 1 and failed["stderr"] == ["no such thing"]


def cold_sh(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    from conftest import WORKBENCH_BIN

    return subprocess.run([str(COLD_SH), *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "WORKBENCH": str(WORKBENCH_BIN), **(env or {})})


def summary(out: str) -> tuple[float, float, float]:
    line = next(x for x in out.splitlines() if x.startswith("wall s:")).split()
    assert line[2::2] == ["min", "median", "max"], line
    return float(line[3]), float(line[5]), float(line[7])


@pytest.mark.parametrize("timer", ["time", "python"])
def test_cold_sh_times_a_command_on_a_workspace(sample_workspace, timer):
    """`cold.sh 2 --workspace W -- list ...`: a command after -- replaces the search (a cheap one
    here); min <= median <= max over 2 runs, by /usr/bin/time or by Python's clock."""
    if timer == "time" and not Path("/usr/bin/time").is_file():
        pytest.skip("no /usr/bin/time here")
    r = cold_sh("2", "--workspace", str(sample_workspace), "--", "list", "--as", "marco.bianchi",
                env={"COLD_SH_TIMER": timer})
    assert r.returncode == 0, r.stderr
    lo, mid, hi = summary(r.stdout)
    assert 0 < lo <= mid <= hi and "runs: 2" in r.stdout
    assert r.stdout.splitlines()[0].endswith(f"--workspace {sample_workspace} list --as marco.bianchi")
    assert float(r.stdout.split("max RSS: ")[1].split()[0]) > 10
    assert "first run (not counted)" in r.stderr and "run 2/2" in r.stderr and "run 3/" not in r.stderr


def test_cold_sh_times_the_search_on_the_sample_workspace(sample_workspace):
    """The default command, `workbench search "customer charged twice on retry" --as marco.bianchi`."""
    r = cold_sh("2", "--workspace", str(sample_workspace))
    assert r.returncode == 0, r.stderr
    assert 'search "customer charged twice on retry" --as marco.bianchi' in r.stdout.splitlines()[0]
    lo, mid, hi = summary(r.stdout)
    assert 0 < lo <= mid <= hi and "cpu s: median" in r.stdout


def test_cold_sh_says_what_is_wrong(sample_workspace, tmp_path):
    for args, code, message in [(("0",), 2, "RUNS must be a positive whole number"),
                                (("2", "--bogus"), 2, "unexpected argument '--bogus'"),
                                (("1", "--workspace", str(tmp_path / "none")), 2, "no workspace folder"),
                                (("1", "--workspace", str(sample_workspace), "--", "--bogus"), 1,
                                 "no such option '--bogus'")]:
        r = cold_sh(*args)
        assert r.returncode == code and message in r.stderr, (args, r.stderr)


@pytest.mark.slow
def test_cold_sh_builds_the_demo_workspace_by_default():
    r = cold_sh("2")
    assert r.returncode == 0, r.stderr
    assert "building the demo workspace" in r.stderr and "--as marco.bianchi" in r.stdout
    lo, mid, hi = summary(r.stdout)
    assert 0 < lo <= mid <= hi


def test_the_dense_scan_figures_come_from_a_process_of_their_own():
    bench = load("bench")
    found = bench.dense_scan(3000, busy=False, queries=3)
    assert found["n"] == 3000 and found["queries"] == 3, found
    idle = found["idle"]
    assert idle["exact_ms"]["p50"] > 0 and idle["int8_ms"]["p50"] > 0, idle
    assert idle["int8_recall_at_100"]["min"] >= 0.99 and idle["int8_max_score_difference"] == 0.0, idle


def test_long_lived_builds_its_workspace_once_and_measures_a_fresh_process(tmp_path):
    """benchmarks/long_lived.py: builds bench.py's workspace, keeps it with --workspace and reuses it."""
    lived = load("long_lived")
    first = lived.run(40, workspace=tmp_path / "ws", queries=2)
    again = lived.run(40, workspace=tmp_path / "ws", queries=2)
    assert first["workspace"]["reused"] is False and again["workspace"] == {"reused": True}
    for data in (first, again):
        idle = data["idle"]
        assert "error" not in idle, idle
        assert idle["fragments"] == 40 and len(idle["edit_visible_ms"]["each"]) >= 1
        assert set(idle["warm_search_ms_trace_true"]) == {"p50", "p95"} and idle["peak_rss_mb"] > 50
    broken = lived.child(tmp_path / "nowhere", 2)
    assert "no workspace" in broken["error"]
