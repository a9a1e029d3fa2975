"""Knowledge CI checks content, not only ranks (issue 28): on a small team's knowledge base
(tests/data/team_kb: a university's research computing group and its library, ten fragments),
built from its files as a CI job builds it, on DuckDB and PostgreSQL.

Each case the issue met passed `workbench check` before: a runbook cut to "Ask in #platform" under
a new title, a personal-data policy rewritten about log levels (both still rank #1 and are still
served), an ADR pushed from #1 to #3 (a warning only), a query that starts being answered, and a
deleted fragment named "1 fragment you may not see" to a principal who sees every org."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import BACKENDS, ROOT, config_for, run_cli

TEAM = ROOT / "tests" / "data" / "team_kb"
OWNER = "ana.costa"


def _file(src: Path, fid: str) -> Path:
    return next((src / "fragments").rglob(f"{fid}.md"))


def _front(path: Path) -> str:
    return path.read_text(encoding="utf-8").split("---\n")[1]


def _note(src: Path, fid: str, title: str, body: str) -> None:
    (src / "fragments" / "rc" / f"{fid}.md").write_text(
        f'---\nid: {fid}\nkind: note\ntitle: "{title}"\nscope: {{org: rc}}\nowner: {OWNER}\n---\n{body}\n')


def gut(src: Path) -> None:
    """The three gutting cases of the issue, in one commit."""
    runbook = _file(src, "rc-rb-restore-backup")   # cut to one line, under a new title
    runbook.write_text("---\n" + _front(runbook).replace("Restoring project files from the nightly backup",
                                                         "Getting deleted project files back")
                       + "---\nAsk in #platform.\n")
    policy = _file(src, "rc-pol-personal-data-logs")  # rewritten about something else, title kept
    policy.write_text("---\n" + _front(policy) + "---\nLog levels: use DEBUG while developing, INFO for normal "
                      "job progress, WARNING for problems a job recovers from and ERROR for failures. Job logs go "
                      "to the output file Slurm names.\n")
    # two notes that outrank the ADR answering q-fairshare: #1 -> #3, still in the top 3
    _note(src, "rc-note-queue-0", "Why jobs wait longer in the queue than a colleague's jobs",
          "Jobs wait in the queue longer than a colleague's jobs when the cluster is full; jobs wait for free "
          "nodes. Check the queue with squeue.")
    _note(src, "rc-note-queue-1", "Queue waiting times for jobs",
          "My jobs wait in the queue longer: waiting jobs, queue length, colleague's jobs start first when they "
          "ask for fewer nodes.")


def remove(src: Path) -> None:
    """A fragment file deleted, one archived, one moved to another org, and an answer to a question
    the corpus did not answer."""
    _file(src, "rc-rb-restore-backup").unlink()
    scratch = _file(src, "rc-pol-scratch-retention")
    scratch.write_text(scratch.read_text().replace("scope: {org: rc}", "scope: {org: lib}", 1)
                       .replace(f"owner: {OWNER}", "owner: ben.okoro", 1))
    drain = _file(src, "rc-rb-gpu-drain")
    drain.write_text(drain.read_text().replace("tags:", "status: archived\ntags:", 1))
    _note(src, "rc-note-cafeteria", "Cafeteria lunch menu",
          "The cafeteria lunch menu on Friday is fish and chips, with a vegetarian curry.")


def _build(folder: Path, backend: str, request, change=None) -> Path:
    from workbench import Workbench

    src = folder / "src"
    shutil.copytree(TEAM, src)
    if change:
        change(src)
    config = config_for(backend, request, folder / "config", src / "workbench.yaml")
    with Workbench.init(folder / "ws", config=config) as wb:
        report = wb.ingest([src / "fragments"], actor="ci.bot")
        assert not report.errors, report.errors
    return folder / "ws"


@pytest.fixture(scope="module", params=BACKENDS)
def team(request, tmp_path_factory):
    """The team's knowledge base as committed (with its baseline), gutted, and with a fragment
    deleted and another archived: three workspaces built from files, per backend."""
    from workbench import Workbench

    root = tmp_path_factory.mktemp(f"team-{request.param}")
    base = _build(root / "base", request.param, request)
    baseline = root / "golden.baseline.json"
    with Workbench.open(base) as wb:
        report = wb.check(TEAM / "golden.yaml", baseline, update_baseline=True)
        assert report.exit_code == 0 and baseline.is_file()
    return {"backend": request.param, "base": base, "baseline": baseline, "gutted": _build(root / "gutted", request.param, request, gut),
            "removed": _build(root / "removed", request.param, request, remove)}


def _above_the_store(team: dict) -> None:
    """Logic above the store (golden files, assertions, the report): its DuckDB run covers it."""
    if team["backend"] != "duckdb":
        pytest.skip("decided above the store: the DuckDB variant covers it")


def _check(ws: Path, baseline: Path, *args: str, golden: Path = TEAM / "golden.yaml", **kw):
    return run_cli("check", "--golden", str(golden), "--baseline", str(baseline), *args, workspace=ws, **kw)


def _regressions(r) -> dict[str, dict]:
    assert "Traceback" not in r.stderr, r.stderr
    return {g["id"]: g for g in json.loads(r.stdout)["regressions"]}


def test_the_baseline_records_what_it_needs_to_judge_content(team):
    data = json.loads(team["baseline"].read_text())
    assert data["version"] == 2
    restore = next(q for q in data["queries"] if q["id"] == "q-restore")
    assert restore["abstained"] is False and restore["served"][0] == "rc-rb-restore-backup"
    lunch = next(q for q in data["queries"] if q["id"] == "q-lunch")
    assert lunch["abstained"] is True and lunch["served"] == []
    record = data["fragments"]["rc-rb-restore-backup"]
    assert record["owner"] == OWNER and record["scope"] == "org=rc,repo=cluster" and record["status"] == "active"
    assert record["words"] > 80 and len(record["sketch"]) == 8 * 32
    with_sketch = {fid for fid, r in data["fragments"].items() if "sketch" in r}
    assert with_sketch == {fid for q in data["queries"] for fid in q["relevant"]}  # only answers are sketched
    r = _check(team["base"], team["baseline"])
    assert r.returncode == 0 and r.stdout.splitlines()[-1].startswith("check passed in 7 queries"), r.stdout


def test_a_gutted_runbook_a_rewritten_policy_and_an_adr_pushed_to_3_fail_the_check(team):
    r = _check(team["gutted"], team["baseline"], "--json")
    assert r.returncode == 1, r.stdout + r.stderr
    found = _regressions(r)
    assert set(found) == {"q-restore", "q-pii", "q-fairshare"}, found

    # the runbook is still #1 and still served, but its text is gone
    restore = found["q-restore"]
    assert restore["reasons"] == ["a relevant fragment rewritten (its text at the baseline mostly gone)"]
    [move] = restore["moved"]
    assert (move["id"], move["change"], move["owner"], move["before"], move["after"]) == (
        "rc-rb-restore-backup", "rewritten", OWNER, 1, 1)
    assert "words" in move["detail"] and "→ 3 words" in move["detail"]
    # the policy keeps its title and rank; its body is about something else
    pii = found["q-pii"]
    assert "a relevant fragment rewritten (its text at the baseline mostly gone)" in pii["reasons"]
    assert any(m["id"] == "rc-pol-personal-data-logs" and m["change"] == "rewritten" and m["after"] == 1
               for m in pii["moved"])
    # the ADR fell from #1 to #3: still in the top 3, no longer first
    adr = found["q-fairshare"]
    assert adr["reasons"] == ["first relevant hit #1 → #3"]
    assert {(m["id"], m["change"]) for m in adr["moved"]} >= {("rc-adr-0004-fairshare", "demoted"),
                                                             ("rc-note-queue-0", "entered")}

    text = _check(team["gutted"], team["baseline"]).stdout
    line = next(x for x in text.splitlines() if x.startswith("REGRESSION q-restore "))
    assert "rewritten rc-rb-restore-backup (about " in line and f"#1 → #1, owner {OWNER})" in line
    assert text.splitlines()[-1].startswith("check FAILED: 3 regressions in 7 queries")


def test_deleted_and_archived_answers_and_abstention_changes_fail_naming_what_the_reader_may_see(team):
    ws, baseline = team["removed"], team["baseline"]
    found = _regressions(_check(ws, baseline, "--json", "--as", "ci.bot"))
    assert set(found) == {"q-restore", "q-gpu", "q-lunch", "q-scratch"}, found
    restore = found["q-restore"]
    assert "a relevant fragment deleted" in restore["reasons"]
    deleted = next(m for m in restore["moved"] if m["id"] == "rc-rb-restore-backup")
    assert (deleted["change"], deleted["owner"], deleted["before"]) == ("deleted", OWNER, 1)
    assert restore["hidden_moves"] == 0   # ci.bot sees every org: nothing is "you may not see"
    gpu = found["q-gpu"]
    assert "a relevant fragment archived" in gpu["reasons"]
    # nothing else in the corpus is about GPUs: with its runbook archived, context serves nothing
    assert "started abstaining: context serves nothing (it served a fragment at the baseline)" in gpu["reasons"]
    assert any(m["id"] == "rc-rb-gpu-drain" and m["change"] == "archived" for m in gpu["moved"])
    scratch = found["q-scratch"]
    assert f"a relevant fragment no longer visible to {OWNER}" in scratch["reasons"]
    assert any(m["id"] == "rc-pol-scratch-retention" and m["change"] == "out of scope" for m in scratch["moved"])
    lunch = found["q-lunch"]
    assert lunch["reasons"] == ["stopped abstaining: context serves a fragment"]
    assert ("rc-note-cafeteria", "served", OWNER) in [(m["id"], m["change"], m["owner"]) for m in lunch["moved"]]

    text = _check(ws, baseline, "--as", "ci.bot").stdout
    assert f"deleted rc-rb-restore-backup (was #1, owner {OWNER})" in text and "you may not see" not in text

    # a member of rc who works in no repository sees the query, not the repository's runbook
    guest = _regressions(_check(ws, baseline, "--json", "--as", "dana.guest"))
    assert not any(m["id"] == "rc-rb-restore-backup" for m in guest["q-restore"]["moved"])
    assert guest["q-restore"]["hidden_moves"] >= 1
    text = _check(ws, baseline, "--as", "dana.guest").stdout
    assert "rc-rb-restore-backup" not in text and "rc-rb-gpu-drain" not in text
    assert "you may not see" in text
    # the library's lead sees none of rc's queries: they are only counted, and the verdict is the same
    r = _check(ws, baseline, "--json", "--as", "ben.okoro")
    data = json.loads(r.stdout)
    assert r.returncode == 1 and data["regressions"] == [] and data["hidden"]["regressions"] == 4
    assert not any(name in r.stdout for name in ("q-restore", "q-gpu", "q-lunch", "q-scratch", "rc-rb-restore-backup",
                                                 "rc-rb-gpu-drain", "rc-note-cafeteria"))


def test_golden_assertions_hold_then_fail_and_no_baseline_accepts_them(team, tmp_path):
    _above_the_store(team)
    from workbench.safeyaml import load

    queries = load((TEAM / "golden.yaml").read_text(), file="golden.yaml")["queries"]
    by_id = {q["id"]: q for q in queries}
    by_id["q-restore"].update(must_rank=1, must_contain=["rc-restore get", "staging folder"])
    by_id["q-pii"].update(must_contain="pseudonymous ids", expect="answer")
    by_id["q-lunch"]["expect"] = "abstain"
    golden = tmp_path / "golden.yaml"
    golden.write_text(json.dumps({"queries": queries}))
    baseline = tmp_path / "golden.baseline.json"

    r = _check(team["base"], baseline, "--update-baseline", golden=golden)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _check(team["base"], baseline, golden=golden).returncode == 0

    r = _check(team["gutted"], baseline, "--json", golden=golden)
    found = _regressions(r)
    lacks = 'must_contain: the served context lacks "rc-restore get", "staging folder"'
    assert found["q-restore"]["failed"] == [lacks]
    assert found["q-pii"]["failed"] == ['must_contain: the served context lacks "pseudonymous ids"']
    assert any(m["id"] == "rc-pol-personal-data-logs" and m["owner"] == OWNER for m in found["q-pii"]["moved"])
    # accepting the gutted content as the new baseline does not make the assertions hold
    r = _check(team["gutted"], baseline, "--update-baseline", golden=golden)
    assert r.returncode == 1 and "2 queries fail their golden assertions" in r.stdout.splitlines()[-1], r.stdout

    r = _check(team["removed"], baseline, "--json", golden=golden)
    found = _regressions(r)
    assert found["q-lunch"]["failed"] == ["expect: abstain, but context serves 1 fragment"]
    assert found["q-restore"]["failed"][0] == "must_rank 1: no relevant fragment in the top 1 (none in the top 100)"


BAD = [({"must_rank": 0}, "must_rank must be a whole number from 1 to 100 (got 0)"),
       ({"must_rank": "3"}, "must_rank must be a whole number"),
       ({"must_rank": True}, "must_rank must be a whole number"),
       ({"must_contain": []}, "must_contain must be a phrase or a list of 1 to 50 phrases"),
       ({"must_contain": ["ok", 3]}, "must_contain must be a phrase"),
       ({"must_contain": "  "}, "must_contain must be a phrase"),
       ({"expect": "maybe"}, "expect must be one of abstain, answer (got 'maybe')"),
       ({"expect": "abstain"}, "expect: abstain is for a query the corpus does not answer"),
       ({"must_rnak": 3}, "unknown key 'must_rnak'")]


def test_bad_assertions_are_one_line_errors_in_check_and_eval(team, tmp_path):
    _above_the_store(team)
    from workbench.safeyaml import load

    golden = tmp_path / "golden.yaml"
    queries = load((TEAM / "golden.yaml").read_text(), file="golden.yaml")["queries"]
    for extra, expected in [*BAD, ({"must_rank": 2, "relevant": []}, "must_rank needs relevant fragments")]:
        golden.write_text(json.dumps({"queries": [dict(queries[0], **extra)]}))
        commands = [("check", "--golden", str(golden), "--update-baseline")]
        if extra == BAD[0][0]:
            commands.append(("eval", "--golden", str(golden)))   # eval loads golden sets the same way
        for command in commands:
            r = run_cli(*command, workspace=team["base"])
            assert r.returncode == 2 and "Traceback" not in r.stderr, (extra, r.stderr)
            assert f"{golden}: queries.0: " in r.stderr and expected in r.stderr, (extra, r.stderr)
    assert not (tmp_path / "golden.baseline.json").exists()


def test_a_baseline_of_format_1_is_still_read_and_says_what_it_cannot_check(team, tmp_path):
    _above_the_store(team)
    data = json.loads(team["baseline"].read_text())
    data["version"] = 1
    del data["fragments"]
    for q in data["queries"]:
        del q["abstained"], q["served"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data))
    r = _check(team["removed"], old)
    assert r.returncode == 1, r.stderr   # the deletion still drops recall
    assert "note: the baseline is of format 1" in r.stdout and "REGRESSION q-lunch" not in r.stdout


# -- the CI examples, in a real git repository --------------------------------------------------------

EXAMPLES = ROOT / "examples" / "ci"


@pytest.mark.process
def test_the_pre_commit_example_checks_deletions_and_renames_and_names_what_was_deleted(team, tmp_path):
    import os
    import subprocess
    import sys

    _above_the_store(team)
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "pre-commit").exists() or shutil.which("git") is None:
        pytest.skip("needs git and pre-commit (pip install -e '.[test]')")
    repo = tmp_path / "kb"
    shutil.copytree(TEAM, repo)
    shutil.copy(team["baseline"], repo / "golden.baseline.json")
    shutil.copy(EXAMPLES / ".pre-commit-config.yaml", repo / ".pre-commit-config.yaml")
    (repo / "ci").mkdir()
    shutil.copy(EXAMPLES / "workbench-check.sh", repo / "ci" / "workbench-check.sh")
    env = {k: v for k, v in os.environ.items() if k not in ("KB_PRINCIPAL", "WORKBENCH_PRINCIPAL")}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", HOME=str(tmp_path / "home"),
               PRE_COMMIT_HOME=str(tmp_path / "pre-commit"), GIT_AUTHOR_NAME="Ana", GIT_AUTHOR_EMAIL="ana@rc.example",
               GIT_COMMITTER_NAME="Ana", GIT_COMMITTER_EMAIL="ana@rc.example", GIT_CONFIG_NOSYSTEM="1")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True, timeout=600, check=False)

    assert run("git", "init", "-q", "-b", "main").returncode == 0
    assert run("git", "add", "-A").returncode == 0
    assert run("git", "commit", "-q", "-m", "the team's knowledge base").returncode == 0
    assert run(str(bin_dir / "pre-commit"), "install").returncode == 0

    (repo / "notes.txt").write_text("not knowledge\n")
    run("git", "add", "notes.txt")
    r = run("git", "commit", "-m", "notes")
    assert r.returncode == 0 and "no knowledge file changed" in r.stdout + r.stderr, r.stdout + r.stderr
    r = run("bash", "ci/workbench-check.sh", "--changed", "HEAD~1")   # as the CI workflow asks
    assert r.returncode == 0 and "no knowledge file changed since HEAD~1" in r.stdout, r.stdout + r.stderr

    # a commit that only deletes a fragment file is checked (pre-commit's file filter never saw it),
    # as the config's default principal (ci.bot, every org): the deleted fragment is named
    assert run("git", "rm", "-q", "fragments/rc/rc-rb-restore-backup.md").returncode == 0
    r = run("git", "commit", "-m", "drop the restore runbook")
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "REGRESSION q-restore " in out, out
    assert f"deleted rc-rb-restore-backup (was #1, owner {OWNER})" in out and "you may not see" not in out
    assert run("git", "reset", "-q", "--hard", "HEAD").returncode == 0

    # a rename out of fragments/ is a deletion from the knowledge base
    (repo / "attic").mkdir()
    assert run("git", "mv", "fragments/rc/rc-rb-gpu-drain.md", "attic/rc-rb-gpu-drain.md").returncode == 0
    r = run("git", "commit", "-m", "move the GPU runbook away")
    out = r.stdout + r.stderr
    assert r.returncode != 0 and f"deleted rc-rb-gpu-drain (was #1, owner {OWNER})" in out, out


def test_the_body_sketch_tells_an_edit_from_a_rewrite():
    from workbench.rank.retention import SKETCH, is_sketch, retained, sketch

    body = (TEAM / "fragments" / "rc" / "rc-rb-restore-backup.md").read_text().split("---\n", 2)[2]
    s = sketch(body)
    assert is_sketch(s) and len(s) == 8 * SKETCH and not is_sketch(s + "zz")
    assert retained(s, body) == 1.0
    assert retained(s, body + "\nAlso: restores of home directories go through the portal.\n") == 1.0  # grown
    assert retained(s, body.replace("90 days", "120 days").replace("ticket", "request")) >= 0.8  # edited
    assert retained(s, "Ask in #platform.") == 0.0                                                # gutted
    assert retained(s, "Log levels: use DEBUG while developing and INFO in production.") == 0.0   # rewritten
    half = body[: len(body) // 2]
    assert 0.2 <= retained(s, half) <= 0.8                                                          # cut in half
    assert retained(sketch("Ask in #platform."), "Ask in #platform, or page the on-call.") == 1.0  # short: exact
    assert sketch("") == "" and retained("", "anything") == 1.0
