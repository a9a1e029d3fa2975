"""`workbench completion SHELL`: print the shell completion script (bash, zsh or fish).

The script calls back into `workbench` through click's completion protocol
(``_WORKBENCH_COMPLETE=<shell>_complete``), so completions always match the installed commands."""

from __future__ import annotations

import click

from .options import command

SHELLS = ("bash", "zsh", "fish")
INSTALL = {"bash": 'eval "$(workbench completion bash)"   # in ~/.bashrc',
           "zsh": 'eval "$(workbench completion zsh)"    # in ~/.zshrc',
           "fish": "workbench completion fish > ~/.config/fish/completions/workbench.fish"}


def completion_script(root: click.Command, shell: str, prog_name: str = "workbench") -> str:
    from click.shell_completion import get_completion_class

    cls = get_completion_class(shell)
    complete_var = f"_{prog_name.replace('-', '_').upper()}_COMPLETE"
    return cls(root, {}, prog_name, complete_var).source()


@command("completion", "Print the shell completion script for bash, zsh or fish.",
         "\n".join(INSTALL.values()))
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell):
    root = click.get_current_context().find_root()
    click.echo(completion_script(root.command, shell, root.info_name or "workbench"))


COMMANDS = [completion]
