"""Hostile fragment files are per-file errors: they never cost data, memory or time.

Each hostile file is a real file next to a good one, ingested through the Python API:
the good file is stored, the hostile one is reported (file and a clear message) and
nothing else changes. Resource-exhaustion inputs also carry a generous time bound: that
is a correctness check (an alias bomb once took the whole ingest down), not a speed test.
"""

from __future__ import annotations

import os
import time
from datetime import datetime
from pathlib import Path

import pytest
from conftest import fragment_text, run_cli, write_fragment

from workbench import safeyaml
from workbench.errors import ValidationError
from workbench.ingest.files import MAX_FILE_BYTES, check_fragment_id, collect, parse_fragment, read_capped

ACTOR = "priya.raman"
BOUND_S = 5.0  # generous: every hostile input is refused in milliseconds


def front(fid: str, extra: str = "", *, body: str = "Body text.") -> str:
    return fragment_text(fid, extra=extra, body=body)


def alias_bomb(levels: int = 9) -> str:
    lines = ['lol0: &lol0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"lol{i}: &lol{i} [{', '.join([f'*lol{i - 1}'] * 9)}]" for i in range(1, levels + 1)]
    return front("nw-bomb", "\n".join(lines) + "\n")


def with_id(yaml_id: str) -> str:
    return front("nw-x").replace("id: nw-x\n", f"id: {yaml_id}\n")


def many_keys(n: int = 3000) -> str:
    return front("nw-keys", "".join(f"k{i}: {i}\n" for i in range(n)))


HOSTILE = {
    "alias-bomb": (alias_bomb(), "anchors and aliases are not allowed"),
    "one-alias": (front("nw-alias", "tags: &t [a]\nlinks: *t\n"), "line 7: YAML anchors and aliases are not allowed"),
    "duplicate-key": (front("nw-dup", "title: other\n"), "line 7: duplicate key 'title' (first on line 4)"),
    "feb-30": (front("nw-d1", "created: 2025-02-30\n"), "created: 2025-02-30 is not a real date"),
    "month-13": (front("nw-d2", "created: 2025-13-01\n"), "created: 2025-13-01 is not a real date"),
    "feb-29-2025": (front("nw-d3", "updated: 2025-02-29\n"), "updated: 2025-02-29 is not a real date"),
    "year-0": (front("nw-d4", "created: 0000-01-01\n"), "created: 0000-01-01 is outside the years 1970..9999"),
    "year-10000": (front("nw-d5", "created: 10000-01-01\n"), "created: 10000-01-01 is outside the years"),
    "garbage-date": (front("nw-d6", "verified: last tuesday\n"), "verified: 'last tuesday' is not a date"),
    "future-updated": (front("nw-d7", "updated: 2099-01-01\n"), "updated: 2099-01-01 is in the future"),
    "verified-before-created": (front("nw-d8", "created: 2025-03-01\nverified: 2025-02-01\n"),
                                "verified: is earlier than created"),
    "updated-before-created": (front("nw-d9", "created: 2025-03-01\nupdated: 2025-02-01\n"),
                               "updated: is earlier than created"),
    "id-dotdot-slash": (front("../x"), "id: '../x' has the wrong form"),
    "id-slash": (front("a/b"), "id: 'a/b' has the wrong form"),
    "id-dotdot": (with_id('".."'), "id: '..' has the wrong form"),
    "id-inner-dotdot": (front("x..y"), "id: 'x..y' has the wrong form"),
    "id-300": (front("a" * 300), "(300 characters) has the wrong form"),
    "id-upper": (front("NW-Upper"), "id: 'NW-Upper' has the wrong form"),
    "id-backslash": (with_id("'a\\b'"), "id: 'a\\\\b' has the wrong form"),
    "deep-flow": (front("nw-deep", "tags: " + "[" * 10_000 + "]" * 10_000 + "\n"), "nesting depth"),
    "deep-block": (front("nw-deep2", "".join("  " * i + f"k{i}:\n" for i in range(200)) + "  " * 200 + "v\n"),
                   "nested too deeply (nesting depth over 32)"),
    "front-matter-1mb": (front("nw-big", "why: " + "x" * 1_000_000 + "\n"), "YAML is too large"),
    "many-keys": (many_keys(), "too many values (more than 5000)"),
    "huge-int": (front("nw-int", "size: " + "9" * 5000 + "\n"), "value cannot be converted"),
    "python-tag": (front("nw-tag", "title: !!python/object/apply:os.system [ls]\n"),
                   "YAML tag !!python/object/apply:os.system is not allowed"),
    "merge-key": (front("nw-merge", "<<: {owner: lena.fischer}\n"), "merge keys (<<) are not allowed"),
    "long-title": (front("nw-title").replace('title: "Title of nw-title"', "title: " + "t" * 300),
                   "is too long (300 characters, at most 200)"),
    "many-tags": (front("nw-tags", "tags: [" + ", ".join(f"t{i}" for i in range(300)) + "]\n"),
                  "tags: has too many items (300, at most 100)"),
}


def ingest_timed(wb, folder: Path):
    start = time.perf_counter()
    report = wb.ingest([folder], actor=ACTOR)
    return report, time.perf_counter() - start


def assert_only_good_stored(wb, report, bad_name: str, expected: str) -> None:
    assert report.added == ["nw-good"], (report.added, report.errors)
    assert len(report.errors) == 1, report.errors
    error = report.errors[0]
    assert error["file"].endswith(bad_name)
    assert expected in error["message"], error["message"]
    assert "\n" not in error["message"] and len(error["message"]) < 400, error["message"]
    assert wb.stats()["fragments"] == 1


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_file_is_a_per_file_error(wb, tmp_path, case):
    text, expected = HOSTILE[case]
    src = tmp_path / "in"
    write_fragment(src, "nw-good")
    (src / f"{case}.md").write_text(text, encoding="utf-8")
    report, elapsed = ingest_timed(wb, src)
    assert_only_good_stored(wb, report, f"{case}.md", expected)
    if case == "alias-bomb":  # once: minutes and all memory; the whole ingest now takes well under a second
        assert elapsed < BOUND_S


def test_alias_bomb_is_refused_before_any_expansion():
    start = time.perf_counter()
    with pytest.raises(ValidationError, match="anchors and aliases are not allowed"):
        parse_fragment(alias_bomb(9), file="bomb.md")
    assert time.perf_counter() - start < BOUND_S


@pytest.mark.parametrize("text", [
    "x: " + "[" * 10_000 + "]" * 10_000,                       # libyaml's own limit, or ours
    "".join("  " * i + "-\n" for i in range(5_000)),           # block nesting: ours
    "".join(f"k{i}: {i}\n" for i in range(200_000)),           # too many values, under no size cap
    "x: [" + ", ".join(["1"] * 300_000) + "]",
], ids=["deep-flow", "deep-block", "many-keys", "many-items"])
def test_safeyaml_refuses_resource_exhaustion(text):
    start = time.perf_counter()
    with pytest.raises(ValidationError, match="nest|too many values"):
        safeyaml.load(text, file="x.yaml", max_bytes=64 * 1024 * 1024)
    assert time.perf_counter() - start < BOUND_S


def test_safeyaml_keeps_dates_as_strings_and_names_file_and_line():
    data = safeyaml.load("a: 2025-02-30\nb: 2025-01-01T10:00:00Z\nc: [1, 'x', null, true]\n", file="f.yaml")
    assert data == {"a": "2025-02-30", "b": "2025-01-01T10:00:00Z", "c": [1, "x", None, True]}
    with pytest.raises(ValidationError) as e:
        safeyaml.load("a: 1\nb: [\n", file="f.yaml", first_line=10)
    assert str(e.value).startswith("f.yaml: malformed YAML (line 12:")
    with pytest.raises(ValidationError, match=r"f.yaml: line 3: duplicate key 'a' \(first on line 2\)"):
        safeyaml.load("a: 1\na: 2\n", file="f.yaml", first_line=2)
    with pytest.raises(ValidationError, match="YAML is too large"):
        safeyaml.load("a: " + "x" * 100, file="f.yaml", max_bytes=50)


def test_now_bounds_future_timestamps():
    text = front("nw-a", "created: 2025-01-01\nupdated: 2025-06-01T10:00:00+02:00\n")
    parsed = parse_fragment(text, file="a.md", now=datetime(2025, 6, 1))
    assert parsed.updated == datetime(2025, 6, 1, 8)
    parse_fragment(text, file="a.md", now=datetime(2025, 5, 31, 9))  # within a day of clock skew
    with pytest.raises(ValidationError, match="updated: 2025-06-01T10:00:00\\+02:00 is in the future"):
        parse_fragment(text, file="a.md", now=datetime(2025, 5, 30))


def test_fragment_id_rule():
    good = ["a", "nw-adr-0007-idempotency-keys", "0.1_x-y", "a" * 128,
            "git.payments-api.docs-runbook-md.rollback.1a2b3c4d",
            "git." + "r" * 24 + "." + "p" * 48 + "." + "s" * 32 + "." + "0" * 12]
    for fid in good:
        assert check_fragment_id(fid) == fid
    for fid in ["", ".", "..", "../x", "a/b", "a\\b", "x..y", "-a", "_a", ".a", "A", "a b", "a" * 129, "é"]:
        with pytest.raises(ValidationError, match="id: .* has the wrong form"):
            check_fragment_id(fid, file="f.md")
    for path in sorted((Path(__file__).parent.parent / "sample_corpus" / "fragments").rglob("*.md")):
        check_fragment_id(parse_fragment(path.read_text(encoding="utf-8"), file=str(path)).id)


def test_schema_refuses_what_check_fragment_id_refuses():
    from workbench.schemas import validate

    base = {"kind": "note", "title": "t", "scope": {"org": "northwind"}, "owner": "marco.bianchi"}
    validate("fragment", {**base, "id": "git.payments-api.docs-runbook-md.rollback.1a2b3c4d"})
    for fid in ["x..y", "../x", "a/b", "a" * 129, "Upper"]:
        with pytest.raises(ValidationError, match="^id: "):
            validate("fragment", {**base, "id": fid})
    with pytest.raises(ValidationError, match="^links.0: "):
        validate("fragment", {**base, "id": "a", "links": ["../../etc/x"]})


# -- collect: symlinks, special files, size ----------------------------------------------------

def outside_fragment(tmp_path: Path, fid: str = "nw-outside") -> Path:
    return write_fragment(tmp_path / "elsewhere", fid)


def test_symlinked_file_pointing_outside_is_an_error(wb, tmp_path):
    src = tmp_path / "in"
    write_fragment(src, "nw-good")
    (src / "deep" / "er").mkdir(parents=True)
    (src / "deep" / "er" / "link.md").symlink_to(outside_fragment(tmp_path))
    report, _ = ingest_timed(wb, src)
    assert_only_good_stored(wb, report, "link.md", f"symlink points outside {src}")


def test_symlinked_folder_pointing_outside_is_an_error(wb, tmp_path):
    src = tmp_path / "in"
    write_fragment(src, "nw-good")
    outside_fragment(tmp_path)
    (src / "sub").mkdir()
    (src / "sub" / "shared").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    report, _ = ingest_timed(wb, src)
    assert_only_good_stored(wb, report, "shared", "symlink points outside")


def test_symlink_loops_do_not_hang(wb, tmp_path):
    src = tmp_path / "in"
    write_fragment(src, "nw-good")
    (src / "sub").mkdir()
    (src / "sub" / "up").symlink_to(src, target_is_directory=True)    # a folder loop, inside: not followed
    (src / "a.md").symlink_to(src / "b.md")                           # a file loop
    (src / "b.md").symlink_to(src / "a.md")
    report, _ = ingest_timed(wb, src)
    assert report.added == ["nw-good"]
    assert sorted(Path(e["file"]).name for e in report.errors) == ["a.md", "b.md"]
    assert all("symlink loop" in e["message"] for e in report.errors)


def test_symlink_inside_the_folder_is_read_once(tmp_path):
    src = tmp_path / "in"
    real = write_fragment(src / "notes", "nw-good")
    (src / "alias.md").symlink_to(real)
    (src / "notes-link").symlink_to(src / "notes", target_is_directory=True)
    files, errors = collect([src])
    assert (files, errors) == ([real], [])


def test_hidden_folders_stay_skipped(tmp_path):
    src = tmp_path / "in"
    good = write_fragment(src, "nw-good")
    write_fragment(src / ".git", "nw-hidden")
    (src / ".draft.md").write_text(fragment_text("nw-draft"))
    assert collect([src]) == ([good], [])


def test_large_file_is_refused_without_reading_it(wb, tmp_path, monkeypatch):
    src = tmp_path / "in"
    write_fragment(src, "nw-good")
    with open(src / "big.md", "wb") as f:
        f.write(front("nw-big", body="x").encode())
        f.truncate(2 * 1024 * 1024)  # 2 MiB (a sparse file: size without writing it)
    report, _ = ingest_timed(wb, src)
    assert_only_good_stored(wb, report, "big.md", f"file is too large ({2 * 1024 * 1024} bytes, at most "
                                                  f"{MAX_FILE_BYTES})")


def test_fifo_is_refused_without_blocking(wb, tmp_path):
    src = tmp_path / "in"
    write_fragment(src, "nw-good")
    os.mkfifo(src / "pipe.md")  # reading it would block the ingest forever
    report, _ = ingest_timed(wb, src)
    assert_only_good_stored(wb, report, "pipe.md", "not a regular file")


def test_read_capped_rechecks_the_open_file(tmp_path):
    good = write_fragment(tmp_path, "nw-good")
    assert read_capped(good) == good.read_bytes()
    with pytest.raises(ValidationError, match="file is too large"):
        read_capped(good, max_bytes=10)
    os.mkfifo(tmp_path / "pipe.md")
    with pytest.raises(ValidationError, match="pipe.md: not a regular file"):
        read_capped(tmp_path / "pipe.md")  # returns at once: opened non-blocking, refused by fstat
    with pytest.raises(ValidationError, match="cannot read"):
        read_capped(tmp_path / "missing.md")


def test_non_utf8_stays_a_per_file_error(wb, tmp_path):
    src = tmp_path / "in"
    write_fragment(src, "nw-good")
    (src / "latin1.md").write_bytes(front("nw-latin", body="café").encode("latin-1"))
    report, _ = ingest_timed(wb, src)
    assert_only_good_stored(wb, report, "latin1.md", "cannot read")


# -- faces -------------------------------------------------------------------------------------

def test_cli_ingest_with_an_alias_bomb_exits_2_one_line_per_bad_file(workspace, tmp_path):
    src = tmp_path / "in"
    write_fragment(src, "nw-good")
    (src / "bomb.md").write_text(alias_bomb(9))
    (src / "date.md").write_text(front("nw-date", "created: 2025-02-30\n"))
    r = run_cli("ingest", str(src), "--as", ACTOR, workspace=workspace, timeout=60)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    skipped = [line for line in r.stderr.splitlines() if line.startswith("skipped ")]
    assert len(skipped) == 2, r.stderr
    assert any("bomb.md" in s and "anchors and aliases are not allowed" in s for s in skipped)
    assert any("date.md" in s and "created: 2025-02-30 is not a real date" in s for s in skipped)
    shown = run_cli("show", "nw-good", "--as", "marco.bianchi", workspace=workspace)
    assert shown.returncode == 0, shown.stderr


def test_workspace_config_alias_bomb_fails_fast(tmp_path):
    bomb = tmp_path / "workbench.yaml"
    bomb.write_text(alias_bomb(9).split("---")[1])
    start = time.perf_counter()
    r = run_cli("init", "--config", str(bomb), workspace=tmp_path / "ws")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "anchors and aliases are not allowed" in r.stderr
    assert time.perf_counter() - start < 60  # a subprocess; the bomb itself is refused in microseconds
    dup = tmp_path / "dup.yaml"
    dup.write_text("orgs: [{name: a}]\nprincipals: [{name: p, orgs: [a]}]\norgs: [{name: b}]\n")
    r = run_cli("init", "--config", str(dup), workspace=tmp_path / "ws2")
    assert r.returncode == 2 and "line 3: duplicate key 'orgs' (first on line 1)" in r.stderr, r.stderr
