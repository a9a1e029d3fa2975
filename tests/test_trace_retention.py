"""Trace retention on both store backends: ``traces.retain_days`` in workbench.yaml (validated),
applied when traces are written (at most once an hour per open workspace), and ``workbench traces
purge`` (by age, one principal's, a dry run; admins and the local administrator only); ``trace last``."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from conftest import CONFIG, write_fragment

from workbench import Workbench
from workbench.errors import NotFound, ValidationError
from workbench.models import utcnow
from workbench.service import traces


def _config(base: Path, folder: Path, **traces_section) -> Path:
    raw = yaml.safe_load(base.read_text(encoding="utf-8"))
    if traces_section:
        raw["traces"] = traces_section
    out = folder / "workbench-traces.yaml"
    out.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return out


def _workspace(backend_config: Path, tmp_path: Path, **traces_section) -> Path:
    root = tmp_path / "ws"
    with Workbench.init(root, config=_config(backend_config, tmp_path, **traces_section)) as wb:
        write_fragment(tmp_path / "in", "nw-note-a", body="Retry payments with idempotency keys.")
        assert not wb.ingest([tmp_path / "in"], actor="kb.sync").errors
    return root


def _get(wb, who: str, days_ago: float) -> str:
    """A traced fetch (the MCP ``get`` tool) made ``days_ago`` days ago; its trace id."""
    return wb.fetch("nw-note-a", principal=who, now=utcnow() - timedelta(days=days_ago))[1]


def _exists(wb, trace_id: str, who: str) -> bool:
    try:
        wb.trace(trace_id, principal=who)
    except NotFound:
        return False
    return True


def test_retain_days_removes_old_traces_as_traces_are_written(backend_config, tmp_path):
    root = _workspace(backend_config, tmp_path, retain_days=30)
    with Workbench.open(root) as wb:
        wb.ws.traces_expired_at = time.monotonic()  # as if just applied: the next writes leave old traces be
        old, older = _get(wb, "marco.bianchi", 45), _get(wb, "dan.kowalski", 400)
        recent = _get(wb, "marco.bianchi", 29)
        assert all(_exists(wb, t, w) for t, w in ((old, "marco.bianchi"), (older, "dan.kowalski"),
                                                 (recent, "marco.bianchi")))
    with Workbench.open(root) as wb:  # a new process: its first trace applies the retention
        now = _get(wb, "marco.bianchi", 0)
        assert not _exists(wb, old, "marco.bianchi") and not _exists(wb, older, "dan.kowalski")
        assert _exists(wb, recent, "marco.bianchi") and _exists(wb, now, "marco.bianchi")
        stale = _get(wb, "marco.bianchi", 31)  # within the hour: not applied again ...
        assert _exists(wb, stale, "marco.bianchi")
        assert traces.expire(wb.ws, force=True) == 1 and not _exists(wb, stale, "marco.bianchi")  # ... until due
        assert wb.last_trace_id(principal="marco.bianchi") == now


def test_traces_purge_by_age_and_by_principal_admins_only(backend_config, tmp_path, cli):
    root = _workspace(backend_config, tmp_path)  # no retain_days: traces are kept until purged
    with Workbench.open(root) as wb:
        marco = [_get(wb, "marco.bianchi", d) for d in (100, 10, 0)]
        dan = [_get(wb, "dan.kowalski", d) for d in (100, 0)]
        assert traces.expire(wb.ws, force=True) == 0
    r = cli("traces", "purge", workspace=root)
    assert r.returncode == 2 and "--older-than DAYS" in r.stderr and "traces.retain_days" in r.stderr
    r = cli("traces", "purge", "--older-than", "30", "--as", "marco.bianchi", workspace=root)
    assert r.returncode == 2 and "only an admin or the local administrator may purge traces" in r.stderr
    r = cli("traces", "purge", "--older-than", "30", "--dry-run", "--json", workspace=root)
    assert r.returncode == 0 and json.loads(r.stdout)["removed"] == 2 and json.loads(r.stdout)["dry_run"]
    r = cli("traces", "purge", "--older-than", "30", "--as", "priya.raman", workspace=root)  # an admin
    assert r.returncode == 0 and r.stdout.startswith("removed 2 traces made before "), r.stdout
    r = cli("traces", "purge", "--principal", "dan.kowalski", "--json", workspace=root)  # the local administrator
    assert json.loads(r.stdout) == {**json.loads(r.stdout), "removed": 1, "principal": "dan.kowalski"}
    with Workbench.open(root) as wb:
        assert [_exists(wb, t, "marco.bianchi") for t in marco] == [False, True, True]
        assert not any(_exists(wb, t, "dan.kowalski") for t in dan)
        with pytest.raises(NotFound, match="dan.kowalski has no trace yet"):
            wb.last_trace_id(principal="dan.kowalski")
    r = cli("trace", "last", "--as", "marco.bianchi", "--json", workspace=root)
    assert r.returncode == 0 and json.loads(r.stdout)["trace_id"] == marco[2]
    r = cli("traces", "purge", "--older-than", "-1", workspace=root)
    assert r.returncode == 2 and "Traceback" not in r.stderr


@pytest.mark.parametrize("bad, message", [(0, "retain_days"), ("90", "retain_days"), (10**6, "retain_days"),
                                          ({"keep": 3}, "unknown field")])
def test_retain_days_is_validated(tmp_path, bad, message):
    section = bad if isinstance(bad, dict) else {"retain_days": bad}
    with pytest.raises(ValidationError, match=message):
        Workbench.init(tmp_path / "ws", config=_config(CONFIG, tmp_path, **section))
