"""Command definitions for curation: pin, unpin, pins."""

from __future__ import annotations

import argparse

from .main import command
from .main import open_workbench as _open
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


def add_more_curate_commands(sub: argparse._SubParsersAction) -> None:
    def cmd(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=help)

    def json_opt(p: argparse.ArgumentParser) -> None:
        p.add_argument("--json", action="store_true", help="print the documented JSON instead of text")

    p = cmd("antipattern", "Anti-patterns: what not to do, why, and what to do instead.")
    ap = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    add = ap.add_parser("add", help="create an anti-pattern fragment", description="Create an anti-pattern fragment.")
    add.add_argument("--title", required=True, help="a short name for the mistake")
    add.add_argument("--dont", required=True, help="what not to do")
    add.add_argument("--why", required=True, help="why not (the harm it causes)")
    add.add_argument("--instead", required=True, help="what to do instead")
    add.add_argument("--evidence", nargs="+", metavar="REF", help="incidents, fragment ids or URLs backing the why")
    add.add_argument("--scope", required=True, help="org=ORG[,repo=R][,persona=P]")
    add.add_argument("--as", dest="principal", metavar="USER", required=True, help="the author (owner by default)")
    add.add_argument("--owner", help="the owner, if not the author")
    add.add_argument("--id", dest="fragment_id", help="the fragment id (default: ORG-ap-TITLE-SLUG)")
    add.add_argument("--tags", nargs="+", metavar="TAG", help="tags")
    add.add_argument("--body", default="", help="more detail in markdown (examples, the incident story)")
    add.add_argument("--allow-secret", action="store_true", help="store it even if it contains a credential")
    json_opt(add)

    p = cmd("graph", "Citation authority: fragments by PageRank over links and source references.")
    p.add_argument("--top", type=int, default=20, help="how many (default 20; 0 for all)")
    p.add_argument("--as", dest="principal", metavar="PRINCIPAL", help="as this principal (default principal)")
    json_opt(p)

    p = cmd("dedupe", "Near-duplicate fragments (64-bit SimHash, Hamming distance <= 3).")
    p.add_argument("--distance", type=int, default=3, help="maximum Hamming distance (default 3)")
    p.add_argument("--as", dest="principal", metavar="PRINCIPAL", help="as this principal (default principal)")
    json_opt(p)

    p = cmd("merge", "Collapse DROP into KEEP: KEEP gains DROP's sources and in-links; DROP is archived.")
    p.add_argument("keep")
    p.add_argument("drop")
    p.add_argument("--as", dest="principal", metavar="USER", required=True, help="who merges")
    p.add_argument("--reason", help="why (default: 'merge DROP into KEEP')")
    json_opt(p)

    p = cmd("stale", "Fragments not edited or verified for --days (or whose code drifted), most used first.")
    p.add_argument("--days", type=int, default=180, help="age threshold in days (default 180)")
    p.add_argument("--as", dest="principal", metavar="PRINCIPAL",
                   help="whose view: only fragments this principal can see (default: $WORKBENCH_PRINCIPAL, "
                        "else default_principal)")
    json_opt(p)

    p = cmd("nudge", "Nudge owners of stale fragments: record nudges and write one digest per owner to the outbox.")
    p.add_argument("--days", type=int, default=180, help="age threshold in days (default 180)")
    p.add_argument("--cooldown", type=int, default=14, help="days before the same nudge repeats (default 14)")
    p.add_argument("--as", dest="principal", metavar="PRINCIPAL",
                   help="nudge about the fragments this principal can see (default: $WORKBENCH_PRINCIPAL, else "
                        "default_principal); run it once per org as its lead")
    json_opt(p)

    p = cmd("verify", "Owner: the fragment is still true (resets its staleness clock).")
    p.add_argument("id")
    p.add_argument("--as", dest="principal", metavar="OWNER", required=True, help="the fragment's owner")
    p.add_argument("--note", help="what was checked")
    json_opt(p)

    p = cmd("snooze", "Owner: hide a fragment from the stale list for N days.")
    p.add_argument("id")
    p.add_argument("--days", type=int, required=True, help="how many days (a positive number)")
    p.add_argument("--as", dest="principal", metavar="OWNER", required=True, help="the fragment's owner")
    json_opt(p)



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


@command("antipattern")
def _antipattern(args):
    with _open(args) as wb:
        f = wb.add_antipattern(title=args.title, dont=args.dont, why=args.why, instead=args.instead,
                               scope=args.scope, actor=args.principal, evidence=args.evidence, body=args.body,
                               tags=args.tags, fragment_id=args.fragment_id, owner=args.owner,
                               allow_secret=args.allow_secret)
    if args.json:
        emit_json(f.to_dict())
    else:
        print(f"created anti-pattern {f.id} in {f.scope}")


@command("graph")
def _graph(args):
    with _open(args) as wb:
        rows = wb.graph(top=args.top, principal=args.principal)
    if args.json:
        emit_json(rows)
        return
    print(table(["id", "authority", "in", "out", "title"],
                ([r["id"], f"{r['authority']:.4f}", str(r["in_links"]), str(r["out_links"]), r["title"]]
                 for r in rows)))


@command("dedupe")
def _dedupe(args):
    with _open(args) as wb:
        pairs = wb.dedupe(max_distance=args.distance, principal=args.principal)
    if args.json:
        emit_json(pairs)
        return
    if not pairs:
        print("no near-duplicates")
        return
    print(table(["a", "b", "distance", "a title", "b title"],
                ([p["a"], p["b"], str(p["distance"]), p["a_title"], p["b_title"]] for p in pairs)))
    print("\nmerge with: workbench merge KEEP DROP --as USER")


@command("merge")
def _merge(args):
    with _open(args) as wb:
        result = wb.merge(args.keep, args.drop, actor=args.principal, reason=args.reason)
    if args.json:
        emit_json(result)
    else:
        print(f"merged {result['dropped']} into {result['kept']} ({len(result['relinked'])} fragments relinked); "
              f"{result['dropped']} is archived")


@command("stale")
def _stale(args):
    with _open(args) as wb:
        items = [i.to_dict() for i in wb.stale(days=args.days, principal=args.principal)]
    if args.json:
        emit_json(items)
        return
    print(table(["id", "owner", "age", "used", "cited", "reason"],
                ([i["id"], i["owner"], f"{i['age_days']}d", str(i["traces"]), str(i["in_links"]),
                  "; ".join(i["reasons"])] for i in items), max_width=70) if items else "nothing stale")


@command("nudge")
def _nudge(args):
    with _open(args) as wb:
        report = wb.nudge(days=args.days, cooldown_days=args.cooldown, principal=args.principal).to_dict()
    if args.json:
        emit_json(report)
        return
    print(f"{report['nudges']} nudges to {report['owners']} owners; {report['skipped_cooldown']} still cooling down")
    for path in report["digests"]:
        print(f"  digest: {path}")


@command("verify")
def _verify(args):
    with _open(args) as wb:
        f = wb.verify(args.id, actor=args.principal, note=args.note)
    if args.json:
        emit_json(f.to_dict())
    else:
        print(f"{f.id} verified at {f.to_dict()['verified_at']}")


@command("snooze")
def _snooze(args):
    with _open(args) as wb:
        until = wb.snooze(args.id, days=args.days, actor=args.principal)
    if args.json:
        emit_json({"id": args.id, "until": until.replace(microsecond=0).isoformat() + "Z"})
    else:
        print(f"{args.id} snoozed until {until.date()}")
