"""The README's commands are the CLI's commands: every ``hopweave ...`` line of its bash blocks
names a real command, uses only options that command has, and gives every required argument.
``hopweave profiles`` (no store needed) also runs for real. So the docs cannot drift silently.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from hopweave.cli import app

README = Path(__file__).resolve().parents[3] / "README.md"


def _bash_lines(text: str) -> list[str]:
    """Logical lines (continuations joined, comments dropped) of the README's bash blocks."""
    lines: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            if line:
                lines.append(line)
    return lines


def readme_commands() -> list[str]:
    """Every ``hopweave`` invocation in the README; ``a | b`` alternatives are expanded
    (``hopweave patterns list | show NAME`` is two commands)."""
    out: list[str] = []
    for line in _bash_lines(README.read_text(encoding="utf-8")):
        if not line.startswith("hopweave "):
            continue
        first, *alternatives = [p.strip() for p in line.split(" | ")]
        out.append(first)
        group = " ".join(first.split()[:2])
        out.extend(f"{group} {alt}" for alt in alternatives)
    return out


def _resolve(argv: list[str]) -> tuple[list[str], Any, list[str]]:
    """(command path, click command, remaining tokens) for ``argv`` after ``hopweave``."""
    cmd: Any = typer.main.get_command(app)
    path: list[str] = []
    rest = list(argv)
    while rest and hasattr(cmd, "commands") and rest[0] in cmd.commands:
        path.append(rest[0])
        cmd = cmd.commands[rest.pop(0)]
    return path, cmd, rest


COMMANDS = readme_commands()


def test_the_readme_has_commands() -> None:
    assert len(COMMANDS) >= 10, COMMANDS


@pytest.mark.parametrize("line", COMMANDS)
def test_readme_command_matches_the_cli(line: str) -> None:
    argv = shlex.split(line)[1:]
    path, cmd, rest = _resolve(argv)
    assert path and not hasattr(cmd, "commands"), f"{line!r}: no such command"
    res = CliRunner().invoke(app, [*path, "--help"])
    assert res.exit_code == 0, (line, res.output)

    known = {o for p in cmd.params for o in getattr(p, "opts", []) + getattr(p, "secondary_opts", [])}
    used = {t.split("=")[0] for t in rest if t.startswith("--")}
    assert used <= known, f"{line!r}: options the command does not have: {sorted(used - known)}"

    positional = [t for t in rest if not t.startswith("-")]
    arguments = [p for p in cmd.params if p.param_type_name == "argument"]
    required_args = [p for p in arguments if p.required]
    assert len(positional) >= len(required_args), f"{line!r}: missing {[p.name for p in required_args]}"
    for p in cmd.params:
        if p.param_type_name == "option" and p.required:
            assert set(p.opts) & used, f"{line!r}: missing the required option {p.opts[0]}"
        if p.param_type_name == "option" and "tenant" in p.name and p.default is None:
            assert set(p.opts) & used, f"{line!r}: the command needs {p.opts[0]} (or $HOPWEAVE_TENANT)"


def test_commands_without_a_store_are_the_ones_the_readme_names() -> None:
    """The README says which commands do not take --store; that list is the CLI's."""
    text = README.read_text(encoding="utf-8")
    sentence = re.search(r"takes `--store DIR`.*?do not\)", text, flags=re.S)
    assert sentence, "the README no longer says which commands take --store"
    named = set(re.findall(r"`([a-z-]+)`", sentence.group(0)))

    def walk(cmd: Any, path: list[str]) -> set[str]:
        if hasattr(cmd, "commands"):
            return set().union(*(walk(c, [*path, n]) for n, c in cmd.commands.items()))
        opts = {o for p in cmd.params for o in getattr(p, "opts", [])}
        return set() if "--store" in opts else {" ".join(path)}

    assert {path.split()[0] for path in walk(typer.main.get_command(app), [])} == named


def test_profiles_runs_for_real() -> None:
    res = CliRunner().invoke(app, ["profiles", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["default"] in {p["name"] for p in out["profiles"]}
    assert "rrf_k60" in {p["name"] for p in out["profiles"]}
