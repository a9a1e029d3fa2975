"""Commands for embedding models: ``model add``, ``list``, ``shadow``, ``promote``, ``rollback``,
``build-int8``. Each parses its arguments, makes one call into the core (service/models.py) and
renders the result; who may change models is the core's policy to decide."""

from __future__ import annotations

import sys

import click

from .options import as_option, command, group, json_option, open_workbench
from .render import emit_json, table

class OptionalPairOption(click.Option):
    """An option given alone (its ``flag_value``) or with up to two values: ``--compare-models``,
    ``--compare-models A B``; the values come as one space-separated string."""

    def add_to_parser(self, parser, ctx: click.Context) -> None:
        super().add_to_parser(parser, ctx)
        for name in self.opts:
            opt = parser._long_opt.get(name)
            if opt is None:
                continue
            single = opt.process

            def process(value, state, single=single) -> None:
                if isinstance(value, str):  # a value was given: take one more, unless an option follows
                    taken = [value]
                    if state.rargs and not state.rargs[0].startswith("-"):
                        taken.append(state.rargs.pop(0))
                    value = " ".join(taken)
                single(value, state)

            opt.process = process


AS_HELP = ("act as this principal (only admins change models, never agents; default: the local "
           "administrator)")


@group("model", "Embedding models: add a local model, shadow it, compare, promote, roll back within the window.",
       "workbench model build-int8 ./minilm-int8\n"
       "workbench model add ./minilm-int8\n"
       "workbench model shadow minilm-int8 --wait\n"
       "workbench eval --golden sample_corpus/golden.yaml --compare-models\n"
       "workbench model promote minilm-int8\n"
       "workbench model rollback")
def model():
    pass


def _day(value: str | None) -> str:
    return value[:16].replace("T", " ") if value else "-"


def _progress_text(m: dict) -> str:
    if m["state"] == "shadow" and m["shadow_total"]:
        return f"{m['shadow_done']}/{m['shadow_total']}"
    return "-"


@command("list", "List the models: the serving one, shadows (with their embedding progress) and replaced ones.",
         "workbench model list\nworkbench model list --json")
@json_option()
def model_list(as_json):
    with open_workbench() as wb:
        found = [m.to_dict() for m in wb.model_list()]
    if as_json:
        emit_json(found)
        return
    print(table(["name", "state", "kind", "vectors", "shadow", "promoted", "rollback until", "dropped"],
                ([m["name"], m["state"], m["kind"], m["vectors"], _progress_text(m), _day(m["promoted_at"]),
                  _day(m["rollback_until"]), _day(m["dropped_at"])] for m in found)))


@command("add", "Register a local model folder (ONNX or sentence-transformers; 384 dimensions) as a shadow "
         "candidate. Nothing is downloaded.",
         "workbench model add ./minilm-int8\nworkbench model add ~/models/e5-small --name e5-small")
@click.argument("path", metavar="PATH")
@click.option("--name", metavar="NAME", help="the model's name (default: the folder's name)")
@as_option(AS_HELP)
@json_option()
def model_add(path, name, principal, as_json):
    with open_workbench() as wb:
        info = wb.model_add(path, name=name, actor=principal)
    if as_json:
        emit_json(info.to_dict())
    else:
        print(f"added {info.name} ({info.kind}, {info.dimension} dimensions) from {info.path}: shadow it with "
              f"`workbench model shadow {info.name}`")


@command("shadow", "Embed the workspace's texts with a model, beside the serving one (in the background unless "
         "--wait; resumable: texts already embedded are skipped).",
         "workbench model shadow minilm-int8\nworkbench model shadow minilm-int8 --wait --progress")
@click.argument("name", metavar="NAME")
@click.option("--wait", is_flag=True, help="embed here and now, and return when done (tests, CI)")
@click.option("--progress", is_flag=True, help="with --wait: report progress on stderr")
@as_option(AS_HELP)
@json_option()
def model_shadow(name, wait, progress, principal, as_json):
    def report(_stage, done, total):
        print(f"\rshadow {name}: {done}/{total}", end="", file=sys.stderr, flush=True)

    with open_workbench() as wb:
        found = wb.model_shadow(name, actor=principal, wait=wait, progress=report if progress else None)
    if progress:
        print(file=sys.stderr)
    if as_json:
        emit_json(found.to_dict())
    elif found.background is not None:
        print(f"shadowing {name} in the background (process {found.background}); `workbench model list` shows "
              "its progress")
    else:
        print(f"{name}: {found.embedded} texts embedded in {found.seconds:.1f} s ({found.per_second}/s), "
              f"{found.skipped} already embedded, {found.total} in all")


@command("promote", "Serve a shadow model from now on (refused while its shadow is incomplete); the replaced "
         "model's vectors are kept for the rollback window.",
         "workbench model promote minilm-int8")
@click.argument("name", metavar="NAME")
@as_option(AS_HELP)
@json_option()
def model_promote(name, principal, as_json):
    with open_workbench() as wb:
        info = wb.model_promote(name, actor=principal)
    if as_json:
        emit_json(info.to_dict())
    else:
        print(f"{info.name} serves now (replacing {info.previous}); `workbench model rollback` switches back "
              f"until {_day(info.to_dict()['rollback_until'])}")


@command("rollback", "Serve the model the serving one replaced again, instantly, within the rollback window.",
         "workbench model rollback")
@as_option(AS_HELP)
@json_option()
def model_rollback(principal, as_json):
    with open_workbench() as wb:
        info = wb.model_rollback(actor=principal)
    if as_json:
        emit_json(info.to_dict())
    else:
        print(f"{info.name} serves again")


@command("build-int8", "Build an int8-quantized copy of the bundled model into a folder (offline), for "
         "`model add`; prints the cosine of its vectors against the bundled model's.",
         "workbench model build-int8 ./minilm-int8")
@click.argument("out", metavar="OUT")
@click.option("--force", is_flag=True, help="replace what OUT holds")
@json_option()
def model_build_int8(out, force, as_json):
    from ..service import Workbench

    found = Workbench.build_int8(out, force=force)
    if as_json:
        emit_json(found)
    else:
        print(f"built {found['path']}: cosine against the bundled model on {found['texts']} sentences: mean "
              f"{found['mean_cosine']:.4f}, min {found['min_cosine']:.4f}")


def print_comparison(report: dict) -> None:
    """``eval --compare-models``: one row per pipeline and metric, a column per model, and the change."""
    a, b = report["models"]
    metrics = ("ndcg@10", "recall@10", "recall@100", "mrr@10")
    rows = []
    for pipeline in report["pipelines"]:
        for metric in metrics:
            va, vb = (report["metrics"][m].get(pipeline, {}).get(metric) for m in (a, b))
            if va is None or vb is None:
                continue
            rows.append([pipeline, metric, f"{va:.3f}", f"{vb:.3f}", f"{vb - va:+.3f}"])
    queries = report["metrics"][a].get(report["pipelines"][0], {}).get("queries")
    print(f"{report['set']} set, {queries} queries: {a} against {b}")
    print(table(["pipeline", "metric", a, b, "change"], rows))


for _sub in (model_list, model_add, model_shadow, model_promote, model_rollback, model_build_int8):
    model.add_command(_sub)

COMMANDS = [model]
