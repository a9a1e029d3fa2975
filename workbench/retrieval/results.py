"""Result values of retrieval calls, with JSON (``to_dict``) and notebook renderings."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

from .compose import NO_KNOWLEDGE, ContextItem, abstention_line, join
from .pipeline import Hit


# Notebook renderings show titles, queries, reasons and ids that anyone who wrote a fragment
# chose: every value is escaped, in HTML and in markdown (which passes raw HTML through).

def _h(value: Any) -> str:
    """A value as HTML text (quotes too, so it is safe in an attribute as well)."""
    return html.escape(str(value), quote=True)


# markdown: HTML-significant characters as entities; inline markup and table pipes backslash-escaped
_MD_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\\": "\\\\", "`": "\\`", "*": "\\*",
                             "_": "\\_", "[": "\\[", "]": "\\]", "~": "\\~", "|": "\\|", "$": "\\$"})


def _md(value: Any) -> str:
    """A value as markdown text on one line: no raw HTML, no links or emphasis, no table breaks."""
    return " ".join(str(value).splitlines()).translate(_MD_ESCAPES)


def _md_code(value: Any) -> str:
    """A value as an inline code span (where markdown shows it verbatim and escaped), or as
    escaped text when a backtick would end the span."""
    text = " ".join(str(value).splitlines())
    return _md(text) if "`" in text or not text.strip() else f"`{text}`"


def _table_html(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{_h(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_h(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _table_md(headers: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(_md(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _hit_row(h: Hit) -> list[Any]:
    s = h.scores
    fmt = lambda v: "" if v is None else (f"{v:.3f}" if isinstance(v, float) else v)  # noqa: E731
    title = h.fragment.title + (" [archived]" if h.fragment.status == "archived" else "")
    return [h.rank, h.id, h.fragment.kind, title, f"{h.score:.3f}",
            "…" if h.confidence is None else f"{h.confidence:.2f}",
            fmt(s.get("lexical")), fmt(s.get("dense")), fmt(s.get("freshness")), fmt(s.get("authority")),
            "📌" if s.get("pinned") else "", str(h.fragment.scope), h.superseded_label() or ""]


_HIT_HEADERS = ["#", "id", "kind", "title", "score", "confidence", "lexical", "dense", "freshness", "authority", "pin",
                "scope", "superseded"]


@dataclass
class SearchResult:
    trace_id: str | None
    query: str
    hits: list[Hit]
    avoid: list[Hit]
    stages_ms: dict[str, float] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    paths: list[str] | None = None        # the work's paths (search --paths / --diff), normalised

    def to_dict(self) -> dict[str, Any]:
        data = {"trace_id": self.trace_id, "hits": [h.to_dict() for h in self.hits],
                "avoid": [h.to_dict() for h in self.avoid]}
        if self.paths is not None:
            data["paths"] = self.paths
        if self.trace_id is None and self.settings.get("trace_note"):
            data["trace_note"] = self.settings["trace_note"]
        return data

    def __repr__(self) -> str:
        return f"<SearchResult {self.query!r}: {len(self.hits)} hits, {len(self.avoid)} avoid, trace {self.trace_id}>"

    def _repr_html_(self) -> str:
        out = f"<p>search <b>{_h(self.query)}</b> — trace {_h(self.trace_id)}</p>"
        out += _table_html(_HIT_HEADERS, [_hit_row(h) for h in self.hits])
        if self.avoid:
            out += "<p><b>Avoid</b></p>" + _table_html(_HIT_HEADERS, [_hit_row(h) for h in self.avoid])
        return out

    def _repr_markdown_(self) -> str:
        out = f"search **{_md(self.query)}** — trace {_md_code(self.trace_id)}\n\n" + _table_md(
            _HIT_HEADERS, [_hit_row(h) for h in self.hits])
        if self.avoid:
            out += "\n\n**Avoid**\n\n" + _table_md(_HIT_HEADERS, [_hit_row(h) for h in self.avoid])
        return out


@dataclass
class ContextResult:
    trace_id: str | None
    query: str
    budget_tokens: int
    used_tokens: int
    fragments: list[ContextItem]
    avoid: list[ContextItem]
    omitted: list[dict[str, Any]] = field(default_factory=list)
    note: str | None = None
    min_confidence: float | None = None   # the confidence floor applied (pins exempt)
    abstained: bool = False               # nothing ranked passed: "no relevant knowledge in scope"
    notice: str = ""                      # the text served when nothing else is (counted in used_tokens)
    paths: list[str] | None = None        # the work's paths (context --paths / --diff), normalised

    def to_dict(self) -> dict[str, Any]:
        data = {"trace_id": self.trace_id, "budget_tokens": self.budget_tokens, "used_tokens": self.used_tokens,
                "fragments": [i.to_dict() for i in self.fragments], "avoid": [i.to_dict() for i in self.avoid],
                "omitted": self.omitted, "min_confidence": self.min_confidence, "abstained": self.abstained}
        if self.paths is not None:
            data["paths"] = list(self.paths)
        if self.note:
            data["note"] = self.note
        if self.notice:
            data["notice"] = self.notice
        return data

    def text(self) -> str:
        """The context as an agent receives it: markdown, each item ending with its citation, within
        the budget (everything here was counted), and, when nothing relevant was found, a sentence
        saying so before any pins."""
        if not self.fragments and not self.avoid:
            return self.notice
        lead = abstention_line(NO_KNOWLEDGE) if self.abstained else None
        return join(self.fragments, self.avoid, lead)

    def __repr__(self) -> str:
        return (f"<ContextResult {self.query!r}: {len(self.fragments)} fragments, {len(self.avoid)} avoid, "
                f"{self.used_tokens}/{self.budget_tokens} tokens, trace {self.trace_id}>")

    def _rows(self) -> list[list[Any]]:
        return ([["pin" if i.hit.scores.get("pinned") else "ranked", i.hit.id, i.hit.fragment.version,
                  i.hit.fragment.title, i.tokens] for i in self.fragments]
                + [["avoid", i.hit.id, i.hit.fragment.version, i.hit.fragment.title, i.tokens] for i in self.avoid])

    def _repr_html_(self) -> str:
        return (f"<p>context <b>{_h(self.query)}</b> — {_h(self.used_tokens)}/{_h(self.budget_tokens)} tokens, "
                f"trace {_h(self.trace_id)}</p>"
                + _table_html(["section", "id", "version", "title", "tokens"], self._rows()))

    def _repr_markdown_(self) -> str:
        return (f"context **{_md(self.query)}** — {_md(self.used_tokens)}/{_md(self.budget_tokens)} tokens, trace "
                f"{_md_code(self.trace_id)}\n\n"
                + _table_md(["section", "id", "version", "title", "tokens"], self._rows()))


class History(list):
    """A fragment's versions (a list of ``Version``), rendered as a table in notebooks."""

    _HEADERS = ["version", "author", "at", "status", "reason", "content hash"]

    def _rows(self) -> list[list[Any]]:
        return [[v.number, v.author, v.created_at.strftime("%Y-%m-%d %H:%M"), v.content.status, v.reason,
                 v.content_hash[:12]] for v in self]

    def _repr_html_(self) -> str:
        title = _h(self[0].fragment_id) if self else ""
        return f"<p>history of <b>{title}</b></p>" + _table_html(self._HEADERS, self._rows())

    def _repr_markdown_(self) -> str:
        return (f"history of **{_md(self[0].fragment_id)}**\n\n" if self else "") + _table_md(self._HEADERS,
                                                                                                  self._rows())


class EvalReport(dict):
    """Metrics per pipeline (the documented JSON), rendered as a table in notebooks."""

    _METRICS = ["ndcg@10", "recall@10", "recall@100", "mrr@10", "queries"]

    def _rows(self) -> list[list[Any]]:
        return [[name, *(self[name].get(m) for m in self._METRICS)] for name in self if name not in ("compare", "paths", "archived")]

    def _repr_html_(self) -> str:
        return _table_html(["pipeline", *self._METRICS], self._rows())

    def _repr_markdown_(self) -> str:
        return _table_md(["pipeline", *self._METRICS], self._rows())
