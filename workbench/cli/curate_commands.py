"""Commands for curation: pins, anti-patterns, authority, near-duplicates, staleness and nudges."""

from __future__ import annotations

import click

from .options import (id_argument, INT, MultiValueOption, PRINCIPAL_DEFAULT, as_option, command, group, json_option,
                      open_workbench, scope_option, values)
from .commands import base_option
from .render import emit_json, table


def whose_view(wb, principal: str | None) -> tuple[str, str]:
    """Whose view a report shows: the principal's name, and " (the default principal, from
    default_principal in workbench.yaml; --as P for another view)" when --as did not name them."""
    origin = wb.config.principal_origin(principal)
    return (wb.principal(principal).name,
            f" (the default principal, from {origin}; --as P for another view)" if origin else "")


def _note_default(view: tuple[str, str], command: str) -> None:
    """With --json the output's shape is the contract: whose view it is goes to stderr when --as was not given."""
    if view[1]:
        click.echo(f"workbench: {command} shows what {view[0]} can see{view[1]}", err=True)


@command("pin", "Pin a fragment in a scope (tech leads of that scope only): it always reaches agents there.",
         "workbench pin nw-pol-pci-scope --scope org=northwind --as priya.raman --reason 'card data rules'")
@id_argument()
@scope_option(required=True)
@as_option("the tech lead pinning", required=True, metavar="LEAD")
@click.option("--reason", help="why this must always reach agents")
@click.option("--until", metavar="DATE", help="the pin stops applying after this date (YYYY-MM-DD)")
@json_option()
def pin(id, scope, principal, reason, until, as_json):
    with open_workbench() as wb:
        made = wb.pin(id, scope=scope, actor=principal, reason=reason, until=until)
    if as_json:
        emit_json(made.to_dict())
    else:
        print(f"pinned {made.fragment_id} in {made.scope}" + (f" until {made.until.date()}" if made.until else ""))


@command("unpin", "Remove a pin (tech leads of that scope only).",
         "workbench unpin nw-pol-pci-scope --scope org=northwind --as priya.raman")
@id_argument()
@scope_option("the scope the fragment is pinned in", required=True)
@as_option("the tech lead unpinning", required=True, metavar="LEAD")
@click.option("--reason", help="why (recorded)")
def unpin(id, scope, principal, reason):
    with open_workbench() as wb:
        wb.unpin(id, scope=scope, actor=principal, reason=reason)
    print(f"unpinned {id} from {scope}")


@command("pins", "List the pins in force (in scopes the principal can see).", "workbench pins --as marco.bianchi")
@scope_option("only pins of exactly this scope")
@click.option("--all", "include_expired", is_flag=True, help="include expired pins")
@as_option(f"list as this principal {PRINCIPAL_DEFAULT}")
@json_option()
def pins(scope, include_expired, principal, as_json):
    with open_workbench() as wb:
        found = [p.to_dict() for p in wb.pins(scope=scope, principal=principal, include_expired=include_expired)]
    if as_json:
        emit_json(found)
        return
    fmt = lambda s: ",".join(f"{k}={v}" for k, v in s.items() if v)  # noqa: E731
    print(table(["id", "scope", "pinned_by", "pinned_at", "until", "reason"],
                ([p["id"], fmt(p["scope"]), p["pinned_by"], p["pinned_at"], p["until"] or "-", p["reason"] or ""]
                 for p in found)) if found else "no pins")


@group("antipattern", "Anti-patterns: what not to do, why, and what to do instead.",
       "workbench antipattern add --title T --dont D --why W --instead I --scope org=northwind --as marco.bianchi")
def antipattern():
    pass


@command("add", "Create an anti-pattern fragment.",
         "workbench antipattern add --title 'Retrying a POST without an idempotency key'\n"
         "  --dont 'Retry a payment mutation without the Idempotency-Key header'\n"
         "  --why 'double charges (INC-2291)' --instead 'Send the same Idempotency-Key on every retry'\n"
         "  --scope org=northwind,repo=payments-api --as marco.bianchi --evidence INC-2291 INC-2304")
@click.option("--title", required=True, help="a short name for the mistake")
@click.option("--dont", required=True, help="what not to do")
@click.option("--why", required=True, help="why not (the harm it causes)")
@click.option("--instead", required=True, help="what to do instead")
@click.option("--evidence", cls=MultiValueOption, metavar="REF...",
              help="incidents, fragment ids or URLs backing the why (space-separated or repeated)")
@scope_option("org=ORG[,repo=R][,persona=P]", required=True)
@as_option("the author (owner by default)", required=True, metavar="USER")
@click.option("--owner", help="the owner, if not the author")
@click.option("--id", "fragment_id", help="the fragment id (default: ORG-ap-TITLE-SLUG)")
@click.option("--tags", cls=MultiValueOption, metavar="TAG...", help="tags (space-separated or repeated)")
@click.option("--body", default="", help="more detail in markdown (examples, the incident story)")
@click.option("--allow-secret", is_flag=True, help="store it even if it contains a credential")
@json_option()
def antipattern_add(title, dont, why, instead, evidence, scope, principal, owner, fragment_id, tags, body,
                    allow_secret, as_json):
    with open_workbench() as wb:
        f = wb.add_antipattern(title=title, dont=dont, why=why, instead=instead, scope=scope, actor=principal,
                               evidence=values(evidence), body=body, tags=values(tags), fragment_id=fragment_id,
                               owner=owner, allow_secret=allow_secret)
    if as_json:
        emit_json(f.to_dict())
    else:
        print(f"created anti-pattern {f.id} in {f.scope}")


antipattern.add_command(antipattern_add)


@command("edit", "Change an anti-pattern's fields (don't / why / instead / evidence, title, tags): a new version, "
         "the rest kept, showing which golden queries it changes.",
         "workbench antipattern edit nw-ap-retry-without-idempotency-key --why 'double refunds (INC-2745)'\n"
         "  --evidence INC-2745 INC-3001 --reason 'cite the refund incident' --base 1 --as marco.bianchi")
@id_argument()
@click.option("--title", help="the new title")
@click.option("--dont", help="what not to do")
@click.option("--why", help="why not (the harm it causes)")
@click.option("--instead", help="what to do instead")
@click.option("--evidence", cls=MultiValueOption, metavar="REF...",
              help="the whole new evidence list: incidents, fragment ids or URLs (space- or comma-separated, or "
                   "repeated; '' empties it)")
@click.option("--tags", cls=MultiValueOption, metavar="TAG...", help="the whole new tag list ('' empties it)")
@click.option("--reason", required=True, help="why this change (required)")
@base_option()
@click.option("--allow-secret", is_flag=True,
              help="store the change even if it contains a credential (the override is recorded)")
@as_option(required=True)
@json_option()
def antipattern_edit(id, title, dont, why, instead, evidence, tags, reason, base, allow_secret, principal, as_json):
    from ..errors import UserError

    given = {"title": title, "dont": dont, "why": why, "instead": instead}
    fields: dict = {k: v for k, v in given.items() if v is not None}
    fields.update({k: list(v) for k, v in (("evidence", evidence), ("tags", tags)) if v})
    if not fields:
        raise UserError("nothing to change: give --dont, --why, --instead, --evidence, --title or --tags")
    with open_workbench() as wb:
        saved = wb.edit_with_impact(id, reason=reason, actor=principal, base=base, allow_secret=allow_secret,
                                    fields=fields, file="(antipattern edit)")
    if as_json:
        emit_json(saved.to_dict())
        return
    print(f"{saved.fragment.id} is now at version {saved.fragment.version}")
    for line in saved.impact.lines():
        print(line)


antipattern.add_command(antipattern_edit)


@command("graph", "Citation authority: fragments by PageRank over links and source references.",
         "workbench graph --top 5 --as grace.kim")
@click.option("--top", type=INT, default=20, help="how many (default 20; 0 for all)")
@as_option(f"whose view: the links among the fragments this principal can see {PRINCIPAL_DEFAULT}")
@json_option()
def graph(top, principal, as_json):
    with open_workbench() as wb:
        rows = wb.graph(top=top, principal=principal)
        view = whose_view(wb, principal)
    if as_json:
        _note_default(view, "graph")
        emit_json(rows)
        return
    print(f"authority among the fragments {view[0]} can see{view[1]}")
    if not rows:
        print("no fragments")
        return
    print(table(["id", "authority", "in", "out", "title"],
                ([r["id"], f"{r['authority']:.4f}", str(r["in_links"]), str(r["out_links"]), r["title"]]
                 for r in rows)))


@command("dedupe", "Near-duplicate fragments (64-bit SimHash, Hamming distance <= 3).",
         "workbench dedupe --distance 3 --as lena.fischer")
@click.option("--distance", type=INT, default=3, help="maximum Hamming distance (default 3)")
@as_option(f"whose view: pairs among the fragments this principal can see {PRINCIPAL_DEFAULT}")
@json_option()
def dedupe(distance, principal, as_json):
    with open_workbench() as wb:
        pairs = wb.dedupe(max_distance=distance, principal=principal)
        view = whose_view(wb, principal)
    if as_json:
        _note_default(view, "dedupe")
        emit_json(pairs)
        return
    if not pairs:
        print(f"no near-duplicates among the fragments {view[0]} can see{view[1]}")
        return
    print(f"near-duplicates among the fragments {view[0]} can see{view[1]}")
    print(table(["a", "b", "distance", "a title", "b title"],
                ([p["a"], p["b"], str(p["distance"]), p["a_title"], p["b_title"]] for p in pairs)))
    print("\nmerge with: workbench merge KEEP DROP --as USER")


@command("merge", "Collapse DROP into KEEP: KEEP gains DROP's sources and in-links; DROP is archived.",
         "workbench merge tw-rb-pgbouncer-pool-exhaustion tw-rb-fleet-pgbouncer-pool-exhausted --as lena.fischer")
@id_argument("keep")
@id_argument("drop")
@as_option("who merges", required=True, metavar="USER")
@click.option("--reason", help="why (default: 'merge DROP into KEEP')")
@json_option()
def merge(keep, drop, principal, reason, as_json):
    with open_workbench() as wb:
        result = wb.merge(keep, drop, actor=principal, reason=reason)
    if as_json:
        emit_json(result)
    else:
        print(f"merged {result['dropped']} into {result['kept']} ({len(result['relinked'])} fragments relinked); "
              f"{result['dropped']} is archived")


@command("stale", "Fragments not edited or verified for --days (or whose code drifted), most used first.",
         "workbench stale --days 180 --as priya.raman")
@click.option("--days", type=INT, default=180, help="age threshold in days (default 180)")
@as_option(f"whose view: only fragments this principal can see {PRINCIPAL_DEFAULT}")
@json_option()
def stale(days, principal, as_json):
    with open_workbench() as wb:
        items = [i.to_dict() for i in wb.stale(days=days, principal=principal)]
    if as_json:
        emit_json(items)
        return
    print(table(["id", "owner", "age", "served", "cited", "reason"],
                ([i["id"], i["owner"], f"{i['age_days']}d", _served(i), str(i["in_links"]),
                  "; ".join(i["reasons"])] for i in items)) if items else "nothing stale")
    if items:
        print(f"\nserved: calls that served it in the last {days} days (by how many principals), as `workbench "
              "usage` counts them")


def _served(item: dict) -> str:
    """A stale item's use in the window: "never", or "N by K" (calls, principals)."""
    if item["never_served"]:
        return "never"
    return f"{item['served']} by {len(item['principals']) + item['other_principals']}"


@command("nudge", "Nudge owners of stale fragments: record nudges and write one digest per owner to the outbox.",
         "workbench nudge --days 180 --cooldown 14 --as priya.raman")
@click.option("--days", type=INT, default=180, help="age threshold in days (default 180)")
@click.option("--cooldown", type=INT, default=14, help="days before the same nudge repeats (default 14)")
@as_option(f"nudge about the fragments this principal can see {PRINCIPAL_DEFAULT}; run it once per org as its lead")
@json_option()
def nudge(days, cooldown, principal, as_json):
    with open_workbench() as wb:
        report = wb.nudge(days=days, cooldown_days=cooldown, principal=principal).to_dict()
        view = whose_view(wb, principal)
    if as_json:
        _note_default(view, "nudge")
        emit_json(report)
        return
    print(f"nudging about what {view[0]} can see{view[1]}")
    print(f"{report['nudges']} nudges to {report['owners']} owners; {report['skipped_cooldown']} still cooling down")
    for path in report["digests"]:
        print(f"  digest: {path}")


@command("verify", "Owner: the fragment is still true (resets its staleness clock).",
         "workbench verify nw-pol-incident-severity --as dan.kowalski --note 'still true'")
@id_argument()
@as_option("the fragment's owner", required=True, metavar="OWNER")
@click.option("--note", help="what was checked")
@json_option()
def verify(id, principal, note, as_json):
    with open_workbench() as wb:
        f = wb.verify(id, actor=principal, note=note)
    if as_json:
        emit_json(f.to_dict())
    else:
        print(f"{f.id} verified at {f.to_dict()['verified_at']}")


@command("snooze", "Owner: hide a fragment from the stale list for N days.",
         "workbench snooze nw-pol-pci-scope --days 30 --as omar.haddad")
@id_argument()
@click.option("--days", type=INT, required=True, help="how many days (a positive number)")
@as_option("the fragment's owner", required=True, metavar="OWNER")
@json_option()
def snooze(id, days, principal, as_json):
    with open_workbench() as wb:
        until = wb.snooze(id, days=days, actor=principal)
    if as_json:
        emit_json({"id": id, "until": until.replace(microsecond=0).isoformat() + "Z"})
    else:
        print(f"{id} snoozed until {until.date()}")


COMMANDS = [pin, unpin, pins, antipattern, graph, dedupe, merge, stale, nudge, verify, snooze]
