"""Command definitions for curation: pin, unpin, pins."""

from __future__ import annotations

import argparse

from .main import command
from .render import emit_json, table


def add_curate_commands(sub: argparse._SubParsersAction) -> None:
    def cmd(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=help)

    p = cmd("pin", "Pin a fragment in a scope (tech leads of that scope only): it always reaches agents there.")
    p.add_argument("id")
    p.add_argument("--scope", required=True, help="org=ORG[,repo=R][,persona=P][,session=S]")
    p.add_argument("--as", dest="principal", metavar="LEAD", required=True, help="the tech lead pinning")
    p.add_argument("--reason", help="why this must always reach agents")
    p.add_argument("--until", metavar="DATE", help="the pin stops applying after this date (YYYY-MM-DD)")
    p.add_argument("--json", action="store_true", help="print the documented JSON instead of text")

    p = cmd("unpin", "Remove a pin (tech leads of that scope only).")
    p.add_argument("id")
    p.add_argument("--scope", required=True, help="the scope the fragment is pinned in")
    p.add_argument("--as", dest="principal", metavar="LEAD", required=True, help="the tech lead unpinning")
    p.add_argument("--reason", help="why (recorded)")

    p = cmd("pins", "List the pins in force (in scopes the principal can see).")
    p.add_argument("--scope", help="only pins of exactly this scope")
    p.add_argument("--all", action="store_true", help="include expired pins")
    p.add_argument("--as", dest="principal", metavar="PRINCIPAL",
                   help="list as this principal (default: $WORKBENCH_PRINCIPAL, else default_principal)")
    p.add_argument("--json", action="store_true", help="print the documented JSON instead of text")


def _open(args):
    from ..service import Workbench

    return Workbench.open(args.workspace)


@command("pin")
def _pin(args):
    with _open(args) as wb:
        pin = wb.pin(args.id, scope=args.scope, actor=args.principal, reason=args.reason, until=args.until)
    if args.json:
        emit_json(pin.to_dict())
    else:
        print(f"pinned {pin.fragment_id} in {pin.scope}" + (f" until {pin.until.date()}" if pin.until else ""))


@command("unpin")
def _unpin(args):
    with _open(args) as wb:
        wb.unpin(args.id, scope=args.scope, actor=args.principal, reason=args.reason)
    print(f"unpinned {args.id} from {args.scope}")


@command("pins")
def _pins(args):
    with _open(args) as wb:
        pins = [p.to_dict() for p in wb.pins(scope=args.scope, principal=args.principal, include_expired=args.all)]
    if args.json:
        emit_json(pins)
        return
    fmt = lambda s: ",".join(f"{k}={v}" for k, v in s.items() if v)  # noqa: E731
    print(table(["id", "scope", "pinned_by", "pinned_at", "until", "reason"],
                ([p["id"], fmt(p["scope"]), p["pinned_by"], p["pinned_at"], p["until"] or "-", p["reason"] or ""]
                 for p in pins)) if pins else "no pins")
