"""The documented commands are the CLI's commands: every ``hopweave ...`` line of the bash blocks
of the README, of ``docs/*.md`` and of the example packs' READMEs names a real command, uses only
options that command has, and gives every required argument. ``hopweave profiles`` (no store
needed) also runs for real. So the docs cannot drift silently.
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

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
#: Every Markdown file whose bash blocks are checked against the CLI.
DOCS = (README, *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "examples").glob("*/README.md")))


def _bash_lines(text: str) -> list[str]:
    """Logical lines (continuations joined, comments dropped) of the README's bash blocks."""
    lines: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            if line:
                lines.append(line)
    return lines


def doc_commands(doc: Path) -> list[str]:
    """Every ``hopweave`` invocation in ``doc``'s bash blocks; ``a | b`` alternatives are
    expanded (``hopweave patterns list | show NAME`` is two commands)."""
    out: list[str] = []
    for line in _bash_lines(doc.read_text(encoding="utf-8")):
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


def _help(param: Any) -> str:
    return (getattr(param, "help", None) or "").lower()


def _tenant_is_required(param: Any, cmd: Any, used: set[str]) -> bool:
    """A --tenant option with no default of its own (only $HOPWEAVE_TENANT): the command
    fails without it, so the docs must show it. A "tenant of the trace" (``hopweave replay``)
    is needed only when the line uses one of the command's options that name a trace."""
    if param.name != "tenant" or param.default is not None or "default" in _help(param):
        return False
    if "of the trace" in _help(param):
        trace_opts = {o for p in cmd.params if p is not param and "trace" in _help(p) for o in p.opts}
        return bool(trace_opts & used)
    return True


COMMANDS = [(doc.relative_to(ROOT).as_posix(), line) for doc in DOCS for line in doc_commands(doc)]


def test_the_docs_have_commands() -> None:
    by_doc = {doc for doc, _ in COMMANDS}
    assert len([c for c in COMMANDS if c[0] == "README.md"]) >= 10, COMMANDS
    assert {"docs/engine.md", "docs/inspect.md", "docs/packs.md"} <= by_doc, sorted(by_doc)


@pytest.mark.parametrize(("doc", "line"), COMMANDS, ids=[f"{d}: {line[:60]}" for d, line in COMMANDS])
def test_documented_command_matches_the_cli(doc: str, line: str) -> None:
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
        if _tenant_is_required(p, cmd, used):
            assert set(p.opts) & used, f"{line!r}: the command needs {p.opts[0]} (or $HOPWEAVE_TENANT)"


def test_commands_without_a_store_are_the_ones_the_readme_names() -> None:
    """The README says which commands take no --graph (no store); that list is the CLI's
    (hidden, deprecated aliases aside)."""
    text = README.read_text(encoding="utf-8")
    sentence = re.search(r"takes `--graph URI`.*?touch no store\)", text, flags=re.S)
    assert sentence, "the README no longer says which commands take --graph"
    named = set(re.findall(r"`([a-z-]+)`", sentence.group(0).split(";", 1)[1]))

    def walk(cmd: Any, path: list[str]) -> set[str]:
        if getattr(cmd, "hidden", False):
            return set()
        if hasattr(cmd, "commands"):
            return set().union(*(walk(c, [*path, n]) for n, c in cmd.commands.items()))
        opts = {o for p in cmd.params for o in getattr(p, "opts", [])}
        assert ("--graph" in opts) == ("--store" in opts), f"{path}: --store is --graph's alias"
        return set() if "--graph" in opts else {" ".join(path)}

    assert {path.split()[0] for path in walk(typer.main.get_command(app), [])} == named


def test_profiles_runs_for_real() -> None:
    res = CliRunner().invoke(app, ["profiles", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["default"] in {p["name"] for p in out["profiles"]}
    assert "rrf_k60" in {p["name"] for p in out["profiles"]}
