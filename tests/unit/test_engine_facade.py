"""The engine's shape, read from the source (nothing is imported but the protocol): ``Engine``
is a facade of at most 20 methods and 300 lines, no module calls another object's engine
privates, stage functions name their types (never ``engine: Any``), and ``Engine`` and
``EnginePool`` answer through the same ``Retriever`` calls."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "hopweave"
ENGINE_NAMES = {"engine", "eng", "plain", "sib"}


def _class(path: Path, name: str) -> ast.ClassDef:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)


def _methods(cls: ast.ClassDef) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_the_engine_is_a_facade_of_at_most_20_methods_and_300_lines() -> None:
    cls = _class(SRC / "engine" / "engine.py", "Engine")
    lines = (cls.end_lineno or cls.lineno) - cls.lineno + 1
    assert len(_methods(cls)) <= 20, [m.name for m in _methods(cls)]
    assert lines <= 300, f"Engine is {lines} lines: move the work into a stage module, Admission or the pipeline"


def test_every_public_method_of_the_facade_says_what_it_does() -> None:
    cls = _class(SRC / "engine" / "engine.py", "Engine")
    bare = [m.name for m in _methods(cls) if not m.name.startswith("_") and not ast.get_docstring(m)]
    assert not bare, f"public Engine methods without a docstring: {bare}"


def _missing_sections(fn: ast.FunctionDef | ast.AsyncFunctionDef, doc: str) -> list[str]:
    """The Google-style sections ``fn``'s docstring lacks: Args (it takes parameters), Returns or
    Yields (it returns something), Raises (unless it says it never raises)."""
    params = [a.arg for a in [*fn.args.args, *fn.args.kwonlyargs] if a.arg not in ("self", "cls")]
    returns = fn.returns is not None and not (isinstance(fn.returns, ast.Constant) and fn.returns.value is None)
    wanted = (["Args:"] if params or fn.args.kwarg else []) + (["Returns:"] if returns else [])
    missing = [w for w in wanted if w not in doc and not (w == "Returns:" and "Yields:" in doc)]
    return missing + ([] if "Raises:" in doc or "Never raises" in doc else ["Raises:"])


def test_every_public_method_of_the_facade_documents_args_returns_raises() -> None:
    cls = _class(SRC / "engine" / "engine.py", "Engine")
    props = {m.name for m in _methods(cls) for d in m.decorator_list
             if (isinstance(d, ast.Name) and d.id == "property") or (isinstance(d, ast.Attribute) and d.attr == "cached_property")}
    lacking = {m.name: miss for m in _methods(cls) if not m.name.startswith("_") and m.name not in props
               if (miss := _missing_sections(m, ast.get_docstring(m) or ""))}
    assert not lacking, f"Engine methods whose docstring lacks Google-style sections: {lacking}"


def _private_calls(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
            continue
        v = node.value
        on_engine = (isinstance(v, ast.Name) and v.id in ENGINE_NAMES) or (
            isinstance(v, ast.Attribute) and v.attr == "engine" and isinstance(v.value, ast.Name) and v.value.id == "self")
        if on_engine:
            out.append(f"{path.relative_to(SRC)}:{node.lineno}: .{node.attr}")
    return out


def test_no_module_reaches_into_an_engines_privates() -> None:
    found = [hit for p in sorted(SRC.rglob("*.py")) if p != SRC / "engine" / "engine.py" for hit in _private_calls(p)]
    assert not found, "use the engine's public attributes (pipeline(), admission, goals(), request_pool...):\n" + \
        "\n".join(found)


def test_no_stage_function_takes_an_untyped_engine() -> None:
    untyped = []
    for p in sorted((SRC / "engine").glob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for a in [*node.args.args, *node.args.kwonlyargs]:
                    if a.arg in ENGINE_NAMES and isinstance(a.annotation, ast.Name) and a.annotation.id == "Any":
                        untyped.append(f"{p.name}:{node.lineno} {node.name}({a.arg}: Any)")
    assert not untyped, "take StageDeps or the Pipeline:\n" + "\n".join(untyped)


def test_engine_and_engine_pool_answer_through_the_retriever_calls() -> None:
    from hopweave.engine.retriever import Retriever

    wanted = {n: inspect.signature(getattr(Retriever, n)) for n in ("retrieve", "aretrieve", "finish_reserve_ms",
                                                                      "close")}
    for path, name in ((SRC / "engine" / "engine.py", "Engine"), (SRC / "adapters" / "pool.py", "EnginePool")):
        have = {m.name: m for m in _methods(_class(path, name))}
        for call, sig in wanted.items():
            assert call in have, f"{name} has no {call}"
            params = [a.arg for a in [*have[call].args.args, *have[call].args.kwonlyargs]]
            assert params[: len(sig.parameters)] == list(sig.parameters) or set(sig.parameters) <= set(params) | {
                "kwargs"}, (name, call, params, list(sig.parameters))
