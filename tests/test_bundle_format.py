"""The bundle format: documented by JSON Schemas (schemas/bundle-manifest.schema.json and
schemas/bundle-record.schema.json), written by `export bundle` (checked here with jsonschema
against the published files), enforced by `import-bundle` before anything else; and the set and
the pins a bundle carries, restored only as the policy allows the importer."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import jsonschema
import pytest
import yaml
from referencing import Registry, Resource

from conftest import CONFIG, ROOT, write_fragment
from workbench import Workbench
from workbench.models import Scope, utcnow

SET_SCOPE = "org=northwind,repo=payments-api"


def _validator(name: str) -> jsonschema.Draft202012Validator:
    registry = Registry().with_resources([(p.name, Resource.from_contents(json.loads(p.read_text())))
                                          for p in sorted((ROOT / "schemas").glob("*.schema.json"))])
    schema = json.loads((ROOT / "schemas" / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, registry=registry)


def _read(folder: Path) -> tuple[dict, list[dict]]:
    manifest = yaml.safe_load((folder / "manifest.yaml").read_text(encoding="utf-8"))
    records = [json.loads(line) for line in (folder / "fragments.jsonl").read_text(encoding="utf-8").splitlines()]
    return manifest, records


def _rewrite(folder: Path, manifest: dict, records: list[dict]) -> None:
    """A hand-made bundle: the records as given, the checksum recomputed (an attacker can)."""
    data = "".join(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n" for r in records)
    (folder / "fragments.jsonl").write_text(data, encoding="utf-8")
    manifest = {**manifest, "checksum": {**manifest["checksum"], "value": hashlib.sha256(data.encode()).hexdigest()}}
    (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest), encoding="utf-8")


@pytest.fixture
def source(workspace, tmp_path):
    """A small workspace: a set (scope, a hand include, a hand exclude) and pins in and out of it."""
    folder = tmp_path / "src"
    write_fragment(folder, "nw-a", owner="marco.bianchi", body="Retry payments with idempotency keys.")
    write_fragment(folder, "nw-b", repo=None, owner="priya.raman", body="Never log card numbers.")
    write_fragment(folder, "nw-c", repo="ledger", owner="sofia.okafor", body="Ledger entries balance daily.")
    write_fragment(folder, "nw-d", owner="marco.bianchi", body="An old note left out by hand.")
    write_fragment(folder, "tw-x", org="tidewater", repo="dispatch", owner="raj.patel", body="Dispatch note.")
    with Workbench.open(workspace) as wb:
        assert not wb.ingest([folder], actor="kb.sync").errors
        wb.edit("nw-a", "Retry payments with idempotency keys, stored 24 h.", reason="ttl", actor="marco.bianchi")
        wb.set_create("payments-core", scope=SET_SCOPE, actor="marco.bianchi")
        wb.set_change("payments-core", "nw-c", include=True, actor="marco.bianchi")
        wb.set_change("payments-core", "nw-d", include=False, actor="marco.bianchi")
        wb.pin("nw-b", scope="org=northwind", actor="priya.raman", reason="card data")
        wb.pin("nw-a", scope=SET_SCOPE, actor="marco.bianchi", reason="retries", until=utcnow() + timedelta(days=30))
        wb.pin("nw-c", scope="org=northwind,repo=ledger", actor="sofia.okafor")  # does not apply to the set's scope
        wb.pin("nw-d", scope="org=northwind", actor="priya.raman")                # not in the bundle
        yield wb


def _fresh(tmp_path: Path, name: str = "fresh") -> Path:
    root = tmp_path / name
    Workbench.init(root, config=CONFIG).close()
    return root


def test_an_exported_bundle_follows_the_published_schemas(source, tmp_path):
    out = tmp_path / "bundle"
    result = source.export_bundle("payments-core", out, principal="marco.bianchi")
    manifest, records = _read(out)
    _validator("bundle-manifest").validate(manifest)
    record_schema = _validator("bundle-record")
    for record in records:
        record_schema.validate(record)
    assert [r["id"] for r in records] == ["nw-a", "nw-b", "nw-c"] and len(records[0]["versions"]) == 2
    # the set's whole definition, and exactly the pins in force that apply to it, of fragments in it
    assert manifest["set"] == {"name": "payments-core", "owner": "marco.bianchi", "scope": SET_SCOPE, "query": None,
                               "picked": False, "include": ["nw-c"], "exclude": ["nw-d"]}
    assert [(p["id"], p["scope"], p["pinned_by"], p["reason"]) for p in manifest["pins"]] == [
        ("nw-a", SET_SCOPE, "marco.bianchi", "retries"), ("nw-b", "org=northwind", "priya.raman", "card data")]
    assert manifest["pins"][0]["until"] is not None and manifest["pins"][1]["until"] is None
    assert result["pins"] == manifest["pins"]
    # the schemas are strict: a field the format does not define is not valid
    for bad in ({**records[0], "extra": 1}, {**records[0], "versions": [{**records[0]["versions"][0], "x": 1}]},
                {**records[0], "versions": []}, {**records[0], "content_hash": "not-a-hash"}):
        assert not record_schema.is_valid(bad)
    for bad in ({**manifest, "extra": 1}, {**manifest, "set": {**manifest["set"], "owner": None}},
                {**manifest, "set": {"name": "s", "scope": SET_SCOPE}},  # a definition is whole or absent
                {**manifest, "pins": [{**manifest["pins"][0], "pinned_by": 3}]}):
        assert not _validator("bundle-manifest").is_valid(bad)


def test_check_jsonschema_validates_a_real_bundle_with_the_shipped_schemas(sample_workspace, tmp_path):
    """A standard validator, given only the shipped schema files, resolves their ``$ref``s (the bundle
    schemas reuse the fragment schema's definitions) and accepts a real bundle of the sample corpus
    (anti-patterns, code, a session summary): nothing is fetched, no base-URI override is needed."""
    from workbench.schemas import schema_dir

    shipped = Path(str(schema_dir()))
    out, records = tmp_path / "bundle", tmp_path / "records"
    with Workbench.open(sample_workspace) as wb:
        wb.set_create("payments-core", scope=SET_SCOPE, actor="marco.bianchi")
        wb.export_bundle("payments-core", out, principal="marco.bianchi")
    records.mkdir()
    lines = (out / "fragments.jsonl").read_text(encoding="utf-8").splitlines()
    kinds = {json.loads(line)["kind"] for line in lines}
    assert {"anti-pattern", "code", "session-summary", "decision"} <= kinds
    for n, line in enumerate(lines):  # check-jsonschema reads JSON documents, not JSON lines
        (records / f"{n:03}.json").write_text(line, encoding="utf-8")
    tool = [str(Path(sys.executable).parent / "check-jsonschema"), "--no-cache"]
    runs = [tool + ["--check-metaschema", *map(str, sorted(shipped.glob("*.schema.json")))],
            tool + ["--schemafile", str(shipped / "bundle-manifest.schema.json"), str(out / "manifest.yaml")],
            tool + ["--schemafile", str(shipped / "bundle-record.schema.json"), *map(str, sorted(records.iterdir()))],
            tool + ["--schemafile", str(shipped / "workspace.schema.json"), str(CONFIG)]]
    for argv in runs:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, (argv[2:4], done.stdout[-2000:], done.stderr[-2000:])
        assert "ok -- validation done" in done.stdout
    # ... and rejects a record the format does not allow
    (records / "bad.json").write_text(json.dumps({**json.loads(lines[0]), "extra": 1}), encoding="utf-8")
    done = subprocess.run(runs[2][:5] + [str(records / "bad.json")], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 1 and "Additional properties" in done.stdout + done.stderr


def test_the_same_state_gives_byte_identical_bundles_with_their_pins(source, tmp_path):
    source.export_bundle("payments-core", tmp_path / "one", principal="marco.bianchi")
    source.export_bundle("payments-core", tmp_path / "two", principal="marco.bianchi")
    for name in ("fragments.jsonl", "manifest.yaml"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    assert "pins:" in (tmp_path / "one" / "manifest.yaml").read_text()


def _bad_bundles(manifest: dict, records: list[dict]) -> dict[str, tuple[dict, list[dict], list[str]]]:
    """case: (manifest, records, what the one-line refusal must hold)."""
    a, b = records[0], records[1]
    content = a["versions"][0]["content"]
    return {
        "unknown record field": (manifest, [{**a, "secret_owner": "x"}, b], ["bundle: nw-a", "unknown field"]),
        "version of wrong type": (manifest, [a, {**b, "version": "1"}],
                                  ["bundle: nw-b", "version", "expected integer"]),
        "no versions": (manifest, [a, {**b, "versions": []}], ["bundle: nw-b", "versions"]),
        "content field unknown": (manifest, [{**a, "versions": [{**a["versions"][0],
                                                                 "content": {**content, "script": "x"}},
                                                                a["versions"][1]]}, b],
                                  ["bundle: nw-a", "versions.0.content", "unknown field"]),
        "bad hash form": (manifest, [a, {**b, "content_hash": "abc"}], ["bundle: nw-b", "content_hash"]),
        "path-like id": (manifest, [a, {**b, "id": "../evil"}], ["bundle record 2", "'../evil'", "wrong form"]),
        "not an object": (manifest, [a, ["nw-b"]], ["bundle record 2", "expected object"]),
        "manifest field unknown": ({**manifest, "owner": "x"}, records, ["manifest.yaml", "unknown field"]),
        "manifest count": ({**manifest, "fragments": 7}, records, ["manifest.yaml", "fragments is 7"]),
        "pin of a fragment not in the bundle": (
            {**manifest, "pins": [{**manifest["pins"][0], "id": "nw-zzz"}]}, records,
            ["manifest.yaml: pins[0]", "nw-zzz is not a fragment of this bundle"]),
        "pin in the future": ({**manifest, "pins": [{**manifest["pins"][0], "pinned_at": "2999-01-01T00:00:00Z"}]},
                              records, ["pins[0]", "pinned_at", "in the future"]),
        "half a set": ({**manifest, "set": {"name": "payments-core", "scope": SET_SCOPE}}, records,
                       ["manifest.yaml", "set"]),
    }


def test_hand_made_invalid_bundles_are_refused_naming_the_record_and_write_nothing(source, tmp_path, cli):
    good = tmp_path / "good"
    source.export_bundle("payments-core", good, principal="marco.bianchi")
    manifest, records = _read(good)
    target = _fresh(tmp_path)
    with Workbench.open(target) as wb:
        before = wb.stats()
    for case, (m, rs, needles) in _bad_bundles(manifest, records).items():
        folder = tmp_path / case.replace(" ", "-")
        folder.mkdir()
        _rewrite(folder, m, rs)
        for dry in ((), ("--dry-run",)):
            r = cli("import-bundle", str(folder), "--as", "priya.raman", *dry, workspace=target)
            assert r.returncode == 2 and "Traceback" not in r.stderr, (case, r.stderr)
            line, = r.stderr.strip().splitlines()
            assert "nothing imported" in line, (case, line)
            for needle in needles:
                assert needle in line, (case, needle, line)
    with Workbench.open(target) as wb:
        assert wb.stats() == before and wb.store.set_names() == [] and wb.store.pins() == []


def test_set_and_pins_round_trip_into_a_fresh_workspace_as_a_lead(source, tmp_path, cli):
    out = tmp_path / "bundle"
    source.export_bundle("payments-core", out, principal="marco.bianchi")
    originals = {(p["fragment_id"], p["scope"]): p for p in source.store.pins()}
    target = _fresh(tmp_path)
    # a dry run says what would be restored and writes nothing
    r = cli("import-bundle", str(out), "--as", "priya.raman", "--dry-run", "--json", workspace=target)
    assert r.returncode == 0, r.stderr
    dry = json.loads(r.stdout)
    assert dry["dry_run"] is True and dry["added"] == 3
    assert (dry["set"]["name"], dry["set"]["status"]) == ("payments-core", "restored")
    assert [(p["id"], p["status"]) for p in dry["pins"]] == [("nw-a", "restored"), ("nw-b", "restored")]
    with Workbench.open(target) as wb:
        assert wb.stats()["events"] == 0 and wb.store.set_names() == [] and wb.store.pins() == []

    r = cli("import-bundle", str(out), "--as", "priya.raman", "--json", workspace=target)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["set"]["status"] == "restored" and report["set"]["claimed_owner"] == "marco.bianchi"
    assert [(p["id"], p["scope"], p["status"]) for p in report["pins"]] == [
        ("nw-a", SET_SCOPE, "restored"), ("nw-b", "org=northwind", "restored")]
    with Workbench.open(target) as wb:
        shown = wb.set_show("payments-core", principal="priya.raman")
        assert shown["owner"] == "priya.raman"  # the importer owns what it restored ...
        assert (shown["scope"], shown["query"], shown["include"]) == (
            {"org": "northwind", "repo": "payments-api", "persona": None, "session": None}, None, ["nw-c"])
        (event,) = wb.store.events(action="set-create")
        assert event["actor"] == "priya.raman" and event["detail"]["claimed_owner"] == "marco.bianchi"  # ... a claim
        restored = {(p["fragment_id"], p["scope"]): p for p in wb.store.pins()}
        assert set(restored) == {("nw-a", SET_SCOPE), ("nw-b", "org=northwind")}
        for key, pin in restored.items():
            assert pin["pinned_by"] == "priya.raman"
            assert (pin["pinned_at"], pin["reason"], pin["until"]) == (
                originals[key]["pinned_at"], originals[key]["reason"], originals[key]["until"])
        events = wb.store.events(action="pin")
        assert sorted((e["fragment_id"], e["actor"], e["detail"]["claimed_by"]) for e in events) == [
            ("nw-a", "priya.raman", "marco.bianchi"), ("nw-b", "priya.raman", "priya.raman")]
        # agents in the set's scope get the restored pins, oldest first as they were
        assert wb.applicable_pins(wb.principal("marco.bianchi"), Scope.parse(SET_SCOPE), utcnow()) == ["nw-b", "nw-a"]
        stats = wb.stats()
    # importing again changes nothing: the fragments, the set and the pins are already here
    r = cli("import-bundle", str(out), "--as", "priya.raman", "--json", workspace=target)
    again = json.loads(r.stdout)
    assert (again["added"], again["unchanged"], again["set"]["status"]) == (0, 3, "unchanged")
    assert [p["status"] for p in again["pins"]] == ["unchanged", "unchanged"]
    with Workbench.open(target) as wb:
        assert wb.stats() == {**stats, "events": stats["events"] + 1}  # only the import itself is recorded


def test_the_restored_set_keeps_hand_picks_that_exist_here(source, tmp_path):
    out = tmp_path / "bundle"
    source.export_bundle("payments-core", out, principal="marco.bianchi")
    with Workbench.open(_fresh(tmp_path)) as wb:
        report = wb.import_bundle(out, actor="priya.raman").to_dict()
        shown = wb.set_show("payments-core", principal="priya.raman")
    # nw-c came with the bundle; nw-d (excluded by hand) was not in it and does not exist here
    assert shown["include"] == ["nw-c"] and report["set"]["include"] == ["nw-c"]
    assert report["set"]["exclude"] == [] and report["set"]["not_restored"] == ["nw-d"]
    assert [f["id"] for f in shown["fragments"]] == ["nw-a", "nw-b", "nw-c"]



def test_a_picked_set_round_trips_and_an_older_bundle_without_picked_still_imports(source, tmp_path):
    """``picked`` travels in the manifest: the restored set holds exactly its hand includes. A
    bundle written before the field existed (no ``picked``) is valid and restores a scope-wide set."""
    import shutil

    source.set_create("picked-core", scope=SET_SCOPE, actor="marco.bianchi", picked=True)
    source.set_change("picked-core", "nw-b", include=True, actor="marco.bianchi")
    out = tmp_path / "bundle"
    source.export_bundle("picked-core", out, principal="marco.bianchi")
    manifest, records = _read(out)
    _validator("bundle-manifest").validate(manifest)
    assert manifest["set"]["picked"] is True and [r["id"] for r in records] == ["nw-b"]
    with Workbench.open(_fresh(tmp_path)) as wb:
        report = wb.import_bundle(out, actor="priya.raman").to_dict()
        assert report["set"]["status"] == "restored" and report["set"]["picked"] is True
        shown = wb.set_show("picked-core", principal="priya.raman")
        assert shown["picked"] is True and [f["id"] for f in shown["fragments"]] == ["nw-b"]
        assert wb.import_bundle(out, actor="priya.raman").to_dict()["set"]["status"] == "unchanged"
    older = tmp_path / "older"
    shutil.copytree(out, older)
    del manifest["set"]["picked"]
    (older / "manifest.yaml").write_text(yaml.safe_dump(manifest), encoding="utf-8")
    _validator("bundle-manifest").validate(manifest)
    with Workbench.open(_fresh(tmp_path, "old")) as wb:
        assert not wb.import_bundle(older, actor="priya.raman").to_dict()["set"]["picked"]
        assert wb.set_show("picked-core", principal="priya.raman")["picked"] is False
    with Workbench.open(_fresh(tmp_path, "mixed")) as wb:   # a picked set with a query is not restored
        manifest["set"].update(picked=True, query="card numbers")
        (older / "manifest.yaml").write_text(yaml.safe_dump(manifest), encoding="utf-8")
        report = wb.import_bundle(older, actor="priya.raman").to_dict()
        assert report["set"]["status"] == "skipped" and report["added"] == 1 and wb.store.set_names() == []

def test_pins_are_skipped_for_an_importer_who_does_not_lead_their_scope(source, tmp_path):
    out = tmp_path / "bundle"
    source.export_bundle("payments-core", out, principal="marco.bianchi")
    with Workbench.open(_fresh(tmp_path)) as wb:
        # marco.bianchi leads payments-api, not the org: one pin restored, the org-wide one reported
        report = wb.import_bundle(out, actor="marco.bianchi").to_dict()
        assert report["added"] == 3 and report["set"]["status"] == "restored"
        status = {p["id"]: (p["status"], p["message"]) for p in report["pins"]}
        assert status["nw-a"] == ("restored", None)
        assert status["nw-b"][0] == "skipped" and "not a tech lead of org=northwind" in status["nw-b"][1]
        assert [(p["fragment_id"], p["pinned_by"]) for p in wb.store.pins()] == [("nw-a", "marco.bianchi")]
        assert [e["fragment_id"] for e in wb.store.events(action="pin")] == ["nw-a"]
    with Workbench.open(_fresh(tmp_path, "other")) as wb:
        # sofia.okafor sees every fragment and the set's scope, but leads only ledger: no pin at all
        report = wb.import_bundle(out, actor="sofia.okafor").to_dict()
        assert report["added"] == 3 and report["set"]["status"] == "restored"
        assert [p["status"] for p in report["pins"]] == ["skipped", "skipped"]
        assert all("sofia.okafor is not a tech lead" in p["message"] for p in report["pins"])
        assert wb.store.pins() == [] and wb.store.events(action="pin") == []
        assert wb.set_show("payments-core", principal="sofia.okafor")["owner"] == "sofia.okafor"


def test_an_existing_set_is_never_overwritten(source, tmp_path):
    out = tmp_path / "bundle"
    source.export_bundle("payments-core", out, principal="marco.bianchi")
    # a set of that name with another definition: a conflict, reported; the fragments still come in
    with Workbench.open(_fresh(tmp_path)) as wb:
        wb.set_create("payments-core", scope="org=northwind", actor="sofia.okafor")
        report = wb.import_bundle(out, actor="priya.raman").to_dict()
        assert report["added"] == 3 and report["set"]["status"] == "conflict"
        assert "owner sofia.okafor" in report["set"]["message"] and "another scope, include" in report["set"]["message"]
        [kept] = wb.store.sets_named("payments-core")
        assert (kept["owner"], kept["scope"], kept["query"], kept["include"]) == (
            "sofia.okafor", "org=northwind", None, [])
        assert len(wb.store.events(action="set-create")) == 1
    # a set of that name the importer may not even read is as if it were not there (sets are named
    # within their scope): the bundle's set is restored exactly as into a workspace without it
    with Workbench.open(_fresh(tmp_path, "free")) as wb:
        free = wb.import_bundle(out, actor="marco.bianchi").to_dict()
    with Workbench.open(_fresh(tmp_path, "other")) as wb:
        wb.set_create("payments-core", scope="org=tidewater", actor="lena.fischer")
        report = wb.import_bundle(out, actor="marco.bianchi").to_dict()
        assert report["set"] == free["set"] and report["set"]["status"] == "restored"
        assert "lena" not in json.dumps(report) and "tidewater" not in json.dumps(report)
        assert [(s["owner"], s["scope"]) for s in wb.store.sets_named("payments-core")] == [
            ("marco.bianchi", free["set"]["scope"]), ("lena.fischer", "org=tidewater")]
        assert wb.set_show("payments-core", principal="marco.bianchi")["owner"] == "marco.bianchi"
        assert wb.set_show("payments-core", principal="lena.fischer")["owner"] == "lena.fischer"


def test_an_expired_pin_and_a_pin_outside_the_workspace_are_skipped(source, tmp_path):
    out = tmp_path / "bundle"
    source.export_bundle("payments-core", out, principal="marco.bianchi")
    manifest, records = _read(out)
    manifest["pins"][0]["until"] = (utcnow() - timedelta(days=1)).isoformat() + "Z"
    manifest["pins"].append({**manifest["pins"][1], "scope": "org=northwind,repo=nowhere"})
    _rewrite(out, manifest, records)
    with Workbench.open(_fresh(tmp_path)) as wb:
        report = wb.import_bundle(out, actor="priya.raman").to_dict()
        status = {(p["id"], p["scope"]): (p["status"], p["message"]) for p in report["pins"]}
        assert status[("nw-a", SET_SCOPE)][0] == "skipped" and "expired" in status[("nw-a", SET_SCOPE)][1]
        assert status[("nw-b", "org=northwind")] == ("restored", None)
        assert status[("nw-b", "org=northwind,repo=nowhere")][0] == "skipped"
        assert "unknown repo 'nowhere'" in status[("nw-b", "org=northwind,repo=nowhere")][1]
        assert [(p["fragment_id"], p["scope"]) for p in wb.store.pins()] == [("nw-b", "org=northwind")]
