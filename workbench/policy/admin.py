"""Who may run the workspace: API tokens, purging traces, workspace-wide figures, calibration,
the embedding model.

Part of the policy (``from workbench import policy`` re-exports every name): decisions about the
workspace as a whole rather than about a fragment, a scope or a set. Pure: no I/O.
"""

from __future__ import annotations

from ..models import Decision, Principal
from .decide import ALLOW, _deny


def may_manage_token(actor: Principal | None, owner: str) -> bool:
    """May ``actor`` create, see or revoke API tokens of the principal named ``owner``? ``None`` is
    the local administrator (whoever can write the database file runs the CLI on it directly): always.
    An admin principal manages every principal's tokens; any other principal only its own."""
    if actor is None:
        return True
    return actor.admin or actor.name == owner


def may_create_token(actor: Principal | None, owner: str) -> Decision:
    """``may_manage_token`` for a new token, never by an agent, not even for itself: a token lasts, and an
    agent that mints its own outlives the revocation of the one it was given."""
    if actor is not None and actor.kind not in ("person", "service"):
        return _deny(f"{actor.name} is an agent: it may not create tokens, not even for itself (an admin or the "
                     "local administrator creates them; an agent may list and revoke its own)", "token-create")
    if may_manage_token(actor, owner):
        return ALLOW
    return _deny(f"only an admin may create tokens for another principal ({actor.name} may create tokens for "
                 f"{actor.name} only)", "token-create")


def may_purge_traces(actor: Principal | None) -> Decision:
    """May ``actor`` remove traces (what leads read in ``usage`` and ``gaps``)? Only admins, never one's own."""
    if actor is None or actor.admin:
        return ALLOW
    return _deny(f"only an admin or the local administrator may purge traces ({actor.name} is not an admin)",
                 "purge-traces")


def sees_workspace_totals(actor: Principal | None) -> bool:
    """May ``actor`` see figures about the whole workspace (``info``'s counts, the server's /metrics)? The
    local administrator (``None``) and admin principals; anyone else is told only about what it sees."""
    return actor is None or actor.admin


def may_calibrate(actor: Principal | None) -> bool:
    """May ``actor`` refit or reset the confidence calibration (the floor below which everyone's
    ``context`` abstains)? Whoever may see the workspace's totals: the local administrator and admins."""
    return sees_workspace_totals(actor)


def may_change_models(actor: Principal | None) -> Decision:
    """May ``actor`` add, shadow, promote or roll back embedding models (what every search of the workspace
    is scored with)? The local administrator and admin persons and services; never an agent, admin or not
    (agents read and propose)."""
    if actor is not None and actor.kind == "agent":
        return _deny(f"{actor.name} is an agent: agents never change the embedding model (an admin or the local "
                     "administrator does)", "change-models")
    if actor is None or actor.admin:
        return ALLOW
    return _deny(f"only an admin or the local administrator may change the embedding model ({actor.name} is not "
                 "an admin)", "change-models")


def taken_message(fragment_id: str) -> str:
    """What a create says when the id belongs to a fragment the actor may not see. Ids are one
    namespace per workspace, so a create cannot succeed; the message names no scope, owner or title."""
    return f"id {fragment_id!r} is not available: choose another id"
