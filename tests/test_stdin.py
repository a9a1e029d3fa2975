"""'-' reads standard input wherever a command reads a file (issue 28: it worked for `edit` and
`propose` only): `ingest -` (one fragment file, named <stdin>), `eval --golden -`, `check --golden -`
and `--baseline -`, `edit --golden -`, `init --config -`. Standard input is read once: two options
naming it are refused."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from conftest import CONFIG, SAMPLE, fragment_text

from workbench import Workbench

GOLDEN = (SAMPLE / "golden.yaml").read_text(encoding="utf-8")
SMALL = yaml.safe_dump({"queries": yaml.safe_load(GOLDEN)["queries"][:4]})


def test_ingest_reads_one_fragment_file_from_stdin_on_both_backends(backend_config, tmp_path, cli):
    root = tmp_path / "ws"
    Workbench.init(root, config=backend_config).close()
    text = fragment_text("nw-note-from-stdin", body="Cache TTLs are five minutes.")
    r = cli("ingest", "-", "--as", "marco.bianchi", "--json", workspace=root, input=text)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["added"] == 1
    again = cli("ingest", "-", "--as", "marco.bianchi", "--json", workspace=root, input=text)
    assert json.loads(again.stdout)["unchanged"] == 1
    nameless = "---\nkind: note\ntitle: No id\nscope: {org: northwind}\nowner: marco.bianchi\n---\n\nBody.\n"
    bad = cli("ingest", "-", "--as", "marco.bianchi", "--json", workspace=root, input=nameless)
    assert bad.returncode == 2 and json.loads(bad.stdout)["errors"][0]["file"] == "<stdin>"
    with Workbench.open(root) as wb:
        assert wb.get("nw-note-from-stdin", principal="marco.bianchi").body == "Cache TTLs are five minutes."
        assert wb.store.ingested_files() == {}   # no file to compare with next time
    twice = cli("ingest", "-", "-", "--as", "marco.bianchi", workspace=root, input=text)
    assert twice.returncode == 2 and "standard input ('-') can be read once" in twice.stderr


def test_eval_and_check_read_the_golden_set_from_stdin(sample_workspace, cli):
    by_file = cli("eval", "--golden", str(SAMPLE / "golden.yaml"), "--pipeline", "bm25", "--json",
                  workspace=sample_workspace)
    piped = cli("eval", "--golden", "-", "--pipeline", "bm25", "--json", workspace=sample_workspace, input=GOLDEN)
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout) == json.loads(by_file.stdout)
    written = cli("check", "--update-baseline", "--json", workspace=sample_workspace)
    assert written.returncode == 0, written.stderr
    checked = cli("check", "--golden", "-", "--json", workspace=sample_workspace, input=GOLDEN)
    assert checked.returncode == 0, checked.stderr        # compared with the workspace golden set's baseline
    data = json.loads(checked.stdout)
    assert data["compared"] == data["queries"] > 0 and not data["regressions"]
    baseline = json.loads(written.stdout)["baseline"]
    from_stdin = cli("check", "--baseline", "-", "--json", workspace=sample_workspace,
                     input=Path(baseline).read_text(encoding="utf-8"))
    assert from_stdin.returncode == 0 and json.loads(from_stdin.stdout)["compared"] == data["compared"]
    refused = cli("check", "--baseline", "-", "--update-baseline", workspace=sample_workspace, input="{}")
    assert refused.returncode == 2 and "--update-baseline writes the baseline" in refused.stderr


def test_edit_impact_reads_its_golden_set_from_stdin_and_one_option_at_most_names_it(sample_workspace, cli,
                                                                                     tmp_path):
    fid = "nw-adr-0007-idempotency-keys"
    body = tmp_path / "body.md"
    body.write_text("Every payment mutation carries an idempotency key.\n", encoding="utf-8")
    r = cli("edit", fid, "--file", str(body), "--dry-run", "--golden", "-", "--as", "marco.bianchi", "--json",
            workspace=sample_workspace, input=SMALL)
    assert r.returncode == 0, r.stderr
    impact = json.loads(r.stdout)["impact"]
    assert impact["considered"] <= 4 and impact["golden"].endswith("golden.yaml")   # the 4 piped queries
    both = cli("edit", fid, "--file", "-", "--golden", "-", "--dry-run", "--as", "marco.bianchi",
               workspace=sample_workspace, input="x")
    assert both.returncode == 2 and "--file, --golden" in both.stderr


def test_init_reads_its_config_from_stdin_with_the_golden_set_beside_the_current_folder(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(SAMPLE)
    r = cli("init", "--config", "-", "--json", workspace=tmp_path / "new", input=CONFIG.read_text(encoding="utf-8"))
    assert r.returncode == 0, r.stderr
    with Workbench.open(tmp_path / "new") as wb:
        assert wb.config.name == yaml.safe_load(CONFIG.read_text(encoding="utf-8"))["name"]
        assert wb.golden_path().read_text(encoding="utf-8") == GOLDEN
