"""``workbench tune``: fit the ranking weights (default, or one persona's) on the golden set by
K-fold cross-validation (Workbench.tune); report the held-out gain, write only with --write."""

from __future__ import annotations

import sys

import click

from .options import INT, as_option, command, json_option, open_workbench
from .render import emit_json


@command("tune", "Fit the ranking weights (ranking: in workbench.yaml; default, or --persona P's) on the golden "
         "set by K-fold cross-validation; report the held-out gain and its spread; --write stores them unless "
         "the gain is within noise.",
         "workbench tune --persona sre                 # the held-out gain of tuned sre weights\n"
         "workbench tune --persona security --folds 5 --write\n"
         "workbench tune --json                        # the default weights (calls in no persona)")
@click.option("--persona", metavar="P", help="tune persona P's weights on the golden queries asked in P "
              "(default: the weights of calls in no persona)")
@click.option("--folds", type=INT, default=5, help="cross-validation folds over the golden queries (default 5)")
@click.option("--write", is_flag=True, help="store the fitted weights in workbench.yaml (its ranking: section "
              "only) when the held-out gain is beyond noise; exit 1 without writing otherwise")
@click.option("--golden", metavar="FILE", help="golden queries YAML (default: `golden:` of workbench.yaml, else "
              "golden.yaml in the workspace folder)")
@as_option("who tunes: an admin principal (default: the local administrator)")
@json_option()
def tune(persona, folds, write, golden, principal, as_json):
    with open_workbench() as wb:
        report = wb.tune(persona=persona, folds=folds, write=write, golden=golden, principal=principal)
    data = report.to_dict()
    if as_json:
        emit_json(data)
    else:
        print(f"persona: {persona or '(none: ranking.default)'}; {data['queries']} golden queries, "
              f"{data['folds']} folds")
        print(f"held-out nDCG@10: current {data['heldout_current']:.4f}, tuned {data['heldout_tuned']:.4f}, "
              f"gain {data['heldout_gain']:+.4f} (std over folds {data['std']:.4f}, paired se "
              f"{data['paired_se']:.4f}; {data['wins']} queries better, {data['losses']} worse)")
        print("fold gains: " + ", ".join(f"{g:+.4f}" for g in data["fold_gains"]))
        print("current: " + ", ".join(f"{k} {v:g}" for k, v in data["current"].items()))
        print("fitted (all queries): " + ", ".join(f"{k} {v:g}" for k, v in data["fitted"].items()))
        for note in data["notes"]:
            print(f"note: {note}")
    if write and not report.written:
        print("workbench: not written: the held-out gain is within noise", file=sys.stderr)
        sys.exit(1)


COMMANDS = [tune]
