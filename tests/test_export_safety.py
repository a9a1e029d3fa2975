"""Exports stay inside --out: the shared writer refuses path-like names (and writes nothing),
symlinks cannot carry a write out of the folder, writes are all-or-nothing, and agent file
names never collide. End to end: a stored fragment with a path-like id (as an older version
could have written) cannot make any export write outside --out."""

from __future__ import annotations

import fcntl
import os
from datetime import datetime
from pathlib import Path

import pytest

from conftest import run_cli
from workbench.errors import UserError
from workbench.export.writer import STAGING_MARK, write_tree


def _tree(root: Path) -> dict[str, bytes | str]:
    """Every entry under root (not following symlinks): file bytes, or 'dir' / 'link -> target'."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = f"link -> {os.readlink(path)}"
            elif path.is_dir():
                out[rel] = "dir"
            else:
                out[rel] = path.read_bytes()
    return out


def _staging(parent: Path) -> list[str]:
    return [p.name for p in parent.iterdir() if STAGING_MARK in p.name]


BAD_PATHS = ["../x", "/abs", "a/../../x", "a\\..\\x", "", "a//b", "a\x00b", "./a", "a/.", "a/b/", "a\nb",
             "x/" + "n" * 300]


@pytest.mark.parametrize("bad", BAD_PATHS)
def test_writer_refuses_a_bad_path_and_writes_nothing(tmp_path, bad):
    out = tmp_path / "sub" / "out"
    files = [("good.md", "fine"), (bad, "evil"), ("later.md", "fine")]
    with pytest.raises(UserError) as e:
        write_tree(out, files, force=False)
    assert repr(bad) in str(e.value) and "nothing was written" in str(e.value)
    assert not out.exists() and not (tmp_path / "sub").exists()
    assert not (tmp_path / "x").exists() and not Path("/abs").exists()
    # into an existing, non-empty folder with --force: it stays exactly as it was
    out.mkdir(parents=True)
    (out / "keep.txt").write_text("mine")
    before = _tree(tmp_path)
    with pytest.raises(UserError):
        write_tree(out, files, force=True)
    assert _tree(tmp_path) == before


def test_writer_refuses_duplicates_and_file_folder_clashes(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(UserError, match="same name"):
        write_tree(out, [("a.md", "1"), ("a.md", "2")])
    with pytest.raises(UserError, match="also a file"):
        write_tree(out, [("a", "1"), ("a/b.md", "2")])
    assert not out.exists()


def test_a_symlink_inside_out_cannot_carry_a_write_outside(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_text("root:x:0:0")
    out = tmp_path / "out"
    out.mkdir()
    (out / "fragments").symlink_to(outside)            # out/fragments -> outside
    (out / "rule.mdc").symlink_to(outside / "passwd")  # a file name that is a symlink out
    (out / "inner").mkdir()
    (out / "alias").symlink_to(out / "inner")          # a symlink that stays inside is fine
    before = _tree(tmp_path)
    for victim in ("fragments/x.md", "rule.mdc"):
        with pytest.raises(UserError, match="outside") as e:
            write_tree(out, [("AGENTS.md", "ok"), (victim, "pwned")], force=True)
        assert repr(victim) in str(e.value)
        assert _tree(tmp_path) == before
    assert not _staging(tmp_path)
    write_tree(out, {"alias/x.md": "ok"}, force=True)
    assert (out / "inner" / "x.md").read_text() == "ok" and (out / "alias").is_symlink()


def test_out_may_be_a_symlink_but_files_stay_in_its_target(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    out = tmp_path / "link"
    out.symlink_to(real)
    written = write_tree(out, {"a/b.md": "hello", "c.md": b"\x00bytes"}, force=False)
    assert written == [out / "a/b.md", out / "c.md"]
    assert out.is_symlink() and (real / "a" / "b.md").read_text() == "hello"
    assert (real / "c.md").read_bytes() == b"\x00bytes"
    assert not _staging(tmp_path)
    with pytest.raises(UserError):
        write_tree(out, {"../escape.md": "x"}, force=True)
    assert not (tmp_path / "escape.md").exists()


def test_force_replaces_files_and_never_writes_through_a_link(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    (out / "a.md").write_text("old")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    os.link(victim, out / "hard.md")  # a hard link to a file outside: replaced, not written through
    with pytest.raises(UserError, match="not empty"):
        write_tree(out, {"a.md": "new"}, force=False)
    assert (out / "a.md").read_text() == "old"
    written = write_tree(out, {"a.md": "new", "sub/b.md": "b", "hard.md": "replaced"}, force=True)
    assert [p.relative_to(out).as_posix() for p in written] == ["a.md", "sub/b.md", "hard.md"]
    assert (out / "a.md").read_text() == "new" and (out / "sub" / "b.md").read_text() == "b"
    assert (out / "keep.txt").read_text() == "mine"
    assert (out / "hard.md").read_text() == "replaced" and victim.read_text() == "precious"
    assert not _staging(tmp_path)


def test_a_new_or_empty_folder_appears_whole_with_its_permissions(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o750)
    os.chmod(empty, 0o750)
    calls = []
    write_tree(empty, {f"d/{i}.md": str(i) for i in range(120)}, progress=lambda *a: calls.append(a))
    assert sorted(p.name for p in (empty / "d").iterdir()) == sorted(f"{i}.md" for i in range(120))
    assert (empty.stat().st_mode & 0o777) == 0o750
    assert calls == [("export", 50, 120), ("export", 100, 120), ("export", 120, 120)]
    with pytest.raises(UserError, match="not a folder"):
        write_tree(empty / "d" / "0.md", {"x": "y"})


def test_a_failed_write_leaves_no_folder_and_no_staging(tmp_path, monkeypatch):
    from workbench.export import writer

    real_write, calls = writer._write_file, []

    def disk_full(path, data):
        calls.append(path)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real_write(path, data)

    monkeypatch.setattr(writer, "_write_file", disk_full)
    out = tmp_path / "out"
    with pytest.raises(UserError, match="No space left"):
        write_tree(out, {f"{i}.md": "x" for i in range(10)})
    assert not out.exists() and not _staging(tmp_path)
    monkeypatch.undo()
    write_tree(out, {f"{i}.md": "x" for i in range(10)})  # and the re-run needs no --force
    assert len(list(out.iterdir())) == 10


def test_an_abandoned_staging_folder_is_removed_and_a_live_one_kept(tmp_path):
    out = tmp_path / "out"
    abandoned = tmp_path / f".out{STAGING_MARK}0123456789abcdef"
    (abandoned / "fragments").mkdir(parents=True)
    (abandoned / "fragments" / "half.md").write_text("half")
    live = tmp_path / f".out{STAGING_MARK}fedcba9876543210"
    live.mkdir()
    not_ours = [tmp_path / f".other{STAGING_MARK}0123456789abcdef", tmp_path / f".out{STAGING_MARK}mine",
                tmp_path / "out.workbench-partial-0123456789abcdef"]
    for folder in not_ours:
        folder.mkdir()
    fd = os.open(live, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # an export still writing holds this
        write_tree(out, {"a.md": "x"})
        assert not abandoned.exists() and live.exists()
        assert all(folder.exists() for folder in not_ours)
    finally:
        os.close(fd)
    assert (out / "a.md").read_text() == "x"


# -- agent file names ------------------------------------------------------------------


def _fragment(fid: str, *, kind: str = "note", title: str | None = None):
    from workbench.models import Content, Fragment, Scope

    content = Content(kind=kind, title=title or f"Title {fid}", body=f"Body of {fid}.",
                      scope=Scope("northwind", "payments-api"), owner="marco.bianchi")
    at = datetime(2025, 1, 1)
    return Fragment(id=fid, version=1, content=content, content_hash=content.content_hash(),
                    created_at=at, updated_at=at)


def test_cursor_rule_names_never_collide_and_are_stable():
    from workbench.export.agents import Selection, cursor_rules

    ids = ["a.b", "a-b", "a_b", "A-B", "workbench-always", "workbench-do-not", "x" * 70 + "1", "x" * 70 + "2",
           "nw-adr-0007-idempotency-keys", "--", "../../evil"]
    knowledge = [_fragment(i) for i in ids]
    pins = [_fragment("pinned")]
    sel = Selection(title="t", scope="org=northwind", pins=pins, avoid=[], knowledge=knowledge, omitted=0)
    files = cursor_rules(sel)
    assert len(files) == len(ids) + 1  # no rule silently overwrote another
    assert files[".cursor/rules/workbench-always.mdc"].count("pinned") >= 1
    assert ".cursor/rules/a-b.mdc" in files and ".cursor/rules/nw-adr-0007-idempotency-keys.mdc" in files
    for name in files:
        assert name.startswith(".cursor/rules/") and name.count("/") == 2 and not name.split("/")[-1].startswith(".")
    for fid in ids:  # every id has its own file, which cites it
        assert sum(f"{fid}@v1" in text for text in files.values()) == 1, fid
    reordered = Selection(title="t", scope="org=northwind", pins=pins, avoid=[], knowledge=knowledge[::-1], omitted=0)
    assert cursor_rules(sel) == files and set(cursor_rules(reordered)) == set(files)


def test_llms_pages_for_unsafe_ids_get_safe_distinct_names():
    from workbench.export.agents import Selection, llms_txt

    ids = ["../../evil", "/etc/passwd", "nw-ok.v2", "Evil", "evil"]
    sel = Selection(title="t", scope="org=northwind", pins=[], avoid=[], knowledge=[_fragment(i) for i in ids],
                    omitted=0)
    files = llms_txt(sel)
    pages = [name for name in files if name.startswith("fragments/")]
    assert len(pages) == len(ids) and "fragments/nw-ok.v2.md" in pages and "fragments/evil.md" in pages
    for name in pages:
        stem = name.split("/", 1)[1]
        assert "/" not in stem and not stem.startswith(".")
        assert f"](fragments/{stem})" in files["llms.txt"]  # each link points at its page


# -- end to end: a path-like id stored by an older version ----------------------------------


@pytest.fixture
def evil_workspace(wb):
    """A workspace whose store holds fragments with path-like ids and a path-like org."""
    from workbench.models import Content, Scope

    at = datetime(2025, 3, 1, 12, 0)
    for fid in ("../../../../../evil", "/tmp/workbench-abs-evil", "nw-fine"):
        content = Content(kind="note", title=f"Note {fid}", body="Use idempotency keys for payment retries.",
                          scope=Scope("northwind", "payments-api"), owner="marco.bianchi")
        wb.store.append_version(fid, content, author="marco.bianchi", reason="older version", at=at)
    return wb


def _outside_files(root: Path, out: Path, workspace: Path) -> set[str]:
    return {str(p) for p in root.rglob("*") if not p.is_relative_to(out) and not p.is_relative_to(workspace)}


def test_export_files_refuses_a_path_like_id(evil_workspace, tmp_path):
    root = evil_workspace.root
    evil_workspace.close()
    before = _outside_files(tmp_path, tmp_path / "a", root)
    out = tmp_path / "a" / "b" / "c" / "out"
    r = run_cli("export-files", str(out), workspace=root)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "refusing to export" in r.stderr and "evil" in r.stderr
    assert not (tmp_path / "a").exists() and _outside_files(tmp_path, tmp_path / "a", root) == before
    assert not Path("/tmp/workbench-abs-evil.md").exists()
    # a folder given with --force stays as it was
    out.mkdir(parents=True)
    (out / "keep.txt").write_text("mine")
    r = run_cli("export-files", str(out), "--force", workspace=root)
    assert r.returncode == 2 and sorted(p.name for p in out.iterdir()) == ["keep.txt"]


@pytest.mark.parametrize("fmt", ["llms-txt", "cursor-rules"])
def test_agent_exports_keep_a_path_like_id_inside_out(evil_workspace, tmp_path, fmt):
    root = evil_workspace.root
    before = _outside_files(tmp_path, tmp_path / "deep", root)
    out = tmp_path / "deep" / "er" / "out"
    result = evil_workspace.export_agents(fmt, out, scope="org=northwind,repo=payments-api",
                                          principal="marco.bianchi", budget=20000)
    assert result["knowledge"] == 3  # all three exported, under safe names
    assert _outside_files(tmp_path, tmp_path / "deep", root) == before
    written = [p for p in (tmp_path / "deep").rglob("*") if p.is_file()]
    assert written and all(p.resolve().is_relative_to(out.resolve()) for p in written)
    assert sorted(str(p.relative_to(out)) for p in written) == sorted(result["files"])
    assert not Path("/tmp/workbench-abs-evil.md").exists() and not Path("/tmp/workbench-abs-evil.mdc").exists()
    text = "".join(p.read_text() for p in written)
    assert "../../../../../evil@v1" in text  # the fragment is cited by its real id


# -- bundles: the two files appear together ---------------------------------------------------


def test_an_interrupted_bundle_leaves_nothing_and_the_rerun_matches(wb, tmp_path, monkeypatch):
    from conftest import write_fragment
    from workbench.export import bundle, writer

    for i in range(5):
        write_fragment(tmp_path / "src", f"nw-adr-{i:04d}", body=f"Decision {i}.")
    write_fragment(tmp_path / "src", "nw-adr-0007-idempotency-keys", body="Use idempotency keys.")
    assert not wb.ingest([tmp_path / "src"], actor="priya.raman").errors
    bench = wb
    bench.set_create("core", scope="org=northwind", actor="priya.raman")
    clean = tmp_path / "clean"
    bench.export_bundle("core", clean)
    real_write = writer._write_file

    def interrupted(path, data):  # Ctrl-C after fragments.jsonl is staged, before manifest.yaml is
        if path.name == "manifest.yaml":
            assert (path.parent / "fragments.jsonl").is_file()
            raise KeyboardInterrupt
        return real_write(path, data)

    monkeypatch.setattr(writer, "_write_file", interrupted)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        bench.export_bundle("core", out)
    assert not out.exists() and not _staging(tmp_path)
    monkeypatch.undo()
    bench.export_bundle("core", out)
    assert _tree(out) == _tree(clean) and sorted(_tree(out)) == ["fragments.jsonl", "manifest.yaml"]
    # --force over an older bundle: the manifest (with the checksum) is replaced last, so a
    # stop in between leaves a bundle that import refuses rather than one that mixes states
    bench.edit("nw-adr-0007-idempotency-keys", "A second version.", reason="v2", actor="priya.raman")
    real_replace = os.replace

    def stop_before_manifest(src, dst, *a, **kw):
        if str(dst).endswith("manifest.yaml"):
            raise KeyboardInterrupt
        return real_replace(src, dst, *a, **kw)

    monkeypatch.setattr(writer.os, "replace", stop_before_manifest)
    with pytest.raises(KeyboardInterrupt):
        bench.export_bundle("core", out, force=True)
    monkeypatch.undo()
    assert (out / "manifest.yaml").read_bytes() == (clean / "manifest.yaml").read_bytes()
    with pytest.raises(UserError, match="checksum mismatch"):
        bundle.read(out)
    assert not _staging(tmp_path)
    bench.export_bundle("core", out, force=True)
    assert bundle.read(out)[0]["fragments"] == bundle.read(clean)[0]["fragments"]


def test_without_syncfs_every_file_is_fsynced(tmp_path, monkeypatch):
    from workbench.export import writer

    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(writer, "_syncfs", lambda folder: False)
    monkeypatch.setattr(writer.os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    write_tree(tmp_path / "out", {"a.md": "1", "b/c.md": "2"})
    assert (tmp_path / "out" / "b" / "c.md").read_text() == "2"
    assert len(synced) >= 2 + 2  # two files, their two folders (and the parent after the rename)
