"""The closed security issue, replayed: one regression test per attack, built the way the attacker
built it (hand-written files and bundles, a forged store row, a second repository with the same
folder name, hostile YAML, disguised credentials, quotes in paths) and run through the real CLI.

Every attack must now be refused (exit 2, one line on stderr, no traceback) or made harmless, and
what was stored before must be exactly what is stored after (``info --json`` counts, ``list``,
``show``/``history --json``). The attacker is lena.fischer (tidewater lead) unless a test says
otherwise; the victims are northwind fragments of the sample corpus.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from conftest import CONFIG, SAMPLE, fragment_text, run_cli, write_fragment

ADR = "nw-adr-0007-idempotency-keys"           # northwind/payments-api, owner marco.bianchi
SESSION_PRIVATE = "nw-sess-idempotency-ttl-72h"  # its session's members (kb.sync) and its owner (marco) only
GHOST = "nw-adr-9999-made-up"                    # does not exist anywhere
ATTACKER = "lena.fischer"


# -- helpers ------------------------------------------------------------------------------------------------


def run(ws: Path, *args: str, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    """The CLI on ``ws``; $WORKBENCH_PRINCIPAL cleared so a missing --as means default_principal."""
    return run_cli(*args, workspace=ws, env={"WORKBENCH_PRINCIPAL": "", **(env or {})}, **kw)


def refused(r: subprocess.CompletedProcess, *needles: str) -> str:
    """Exit 2, exactly one line on stderr (returned), no traceback anywhere, every needle in it."""
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def ok(r: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    return r


def as_json(r: subprocess.CompletedProcess):
    return json.loads(ok(r).stdout)


def snapshot(ws: Path, ids=(), principal: str = "kb.sync") -> dict:
    """What is stored, as the CLI shows it: counts, every fragment (archived too), and the full
    ``show``/``history`` of ``ids``. kb.sync sees every fragment of the sample corpus."""
    info = as_json(run(ws, "info", "--json"))
    return {"counts": {k: info[k] for k in ("fragments", "versions", "events")},
            "list": as_json(run(ws, "list", "--all", "--json", "--as", principal)),
            "detail": {i: (as_json(run(ws, "show", i, "--json", "--as", principal)),
                           as_json(run(ws, "history", i, "--json", "--as", principal))) for i in ids}}


def files_under(root: Path, *skip: Path) -> set[str]:
    return {str(p) for p in root.rglob("*") if not any(p == s or p.is_relative_to(s) for s in skip)}


# -- 1. taking over another org's fragment by re-using its id -------------------------------------------------


def test_1_ingesting_a_foreign_id_with_another_scope_is_refused(sample_workspace, tmp_path):
    ws = sample_workspace
    original = (SAMPLE / "fragments" / "northwind" / "payments-api" / f"{ADR}.md").read_text(encoding="utf-8")
    forged = original.replace("scope: {org: northwind, repo: payments-api}", "scope: {org: tidewater}") \
                     .replace("owner: marco.bianchi", f"owner: {ATTACKER}")
    assert forged != original and "org: tidewater" in forged
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / f"{ADR}.md").write_text(forged, encoding="utf-8")
    before = snapshot(ws, [ADR])

    line = refused(run(ws, "ingest", str(evil), "--as", ATTACKER), f"id '{ADR}' is not available")
    why = line.split(f"{ADR}.md: ", 1)[1]
    assert not any(word in why for word in ("northwind", "marco", "payments", "scope", "owner"))  # nothing of its holder
    r = run(ws, "ingest", str(evil), "--json", "--as", ATTACKER)
    report = json.loads(r.stdout)
    assert r.returncode == 2 and (report["added"], report["updated"]) == (0, 0) and len(report["errors"]) == 1

    assert snapshot(ws, [ADR]) == before
    shown = as_json(run(ws, "show", ADR, "--json", "--as", "marco.bianchi"))  # the rightful owner still has it
    assert (shown["version"], shown["owner"], shown["scope"]["org"]) == (1, "marco.bianchi", "northwind")
    assert [v["author"] for v in as_json(run(ws, "history", ADR, "--json", "--as", "marco.bianchi"))] == ["kb.sync"]
    refused(run(ws, "show", ADR, "--as", ATTACKER), f"unknown fragment '{ADR}'")

    # the author of a version is whoever ran the command, never the owner a file names
    write_fragment(tmp_path / "mine", "tw-note-lena-writes", org="tidewater", repo="dispatch", owner="raj.patel")
    ok(run(ws, "ingest", str(tmp_path / "mine"), "--as", ATTACKER))
    history = as_json(run(ws, "history", "tw-note-lena-writes", "--json", "--as", "raj.patel"))
    assert [v["author"] for v in history] == [ATTACKER]
    assert as_json(run(ws, "show", "tw-note-lena-writes", "--json", "--as", "raj.patel"))["owner"] == "raj.patel"


# -- 2. hand-made bundles ----------------------------------------------------------------------------------------


def _content(fid: str, *, org: str = "northwind", repo: str | None = "payments-api", kind: str = "note",
             owner: str = "priya.raman", body: str | None = None) -> dict:
    return {"kind": kind, "title": f"Title of {fid}", "body": body or f"Body of {fid}.",
            "scope": {"org": org, "repo": repo, "persona": None, "session": None}, "owner": owner,
            "status": "active", "tags": [], "links": [], "supersedes": [], "sources": [], "details": {}}


def _hash(content: dict) -> str:
    from workbench.models import Content

    return Content.from_dict(content).content_hash()


def _record(fid: str, contents: list[dict], *, numbers: list[int] | None = None,
            hashes: list[str] | None = None) -> dict:
    """One line of fragments.jsonl, laid out as export/bundle.py writes it (the attacker read it)."""
    numbers = numbers or list(range(1, len(contents) + 1))
    versions = [{"version": n, "author": "mallory", "created_at": f"2025-0{i + 1}-01T00:00:00Z",
                 "reason": "hand-made", "content_hash": hashes[i] if hashes else _hash(c), "content": c}
                for i, (n, c) in enumerate(zip(numbers, contents))]
    last = contents[-1]
    return {"id": fid, "version": numbers[-1], "content_hash": versions[-1]["content_hash"], "owner": last["owner"],
            "scope": last["scope"], "kind": last["kind"], "title": last["title"], "status": "active",
            "sources": [], "text": last["body"], "created_at": versions[0]["created_at"],
            "updated_at": versions[-1]["created_at"], "verified_at": None, "versions": versions}


def _bundle(folder: Path, records: list[dict]) -> str:
    """fragments.jsonl plus a manifest.yaml whose sha256 the attacker recomputed; returns it."""
    folder.mkdir(parents=True)
    data = "".join(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n" for r in records)
    (folder / "fragments.jsonl").write_text(data, encoding="utf-8")
    checksum = hashlib.sha256(data.encode("utf-8")).hexdigest()
    (folder / "manifest.yaml").write_text(yaml.safe_dump({
        "format": 1, "set": {"name": "totally-legit"}, "fragments": len(records), "model": "x", "chunker": "x",
        "created_at": None, "checksum": {"algorithm": "sha256", "file": "fragments.jsonl", "value": checksum}}))
    return checksum


AWS_KEY_ID = "AKIA" + "QWERTYUIOPASDFGH"  # AKIA + 16 uppercase characters, split so no scanner flags this file

HOSTILE_RECORDS = {
    # case: (record, the fragment the refusal must name)
    "path-like id": (_record("../../etc/evil", [_content("x")]), "'../../etc/evil'"),
    "unknown kind": (_record("nw-evil-kind", [_content("nw-evil-kind", kind="exploit")]), "nw-evil-kind"),
    "foreign org": (_record("tw-evil-foreign", [_content("tw-evil-foreign", org="tidewater", repo="dispatch",
                                                         owner="lena.fischer")]), "tw-evil-foreign"),
    "v1 then v7": (_record("nw-evil-jump", [_content("nw-evil-jump"), _content("nw-evil-jump", body="v7")],
                           numbers=[1, 7]), "nw-evil-jump"),
    "hash mismatch": (_record("nw-evil-hash", [_content("nw-evil-hash")], hashes=["0" * 64]), "nw-evil-hash"),
    "cloud key": (_record("nw-evil-aws", [_content("nw-evil-aws", body=f"aws_access_key_id = {AWS_KEY_ID}")]),
                  "nw-evil-aws"),
    "takeover": (_record(ADR, [_content(ADR)]), ADR),   # an existing id with another history
}
EXPECTED_PROBLEM = {"path-like id": "has the wrong form", "unknown kind": "kind: 'exploit' is not one of",
                    "foreign org": "may not create fragments in org=tidewater",
                    "v1 then v7": "history is not contiguous from v1", "hash mismatch": "content hash does not match",
                    "cloud key": "contains a credential", "takeover": "conflict"}


def test_2_hand_made_bundles_are_refused_whole(sample_workspace, tmp_path):
    ws = sample_workspace
    good = _record("nw-note-innocent", [_content("nw-note-innocent")])
    before = snapshot(ws, [ADR])
    for case, (record, named) in HOSTILE_RECORDS.items():
        folder = tmp_path / case.replace(" ", "-")
        _bundle(folder, [good, record])  # a valid record first: it must not slip through either
        for dry in ((), ("--dry-run",)):
            line = refused(run(ws, "import-bundle", str(folder), "--as", "priya.raman", *dry),
                           "bundle refused, nothing imported", named, EXPECTED_PROBLEM[case])
            assert AWS_KEY_ID not in line, case
    # attack 1 by bundle: lena "restores" the northwind id into her own org
    _bundle(tmp_path / "lena", [_record(ADR, [_content(ADR, org="tidewater", repo=None, owner=ATTACKER)])])
    line = refused(run(ws, "import-bundle", str(tmp_path / "lena"), "--as", ATTACKER), f"id '{ADR}' is not available")
    assert "northwind" not in line and "marco" not in line
    refused(run(ws, "show", "nw-note-innocent", "--as", "priya.raman"), "unknown fragment")
    assert snapshot(ws, [ADR]) == before


def test_2_an_honest_bundle_is_imported_as_the_importer_and_recorded(sample_workspace, tmp_path):
    from workbench import Workbench

    ws = sample_workspace
    checksum = _bundle(tmp_path / "honest", [_record("nw-note-innocent", [_content("nw-note-innocent")])])
    before = snapshot(ws)
    assert "would add 1" in ok(run(ws, "import-bundle", str(tmp_path / "honest"), "--dry-run",
                                   "--as", "priya.raman")).stdout
    assert snapshot(ws) == before                                  # a dry run writes nothing, not even an event
    report = as_json(run(ws, "import-bundle", str(tmp_path / "honest"), "--json", "--as", "priya.raman"))
    assert (report["added"], report["errors"]) == (1, [])
    (version,) = as_json(run(ws, "history", "nw-note-innocent", "--json", "--as", "priya.raman"))
    assert version["author"] == "priya.raman" and "by mallory" in version["reason"]  # a claim, not an author
    after = snapshot(ws)["counts"]
    assert after == {**before["counts"], "fragments": before["counts"]["fragments"] + 1,
                     "versions": before["counts"]["versions"] + 1, "events": before["counts"]["events"] + 1}
    with Workbench.open(ws) as wb:
        (event,) = wb.store.events(action="import-bundle")
    assert event["actor"] == "priya.raman"
    assert event["detail"]["checksum"] == checksum
    assert (event["detail"]["added"], event["detail"]["updated"], event["detail"]["unchanged"]) == (1, 0, 0)


# -- 3. path-like ids in the store must not become files outside --out -------------------------------------------


def test_3_path_like_ids_never_write_outside_out(sample_workspace, tmp_path):
    from datetime import datetime

    from workbench import Workbench
    from workbench.models import Content, Scope

    ws = sample_workspace
    with Workbench.open(ws) as wb:  # an old workspace: the id was stored before ids were checked
        content = Content(kind="note", title="Evil", body="Use idempotency keys for payment retries.",
                          scope=Scope("northwind", "payments-api"), owner="marco.bianchi")
        wb.store.append_version("../../evil", content, author="marco.bianchi", reason="old build",
                                at=datetime(2025, 3, 1))
    ok(run(ws, "set", "create", "evil-set", "--scope", "org=northwind,repo=payments-api", "--as", "marco.bianchi"))
    ok(run(ws, "set", "add", "evil-set", "../../evil", "--as", "marco.bianchi"))
    before_files = files_under(tmp_path, ws)
    before = snapshot(ws, ["../../evil"])

    out = tmp_path / "a" / "b" / "c" / "files"
    refused(run(ws, "export-files", str(out), "--as", "marco.bianchi"), "refusing to export", "../../evil",
            "nothing was written")
    assert files_under(tmp_path, ws) == before_files and not (tmp_path / "a").exists()

    out = tmp_path / "a" / "b" / "c" / "llms"
    result = as_json(run(ws, "export", "llms-txt", "--set", "evil-set", "--out", str(out), "--budget", "100000",
                         "--as", "marco.bianchi", "--json"))
    new = {p for p in files_under(tmp_path, ws) - before_files if not Path(p).is_dir()}
    assert new and all(Path(p).resolve().is_relative_to(out.resolve()) for p in new), sorted(new)
    assert sorted(Path(p).relative_to(out).as_posix() for p in new) == sorted(result["files"])
    page = [f for f in result["files"] if "evil" in f]
    assert len(page) == 1 and page[0].startswith("fragments/") and ".." not in page[0]
    assert "`../../evil@v1`" in (out / "llms.txt").read_text()  # cited by its real id, written under a safe name
    assert snapshot(ws, ["../../evil"]) == before


# -- 4. exporting someone else's set -------------------------------------------------------------------------------


def _bundle_ids(folder: Path) -> list[str]:
    return [json.loads(line)["id"] for line in (folder / "fragments.jsonl").read_text().splitlines()]


def test_4_bundles_of_a_set_hold_only_what_the_exporter_sees(sample_workspace, tmp_path):
    ws = sample_workspace
    ok(run(ws, "set", "create", "payments-core", "--scope", "org=northwind,repo=payments-api", "--as",
           "marco.bianchi"))
    before = snapshot(ws)

    foreign = refused(run(ws, "export", "bundle", "--set", "payments-core", "--out", str(tmp_path / "lena"),
                          "--as", ATTACKER), "unknown set 'payments-core'")
    made_up = refused(run(ws, "export", "bundle", "--set", "no-such-set", "--out", str(tmp_path / "lena2"),
                          "--as", ATTACKER))
    assert foreign.replace("payments-core", "NAME") == made_up.replace("no-such-set", "NAME")
    assert not (tmp_path / "lena").exists()

    ok(run(ws, "export", "bundle", "--set", "payments-core", "--out", str(tmp_path / "marco"), "--as",
           "marco.bianchi"))
    ok(run(ws, "export", "bundle", "--set", "payments-core", "--out", str(tmp_path / "sofia"), "--as",
           "sofia.okafor"))
    assert SESSION_PRIVATE in _bundle_ids(tmp_path / "marco")  # its owner exports it ...
    assert SESSION_PRIVATE not in _bundle_ids(tmp_path / "sofia")  # ... a payments-api member not in the session not
    for line in (tmp_path / "sofia" / "fragments.jsonl").read_text().splitlines():
        record = json.loads(line)
        assert record["scope"]["org"] == "northwind" and record["scope"]["session"] is None, record["id"]
        assert all(v["content"]["scope"]["session"] is None for v in record["versions"]), record["id"]

    # without --as: the default principal (priya.raman), byte for byte, not everything
    ok(run(ws, "export", "bundle", "--set", "payments-core", "--out", str(tmp_path / "default")))
    ok(run(ws, "export", "bundle", "--set", "payments-core", "--out", str(tmp_path / "priya"), "--as",
           "priya.raman"))
    for name in ("fragments.jsonl", "manifest.yaml"):
        assert (tmp_path / "default" / name).read_bytes() == (tmp_path / "priya" / name).read_bytes()
    assert SESSION_PRIVATE not in _bundle_ids(tmp_path / "default")
    assert snapshot(ws) == before


# -- 5. other principals' traces and set definitions -----------------------------------------------------------------


def test_5_traces_and_sets_of_others_answer_like_made_up_names(sample_workspace):
    ws = sample_workspace
    query = "marco's secret plan for NWPAY-4091 retries"
    trace = as_json(run(ws, "search", query, "--pipeline", "bm25", "--json", "--as", "marco.bianchi"))["trace_id"]
    assert query in ok(run(ws, "trace", trace, "--as", "marco.bianchi")).stdout  # the caller reads it
    ghost_trace = "tr_20990101000000_deadbeef"
    ok(run(ws, "set", "create", "tw-secret-plans", "--scope", "org=tidewater", "--as", ATTACKER))
    before = snapshot(ws)

    made_up = refused(run(ws, "trace", ghost_trace, "--as", ATTACKER), f"unknown trace '{ghost_trace}'")
    for who in (ATTACKER, "sofia.okafor", None):  # another org, the same repo, the default principal
        r = run(ws, "trace", trace, *(("--as", who) if who else ()))
        line = refused(r, f"unknown trace '{trace}'")
        assert line.replace(trace, "ID") == made_up.replace(ghost_trace, "ID")
        assert "secret plan" not in r.stdout + r.stderr

    hidden = refused(run(ws, "set", "show", "tw-secret-plans", "--as", "marco.bianchi"),
                     "unknown set 'tw-secret-plans'")
    ghost = refused(run(ws, "set", "show", "no-such-set", "--as", "marco.bianchi"), "unknown set 'no-such-set'")
    assert hidden.replace("tw-secret-plans", "NAME") == ghost.replace("no-such-set", "NAME")
    assert "tw-secret-plans" not in ghost and "tw-secret-plans" not in hidden.split("known:", 1)[1]
    assert "tw-secret-plans" in ok(run(ws, "set", "show", "tw-secret-plans", "--as", "raj.patel")).stdout  # control
    assert snapshot(ws) == before


# -- 6. stale without --as --------------------------------------------------------------------------------------------


def test_6_stale_without_as_is_the_default_principals_view(sample_workspace):
    ws = sample_workspace
    default = as_json(run(ws, "stale", "--days", "30", "--json"))
    assert default == as_json(run(ws, "stale", "--days", "30", "--json", "--as", "priya.raman"))
    everything = as_json(run(ws, "stale", "--days", "30", "--json", "--as", "kb.sync"))  # control: there is more
    assert any(i["scope"]["org"] == "tidewater" for i in everything)
    assert any(i["scope"]["session"] for i in everything)
    assert default and all(i["scope"]["org"] == "northwind" and not i["scope"]["session"] for i in default)


# -- 7. lost updates -----------------------------------------------------------------------------------------------------


def test_7_an_edit_from_an_old_base_is_refused_naming_who_changed_it(sample_workspace, tmp_path):
    ws = sample_workspace
    (tmp_path / "sofia.md").write_text("Sofia's change.\n")
    (tmp_path / "marco.md").write_text("Marco's change, made from v1.\n")
    ok(run(ws, "edit", ADR, "--file", str(tmp_path / "sofia.md"), "--reason", "sofia", "--base", "1",
           "--as", "sofia.okafor"))
    before = snapshot(ws, [ADR])
    refused(run(ws, "edit", ADR, "--file", str(tmp_path / "marco.md"), "--reason", "marco", "--base", "1",
                "--as", "marco.bianchi"), "changed since v1", "now v2, by sofia.okafor", "nothing saved")
    refused(run(ws, "archive", ADR, "--reason", "marco", "--base", "1", "--as", "marco.bianchi"),
            "now v2, by sofia.okafor")
    assert snapshot(ws, [ADR]) == before
    assert as_json(run(ws, "show", ADR, "--json", "--as", "marco.bianchi"))["body"].startswith("Sofia's change.")


# -- 8. a second repository with the same folder name ----------------------------------------------------------------

TWO_APIS = """\
name: two-apis
default_principal: ada.admin
orgs:
  - {name: acme, repos: [api], personas: [backend]}
principals:
  - {name: ada.admin, email: ada@acme.example, orgs: [acme], repos: [acme/*], personas: [acme/*],
     lead_of: ["org=acme"]}
  - {name: mal.lory, email: mal@acme.example, orgs: [acme], repos: [acme/api], personas: [acme/*]}
"""
API_README = "# API\n\nThe payments API.\n\n## Deploy\n\nRun `make deploy`.\n"


def _git(repo: Path, *args: str, who: tuple[str, str], date: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": who[0], "GIT_AUTHOR_EMAIL": who[1], "GIT_COMMITTER_NAME": who[0],
           "GIT_COMMITTER_EMAIL": who[1], "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True)


def _repo(root: Path, files: dict[str, str], who: tuple[str, str]) -> Path:
    root.mkdir(parents=True)
    _git(root, "init", "-q", who=who, date="2025-01-10T10:00:00")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    _git(root, "add", "-A", who=who, date="2025-01-10T10:00:00")
    _git(root, "commit", "-qm", "first", who=who, date="2025-01-10T10:00:00")
    return root


def test_8_a_same_named_repository_cannot_archive_or_overwrite_chunks(tmp_path):
    (tmp_path / "workbench.yaml").write_text(TWO_APIS)
    ws = tmp_path / "ws"
    ok(run(ws, "init", "--config", str(tmp_path / "workbench.yaml")))
    ada, mal = ("Ada", "ada@acme.example"), ("Mal", "mal@acme.example")
    a = _repo(tmp_path / "a" / "api", {"docs/README.md": API_README, "app.py": "def handler():\n    return 1\n"}, ada)
    b = _repo(tmp_path / "b" / "api", {"docs/README.md": API_README}, mal)  # same name, same README, no app.py
    assert as_json(run(ws, "ingest", "--git", str(a), "--json", "--as", "ada.admin"))["added"] == 3

    def chunks():
        return {f["id"]: (f["status"], f["version"]) for f in as_json(run(ws, "list", "--all", "--json",
                                                                          "--as", "ada.admin"))}

    of_a = chunks()
    assert len(of_a) == 3 and set(of_a.values()) == {("active", 1)}
    plan = as_json(run(ws, "ingest", "--git", str(b), "--dry-run", "--json", "--as", "mal.lory"))["plan"]
    assert plan["archive"] == [] and plan["update"] == []
    assert plan["add"] and not {i["id"] for i in plan["add"]} & set(of_a)
    report = as_json(run(ws, "ingest", "--git", str(b), "--json", "--as", "mal.lory"))
    assert (report["added"], report["updated"], report.get("archived", 0)) == (len(plan["add"]), 0, 0)
    now = chunks()
    assert {i: now[i] for i in of_a} == of_a                       # a's app.py chunk is not "gone"
    of_b = set(now) - set(of_a)
    # b loses its README: only b's chunks are archived
    (b / "docs" / "README.md").unlink()
    (b / "notes.txt").write_text("Nothing here.\n")
    _git(b, "add", "-A", who=mal, date="2025-02-01T10:00:00")
    _git(b, "commit", "-qm", "drop readme", who=mal, date="2025-02-01T10:00:00")
    report = as_json(run(ws, "ingest", "--git", str(b), "--json", "--as", "mal.lory"))
    assert report.get("archived", 0) == len(of_b)
    now = chunks()
    assert {i: now[i] for i in of_a} == of_a
    assert {now[i] for i in of_b} == {("archived", 2)}


# -- 9. hostile YAML -----------------------------------------------------------------------------------------------------


def _billion_laughs() -> str:
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, 9):  # 8 levels of 9 aliases: 9**9 strings if anything expanded it
        lines.append(f"l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * 9) + "]")
    return ("---\nid: nw-note-laughs\nkind: note\ntitle: Laughs\nscope: {org: northwind}\nowner: priya.raman\n"
            + "\n".join(lines) + "\ntags: *l8\n---\n\nHa.\n")


def test_9_billion_laughs_and_impossible_dates_are_per_file_errors(sample_workspace, tmp_path):
    ws = sample_workspace
    folder = tmp_path / "hostile"
    folder.mkdir()
    (folder / "nw-note-laughs.md").write_text(_billion_laughs())
    (folder / "nw-note-feb30.md").write_text(fragment_text("nw-note-feb30", org="northwind", repo=None,
                                                           owner="priya.raman", extra="created: 2025-02-30\n"))
    write_fragment(folder, "nw-note-fine", org="northwind", repo=None, owner="priya.raman")
    before = snapshot(ws)
    started = time.perf_counter()
    r = run(ws, "ingest", str(folder), "--json", "--as", "priya.raman", timeout=60)
    elapsed = time.perf_counter() - started
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    report = json.loads(r.stdout)
    assert report["added"] == 1 and elapsed < 20, (report, elapsed)  # a process start and three small files
    errors = {Path(e["file"]).name: e["message"] for e in report["errors"]}
    assert "YAML anchors and aliases are not allowed" in errors["nw-note-laughs.md"]
    assert "2025-02-30 is not a real date" in errors["nw-note-feb30.md"]
    after = snapshot(ws)
    assert after["counts"]["fragments"] == before["counts"]["fragments"] + 1
    assert [f for f in after["list"] if f["id"] != "nw-note-fine"] == before["list"]


# -- 10. the secret guard -------------------------------------------------------------------------------------------------

SECRETS = {  # case: (a line of the body, what the refusal calls it); values split so no scanner flags this file
    "dbpass": ('DB_PASSWORD="' + "Vx7qLm2Rt9Kp4Zw8" + '"', "password"),
    "pgpass": ("export PGPASSWORD=" + "Tq4Mz8Lk2Vr6Px9n", "password"),
    "stripe": ("key: " + "sk_" + "live_" + "51HbQ2kLmNoPqRsTuVwXyZa0", "Stripe"),
    "slack": ("post to https://hooks.slack.com/services/" + "T024BE7LD/B024BE7LF/" + "qW3eR5tY7uI9oP1aS2dF4gH6",
              "Slack webhook"),
    "hex40": ("token = " + "3f9a1c7e5b2d8f04a6c1e9b7d3f5a2c8e0b4d6f1", "secret"),
    "zero-width": ("aws: " + "AKIA" + "\u200b" + "QWERTYUIOPASDFGH", "AWS access key"),
}
SECRET_VALUES = ["Vx7qLm2Rt9Kp4Zw8", "Tq4Mz8Lk2Vr6Px9n", "51HbQ2kLmNoPqRsTuVwXyZa0", "qW3eR5tY7uI9oP1aS2dF4gH6",
                 "3f9a1c7e5b2d8f04a6c1e9b7d3f5a2c8e0b4d6f1", "QWERTYUIOPASDFGH"]


def test_10_disguised_credentials_are_refused_everywhere(sample_workspace, tmp_path):
    ws = sample_workspace
    folder = tmp_path / "secrets"
    for case, (line, _) in SECRETS.items():
        write_fragment(folder, f"nw-note-secret-{case}", org="northwind", repo=None, owner="priya.raman",
                       body=f"Config:\n\n{line}\n")
    write_fragment(folder, "nw-note-placeholders", org="northwind", repo=None, owner="priya.raman",  # control
                   body='Config:\n\nDB_PASSWORD="${DB_PASSWORD}"\nexport PGPASSWORD=<password>\n')
    before = snapshot(ws)
    r = run(ws, "ingest", str(folder), "--json", "--as", "priya.raman")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    report = json.loads(r.stdout)
    assert report["added"] == 1  # only the placeholders
    errors = {Path(e["file"]).stem: e["message"] for e in report["errors"]}
    assert sorted(errors) == sorted(f"nw-note-secret-{c}" for c in SECRETS)
    for case, (_, kind) in SECRETS.items():
        message = errors[f"nw-note-secret-{case}"]
        assert "contains a credential (line " in message and kind in message and "nothing stored" in message, case
    assert not any(v in r.stdout + r.stderr for v in SECRET_VALUES)  # refusals do not echo the secret

    ap = ["antipattern", "add", "--title", "Hard-coded database credentials", "--dont", "Commit credentials",
          "--why", "They leak", "--instead", "Read them from the vault", "--scope", "org=northwind",
          "--as", "priya.raman", "--evidence"]
    mid = snapshot(ws)
    r = run(ws, *ap, SECRETS["dbpass"][0])
    refused(r, "contains a credential", "evidence")
    assert SECRET_VALUES[0] not in r.stderr
    assert snapshot(ws) == mid
    ok(run(ws, *ap, "INC-2291"))  # control: the same anti-pattern with harmless evidence is stored
    assert snapshot(ws)["counts"]["fragments"] == before["counts"]["fragments"] + 2


# -- 11. quotes in paths ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("folder", ["it's", 'say "when"'])
def test_11_a_quote_in_tmpdir_breaks_no_write(sample_workspace, tmp_path, folder):
    ws = sample_workspace
    tmp = tmp_path / folder
    tmp.mkdir()
    env = {"TMPDIR": str(tmp)}
    write_fragment(tmp_path / "in", "nw-note-quoted-tmp", org="northwind", repo=None, owner="priya.raman")
    ok(run(ws, "ingest", str(tmp_path / "in"), "--as", "priya.raman", env=env))
    (tmp_path / "body.md").write_text("Edited with a quote in TMPDIR.\n")
    ok(run(ws, "edit", "nw-note-quoted-tmp", "--file", str(tmp_path / "body.md"), "--reason", "quote",
           "--as", "priya.raman", env=env))
    ok(run(ws, "edit", ADR, "--file", str(tmp_path / "body.md"), "--reason", "quote", "--as", "marco.bianchi",
           env=env))
    history = as_json(run(ws, "history", "nw-note-quoted-tmp", "--json", "--as", "priya.raman", env=env))
    assert [(v["version"], v["author"]) for v in history] == [(1, "priya.raman"), (2, "priya.raman")]
    assert as_json(run(ws, "show", ADR, "--json", "--as", "marco.bianchi"))["version"] == 2


def test_11_a_quote_in_the_workspace_path_breaks_nothing(tmp_path):
    ws = tmp_path / "o'brien \"x\"" / "ws"
    ok(run(ws, "init", "--config", str(CONFIG)))
    write_fragment(tmp_path / "in", "nw-note-quoted-ws", org="northwind", repo=None, owner="priya.raman",
                   body="Idempotency keys live in the quoted workspace.")
    ok(run(ws, "ingest", str(tmp_path / "in"), "--as", "priya.raman"))
    (tmp_path / "body.md").write_text("Second version, still quoted.\n")
    ok(run(ws, "edit", "nw-note-quoted-ws", "--file", str(tmp_path / "body.md"), "--reason", "quote",
           "--as", "priya.raman"))
    assert [v["version"] for v in as_json(run(ws, "history", "nw-note-quoted-ws", "--json"))] == [1, 2]
    hits = as_json(run(ws, "search", "quoted", "--pipeline", "bm25", "--json", "--as", "priya.raman"))["hits"]
    assert [h["id"] for h in hits] == ["nw-note-quoted-ws"]
    out = tmp_path / "out'dir"
    ok(run(ws, "export-files", str(out), "--as", "priya.raman"))
    assert [p.name for p in out.rglob("*.md")] == ["nw-note-quoted-ws.md"]
    assert as_json(run(ws, "info", "--json"))["versions"] == 2


# -- 12. ranking statistics must not reveal other orgs ----------------------------------------------------------------------


CODE = "NWPAY-4099"  # an error code no sample fragment names, so the test decides who uses it


def _uses(ws: Path, folder: Path, ids: list[str], *, org: str, repo: str, owner: str) -> None:
    for i, fid in enumerate(ids):
        write_fragment(folder, fid, org=org, repo=repo, owner=owner, title=f"Partner error {CODE} ({i})",
                       body=f"When the API answers {CODE} we retry with a new key. Case {i}.",
                       extra="created: 2025-05-01\nupdated: 2025-05-01\n")
    assert as_json(run(ws, "ingest", str(folder), "--json", "--as", owner))["added"] == len(ids)


def _hits(result: dict) -> list:
    """Ids in order with every score the ranking reports."""
    return [(h["id"], h["version"], h["score"], dict(h["scores"])) for h in (*result["hits"], *result["avoid"])]


def _same_ranking(a: dict, b: dict, *, clock: float = 0.0) -> None:
    """Identical ids, order and scores. ``clock``: freshness, and the final score it enters, decay
    with the clock between two calls, so they may differ by that much; the statistics that would
    leak (lexical, dense, fused, authority) must still be equal exactly."""
    left, right = _hits(a), _hits(b)
    assert [h[:2] for h in left] == [h[:2] for h in right], (left, right)
    for (fid, _, score_a, parts_a), (_, _, score_b, parts_b) in zip(left, right):
        assert abs(score_a - score_b) <= clock, (fid, score_a, score_b)
        assert abs(parts_a.pop("freshness") - parts_b.pop("freshness")) <= clock, fid
        assert parts_a == parts_b, (fid, parts_a, parts_b)


@pytest.fixture
def twin_workspaces(sample_workspace, tmp_path):
    """Two workspaces identical for northwind, where two payments-api notes name CODE (a rare
    identifier for marco: the switch to lexical weights is on); in the second, tidewater has 40
    fragments naming it too (rare no longer, and a different idf, if other orgs were counted)."""
    import shutil

    _uses(sample_workspace, tmp_path / "nw", ["nw-note-code-a", "nw-note-code-b"], org="northwind",
          repo="payments-api", owner="marco.bianchi")
    plain = tmp_path / "plain-ws"
    shutil.copytree(sample_workspace, plain)
    _uses(sample_workspace, tmp_path / "tw", [f"tw-note-partner-error-{i}" for i in range(40)], org="tidewater",
          repo="dispatch", owner=ATTACKER)
    return plain, sample_workspace


def test_12_identifier_statistics_ignore_other_orgs_bm25(twin_workspaces):
    plain, busy = twin_workspaces
    query = ("search", CODE, "--pipeline", "bm25", "--json")
    a = as_json(run(plain, *query, "--as", "marco.bianchi"))
    b = as_json(run(busy, *query, "--as", "marco.bianchi"))
    assert {h["id"] for h in a["hits"][:2]} == {"nw-note-code-a", "nw-note-code-b"}
    _same_ranking(a, b)
    seen_by_lena = [h["id"] for h in as_json(run(busy, *query, "--as", ATTACKER))["hits"]]
    assert len(seen_by_lena) == 10 and all(i.startswith("tw-note-partner-error-") for i in seen_by_lena)  # indexed


@pytest.mark.slow
def test_12_identifier_statistics_ignore_other_orgs_hybrid(twin_workspaces):
    plain, busy = twin_workspaces
    query = ("search", CODE, "--json", "--as", "marco.bianchi")  # the default: hybrid, weighted fusion
    a, b = as_json(run(plain, *query)), as_json(run(busy, *query))
    assert {h["id"] for h in a["hits"][:2]} == {"nw-note-code-a", "nw-note-code-b"}
    _same_ranking(a, b, clock=1e-4)


# -- an id you may not see answers exactly like an id that does not exist ----------------------------------------------------

# The attacker probes with every command that takes an id: the eight of the issue, then the rest.
PROBED = {"show": ["show", "{id}"], "history": ["history", "{id}"],
          "edit": ["edit", "{id}", "--file", "{body}", "--reason", "mine now"],
          "archive": ["archive", "{id}", "--reason", "gone"], "revert": ["revert", "{id}", "--to", "1"],
          "verify": ["verify", "{id}"], "pin": ["pin", "{id}", "--scope", "{led}", "--reason", "mine"],
          "merge": ["merge", "{visible}", "{id}"]}
PROBED_MORE = {"diff": ["diff", "{id}", "1", "2"], "restore": ["restore", "{id}", "--reason", "back"],
               "snooze": ["snooze", "{id}", "--days", "30"], "merge-keep": ["merge", "{id}", "{visible}"],
               "set-add": ["set", "add", "probe-set", "{id}"]}
# (attacker, a fragment they may not see, one they may see, a scope they lead, the commands)
PROBES = [pytest.param(ATTACKER, ADR, "tw-rb-pgbouncer-pool-exhaustion", "org=tidewater", PROBED, id="other-org"),
          pytest.param(ATTACKER, ADR, "tw-rb-pgbouncer-pool-exhaustion", "org=tidewater", PROBED_MORE,
                       id="other-org-more", marks=pytest.mark.slow),
          pytest.param("sofia.okafor", SESSION_PRIVATE, "nw-rb-ledger-imbalance", "org=northwind,repo=ledger",
                       {**PROBED, **PROBED_MORE}, id="not-in-session", marks=pytest.mark.slow)]


@pytest.mark.parametrize("attacker,hidden,visible,led,commands", PROBES)
def test_hidden_and_unknown_ids_get_identical_answers(sample_workspace, tmp_path, attacker, hidden, visible, led,
                                                      commands):
    ws = sample_workspace
    (tmp_path / "body.md").write_text("Overwritten.\n")
    if "set-add" in commands:
        ok(run(ws, "set", "create", "probe-set", "--scope", led, "--as", attacker))
    before = snapshot(ws, [hidden])
    for name, template in commands.items():
        answers = []
        for fid in (hidden, GHOST):
            fill = {"{id}": fid, "{body}": str(tmp_path / "body.md"), "{led}": led, "{visible}": visible}
            r = run(ws, *[fill.get(part, part) for part in template], "--as", attacker)
            answers.append(refused(r).replace(fid, "ID"))
            assert r.stdout == "", (name, r.stdout)
        assert answers[0] == answers[1], (name, answers)
        assert "ID" in answers[0], (name, answers[0])  # the message names the id it was given
    assert snapshot(ws, [hidden]) == before
