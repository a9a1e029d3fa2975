"""``workbench calibrate``: fit confidence and the abstention floor on the workspace's golden set
(Workbench.calibrate), show the fit, or go back to the shipped prior."""

from __future__ import annotations

import click

from .options import FLOAT, as_option, command, json_option, open_workbench
from .render import emit_json


@command("calibrate", "Fit calibrated confidence and the abstention floor on the workspace's golden set (or show "
         "the fit with --dry-run); without a fit the shipped prior applies.",
         "workbench calibrate --dry-run                # what a fit on the golden set would give\n"
         "workbench calibrate                          # fit and store it (check --update-baseline does too)\n"
         "workbench calibrate --golden kb/golden.yaml --answered 0.95\n"
         "workbench calibrate --reset                  # back to the prior")
@click.option("--golden", metavar="FILE", help="golden queries YAML (default: `golden:` of workbench.yaml, else "
              "golden.yaml in the workspace folder)")
@click.option("--dry-run", is_flag=True, help="report the fit without storing it")
@click.option("--answered", "target", type=FLOAT, default=0.90, metavar="RATE",
              help="the floor keeps at least this share of answerable golden queries answered (default 0.90)")
@click.option("--reset", is_flag=True, help="remove the stored fit: the prior applies again")
@as_option("who calibrates: an admin principal (default: the local administrator)")
@json_option()
def calibrate(golden, dry_run, target, reset, principal, as_json):
    with open_workbench() as wb:
        report = wb.calibrate(golden, dry_run=dry_run, reset=reset, target=target, principal=principal)
    if as_json:
        emit_json(report.to_dict())
        return
    model = report.calibration
    print(f"calibration: {model.describe()}{'' if report.stored else '  (dry run: not stored)'}")
    print(f"was: {report.previous.describe()}")
    if model.counts:
        c = model.counts
        print(f"fitted on {c.get('queries')} golden queries ({c.get('answerable')} answerable, "
              f"{c.get('unanswerable')} unanswerable), {c.get('candidates')} candidates, {c.get('relevant')} relevant")
        print("model: " + ", ".join(f"{n} {w:+.3f}" for n, w in zip(model.features, model.coefficients))
              + f", intercept {model.intercept:+.3f}; floor {model.floor:.2f}")
    held = model.held_out
    if held.get("queries"):
        print(f"held back {held['queries']} queries: answered {held.get('answered')}, answered with a relevant "
              f"fragment {held.get('answered_relevant')}, abstained {held.get('abstained')}, AUC {held.get('auc')}, "
              f"log loss {held.get('log_loss')}")
    for note in report.notes:
        print(f"note: {note}")


COMMANDS = [calibrate]
