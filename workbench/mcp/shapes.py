"""What the MCP face hands to clients: output schemas (pydantic models published as each
tool's ``outputSchema``) and the text renderings a model reads.

Pure: values in, strings and dicts out; no workspace, no I/O, no policy. Kept apart from
``server`` so the server module stays about wiring. The structured content follows the
documented JSON of the CLI (``context --json``) where there is one; the text content is what
most clients put in front of the model, so it is compact and carries citations (``id@vN``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..models import antipattern_parts

PREVIEW_CHARS = 200       # structured preview (as before)
LINE_PREVIEW_CHARS = 120  # preview in one text line of `search`


class _Open(BaseModel):
    # New fields from the core (labels, scores) pass through instead of failing validation.
    model_config = ConfigDict(extra="allow")


class SearchItem(_Open):
    id: str = Field(description="fragment id")
    version: int = Field(description="version served")
    citation: str = Field(description="how to cite it: id@vN")
    title: str
    kind: str
    scope: str = Field(description="org=...[,repo=...][,persona=...]")
    owner: str
    updated_at: str | None = None
    score: float = Field(description="ranking score (only comparable within one call)")
    confidence: float | None = Field(None, ge=0, le=1, description="how likely the hit is relevant, 0-1")
    superseded_by: str | None = Field(None, description="id@vN of the fragment that replaces this one")
    preview: str = Field(description=f"first {PREVIEW_CHARS} characters of the body")
    archived: bool = Field(False, description="archived (found because the search asked for archived fragments)")
    reason: str | None = Field(None, description="why it was chosen for the work's paths ('applies to "
                               "services/payments/**', 'cites services/payments/stripe_client.py', ...)")


class SearchOut(_Open):
    trace_id: str | None = Field(description="the stored trace of this call (None: read-only workspace)")
    hits: list[SearchItem]
    avoid: list[SearchItem] = Field(description="anti-patterns that match: what not to do")
    note: str | None = None
    paths: list[str] | None = Field(None, description="the work's paths (given `paths` or `diff`), normalised")


class ContextItemOut(_Open):
    id: str
    version: int
    title: str
    kind: str
    score: float
    scores: dict[str, Any] = Field(description="score breakdown (lexical, dense, freshness, authority, pinned...)")
    tokens: int = Field(description="tokens of `text` (the embedding model's tokenizer)")
    text: str = Field(description="what was served: the fragment, or its best sections when partial")
    scope: dict[str, str | None]
    owner: str
    source: dict[str, Any] | None = None
    updated_at: str | None = None
    confidence: float | None = Field(None, ge=0, le=1, description="calibrated relevance, 0-1")
    superseded_by: dict[str, Any] | None = Field(None, description="{id, version} of the replacing fragment")
    reason: str | None = Field(None, description="why it was chosen for the work's paths ('applies to "
                               "services/payments/**', 'cites services/payments/stripe_client.py', ...)")
    partial: bool | None = None
    sections: list[str] | None = None


class ContextOut(_Open):
    """The documented JSON of `workbench context --json`."""
    trace_id: str | None
    budget_tokens: int
    used_tokens: int = Field(description="tokens of the served items; the text content also fits the budget")
    fragments: list[ContextItemOut] = Field(description="pinned first, then ranked")
    avoid: list[ContextItemOut] = Field(description="anti-patterns to avoid")
    omitted: list[dict[str, Any]] = Field(description="what did not fit, with the reason")
    min_confidence: float | None = Field(None, description="the confidence floor applied (pins exempt)")
    abstained: bool | None = Field(None, description="true: nothing relevant passed the floor ('no relevant "
                                                     "knowledge in scope'); only pins, if any, are served")
    note: str | None = None
    paths: list[str] | None = Field(None, description="the work's paths (given `paths` or `diff`), normalised")


class FragmentOut(_Open):
    trace_id: str | None
    id: str
    version: int
    citation: str = Field(description="id@vN")
    title: str
    kind: str
    status: str
    scope: dict[str, str | None]
    owner: str
    tags: list[str]
    links: list[str]
    supersedes: list[str] = []
    superseded_by: str | None = None
    sources: list[dict[str, Any]]
    details: dict[str, Any] = Field(description="anti-pattern fields (dont, why, instead, evidence); for a proposal "
                                    "its author (proposed_by) and, once reviewed, the review {decision, by, at, "
                                    "reason}")
    updated_at: str | None
    verified_at: str | None
    body: str


class ProposalOut(_Open):
    id: str = Field(description="the proposal's fragment id (read it back with `get`)")
    version: int
    citation: str = Field(description="id@vN")
    status: str = Field(description="proposed: awaiting review")
    kind: str
    title: str
    scope: str = Field(description="org=...[,repo=...][,persona=...][,session=...]")
    owner: str
    proposed_by: str
    note: str


# -- labels the core may or may not provide yet ------------------------------------------------

def cite(fragment_id: str, version: int | None) -> str:
    return f"{fragment_id}@v{version}" if version is not None else fragment_id


ARCHIVED_SUPERSEDER = "it was replaced, and its replacement is archived: neither is current"

def label(value: Any) -> str | None:
    """A supersession label as ``ID@vN`` from what the core gives: an (id, version) pair,
    a {"id", "version"} dict, or a string."""
    if not value:
        return None
    if isinstance(value, dict):
        archived = " (archived)" if value.get("archived") else ""
        return cite(value["id"], value.get("version")) + archived if value.get("id") else None
    if isinstance(value, (list, tuple)) and len(value) in (2, 3) and isinstance(value[1], int):
        return cite(value[0], value[1]) + (" (archived)" if len(value) == 3 else "")
    return str(value)


def superseded_by(hit) -> str | None:
    return label(getattr(hit, "superseded_by", None) or (getattr(hit, "scores", None) or {}).get("superseded_by"))


def confidence(hit) -> float | None:
    value = (getattr(hit, "scores", None) or {}).get("confidence")
    if value is None:
        value = getattr(hit, "confidence", None)
    return round(float(value), 4) if isinstance(value, (int, float)) else None


# -- search ------------------------------------------------------------------------------------

def _oneline(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit].rstrip() + "…"


def search_item(hit) -> dict[str, Any]:
    f = hit.fragment
    body = f.body
    return {"id": f.id, "version": f.version, "citation": cite(f.id, f.version), "title": f.title, "kind": f.kind,
            "scope": str(f.scope), "owner": f.owner, "updated_at": f.to_dict()["updated_at"],
            "score": round(hit.score, 4), "confidence": confidence(hit), "superseded_by": superseded_by(hit),
            "preview": body[:PREVIEW_CHARS] + ("…" if len(body) > PREVIEW_CHARS else ""),
            **({"via": hit.via} if getattr(hit, "via", None) else {}),
            **({"archived": True} if f.status == "archived" else {}),
            **({"reason": hit.reason} if getattr(hit, "reason", None) else {})}


def search_data(result) -> dict[str, Any]:
    data = {"trace_id": result.trace_id, "hits": [search_item(h) for h in result.hits],
            "avoid": [search_item(h) for h in result.avoid]}
    if getattr(result, "paths", None) is not None:
        data["paths"] = list(result.paths)
    note = (getattr(result, "note", None) or (result.settings or {}).get("trace_note"))
    if note:
        data["note"] = note
    return data


def _line(item: dict[str, Any], n: int) -> str:
    parts = [f"{n}. {item['citation']}", item["title"], item["kind"]]
    parts.append(f"confidence {item['confidence']:.2f}" if item["confidence"] is not None
                 else f"score {item['score']:.3f}")
    if item["superseded_by"]:
        parts.append(f"superseded by {item['superseded_by']}")
    if item.get("via"):
        parts.append(f"via {item['via']}")
    if item.get("archived"):
        parts.append("archived")
    if item.get("reason"):
        parts.append(f"why: {item['reason']}")
    return " · ".join(parts) + " — " + _oneline(item["preview"].rstrip("…"), LINE_PREVIEW_CHARS)


def search_text(data: dict[str, Any], query: str | None) -> str:
    """One line per hit (citation, title, kind, confidence, preview), then the anti-patterns."""
    asked = [f"“{_oneline(query, 80)}”"] if query else []
    if data.get("paths"):
        shown = data["paths"][:5]
        asked.append("paths " + ", ".join(shown) + (f" and {len(data['paths']) - 5} more" if len(data["paths"]) > 5
                                                    else ""))
    lines = [f"{len(data['hits'])} fragments for {' with '.join(asked)}"
             + (f" (trace {data['trace_id']})" if data["trace_id"] else "")
             + ". Full text: the `get` tool or the resource workbench://fragment/ID."]
    lines += [_line(item, n) for n, item in enumerate(data["hits"], 1)]
    if data["avoid"]:
        lines.append("Avoid (anti-patterns that match):")
        lines += [_line(item, n) for n, item in enumerate(data["avoid"], 1)]
    if data.get("note") and not data["hits"]:
        lines.append(data["note"])
    return "\n".join(lines)


# -- one fragment ------------------------------------------------------------------------------

def fragment_data(fragment, trace_id: str | None, replaced_by: str | None, via: str | None = None) -> dict[str, Any]:
    data = fragment.to_dict()
    out = {"trace_id": trace_id, "id": fragment.id, "version": fragment.version,
           "citation": cite(fragment.id, fragment.version)}
    out.update({k: data[k] for k in ("title", "kind", "status", "scope", "owner", "tags", "links", "supersedes",
                                     "sources", "details", "updated_at", "verified_at", "body")})
    out["superseded_by"] = replaced_by
    if via:   # received through a subscription: whose published context it came from
        out["via"] = via
    return out


def proposal_data(fragment) -> dict[str, Any]:
    return {"id": fragment.id, "version": fragment.version, "citation": cite(fragment.id, fragment.version),
            "status": fragment.status, "kind": fragment.kind, "title": fragment.title, "scope": str(fragment.scope),
            "owner": fragment.owner, "proposed_by": fragment.content.detail("proposed_by") or fragment.owner,
            "note": "awaiting review: served to nobody until a lead of its scope accepts it"}


def proposal_text(data: dict[str, Any]) -> str:
    return (f"Proposal recorded: {data['id']} ({data['kind']} in {data['scope']}), awaiting review. It is not served "
            "to anyone until a lead of that scope accepts it. Read it back with `get` (id "
            f"{data['id']}); once reviewed, `get` shows the decision and, for a rejection, the reason.")


def _review_line(data: dict[str, Any]) -> str | None:
    """For a proposal: who proposed it and, once reviewed, the decision, the reviewer and the reason."""
    details = data.get("details") or {}
    review = details.get("review") if isinstance(details.get("review"), dict) else None
    if data["status"] == "proposed":
        return f"> **Proposal by {details.get('proposed_by') or data['owner']}, awaiting review.**"
    if review and review.get("decision") == "rejected":
        return (f"> **Rejected by {review.get('by')}** ({str(review.get('at') or '')[:10]}): "
                f"{review.get('reason') or 'no reason given'}")
    return None


def fragment_markdown(data: dict[str, Any]) -> str:
    """The fragment as markdown: title, one metadata line with its citation, anti-pattern fields, body."""
    scope = ",".join(f"{k}={v}" for k, v in data["scope"].items() if v)
    meta = [f"`{data['citation']}`", data["kind"], scope, f"owner {data['owner']}"]
    if data.get("updated_at"):
        meta.append(f"updated {data['updated_at'][:10]}")
    if data["status"] != "active":
        meta.append(data["status"])
    lines = [f"# {data['title']}", " · ".join(meta)]
    if data.get("superseded_by") and str(data["superseded_by"]).endswith("(archived)"):
        lines.append(f"> **Superseded by {data['superseded_by']}**: {ARCHIVED_SUPERSEDER}.")
    elif data.get("superseded_by"):
        lines.append(f"> **Superseded by {data['superseded_by']}**: prefer that fragment; this one is kept "
                     "for history.")
    review = _review_line(data)
    if review:
        lines.append(review)
    lines += [f"**{label}:** {value}" for label, value in antipattern_parts(data.get("details") or {})]
    if data["body"].strip():
        lines.append(data["body"].strip())
    lines.append(f"(source: {data['citation']})")
    return "\n\n".join(lines)


def resource_description(fragment) -> str:
    updated = fragment.to_dict()["updated_at"] or ""
    return (f"{fragment.kind} in {fragment.scope}, owner {fragment.owner}, v{fragment.version}"
            + (f", updated {updated[:10]}" if updated else "") + ". "
            + _oneline(fragment.body, 100))


# -- context and the task-context prompt -------------------------------------------------------

def context_data(result, budget: int) -> dict[str, Any]:
    data = result.to_dict()
    data["budget_tokens"] = budget  # the caller's budget (the core may have been asked for less)
    return data


def trimmed(result, budget: int, count) -> tuple[Any, str]:
    """``result`` without its last ranked items until ``text()`` fits ``budget`` (pins and
    anti-patterns stay); what was dropped is listed in ``omitted``."""
    from dataclasses import replace

    text = result.text()
    if count(text) <= budget:  # the core counts everything: this is the normal case
        return result, text
    fragments, omitted = list(result.fragments), list(result.omitted)
    while True:
        fitted = replace(result, fragments=fragments, omitted=omitted,
                         used_tokens=sum(i.tokens for i in fragments + list(result.avoid)))
        text = fitted.text()
        droppable = [i for i in fragments if not i.hit.scores.get("pinned")]
        if count(text) <= budget or not droppable:
            return fitted, text
        last = droppable[-1]
        fragments.remove(last)
        omitted.append({"id": last.hit.id, "tokens": last.tokens, "reason": "over budget (citations)"})


def _block(item) -> str:
    """One served item: its text already ends with its citation (and carries any superseded label)."""
    return item.text


def prompt_sections(result, task: str, who: str) -> list[str]:
    """The task-context prompt as messages: the task, then pins, relevant fragments, anti-patterns."""
    pins = [i for i in result.fragments if i.hit.scores.get("pinned")]
    ranked = [i for i in result.fragments if not i.hit.scores.get("pinned")]
    intro = (f"Task: {task}\n\nBelow is curated engineering knowledge from workbench (visible to {who}). "
             "Pinned fragments always apply; anti-patterns are what not to do. Cite what you rely on as id@vN."
             + (f" (trace {result.trace_id})" if result.trace_id else ""))
    out = [intro]
    for heading, items in (("Pinned (always applies)", pins), ("Relevant knowledge", ranked),
                           ("Anti-patterns to avoid", result.avoid)):
        if items:
            out.append(f"# {heading}\n\n" + "\n\n---\n\n".join(_block(i) for i in items))
    if len(out) == 1:
        out.append(result.note or "No relevant knowledge in scope.")
    return out
