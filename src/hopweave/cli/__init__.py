"""The ``hopweave`` command. Each area registers its commands from its own module."""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="hopweave",
    help="Compositional retrieval for AI agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Modules that add commands to `app` (each guarded so one missing optional extra does not
# break the others).
_COMMAND_MODULES = (
    "hopweave.cli.pack_cmds",
    "hopweave.cli.graph_cmds",
    "hopweave.cli.search_cmds",
    "hopweave.cli.understand_cmds",
    "hopweave.cli.engine_cmds",
    "hopweave.cli.audit_cmds",
    "hopweave.cli.server_cmds",
    "hopweave.cli.serve_cmds",
    "hopweave.cli.doctor_cmds",
    "hopweave.cli.compact_cmds",
    "hopweave.cli.memory_cmds",
    "hopweave.cli.learn_cmds",
)

for _mod in _COMMAND_MODULES:
    try:
        importlib.import_module(_mod)
    except ModuleNotFoundError as _exc:  # the module is not written yet / extra missing
        if _exc.name and _exc.name.startswith("hopweave.cli."):
            continue
        raise


def main() -> None:  # pragma: no cover
    app()
