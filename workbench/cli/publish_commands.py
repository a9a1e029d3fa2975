"""Commands for published contexts: publish, unpublish, published; subscribe, unsubscribe,
subscriptions, subscription move. Thin: each parses, makes one core call and renders."""

from __future__ import annotations

import click

from .options import INT, as_option, command, group, json_option, open_workbench, scope_option
from .render import emit_json, table


def _print_context(data: dict) -> None:
    state = f"ended {data['ended_at']}" if data.get("ended_at") else f"version {data['version']}"
    print(f"{data['name']} · from set {data['set']}@{data['set_scope']} · published by {data['owner']} · {state} "
          f"· {data['version_policy']}" + (" · with pins" if data["with_pins"] else ""))
    if "fragments" in data:
        print(table(["id", "version", "pinned", "title"], ([f["id"], str(f["version"]), "yes" if f["pinned"] else "",
                                                            f["title"] or ""] for f in data["fragments"])))
    for c in data.get("changelog", []):
        parts = [", ".join(f"+{i}" for i in c["added"]), ", ".join(f"-{i}" for i in c["removed"]),
                 ", ".join(f"{x['id']} v{x['from']}→v{x['to']}" for x in c["changed"])]
        change = "; ".join(p for p in parts if p) or "no change"
        print(f"  v{c['version']} {c['at']} {c['by']} ({c['reason']}): {change}")
    if "subscribers" in data:
        live = [s["scope"] + (f" (pinned v{s['version']})" if s["version"] else "") for s in data["subscribers"]
                if not s["ended_at"]]
        print(f"  subscribers: {', '.join(live) or 'none'}")
        served = {k: v for k, v in data["usage"].items() if v}
        print(f"  served to subscribers: {', '.join(f'{k} ×{v}' for k, v in served.items()) or 'not yet'}")


def _out(data: dict, as_json: bool, render=None) -> None:
    if as_json:
        emit_json(data)
    elif render is not None:
        render(data)
    else:
        print(" · ".join(f"{k} {v}" for k, v in data.items()))


@command("publish", "Publish a curated set as ORG/SET: other scopes may subscribe to it and receive its fragments.",
         "workbench publish platform-rules --as ines.ferreira")
@click.argument("set_name", metavar="SET")
@click.option("--version-policy", type=click.Choice(["latest", "pinned"]), default="latest", show_default=True,
              help="what a new subscription follows: the latest version, or the version it subscribed to")
@click.option("--with-pins", is_flag=True, help="the publisher's pins travel with the context")
@as_option("the set's owner or a lead of its scope", metavar="USER")
@json_option()
def publish(set_name, version_policy, with_pins, principal, as_json):
    with open_workbench() as wb:
        data = wb.publish(set_name, actor=principal, version_policy=version_policy, with_pins=with_pins)
    _out(data, as_json, _print_context)


@command("unpublish", "End a published context and its subscriptions: nothing crosses from now on.",
         "workbench unpublish northwind/platform-rules --as ines.ferreira")
@click.argument("name", metavar="ORG/CONTEXT")
@as_option("its publisher or a lead of its set's scope", metavar="USER")
@json_option()
def unpublish(name, principal, as_json):
    with open_workbench() as wb:
        data = wb.unpublish(name, actor=principal)
    _out(data, as_json)


@command("published", "The publisher's view: its contexts, versions and changelog, subscribing scopes, and how "
         "often subscribers were served each fragment.", "workbench published --as ines.ferreira")
@click.option("--days", type=INT, default=90, show_default=True, help="the usage window")
@as_option()
@json_option()
def published(days, principal, as_json):
    with open_workbench() as wb:
        data = wb.published(principal=principal, days=days)
    if as_json:
        emit_json(data)
        return
    for item in data:
        _print_context(item)
    if not data:
        print("nothing published from your scopes")


@command("subscribe", "Subscribe a scope you lead to a published context: its principals receive the context's "
         "fragments (read-only, the publisher's).",
         "workbench subscribe northwind/platform-rules --scope org=tidewater,persona=sre --as kofi.boateng")
@click.argument("name", metavar="ORG/CONTEXT")
@scope_option("the subscribing scope: org=ORG[,repo=R][,persona=P]", required=True)
@click.option("--pinned/--latest", "pinned", default=None,
              help="stay on the current version until moved, or follow the latest (default: the context's policy)")
@as_option("a lead of the scope", metavar="USER")
@json_option()
def subscribe(name, scope, pinned, principal, as_json):
    with open_workbench() as wb:
        data = wb.subscribe(name, scope=scope, actor=principal, pinned=pinned)
    _out(data, as_json)


@command("unsubscribe", "End a scope's subscription to a published context.",
         "workbench unsubscribe northwind/platform-rules --scope org=tidewater,persona=sre --as kofi.boateng")
@click.argument("name", metavar="ORG/CONTEXT")
@scope_option("the subscribing scope", required=True)
@as_option("a lead of the scope", metavar="USER")
@json_option()
def unsubscribe(name, scope, principal, as_json):
    with open_workbench() as wb:
        data = wb.unsubscribe(name, scope=scope, actor=principal)
    _out(data, as_json)


def _print_subscriptions(data: dict) -> None:
    rows = [[s["context"], s["scope"], s["policy"], f"v{s['version']}", f"v{s['latest']}", str(len(s["receives"]))]
            for s in data["subscriptions"]]
    print(table(["context", "scope", "follows", "version", "latest", "fragments"], rows) if rows
          else "no subscription applies to you")
    if data["available"]:
        print("published: " + ", ".join(f"{c['name']} (v{c['latest']}, {c['owner']})" for c in data["available"]))


@group("subscription", "A subscription: move a pinned one to another version (showing the diff).",
       "workbench subscription move northwind/platform-rules --scope org=tidewater,persona=sre --as kofi.boateng")
def subscription():
    pass


@command("move", "Move a subscription to another version of its context (default: the latest), showing what changed.",
         "workbench subscription move northwind/platform-rules --scope org=tidewater,persona=sre --as kofi.boateng")
@click.argument("name", metavar="ORG/CONTEXT")
@scope_option("the subscribing scope", required=True)
@click.option("--to", "to", type=INT, help="the version to stay on (default: the latest)")
@click.option("--follow-latest", "latest", is_flag=True, help="follow the latest version from now on")
@as_option("a lead of the scope", metavar="USER")
@json_option()
def move(name, scope, to, latest, principal, as_json):
    with open_workbench() as wb:
        data = wb.move_subscription(name, scope=scope, actor=principal, to=to, latest=latest)
    if as_json:
        emit_json(data)
        return
    d = data["diff"]
    print(f"{data['context']} for {data['scope']}: v{data['from']} → v{data['to']} ({data['policy']})")
    print(f"  added: {', '.join(d['added']) or '-'}; removed: {', '.join(d['removed']) or '-'}; changed: "
          + (", ".join(f"{c['id']} v{c['from']}→v{c['to']}" for c in d["changed"]) or "-"))


subscription.add_command(move)


@command("subscriptions", "The subscriber's view: the subscriptions that apply to you, their version and the latest "
         "available, and the contexts published in this workspace.", "workbench subscriptions --as li.wei")
@as_option()
@json_option()
def subscriptions(principal, as_json):
    with open_workbench() as wb:
        data = wb.subscriptions(principal=principal)
    _out(data, as_json, _print_subscriptions)


COMMANDS = [publish, unpublish, published, subscribe, unsubscribe, subscriptions, subscription]
