"""The import-layer contract: hopweave's packages import only down the floors, and no module
cycle exists (function-level and ``TYPE_CHECKING`` imports included).

Floors, lowest first (a package may import its own modules and anything on a lower floor;
packages on the same floor stand side by side and do not import each other):

    0  errors
    1  fileio, paths, config, wire, bounded (stage deadlines, time-bounded data regexes)
    2  models
    3  graph, search
    4  understand, stores (opening the graph store and the vector index by URI)
    5  engine, pack
    6  adapters (LangChain, LangGraph, agent tool, HTTP app)
    7  cli and the root ``hopweave/__init__.py`` (the public entry point): ``hopweave serve``
       starts the HTTP adapter

The test reads the source with ``ast`` (nothing is imported), so it also sees imports inside
functions, which is where a wrong-way import usually hides.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

SRC = Path(__file__).resolve().parents[2] / "src"
ROOT = "hopweave"

FLOORS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("fileio", "paths", "config", "wire", "bounded"),
    ("models",),
    ("graph", "search"),
    ("understand", "stores"),
    ("engine", "pack"),
    ("adapters",),
    ("cli", ""),  # "" = the root package hopweave/__init__.py
)
FLOOR_OF = {pkg: i for i, pkg_names in enumerate(FLOORS) for pkg in pkg_names}

#: (importing module prefix, imported module prefix) -> why it is tolerated for now.
KNOWN_EXCEPTIONS: dict[tuple[str, str], str] = {}


def floor_map() -> str:
    lines = ["floors (lowest first; import only from your own package or a lower floor):"]
    for i, names in enumerate(FLOORS):
        lines.append(f"  {i}  " + ", ".join(n or "hopweave/__init__" for n in names))
    return "\n".join(lines)


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted((SRC / ROOT).rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The hopweave modules ``module`` imports (a ``from pkg import sub`` counts as ``pkg.sub``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, path, node)
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in known else target)
    return {m for m in found if m == ROOT or m.startswith(ROOT + ".")} - {module}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def import_graph() -> nx.DiGraph:
    known = _modules()
    g = nx.DiGraph()
    g.add_nodes_from(known)
    for module, path in known.items():
        for target in _imports(module, path, known):
            g.add_edge(module, target)
    return g


def _excused(src: str, dst: str) -> bool:
    return any(src.startswith(a) and (dst == b or dst.startswith(b + ".")) for a, b in KNOWN_EXCEPTIONS)


def test_every_package_is_on_a_floor() -> None:
    unplaced = sorted({_package(m) for m in _modules()} - set(FLOOR_OF))
    assert not unplaced, f"packages not on the floor map: {unplaced}; add them to FLOORS\n{floor_map()}"


def test_imports_point_down_the_floors() -> None:
    wrong = []
    for src, dst in sorted(import_graph().edges):
        a, b = _package(src), _package(dst)
        if a == b or a not in FLOOR_OF or b not in FLOOR_OF or _excused(src, dst):
            continue
        if FLOOR_OF[b] >= FLOOR_OF[a]:
            wrong.append(f"  {src} (floor {FLOOR_OF[a]}) imports {dst} (floor {FLOOR_OF[b]})")
    assert not wrong, "imports that do not point down the floors:\n" + "\n".join(wrong) + "\n" + floor_map()


def test_no_import_cycles() -> None:
    g = import_graph()
    # A package's __init__ is always imported before its modules: an edge to an ancestor
    # package only matters when the ancestor imports back, which the cycle search finds anyway.
    cycles = sorted(" -> ".join([*c, c[0]]) for c in nx.simple_cycles(g))
    assert not cycles, "import cycles (move the shared part down, or invert the dependency):\n  " + "\n  ".join(
        cycles
    ) + "\n" + floor_map()


def test_every_hopweave_import_resolves() -> None:
    """An import of a hopweave module that does not exist (a stale name after a rename) fails
    here, even inside a function that no test calls."""
    known = _modules()
    missing = sorted(f"  {src} imports {dst}" for src, dst in import_graph().edges if dst not in known)
    assert not missing, "imports of hopweave modules that do not exist:\n" + "\n".join(missing)


def test_known_exceptions_are_still_needed() -> None:
    """An exception that no import needs any more must be deleted from KNOWN_EXCEPTIONS."""
    edges = import_graph().edges
    stale = [k for k in KNOWN_EXCEPTIONS if not any(s.startswith(k[0]) and (d == k[1] or d.startswith(k[1] + "."))
                                                  for s, d in edges)]
    assert not stale, f"stale entries in KNOWN_EXCEPTIONS: {stale}"


def test_the_contract_catches_a_wrong_way_import(tmp_path: Path) -> None:
    """The checker itself: a models module importing search is reported."""
    mod = tmp_path / "m.py"
    mod.write_text("def f():\n    from hopweave.search.lexical import tokenize\n", encoding="utf-8")
    known = {"hopweave.search.lexical": mod}
    assert _imports("hopweave.models.x", mod, known) == {"hopweave.search.lexical"}
    assert FLOOR_OF[_package("hopweave.search.lexical")] > FLOOR_OF[_package("hopweave.models.x")]


#: The engine modules that may use the ``Engine`` facade (they drive whole engines: replays,
#: audits, evaluations). Every other engine module is a stage module: it takes ``StageDeps`` or
#: the ``Pipeline`` (hopweave.engine.deps / .pipeline), never the engine.
ENGINE_FACADE_USERS = frozenset({"hopweave.engine.engine", "hopweave.engine.replay", "hopweave.engine.audit",
                                 "hopweave.engine.scenario_eval"})


def test_stage_modules_do_not_import_the_engine_facade() -> None:
    wrong = sorted(src for src, dst in import_graph().edges
                   if dst == "hopweave.engine.engine" and src.startswith("hopweave.engine.")
                   and src not in ENGINE_FACADE_USERS)
    assert not wrong, ("stage modules importing hopweave.engine.engine (take StageDeps or the Pipeline instead): "
                       f"{wrong}")
