"""Published contexts: the publisher's view and the subscriber's, read-only, from the palette.

What ``workbench published`` and ``workbench subscriptions`` print, as the core returns it for the
principal (``Workbench.published``: the contexts published from its scopes, their versions,
subscribing scopes and usage counts; ``Workbench.subscriptions``: what applies to it and what is
published). The text is shown in a read-only plain TextArea (its names and titles are others':
inert). This screen decides nothing; it writes nothing.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding

from ..messages import plain
from ..plain import Static, TextArea
from .base import WbScreen


def published_text(wb, principal) -> str:
    """The two views as lines of text (runs in a job)."""
    out = ["Published from your scopes"]
    mine = wb.published(principal=principal)
    for ctx in mine:
        out.append(f"  {ctx['name']}  v{ctx['latest']}  ({ctx['version_policy']}; set {ctx['set']}"
                   f"@{ctx['set_scope']}; owner {ctx['owner']})" + (" ended" if ctx["ended_at"] else ""))
        for sub in ctx.get("subscribers", []):
            out.append(f"    subscribed by {sub['scope']} since {sub['since']}"
                       + (f", pinned at v{sub['version']}" if sub["version"] else ", follows the latest")
                       + (f", ended {sub['ended_at']}" if sub["ended_at"] else ""))
        for fid, calls in sorted(ctx.get("usage", {}).items()):
            out.append(f"    {fid}: served {calls} times to subscribers")
    if not mine:
        out.append("  (none)")
    subs = wb.subscriptions(principal=principal)
    out += ["", "Subscriptions that apply to you"]
    out += [f"  {s['context']} for {s['scope']}: v{s['version']} of {s['latest']} ({s['policy']}), "
            f"{len(s['receives'])} fragments" for s in subs["subscriptions"]] or ["  (none)"]
    out += ["", "Published contexts (to subscribe: workbench subscribe ORG/CONTEXT --scope S)"]
    out += [f"  {c['name']}  v{c['latest']}  by {c['owner']} ({c['version_policy']})" for c in subs["available"]] \
        or ["  (none)"]
    return "\n".join(out)


class PublishedScreen(WbScreen):
    """Read-only: published contexts and subscriptions, as the core shows them to the principal."""

    DEFAULT_CSS = """
    #published-text { height: 1fr; }
    """
    BINDINGS = [Binding("r", "reload", "Reload", id="published-reload"),
                Binding("escape", "back", "Back", id="published-back")]
    LETTER_ACTIONS = frozenset({"reload"})

    def body(self) -> ComposeResult:
        yield Static("Published contexts and subscriptions", classes="pane-title", markup=False)
        yield TextArea("loading…", id="published-text", read_only=True, soft_wrap=True)

    def on_mount(self) -> None:
        super().on_mount()
        self.reload()

    def reload(self) -> None:
        self.app.submit(published_text, self.wb, self.me, done=self._loaded, failed=self._failed,
                        key="published", label="reading published contexts…")

    def _loaded(self, text: str) -> None:
        if self.is_attached:
            self.query_one("#published-text", TextArea).load_text(text)

    def _failed(self, error: Any) -> None:
        self.notify(plain(error), title="Not loaded", severity="error", timeout=8)

    def action_reload(self) -> None:
        self.reload()

    def action_back(self) -> None:
        self.app.pop_screen()
