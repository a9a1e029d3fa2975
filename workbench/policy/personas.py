"""The persona a call acts in (issue 31): which ranking weights apply, and which fragments the
persona feature prefers. A persona only changes ranking, never what the caller sees.

- ``--persona P`` (CLI, MCP argument, RPC/HTTP option) is accepted only from a member of P in at
  least one of its orgs (a grant ORG/P, or ORG/* where ORG declares P). An undeclared persona and
  one the caller is not a member of are refused with the same message, so a refusal tells nothing
  about what exists.
- Without it, an agent acts in its persona when its grants name exactly one; people (and agents
  with several personas) act in none.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..errors import UserError
from ..models import Principal


def member_personas(principal: Principal, declared: Mapping[str, Iterable[str]]) -> list[str]:
    """The persona names ``principal`` is a member of, over its orgs (``declared``: org → personas)."""
    out: list[str] = []
    for grant in principal.personas:
        org, _, name = grant.partition("/")
        if org not in principal.orgs:
            continue
        names = list(declared.get(org, ())) if name == "*" else [name]
        out.extend(n for n in names if n in declared.get(org, ()) and n not in out)
    return out


def acting_persona(principal: Principal, persona: str | None, declared: Mapping[str, Iterable[str]]) -> str | None:
    """The persona a call by ``principal`` acts in (see the module docstring); raises a
    ``UserError`` for a persona the caller may not act in (unknown and not-a-member alike)."""
    mine = member_personas(principal, declared)
    if persona is not None:
        if not isinstance(persona, str) or persona not in mine:
            raise UserError(f"{principal.name} cannot act in persona {persona!r} (not one of its personas: "
                            f"{', '.join(mine) or 'none'})", param="persona")
        return persona
    if principal.kind == "agent" and len(mine) == 1:
        return mine[0]
    return None
