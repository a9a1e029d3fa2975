"""How fragments look in a table cell: ages, clipped ids and titles, short scope labels.
Display only (the read model is service/browse.py); the CLI's tables use ``age`` too."""

from __future__ import annotations

from datetime import datetime

from ..models import Scope

ID_WIDTH = 18               # ids longer than this are cut with "…" in tables
LOADING = "loading…"        # what a pane shows until its job delivers


def version_line(v) -> str:
    """One version, for pickers and detail lines: number, author, time and reason."""
    reason = "(withheld: written in a scope you cannot see)" if v.hidden else v.reason
    return f"v{v.number} · {v.author} · {v.created_at:%Y-%m-%d %H:%M} · {reason}"


def age(ts: datetime | None, now: datetime) -> str:
    """A short, human age: today, 12d, 5mo, 2y."""
    if ts is None:
        return "-"
    days = (now - ts).days
    if days < 1:
        return "today"
    if days < 60:
        return f"{days}d"
    if days < 730:
        return f"{days // 30}mo"
    return f"{days // 365}y"


def short_id(fid: str, width: int = ID_WIDTH) -> str:
    """The id cut to ``width`` characters with "…" (tables show the full id elsewhere)."""
    return clip(fid, width)


def clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:max(width - 1, 0)] + "…"


def scope_label(scope: Scope, orgs: tuple[str, ...] | list[str] = ()) -> str:
    """A short scope for a table cell: ``repo/@persona/#session``, led by the org unless the
    viewer belongs to that org alone; a scope of the whole org reads "org-wide"."""
    lower = [p for p in (scope.repo, scope.persona and "@" + scope.persona,
                         scope.session and "#" + scope.session) if p]
    if len(orgs) == 1 and scope.org in orgs:
        return "/".join(lower) or "org-wide"
    return "/".join([scope.org, *lower]) if lower else f"{scope.org} (org-wide)"


def calibration_label(info: dict | None) -> str:
    """How the workspace is calibrated, short enough for the header: the floor ``context``
    applies and where it comes from (``Workbench.calibration_info``; ``info`` says more)."""
    if not isinstance(info, dict) or not isinstance(info.get("floor"), (int, float)):
        return ""
    if info.get("source") == "golden":
        when = str(info.get("fitted_at") or "")[:10]
        source = f"golden fit, {info.get('queries') or 0} queries" + (f", {when}" if when else "")
    else:
        source = str(info.get("source") or "prior")
    configured = abs(float(info["floor"]) - float(info.get("model_floor", info["floor"]))) > 1e-12
    return f"floor {float(info['floor']):.2f} ({'workbench.yaml' if configured else source})"
