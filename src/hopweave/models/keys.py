"""Unknown keys in a pack file, named with the nearest valid key: :func:`key_hints` reads a
pydantic ``ValidationError``'s ``extra_forbidden`` errors against the model's JSON Schema and
says, for each, which keys are valid at that place and the closest one (``expect.fact``: did you
mean ``facts``?)."""

from __future__ import annotations

import difflib
import functools
from typing import Any

from pydantic import BaseModel, ValidationError


@functools.lru_cache(maxsize=64)
def _schema(model: type[BaseModel]) -> dict[str, Any]:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.model_json_schema()


def _options(node: dict[str, Any], defs: dict[str, Any]) -> list[dict[str, Any]]:
    """``node`` with its ``$ref`` resolved and its ``anyOf`` / ``allOf`` alternatives spread."""
    seen: set[str] = set()
    while "$ref" in node and node["$ref"] not in seen:
        seen.add(node["$ref"])
        node = defs.get(node["$ref"].rsplit("/", 1)[-1], {})
    alts = node.get("anyOf") or node.get("allOf")
    if alts:
        return [o for a in alts for o in _options(a, defs)]
    return [node]


def valid_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The keys ``model``'s schema declares for the mapping at ``loc`` (a pydantic error
    location without its last element); ``[]`` when the place is not a declared mapping."""
    schema = _schema(model)
    defs = schema.get("$defs", {})
    nodes = _options(schema, defs)
    for part in loc:
        nxt: list[dict[str, Any]] = []
        for n in nodes:
            if isinstance(part, int):
                if n.get("type") == "array":
                    nxt += _options(n.get("items", {}), defs)
            elif part in n.get("properties", {}):
                nxt += _options(n["properties"][part], defs)
            elif isinstance(n.get("additionalProperties"), dict):
                nxt += _options(n["additionalProperties"], defs)
            elif n.get("title") == part:  # a union member's name in the location
                nxt.append(n)
        if nxt or isinstance(part, int):
            nodes = nxt
        # else: a validator's tag in the location (``function-after[...]``): same place
    return sorted({k for n in nodes for k in n.get("properties", {})})


def key_hints(exc: BaseException, model: type[BaseModel]) -> str:
    """For each unknown key in ``exc`` (a pydantic ValidationError from ``model``): ``unknown
    key 'a.b' (did you mean 'c'?; valid here: ...)``, joined by ``; ``; "" when there is none."""
    if not isinstance(exc, ValidationError):
        return ""
    return "; ".join(error_message(e, model) for e in exc.errors() if e.get("type") == "extra_forbidden")


def error_message(err: Any, model: type[BaseModel]) -> str:
    """One pydantic error (an ``exc.errors()`` item) as a message: an unknown key names the
    nearest valid key and the valid ones at its place; any other error is its own ``msg``."""
    if err.get("type") != "extra_forbidden":
        return str(err.get("msg", ""))
    loc = tuple(err.get("loc", ()))
    key = str(loc[-1]) if loc else "?"
    where = ".".join(str(p) for p in loc)
    keys = valid_keys(model, loc[:-1])
    near = difflib.get_close_matches(key, keys, n=1, cutoff=0.6)
    hint = f"did you mean {near[0]!r}?; " if near else ""
    shown = ", ".join(keys[:40]) + (" ..." if len(keys) > 40 else "")
    return f"unknown key {where!r} ({hint}valid here: {shown or 'none'})"


def with_key_hints(exc: BaseException, model: type[BaseModel]) -> str:
    """``str(exc)``, preceded by :func:`key_hints` when it has unknown keys."""
    hints = key_hints(exc, model)
    return f"{hints}. {exc}" if hints else str(exc)


__all__ = ["error_message", "key_hints", "valid_keys", "with_key_hints"]
