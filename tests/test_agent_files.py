"""Agent context files follow their conventions, each checked by a parser that is not ours:
markdown-it-py (CommonMark) for headings and outlines, the ``llms-txt`` reference parser for
llms.txt, a YAML parser for Cursor front matter. And exports own their files: the manifest in
--out lets a re-export replace and prune its own files, and never touch anyone else's."""

from __future__ import annotations

import difflib
import json
import os
import re
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from llms_txt import parse_llms_file
from markdown_it import MarkdownIt

from conftest import write_fragment, examples
from workbench import Workbench
from workbench.errors import UserError
from workbench.export.headings import demote
from workbench.export.manifest import MANIFEST
from workbench.export.writer import STAGING_MARK

SCOPE = "org=northwind,repo=payments-api"
FORMATS = ("agents-md", "claude-md", "cursor-rules", "llms-txt")
MD = MarkdownIt("commonmark")

HOSTILE_BODY = """Intro paragraph.

# Top level in the body

```python
# not a heading: a comment in code
def f():
    pass
```

~~~~
## not a heading either
~~~~

Setext level one
================

Setext level two
----------------

    # indented code, not a heading

> ## A heading in a quote

- item
  ### A heading in a list item

<pre>
# inside raw HTML
</pre>

#### Deep
##### Deeper
###### Deepest

```
# a fence left open at the end of the body"""


def outline(text: str) -> list[tuple[int, str]]:
    """(level, text) of every heading markdown-it finds, in order."""
    tokens = MD.parse(text)
    return [(int(t.tag[1]), tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open"]


def split_front_matter(text: str) -> tuple[dict, str]:
    assert text.startswith("---\n")
    end = text.index("\n---\n", 4)
    return yaml.safe_load(text[4:end + 1]), text[end + 5:]


def files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def bench(sample_workspace, tmp_path):
    """The sample corpus plus two fragments with every heading trap in their bodies: one pinned for
    payments-api (a rule), one ranked knowledge."""
    src = tmp_path / "hostile"
    for fid in ("nw-note-heading-traps", "nw-note-heading-traps-pinned"):
        write_fragment(src, fid, title=f"Heading traps {fid[-6:]}", body=HOSTILE_BODY, owner="marco.bianchi")
    with Workbench.open(sample_workspace) as wb:
        report = wb.ingest([src], actor="marco.bianchi")
        assert not report.errors, report.errors
        wb.pin("nw-note-heading-traps-pinned", scope=SCOPE, actor="marco.bianchi", reason="traps")
        yield wb


def export_all(wb, out: Path, **kw) -> dict[str, dict]:
    kw = {"scope": SCOPE, "principal": "marco.bianchi", "budget": 40000, **kw}
    return {fmt: wb.export_agents(fmt, out / fmt, **kw) for fmt in FORMATS}


# -- headings: a body's own headings sit below its item, in every format ---------------------------------


def test_no_body_heading_sits_at_or_above_its_item_in_any_format(bench, tmp_path):
    sel = bench.agent_selection(scope=SCOPE, principal="marco.bianchi", budget=40000)
    assert "nw-note-heading-traps-pinned" in [f.id for f in sel.rules]
    assert "nw-note-heading-traps" in [f.id for f in sel.details]
    export_all(bench, tmp_path)
    items = [f.title for f in (*sel.rules, *sel.avoid, *sel.details)]
    for name in ("agents-md/AGENTS.md", "claude-md/CLAUDE.md", "llms-txt/llms-full.txt"):
        heads = outline((tmp_path / name).read_text())
        assert [t for level, t in heads if level == 1] == [heads[0][1]], name
        assert [t for level, t in heads if level == 2] == ["Rules", "Do not", "Knowledge"], name
        assert [t for level, t in heads if level == 3] == items, name  # every item, none swallowed: so every
        inner = [t for level, t in heads if level >= 4]  # heading of a body sits at level 4 or deeper
        for trap in ("Top level in the body", "Setext level one", "Setext level two", "A heading in a quote",
                     "A heading in a list item"):
            assert inner.count(trap) == 2, (name, trap)  # demoted in both trap fragments, never dropped
        for deep in ("Deep", "Deeper", "Deepest"):  # #### and deeper under a body's # have no level left
            assert (tmp_path / name).read_text().count(f"\n**{deep}**\n") == 2, (name, deep)
    rules = tmp_path / "cursor-rules" / ".cursor" / "rules"
    for path in sorted(rules.glob("*.mdc")):
        _, text = split_front_matter(path.read_text())
        heads = outline(text)
        top = {"workbench-always.mdc": "Always follow", "workbench-do-not.mdc": "Do not"}.get(path.name)
        if top:  # the item headings are H2 under the file's H1, their bodies below
            assert heads[0] == (1, top) and [t for lv, t in heads if lv == 1] == [top]
            titles = [f.title for f in (sel.pins if top == "Always follow" else sel.avoid)]
            assert [t for lv, t in heads if lv == 2] == titles
        else:
            assert [lv for lv, _ in heads].count(1) == 1 and heads[0][0] == 1, path.name
            globs = path.read_text().split("\n")[2]
            if "heading-traps" not in path.name and globs != "globs:":  # what Cursor reads: a plain string
                # a value starting with '*' (an applies_to glob like **/x/**) is quoted by the YAML emitter
                assert re.fullmatch(r"globs: ('?)[\w./*-]+(?:, [\w./*-]+)*\1", globs), globs
    for path in sorted((tmp_path / "llms-txt" / "fragments").glob("*.md")):
        heads = outline(path.read_text())
        assert heads[0][0] == 1 and [lv for lv, _ in heads].count(1) == 1, path.name


def test_code_and_html_keep_their_hash_lines(bench, tmp_path):
    export_all(bench, tmp_path)
    text = (tmp_path / "agents-md" / "AGENTS.md").read_text()
    blocks = [t.content for t in MD.parse(text) if t.type in ("fence", "code_block", "html_block")]
    for kept in ("# not a heading: a comment in code\n", "## not a heading either\n",
                 "# indented code, not a heading\n", "# inside raw HTML\n",
                 "# a fence left open at the end of the body\n"):
        assert sum(kept in block for block in blocks) == 2, kept


LINES = ["# H1", "## H2 ##", "### H3", "#nospace", "  ## indented", "    # code", "\t# tab code", "```",
         "```python", "~~~", "````", "``` `x`", "text", "more text", "===", "---", "- - -", "***", "-",
         "- item", "- # in a list", "1. one", "2) two", "  continued", "> quote", "> # quoted",
         "> > ## deeper", ">", "", "", "<pre>", "</pre>", "<!-- c", "-->", "| a | b |", "  - nested",
         "    - deeper", "- ```", "  ```", "  # in an item", "10. ten", "=", "  ===="]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.sampled_from(LINES), min_size=1, max_size=10), st.integers(min_value=1, max_value=5))
def test_demote_leaves_no_heading_at_or_above_the_level(lines, level):
    text = "\n".join(lines)
    out = demote(text, level)
    assert all(lv > level for lv, _ in outline(out)), (text, out)
    code = lambda s: [t.content.rstrip("\n") for t in MD.parse(s) if t.type in ("fence", "code_block")]  # noqa
    assert code(out) == code(text), (text, out)  # code is never touched (an open fence is only closed)


def test_agents_md_outline_lists_only_our_sections(sample_workspace, tmp_path):
    with Workbench.open(sample_workspace) as wb:
        result = wb.export_agents("agents-md", tmp_path / "out", scope=SCOPE, principal="marco.bianchi")
        sel = wb.agent_selection(scope=SCOPE, principal="marco.bianchi")
    heads = outline((tmp_path / "out" / "AGENTS.md").read_text())
    assert [t for lv, t in heads if lv <= 2] == [heads[0][1], "Rules", "Do not", "Knowledge"]
    assert [t for lv, t in heads if lv == 3] == [f.title for f in (*sel.rules, *sel.avoid, *sel.details)]
    stray = {"Context", "Decision", "Consequences", "Rules", "Scope", "Evidence", "Detection", "Data classes"}
    assert not [t for lv, t in heads if lv == 3 and t in stray]
    assert result["pins"] == 0 and result["knowledge"] == len(sel.knowledge)


# -- AGENTS.md and CLAUDE.md: rules first, "Always" / "Never" lines, citations ----------------------------


def test_rules_come_first_as_imperative_lines_with_citations(bench, tmp_path):
    export_all(bench, tmp_path)
    sel = bench.agent_selection(scope=SCOPE, principal="marco.bianchi", budget=40000)
    text = (tmp_path / "agents-md" / "AGENTS.md").read_text()
    tokens, rows = MD.parse(text), text.splitlines()
    starts = {(t.tag, rows[t.map[0]]): t.map[0] for t in tokens if t.type == "heading_open" and t.tag in ("h2", "h3")}
    h2 = sorted((line, row) for (tag, row), line in starts.items() if tag == "h2")
    assert [row for _, row in h2] == ["## Rules", "## Do not", "## Knowledge"]
    first_item = lambda after: min(line for (tag, _), line in starts.items() if tag == "h3" and line > after)  # noqa

    def lines(n: int) -> list[str]:  # the lines of the n-th section before its first item
        return [row for row in rows[h2[n][0] + 1:first_item(h2[n][0])] if row]

    rules, avoid = lines(0), lines(1)
    assert rules == [f"- Always follow “{f.title}” ({'pinned' if f in sel.pins else 'policy'}, `{f.id}@v{f.version}`)."
                     for f in sel.rules]
    assert rules[0].endswith("(pinned, `nw-note-heading-traps-pinned@v1`).")
    assert len(avoid) == len(sel.avoid) and all(ln.startswith("- Never ") for ln in avoid)
    assert "- Never store, compute or transmit money as float/double, or divide amount_minor by 100 in business " \
           "logic (`nw-ap-float-for-money@v1`)." in avoid
    for f in (*sel.rules, *sel.avoid, *sel.details):  # every item cites id@vN
        assert f"`{f.id}@v{f.version}`" in text


def test_agents_md_and_claude_md_differ_only_in_their_conventions(bench, tmp_path):
    export_all(bench, tmp_path)
    agents = (tmp_path / "agents-md" / "AGENTS.md").read_text().splitlines()
    claude = (tmp_path / "claude-md" / "CLAUDE.md").read_text().splitlines()
    changed = [op for op in difflib.SequenceMatcher(a=agents, b=claude, autojunk=False).get_opcodes()
               if op[0] != "equal"]
    assert [(tag, i1, i2) for tag, i1, i2, _, _ in changed] == [("replace", 0, 1), ("replace", 2, 3)]
    assert agents[0].startswith("# AGENTS.md — ") and claude[0].startswith("# CLAUDE.md — ")
    assert "Claude Code" in claude[2] and "coding agents" in agents[2]


def test_superseded_fragments_never_appear_unless_the_superseder_is_invisible(sample_workspace, tmp_path):
    with Workbench.open(sample_workspace) as wb:
        out = export_all(wb, tmp_path / "marco")
        everything = "".join(p.read_text() for p in (tmp_path / "marco").rglob("*") if p.is_file())
        for old in ("nw-adr-0009-env-var-feature-flags", "nw-adr-0003-client-retry-tokens"):
            assert f"{old}@v" not in everything and not list((tmp_path / "marco").rglob(f"{old}.*"))
        assert "nw-adr-0014-feature-flags-flagpole@v" in everything and out["agents-md"]["superseded"] == 2
        # a decision for checkout-web that supersedes an org-wide one: only those who see it lose the old one
        src = tmp_path / "src"
        write_fragment(src, "nw-adr-0099-checkout-datastore", kind="decision", repo="checkout-web",
                       owner="hannah.lee", body="Checkout keeps its own store.",
                       extra="supersedes: [nw-adr-0004-postgres-primary-datastore]\n")
        assert not wb.ingest([src], actor="priya.raman").errors
        old = "nw-adr-0004-postgres-primary-datastore"
        for who, shown in (("priya.raman", False), ("agent.nw-coder", True)):
            sel = wb.agent_selection(scope=SCOPE, principal=who, budget=100000)
            assert (old in {f.id for f in (*sel.knowledge, *sel.optional)}) is shown, who
            files, _ = wb.render_agents("agents-md", scope=SCOPE, principal=who, budget=100000)
            assert (f"{old}@v1" in files["AGENTS.md"]) is shown, who


# -- llms.txt: the reference parser, Optional, --base-url ---------------------------------------------------


def test_llms_txt_parses_with_the_reference_parser_and_lists_the_rest_as_optional(sample_workspace, tmp_path):
    with Workbench.open(sample_workspace) as wb:
        result = wb.export_agents("llms-txt", tmp_path / "out", scope=SCOPE, principal="marco.bianchi", budget=3000)
        sel = wb.agent_selection(scope=SCOPE, principal="marco.bianchi", budget=3000)
        roomy = wb.agent_selection(scope=SCOPE, principal="marco.bianchi", budget=10**6)
    out = tmp_path / "out"
    parsed = parse_llms_file((out / "llms.txt").read_text())
    assert parsed.title == sel.title
    assert parsed.summary.startswith("Curated engineering knowledge for agents working in `" + SCOPE)
    assert "llms-full.txt" in parsed.info
    assert list(parsed.sections) == [name for name, items in (("Rules", sel.rules), ("Do not", sel.avoid),
                                                              ("Knowledge", sel.details), ("Optional", sel.optional))
                                     if items]
    links = {name: [link["url"] for link in parsed.sections[name]] for name in parsed.sections}
    assert len(links["Optional"]) == len(sel.optional) == result["omitted"] > 0
    # nothing is dropped: what the budget leaves out is listed under Optional, links only
    listed = {link["desc"].strip("`").rsplit("@", 1)[0] for link in parsed.sections["Optional"]}
    assert listed == {f.id for f in sel.optional}
    assert {f.id for f in (*sel.knowledge, *sel.optional)} == {f.id for f in (*roomy.knowledge, *roomy.optional)}
    for url in (u for urls in links.values() for u in urls):
        assert (out / url).is_file(), url
    full = (out / "llms-full.txt").read_text()
    assert all(f"{f.id}@v" not in full for f in sel.optional) and all(f"{f.id}@v" in full for f in sel.knowledge)


@pytest.mark.parametrize("base", ["https://docs.example.com/kb", "https://docs.example.com/kb/", "http://[::1]:8080"])
def test_base_url_makes_every_link_absolute(sample_workspace, tmp_path, cli, base):
    out = tmp_path / "out"
    r = cli("export", "llms-txt", "--scope", SCOPE, "--as", "marco.bianchi", "--out", str(out), "--base-url", base,
            "--json", workspace=sample_workspace)
    assert r.returncode == 0, r.stderr
    prefix = base.rstrip("/") + "/"
    parsed = parse_llms_file((out / "llms.txt").read_text())
    urls = [link["url"] for links in parsed.sections.values() for link in links]
    assert urls and all(u.startswith(prefix + "fragments/") for u in urls)
    assert all((out / u[len(prefix):]).is_file() for u in urls)
    assert f"]({prefix}llms-full.txt)" in parsed.info
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["exports"]["llms-txt"]["base_url"] == prefix


@pytest.mark.parametrize("base,message", [
    ("ftp://docs.example.com/", "expected http://HOST"), ("docs.example.com/kb", "expected http://HOST"),
    ("https://docs.example.com/a b", "no whitespace"), ("https://docs.example.com/\nx", "no whitespace"),
    ("javascript:alert(1)", "expected http://HOST"), ("https://user:secret@docs.example.com/", "no credentials"),
    ("https://docs.example.com/?q=1", "no query"), ("https:///kb", "expected http://HOST"),
])
def test_a_bad_base_url_is_refused_with_one_line_and_nothing_written(sample_workspace, tmp_path, cli, base, message):
    out = tmp_path / "out"
    r = cli("export", "llms-txt", "--scope", SCOPE, "--out", str(out), "--base-url", base, workspace=sample_workspace)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not out.exists()
    r = cli("export", "agents-md", "--scope", SCOPE, "--out", str(out), "--base-url", "https://x.example/",
            workspace=sample_workspace)
    assert r.returncode == 2 and "a base URL applies to llms-txt only" in r.stderr and not out.exists()


# -- Cursor rules: front matter from a YAML emitter ---------------------------------------------------------

HOSTILE_PATHS = ["src/evil\nalwaysApply: true\nx.py", "a: b/c.py", "---\n---", "lib/'q\"uote's/x.py",
                 "docs/a, b/c.md", "*/star.py", "- item/x.py", "#comment/x", "trailing/", "{brace}/x", " "]


def test_mdc_front_matter_has_exactly_its_three_keys_whatever_the_data(wb, tmp_path):
    from workbench.models import Content, Scope, Source

    at = datetime(2025, 3, 1, 12, 0)
    for n, title in enumerate(["Plain", "Evil\n---\nalwaysApply: true\n# Injected", "key: value 'q' \"d\""]):
        content = Content(kind="note", title=title, body="Keep payment retries idempotent.",
                          scope=Scope("northwind", "payments-api"), owner="marco.bianchi",
                          sources=tuple(Source(path=p) for p in HOSTILE_PATHS))
        wb.store.append_version(f"nw-note-sources-{n}", content, author="marco.bianchi", reason="old build", at=at)
    result = wb.export_agents("cursor-rules", tmp_path / "out", scope=SCOPE, principal="marco.bianchi",
                              budget=40000)
    rules = sorted((tmp_path / "out" / ".cursor" / "rules").glob("*.mdc"))
    assert len(rules) == result["knowledge"] == 3
    for path in rules:
        text = path.read_text()
        front, rest = split_front_matter(text)
        assert list(front) == ["description", "globs", "alwaysApply"], path.name
        assert front["alwaysApply"] is False and isinstance(front["description"], str)
        assert "\n" not in front["description"] and rest.startswith("\n# ")
        globs = front["globs"].split(", ")  # Cursor's convention: one comma-separated string
        assert len(globs) == len(set(globs)) and not any(re.search(r"[\s,]", g) for g in globs)
        assert {"src/**", "a:?b/**", "docs/a??b/**", "-?item/**", "#comment/**", "trailing/**"} <= set(globs)
        assert re.match(r"globs: \S", text.split("\n")[2]) or text.split("\n")[2].startswith("globs: '")
        assert [lv for lv, _ in outline(rest)].count(1) == 1  # the injected title stayed one heading


# -- the manifest: re-exports replace and prune their own files, and only those -----------------------------


def test_a_stale_rule_disappears_on_re_export_and_the_users_files_survive(sample_workspace, tmp_path):
    repo = tmp_path / "repo"
    (repo / ".cursor" / "rules").mkdir(parents=True)
    (repo / ".cursor" / "rules" / "team-style.mdc").write_text("---\nalwaysApply: true\n---\nOur style.\n")
    (repo / "README.md").write_text("# payments-api\n")
    with Workbench.open(sample_workspace) as wb:
        first = wb.export_agents("cursor-rules", repo, scope=SCOPE, principal="marco.bianchi")  # no --force needed
        sel = wb.agent_selection(scope=SCOPE, principal="marco.bianchi")
        gone = next(f for f in sel.knowledge if f.kind == "decision")
        stale = f".cursor/rules/{gone.id}.mdc"
        assert (repo / stale).is_file() and first["pruned"] == []
        wb.archive(gone.id, actor="priya.raman", reason="no longer applies")
        second = wb.export_agents("cursor-rules", repo, scope=SCOPE, principal="marco.bianchi")  # no --force
    assert stale in second["pruned"] and not (repo / stale).exists()
    assert set(second["pruned"]) == set(first["files"]) - set(second["files"])
    assert (repo / ".cursor" / "rules" / "team-style.mdc").read_text().endswith("Our style.\n")
    assert (repo / "README.md").read_text() == "# payments-api\n"
    recorded = json.loads((repo / MANIFEST).read_text())["exports"]["cursor-rules"]
    assert stale not in recorded["files"] and "previous" not in recorded
    on_disk = {p.relative_to(repo).as_posix() for p in (repo / ".cursor" / "rules").glob("*.mdc")}
    assert on_disk == set(recorded["files"]) | {".cursor/rules/team-style.mdc"}
    for name, digest in recorded["files"].items():
        import hashlib
        assert hashlib.sha256((repo / name).read_bytes()).hexdigest() == digest
    assert recorded["principal"] == "marco.bianchi" and recorded["scope"] == SCOPE and recorded["set"] is None


def test_kinds_share_a_folder_and_a_changed_file_needs_force(sample_workspace, tmp_path, cli):
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "app.py").write_text("print('hi')\n")
    args = ("--scope", SCOPE, "--as", "marco.bianchi", "--out", str(repo), "--json")
    for fmt in FORMATS:
        r = cli("export", fmt, *args, workspace=sample_workspace)
        assert r.returncode == 0, r.stderr
    manifest = json.loads((repo / MANIFEST).read_text())
    assert sorted(manifest["exports"]) == sorted(FORMATS)
    before = files_under(repo)
    r = cli("export", "agents-md", *args, workspace=sample_workspace)  # the same state again: nothing changes
    assert r.returncode == 0 and json.loads(r.stdout)["pruned"] == [] and files_under(repo) == before
    (repo / "AGENTS.md").write_text((repo / "AGENTS.md").read_text() + "\nMy own note.\n")
    edited = files_under(repo)
    r = cli("export", "agents-md", *args, workspace=sample_workspace)
    assert r.returncode == 2 and "refusing to overwrite 'AGENTS.md'" in r.stderr and "changed since workbench wrote it" \
        in r.stderr and "Traceback" not in r.stderr
    assert files_under(repo) == edited
    r = cli("export", "agents-md", *args, "--force", workspace=sample_workspace)
    assert r.returncode == 0 and files_under(repo) == before
    (repo / "CLAUDE.md").write_text("mine now")
    with Workbench.open(sample_workspace) as wb:
        with pytest.raises(UserError, match="changed since workbench wrote it"):
            wb.export_agents("claude-md", repo, scope=SCOPE, principal="marco.bianchi")


def test_a_changed_stale_file_is_not_removed_without_force(sample_workspace, tmp_path):
    out = tmp_path / "out"
    with Workbench.open(sample_workspace) as wb:
        wb.export_agents("llms-txt", out, scope=SCOPE, principal="marco.bianchi", budget=3000)
        pages = sorted(p.name for p in (out / "fragments").iterdir())
        page = "nw-adr-0007-idempotency-keys.md"  # payments-api only: a ledger export no longer writes it
        edited = out / "fragments" / page
        edited.write_text("my notes on this page")
        with pytest.raises(UserError, match=f"refusing to remove 'fragments/{page}'.*changed since"):
            wb.export_agents("llms-txt", out, scope="org=northwind,repo=ledger", principal="marco.bianchi")
        assert edited.read_text() == "my notes on this page"
        assert sorted(p.name for p in (out / "fragments").iterdir()) == pages
        result = wb.export_agents("llms-txt", out, scope="org=northwind,repo=ledger", principal="marco.bianchi",
                                  force=True)
        assert f"fragments/{page}" in result["pruned"] and not edited.exists()


def test_an_interrupted_re_export_puts_everything_back(sample_workspace, tmp_path, monkeypatch):
    from workbench.export import manifest

    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with Workbench.open(sample_workspace) as wb:
        wb.export_agents("llms-txt", out, scope=SCOPE, principal="marco.bianchi", budget=3000)
        before = files_under(out)
        real_replace, calls = os.replace, []

        def interrupted(src, dst, *a, **kw):
            calls.append(dst)
            if len(calls) == 6:  # the manifest marked in progress, four files replaced, then Ctrl-C
                raise KeyboardInterrupt
            return real_replace(src, dst, *a, **kw)

        monkeypatch.setattr(manifest.os, "replace", interrupted)
        with pytest.raises(KeyboardInterrupt):
            wb.export_agents("llms-txt", out, scope="org=northwind,repo=ledger", principal="marco.bianchi")
        monkeypatch.undo()
        assert files_under(out) == before and not [p for p in tmp_path.iterdir() if STAGING_MARK in p.name]
        result = wb.export_agents("llms-txt", out, scope="org=northwind,repo=ledger", principal="marco.bianchi")
        assert result["pruned"] and (out / "keep.txt").read_text() == "mine"


def test_a_killed_re_export_is_finished_by_the_next_run_without_force(sample_workspace, tmp_path, monkeypatch):
    """A SIGKILL gives no chance to put files back: the manifest written first, marked in progress, names
    the old and the new content of every file, so the next run recognises all of them as its own."""
    from workbench.export import manifest

    out, clean = tmp_path / "out", tmp_path / "clean"
    with Workbench.open(sample_workspace) as wb:
        wb.export_agents("llms-txt", out, scope=SCOPE, principal="marco.bianchi", budget=3000)
        real_replace, calls = os.replace, []

        class Killed(BaseException):
            pass

        def killed(src, dst, *a, **kw):
            calls.append(dst)
            if len(calls) == 8:
                raise Killed
            return real_replace(src, dst, *a, **kw)

        monkeypatch.setattr(manifest.os, "replace", killed)
        monkeypatch.setattr(manifest, "_put_back", lambda backup, target: None)  # no undo: as after a SIGKILL
        monkeypatch.setattr(manifest.os, "unlink", lambda *a, **kw: None)
        with pytest.raises(Killed):
            wb.export_agents("llms-txt", out, scope="org=northwind,repo=ledger", principal="marco.bianchi")
        monkeypatch.undo()
        assert "previous" in json.loads((out / MANIFEST).read_text())["exports"]["llms-txt"]
        wb.export_agents("llms-txt", out, scope="org=northwind,repo=ledger", principal="marco.bianchi")
        wb.export_agents("llms-txt", clean, scope="org=northwind,repo=ledger", principal="marco.bianchi")
    assert files_under(out) == files_under(clean)


def test_a_hostile_manifest_cannot_delete_outside_or_be_trusted(sample_workspace, tmp_path):
    import hashlib

    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("precious")
    digest = hashlib.sha256(victim.read_bytes()).hexdigest()
    out = tmp_path / "out"
    out.mkdir()
    (out / "link").symlink_to(outside)
    entry = {"format": "agents-md", "files": {"link/victim.txt": digest}}
    (out / MANIFEST).write_text(json.dumps({"manifest": 1, "exports": {"agents-md": entry}}))
    with Workbench.open(sample_workspace) as wb:
        result = wb.export_agents("agents-md", out, scope=SCOPE, principal="marco.bianchi")
        assert result["pruned"] == [] and victim.read_text() == "precious"  # through a symlink: forgotten
        for bad in ({"files": {"../outside/victim.txt": digest}}, {"files": {"/etc/passwd": digest}},
                    {"files": {"a.md": "not a digest"}}, []):
            (out / MANIFEST).write_text(json.dumps({"manifest": 1, "exports": {"agents-md": bad}}))
            with pytest.raises(UserError, match="is not a workbench export manifest"):
                wb.export_agents("agents-md", out, scope=SCOPE, principal="marco.bianchi")
        assert victim.read_text() == "precious"
        (out / MANIFEST).write_text("{not json")
        with pytest.raises(UserError, match="not a workbench export manifest"):
            wb.export_agents("agents-md", out, scope=SCOPE, principal="marco.bianchi")
        wb.export_agents("agents-md", out, scope=SCOPE, principal="marco.bianchi", force=True)
    assert json.loads((out / MANIFEST).read_text())["exports"]["agents-md"]["files"].keys() == {"AGENTS.md"}
    assert victim.read_text() == "precious" and (out / "link").is_symlink()


def test_export_files_prunes_what_the_principal_no_longer_exports(sample_workspace, tmp_path, cli):
    out = tmp_path / "kb"
    out.mkdir()
    (out / "NOTES.txt").write_text("mine")
    r = cli("export-files", str(out), "--as", "priya.raman", workspace=sample_workspace)
    assert r.returncode == 0, r.stderr
    assert (out / "northwind" / "checkout-web").is_dir()
    r = cli("export-files", str(out), "--as", "marco.bianchi", workspace=sample_workspace)  # no --force
    assert r.returncode == 0, r.stderr
    with Workbench.open(sample_workspace) as wb:
        mine = {path for path, _ in wb.preview_files(principal="marco.bianchi")}
    written = {p.relative_to(out).as_posix() for p in out.rglob("*.md")}
    assert written == mine and not (out / "northwind" / "checkout-web").exists()  # emptied folders go too
    assert (out / "NOTES.txt").read_text() == "mine"
    assert set(json.loads((out / MANIFEST).read_text())["exports"]["fragment-files"]["files"]) == mine


def test_allow_secret_reaches_agent_exports(sample_workspace, tmp_path, cli):
    src = tmp_path / "in"
    write_fragment(src, "nw-leaky-note", title="Leaky note", body="export AWS_ACCESS_KEY_ID=AKIA" + "ABCDEFGHIJKLMNOP\n")
    with Workbench.open(sample_workspace) as wb:
        assert wb.ingest([src], actor="marco.bianchi", allow_secret=True).added == ["nw-leaky-note"]
        wb.pin("nw-leaky-note", scope=SCOPE, actor="marco.bianchi")
    args = ("export", "agents-md", "--scope", SCOPE, "--as", "marco.bianchi", "--out", str(tmp_path / "out"))
    assert cli(*args, workspace=sample_workspace).returncode == 0
    assert "nw-leaky-note" not in (tmp_path / "out" / "AGENTS.md").read_text()  # withheld by default
    assert cli(*args, "--allow-secret", workspace=sample_workspace).returncode == 0  # a re-export: no --force
    assert "`nw-leaky-note@v1`" in (tmp_path / "out" / "AGENTS.md").read_text()


def test_what_agents_md_lists_under_always_follow_is_always_applied_in_cursor_rules(sample_workspace, tmp_path):
    """Issue 28: policies AGENTS.md lists as "Always follow" were `alwaysApply: false`, without globs,
    in Cursor rules (so Cursor never attached them). Read with a reference front-matter parser."""
    import frontmatter

    with Workbench.open(sample_workspace) as bench:
        bench.export_agents("agents-md", tmp_path / "md", scope=SCOPE, principal="marco.bianchi", budget=20000)
        bench.export_agents("cursor-rules", tmp_path / "cursor", scope=SCOPE, principal="marco.bianchi",
                            budget=20000)
    agents = (tmp_path / "md" / "AGENTS.md").read_text(encoding="utf-8")
    always = set(re.findall(r"^- Always follow “.*” \(\w+, `([^`@]+)@v\d+`\)\.$", agents, re.MULTILINE))
    assert len(always) >= 3, agents[:2000]
    applied, attached, declared = set(), set(), set()
    for path in (tmp_path / "cursor" / ".cursor" / "rules").glob("*.mdc"):
        post = frontmatter.load(path)
        assert isinstance(post["alwaysApply"], bool), path.name
        ids = set(re.findall(r"`([^`@]+)@v\d+`", post.content))
        (applied if post["alwaysApply"] else attached).update(ids)
        if not post["alwaysApply"]:    # attached by its globs, or requested by its description
            assert post["description"]
        with Workbench.open(sample_workspace) as wb:   # a rule naming the paths it governs: attached by them
            declared |= {i for i in ids if len(ids) == 1 and wb.get(i).content.applies_to()}
    assert declared and declared <= attached
    assert always - declared <= applied, sorted(always - declared - applied)
    assert not (always - declared) & attached
