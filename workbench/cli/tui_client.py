"""The TUI as a client of the team server: which facade the TUI runs on.

When ``workbench server`` holds the workspace (its advert) or ``WORKBENCH_URL`` names a server
(``remote.endpoint_for``; ``WORKBENCH_TOKEN`` overrides the advert's owner token), the TUI runs on
a ``RemoteWorkbench`` over that server instead of opening the workspace, which the server holds.
The choice is made here, by the launcher: the ``tui`` face may not import the server (the layers
in pyproject.toml), and it never needs to know which facade it has. Without a server, the TUI
opens the workspace itself, as it always did. The facade is given ``locate``, which finds the
server again the same way, so the TUI follows a server that restarted on another port.

``python -m workbench.cli.tui_client --workspace W [--as P]`` is a browser tab's app process when
``workbench serve`` runs beside a team server (``workbench.tui.served``, with this choice made
again for each tab).
"""

from __future__ import annotations

from typing import Any

TAB_MODULE = "workbench.cli.tui_client"


def remote_workbench(workspace: str | None) -> Any | None:
    """A ``RemoteWorkbench`` on the server for ``workspace``, or None when no server runs."""
    from .remote import endpoint_for

    endpoint = endpoint_for(workspace)
    if endpoint is None:
        return None
    from ..remote.client import RemoteWorkbench

    def locate() -> tuple[str, str | None] | None:
        """Where the server is now (it may have restarted on another port): read again as above."""
        found = endpoint_for(workspace)
        return None if found is None else (found.url, found.token)

    return RemoteWorkbench(endpoint.url, endpoint.token, source=endpoint.source, locate=locate)


def ignored_as(remote: Any, principal: str | None) -> str | None:
    """The warning when the server does not let this token act as ``principal`` (a non-admin
    token always acts as its own principal), else None. Fails (a ``UserError``) when the server
    cannot be reached, refuses the token, or an admin names an unknown principal."""
    acting = remote.principal(principal).name
    if principal and acting != principal:
        return f"workbench: --as {principal} ignored: this token acts as {acting}"
    return None


def main(argv: list[str] | None = None) -> None:
    from ..tui.served import main as run_tab

    run_tab(argv, connect=remote_workbench)


if __name__ == "__main__":
    main()
