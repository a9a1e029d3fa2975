"""Result values of retrieval calls, with JSON (``to_dict``) and notebook renderings."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

from .retrieval.compose import ContextItem
from .retrieval.pipeline import Hit


def _table_html(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _table_md(headers: list[str], rows: list[list[Any]]) -> str:
    esc = lambda v: str(v).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _hit_row(h: Hit) -> list[Any]:
    s = h.scores
    fmt = lambda v: "" if v is None else (f"{v:.3f}" if isinstance(v, float) else v)  # noqa: E731
    return [h.rank, h.id, h.fragment.kind, h.fragment.title, f"{h.score:.3f}", fmt(s.get("lexical")),
            fmt(s.get("dense")), fmt(s.get("freshness")), fmt(s.get("authority")), "📌" if s.get("pinned") else "",
            str(h.fragment.scope)]


_HIT_HEADERS = ["#", "id", "kind", "title", "score", "lexical", "dense", "freshness", "authority", "pin", "scope"]


@dataclass
class SearchResult:
    trace_id: str | None
    query: str
    hits: list[Hit]
    avoid: list[Hit]
    stages_ms: dict[str, float] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = {"trace_id": self.trace_id, "hits": [h.to_dict() for h in self.hits],
                "avoid": [h.to_dict() for h in self.avoid]}
        if self.trace_id is None and self.settings.get("trace_note"):
            data["trace_note"] = self.settings["trace_note"]
        return data

    def __repr__(self) -> str:
        return f"<SearchResult {self.query!r}: {len(self.hits)} hits, {len(self.avoid)} avoid, trace {self.trace_id}>"

    def _repr_html_(self) -> str:
        out = f"<p>search <b>{html.escape(self.query)}</b> — trace {html.escape(str(self.trace_id))}</p>"
        out += _table_html(_HIT_HEADERS, [_hit_row(h) for h in self.hits])
        if self.avoid:
            out += "<p><b>Avoid</b></p>" + _table_html(_HIT_HEADERS, [_hit_row(h) for h in self.avoid])
        return out

    def _repr_markdown_(self) -> str:
        out = f"search **{self.query}** — trace `{self.trace_id}`\n\n" + _table_md(
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

    def to_dict(self) -> dict[str, Any]:
        data = {"trace_id": self.trace_id, "budget_tokens": self.budget_tokens, "used_tokens": self.used_tokens,
                "fragments": [i.to_dict() for i in self.fragments], "avoid": [i.to_dict() for i in self.avoid],
                "omitted": self.omitted}
        if self.note:
            data["note"] = self.note
        return data

    def text(self) -> str:
        """The context as an agent receives it: markdown with citations."""
        blocks = []
        for item in self.fragments:
            blocks.append(f"{item.text}\n\n(source: {item.hit.id} v{item.hit.fragment.version})")
        if self.avoid:
            blocks.append("# Avoid")
            for item in self.avoid:
                blocks.append(f"{item.text}\n\n(source: {item.hit.id} v{item.hit.fragment.version})")
        return "\n\n---\n\n".join(blocks) if blocks else (self.note or "")

    def __repr__(self) -> str:
        return (f"<ContextResult {self.query!r}: {len(self.fragments)} fragments, {len(self.avoid)} avoid, "
                f"{self.used_tokens}/{self.budget_tokens} tokens, trace {self.trace_id}>")

    def _rows(self) -> list[list[Any]]:
        return ([["pin" if i.hit.scores.get("pinned") else "ranked", i.hit.id, i.hit.fragment.version,
                  i.hit.fragment.title, i.tokens] for i in self.fragments]
                + [["avoid", i.hit.id, i.hit.fragment.version, i.hit.fragment.title, i.tokens] for i in self.avoid])

    def _repr_html_(self) -> str:
        return (f"<p>context <b>{html.escape(self.query)}</b> — {self.used_tokens}/{self.budget_tokens} tokens, "
                f"trace {html.escape(str(self.trace_id))}</p>"
                + _table_html(["section", "id", "version", "title", "tokens"], self._rows()))

    def _repr_markdown_(self) -> str:
        return (f"context **{self.query}** — {self.used_tokens}/{self.budget_tokens} tokens, trace "
                f"`{self.trace_id}`\n\n" + _table_md(["section", "id", "version", "title", "tokens"], self._rows()))


class History(list):
    """A fragment's versions (a list of ``Version``), rendered as a table in notebooks."""

    _HEADERS = ["version", "author", "at", "status", "reason", "content hash"]

    def _rows(self) -> list[list[Any]]:
        return [[v.number, v.author, v.created_at.strftime("%Y-%m-%d %H:%M"), v.content.status, v.reason,
                 v.content_hash[:12]] for v in self]

    def _repr_html_(self) -> str:
        title = html.escape(self[0].fragment_id) if self else ""
        return f"<p>history of <b>{title}</b></p>" + _table_html(self._HEADERS, self._rows())

    def _repr_markdown_(self) -> str:
        return (f"history of **{self[0].fragment_id}**\n\n" if self else "") + _table_md(self._HEADERS, self._rows())


class EvalReport(dict):
    """Metrics per pipeline (the documented JSON), rendered as a table in notebooks."""

    _METRICS = ["ndcg@10", "recall@10", "recall@100", "mrr@10", "queries"]

    def _rows(self) -> list[list[Any]]:
        return [[name, *(self[name].get(m) for m in self._METRICS)] for name in self if name != "compare"]

    def _repr_html_(self) -> str:
        return _table_html(["pipeline", *self._METRICS], self._rows())

    def _repr_markdown_(self) -> str:
        return _table_md(["pipeline", *self._METRICS], self._rows())
