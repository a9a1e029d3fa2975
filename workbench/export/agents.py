"""Agent context files, chosen by name: AGENTS.md, CLAUDE.md, Cursor rules and llms.txt.

Pure rendering: the caller selects and orders the items (pins, anti-patterns, ranked
knowledge fitted to a budget, the ranked rest); each format turns them into files
({relative path: text}), each item citing its fragment as ``id@vN``; ``renderer`` makes the text inert. Output depends only on
the items, so the same workspace state gives the same files.

Each format keeps its convention: AGENTS.md and CLAUDE.md open with the rules as short
imperative lines (pins and policies: "Always follow ..."; anti-patterns under "Do not":
"Never ..."), then the details; the two differ only in their title and first sentence.
A fragment body's own headings are demoted below its item heading (``export.headings``), so
the file's outline holds only our sections. Cursor rules carry YAML front matter written by a
YAML emitter (never by string formatting), with ``globs`` as the comma-separated string Cursor
reads; what AGENTS.md lists under "Always follow" (pins, policies) is ``alwaysApply: true`` there
too, the rest is attached by its globs: the ``applies_to`` globs a fragment declares (then
``alwaysApply: false``, a policy too), else the folders of its sources. llms.txt follows llmstxt.org: an H1, a ``>`` summary, a paragraph, then H2 sections of
links only; what the budget left out is listed under ``## Optional``; ``base_url`` makes every
link absolute.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Callable

from ..errors import UserError
from ..inert import inert
from ..models import Fragment
from ..retrieval.text import strip_boilerplate
from .headings import demote


@dataclass(frozen=True)
class Selection:
    title: str                 # e.g. "northwind / payments-api"
    scope: str
    pins: list[Fragment]
    avoid: list[Fragment]      # anti-patterns
    knowledge: list[Fragment]  # ranked, fitted to the budget
    omitted: int               # ranked fragments left out by the budget
    optional: tuple[Fragment, ...] = ()  # those fragments, best first (llms.txt lists them as Optional)
    superseded: int = 0        # left out: a fragment the principal sees supersedes them

    @property
    def rules(self) -> list[Fragment]:
        """Pins, then the policies among the ranked knowledge: what AGENTS.md lists as "Always"."""
        return [*self.pins, *(f for f in self.knowledge if f.kind == "policy")]

    @property
    def details(self) -> list[Fragment]:
        """The ranked knowledge that is not a rule."""
        return [f for f in self.knowledge if f.kind != "policy"]


VIA = "via"   # a detail of a rendered copy of a received fragment only (``with_via``): never stored


def with_via(f: Fragment, via: str | None) -> Fragment:
    """``f`` as exported to a principal who receives it through the published context ``via``."""
    if not via:
        return f
    details = tuple(sorted((*((k, v) for k, v in f.content.details if k != VIA), (VIA, via))))
    return replace(f, content=replace(f.content, details=details))


def cite(f: Fragment) -> str:
    via = f.content.detail(VIA)
    return f"{f.id}@v{f.version}" + (f" via {via}" if via else "")


def body(f: Fragment) -> str:
    return strip_boilerplate(f.body)


def _line(text: object) -> str:
    """One line of text: data (titles, anti-pattern fields) can hold newlines that would end a heading
    or a list item and start markdown of its own."""
    return " ".join(str(text or "").split())


def _heading(level: int, text: str) -> str:
    title = _line(text) or "(untitled)"
    return "#" * level + " " + (title[:-1] + "\\#" if title.endswith("#") else title)


def _code(text: str) -> str:
    """``text`` as an inline code span, whatever backticks it holds."""
    run = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (run + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _source(f: Fragment) -> str:
    return f"_Source: {_code(cite(f))} ({f.kind}, owner {_line(f.owner)})_"


def _avoid_md(f: Fragment, level: int = 3) -> str:
    d = f.content.detail
    parts = [_heading(level, f.title)] + [f"- **{label}:** {_line(value)}"
                                          for label, value in f.content.antipattern(keep_empty=True)]
    if d("evidence"):
        parts.append(f"- **Evidence:** {', '.join(_line(e) for e in d('evidence'))}")
    parts.append(f"- Source: {_code(cite(f))}")
    return "\n".join(parts)


def item(f: Fragment, level: int = 3) -> str:
    """One fragment under a heading of ``level``: its body's headings sit below it."""
    if f.kind == "anti-pattern":
        return _avoid_md(f, level)
    return f"{_heading(level, f.title)}\n\n{demote(body(f), level)}\n\n{_source(f)}"


def always(f: Fragment, pinned: bool) -> str:
    return f"- Always follow “{_line(f.title)}” ({'pinned' if pinned else f.kind}, {_code(cite(f))})."


_DONT = re.compile(r"^(?:don[’']?t|do not|never|avoid)\s+", re.I)


def never(f: Fragment) -> str:
    dont = _line(f.content.detail("dont")).rstrip(".")
    if _DONT.match(dont):
        rule = "Never " + _DONT.sub("", dont)
    else:
        rule = f"Never: {dont or _line(f.title)}"
    return f"- {rule} ({_code(cite(f))})."


def _markdown(sel: Selection, heading: str, intro: str) -> str:
    out = [f"# {heading}", "", intro, "", f"Scope: {_code(sel.scope)}. Generated by workbench from curated, owned "
           "fragments; each item cites `fragment-id@vVERSION`.", ""]
    pinned = {f.id for f in sel.pins}
    if sel.rules:
        out += ["## Rules", ""] + [always(f, f.id in pinned) for f in sel.rules] + [""]
        out += [item(f) + "\n" for f in sel.rules]
    if sel.avoid:
        out += ["## Do not", ""] + [never(f) for f in sel.avoid] + [""]
        out += [item(f) + "\n" for f in sel.avoid]
    if sel.details:
        out += ["## Knowledge", ""] + [item(f) + "\n" for f in sel.details]
    if sel.omitted:
        out += [f"_{sel.omitted} more fragments did not fit the budget._", ""]
    return "\n".join(out).rstrip() + "\n"


def agents_md(sel: Selection, **_: object) -> dict[str, str]:
    return {"AGENTS.md": _markdown(sel, f"AGENTS.md — {_line(sel.title)}",
                                   "Instructions and project knowledge for coding agents working here: follow the "
                                   "rules, never do what is under \"Do not\".")}


def claude_md(sel: Selection, **_: object) -> dict[str, str]:
    return {"CLAUDE.md": _markdown(sel, f"CLAUDE.md — {_line(sel.title)}",
                                   "Project memory for Claude Code: follow the rules, never do what is under "
                                   "\"Do not\".")}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60]


_SAFE_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,127}")
_RESERVED_RULES = frozenset({"workbench-always", "workbench-do-not"})


def _file_names(ids: list[str], keep: Callable[[str], bool]) -> dict[str, str]:
    """A distinct, safe file stem for each id, deterministic for the same ids: the id itself where
    ``keep`` says it is already safe and unambiguous, else its slug plus a short hash of the id
    (longer hashes, then a counter, if two would still meet)."""
    import hashlib

    names: dict[str, str] = {}
    taken: set[str] = set()
    unique = sorted(set(ids))
    for i in unique:
        if keep(i):
            names[i] = i
            taken.add(i)
    for i in unique:
        if i in names:
            continue
        digest = hashlib.sha256(i.encode("utf-8", "surrogatepass")).hexdigest()
        stem = _slug(i)[:50].strip("-") or "fragment"
        candidates = [f"{stem}-{digest[:n]}" for n in (8, 16, 64)]
        candidates += [f"{stem}-{digest}-{n}" for n in range(2, 2 + len(unique))]
        names[i] = next(c for c in candidates if c not in taken)
        taken.add(names[i])
    return names


def rule_names(ids: list[str]) -> dict[str, str]:
    """Cursor rule file stems: the slug when it equals the id, else slug plus hash, never a
    name that two ids share or that the pinned and anti-pattern rules use."""
    return _file_names(ids, lambda i: _slug(i) == i and i not in _RESERVED_RULES)


def page_names(ids: list[str]) -> dict[str, str]:
    """llms.txt page stems (``fragments/STEM.md``): the id when it is a safe id, else slug plus hash."""
    return _file_names(ids, lambda i: bool(_SAFE_ID.fullmatch(i)))


def front_matter(fields: dict[str, object]) -> str:
    """YAML front matter from a YAML emitter: no value can add a key, end the block or span lines.
    An empty value is written as nothing (``globs:``), as Cursor writes it; YAML reads it as null."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    Dumper.add_representer(type(None), lambda dumper, _: dumper.represent_scalar("tag:yaml.org,2002:null", ""))
    text = yaml.dump(fields, Dumper=Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False,
                     width=1 << 30)
    return f"---\n{text}---\n"


def _mdc(description: str, globs: list[str], always_apply: bool, text: str) -> str:
    fields = {"description": _line(description), "globs": ", ".join(globs) or None, "alwaysApply": always_apply}
    return f"{front_matter(fields)}\n{text.rstrip()}\n"


def _glob(path: str) -> str:
    """A source path as one Cursor glob: a comma (Cursor's separator), whitespace or a control
    character becomes ``?``, which still matches it."""
    glob = re.sub(r"[,\s\x00-\x1f\x7f]", "?", path.strip())
    return glob if glob.strip("?/") else ""


def _globs(f: Fragment) -> list[str]:
    """The globs a fragment's Cursor rule is attached by: the ``applies_to`` globs it declares (the
    same matching rule: ``**`` any directories, ``*`` within a segment), else its sources' folders."""
    declared = [g for g in (_glob(g) for g in f.content.applies_to()) if g]
    if declared:
        return list(dict.fromkeys(declared))
    out = []
    for s in f.sources:
        path = _glob(s.path)
        if not path:
            continue
        folder = path.rsplit("/", 1)[0] if "/" in path else ""
        out.append(f"{folder}/**" if folder else path)
    return sorted(dict.fromkeys(out))


def cursor_rules(sel: Selection, **_: object) -> dict[str, str]:
    files: dict[str, str] = {}
    if sel.pins:
        files[".cursor/rules/workbench-always.mdc"] = _mdc(
            f"Always-on rules pinned by tech leads for {sel.scope}", [], True,
            "# Always follow\n\n" + "\n".join(always(f, True) for f in sel.pins) + "\n\n"
            + "\n\n".join(item(f, 2) for f in sel.pins))
    if sel.avoid:
        files[".cursor/rules/workbench-do-not.mdc"] = _mdc(
            f"Anti-patterns: what not to do in {sel.scope}", [], True,
            "# Do not\n\n" + "\n".join(never(f) for f in sel.avoid) + "\n\n"
            + "\n\n".join(item(f, 2) for f in sel.avoid))
    names = rule_names([f.id for f in sel.knowledge])
    rules = {f.id for f in sel.rules}
    for f in sel.knowledge:   # a rule (what AGENTS.md lists under "Always follow") applies always,
        always_on = f.id in rules and not f.content.applies_to()   # unless it names the paths it governs
        files[f".cursor/rules/{names[f.id]}.mdc"] = _mdc(
            f"{f.title} ({f.kind}; {cite(f)})", [] if always_on else _globs(f), always_on, item(f, 1))
    return files


def check_base_url(url: str) -> str:
    """A base for llms.txt links: an http(s) URL with a host, no whitespace, credentials, query or
    fragment; returned ending in ``/`` with parentheses percent-encoded (they would end a markdown link)."""
    from urllib.parse import urlsplit

    if not isinstance(url, str) or not url or len(url) > 2000:
        raise UserError("the base URL must be an http(s) URL of at most 2000 characters", param="base_url")
    if re.search(r"[\s\x00-\x1f\x7f<>\"`\\{}|^]", url):
        raise UserError(f"bad base URL {url!r}: no whitespace, control characters or <>\"`\\{{}}|^", param="base_url")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as e:
        raise UserError(f"bad base URL {url!r}: {e}", param="base_url") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise UserError(f"bad base URL {url!r}: expected http://HOST/... or https://HOST/...", param="base_url")
    if parts.username is not None or parts.password is not None:
        raise UserError(f"bad base URL {url!r}: no credentials in a published URL", param="base_url")
    if parts.query or parts.fragment or "?" in url or "#" in url:
        raise UserError(f"bad base URL {url!r}: no query or fragment (links are appended to it)", param="base_url")
    path = parts.path.replace("(", "%28").replace(")", "%29")
    return f"{parts.scheme.lower()}://{parts.netloc}{path.rstrip('/')}/"


def _summary(f: Fragment) -> str:
    first = _line(f.content.detail("dont"))
    in_code = False
    for line in body(f).splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            in_code = not in_code
            continue
        text = re.sub(r"^\s*(?:[-*+>]|\d+\.)\s+", "", line).strip()
        if first or in_code or not text or text.startswith(("#", "|", "**Status", "<", "=", "---")):
            continue
        first = text
    first = _line(re.sub(r"[*`]", "", first))
    return (first[:140] + "…") if len(first) > 140 else first


def llms_txt(sel: Selection, *, base_url: str | None = None, **_: object) -> dict[str, str]:
    base = check_base_url(base_url) if base_url else ""
    optional = list(sel.optional)
    pages = page_names([f.id for f in (*sel.pins, *sel.avoid, *sel.knowledge, *optional)])

    def link(f: Fragment, described: bool = True) -> str:
        title = _line(f.title).replace("[", "(").replace("]", ")") or f.id
        note = f"{_summary(f)} ({_code(cite(f))})" if described else _code(cite(f))
        return f"- [{title}]({base}fragments/{pages[f.id]}.md): {note.strip()}"

    summary = (f"> Curated engineering knowledge for agents working in {_code(sel.scope)}: rules to follow, "
               "anti-patterns to avoid, and the most authoritative fragments.")
    lines = [f"# {_line(sel.title)}", "", summary, "",
             "Each link is one fragment as markdown, cited as `fragment-id@vVERSION`. Everything but the Optional "
             f"section, in full and in one file: [llms-full.txt]({base}llms-full.txt).", ""]
    full = [f"# {_line(sel.title)}", "", summary, ""]
    files: dict[str, str] = {}
    for heading, items in (("Rules", sel.rules), ("Do not", sel.avoid), ("Knowledge", sel.details)):
        if not items:
            continue
        lines += [f"## {heading}", ""] + [link(f) for f in items] + [""]
        full += [f"## {heading}", ""] + [item(f) + "\n" for f in items]
    if optional:
        lines += ["## Optional", ""] + [link(f, described=False) for f in optional] + [""]
    for f in (*sel.pins, *sel.avoid, *sel.knowledge, *optional):
        files[f"fragments/{pages[f.id]}.md"] = item(f, 1) + "\n"
    files["llms.txt"] = "\n".join(lines).rstrip() + "\n"
    files["llms-full.txt"] = "\n".join(full).rstrip() + "\n"
    return files


Renderer = Callable[..., dict[str, str]]
FORMATS: dict[str, Renderer] = {
    "agents-md": agents_md, "claude-md": claude_md, "cursor-rules": cursor_rules, "llms-txt": llms_txt}


def renderer(name: str) -> Renderer:
    """The format's renderer: ``render(selection, base_url=None) -> {relative path: text}``. The
    text is inert (workbench.inert): what others wrote reaches an agent's context, and a reviewer
    opening the file, with every control and bidi character shown, never acted on."""
    try:
        render = FORMATS[name]
    except KeyError:
        raise UserError(f"unknown export format {name!r} (valid: {', '.join(FORMATS)}, bundle)") from None

    def inert_render(sel: Selection, **kwargs: object) -> dict[str, str]:
        return {path: inert(text) for path, text in render(sel, **kwargs).items()}
    return inert_render
