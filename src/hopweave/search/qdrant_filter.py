"""FilterTree -> Qdrant filters: one set of semantics, one builder per target.

:func:`to_qdrant` returns a ``qdrant_client.models.Filter`` (server / local mode);
:func:`to_edge` returns a ``qdrant_edge.Filter`` (the embedded engine). Both walk the tree with
the same :func:`_compile`, so the two adapters cannot drift apart.

Semantics (identical to :func:`hopweave.models.filters.matches`):

* ``eq`` / ``in``: exact match (str, int, bool); a float is matched as a closed range; a list
  payload matches when any element matches; a missing field never matches.
* ``range``: numeric bounds use a numeric range; ISO-string bounds are only allowed on fields of
  type date/datetime and use a datetime range (date-only values mean midnight UTC).
* ``is_empty``: the field is absent, null or ``[]`` (Qdrant ``IsEmptyCondition``).
* ``and`` -> must, ``or`` -> should, ``not`` -> must_not.

Raises FilterError for a field outside the vocabulary or a range the target cannot express.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol

from hopweave.errors import FilterError
from hopweave.models.filters import And, Eq, FilterTree, In, IsEmpty, Not, Or, Range

DATE_TYPES = frozenset({"date", "datetime"})


class _Builder(Protocol):
    def match(self, key: str, value: Any) -> Any: ...
    def match_any(self, key: str, values: list[Any]) -> Any: ...
    def num_range(self, key: str, bounds: dict[str, float]) -> Any: ...
    def dt_range(self, key: str, bounds: dict[str, str]) -> Any: ...
    def is_empty(self, key: str) -> Any: ...
    def all_of(self, conds: list[Any]) -> Any: ...
    def any_of(self, conds: list[Any]) -> Any: ...
    def none_of(self, conds: list[Any]) -> Any: ...


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _bounds(tree: Range) -> dict[str, Any]:
    return {k: getattr(tree, k) for k in ("gt", "gte", "lt", "lte") if getattr(tree, k) is not None}


def _compile(tree: FilterTree, b: _Builder, field_types: Mapping[str, str] | None) -> Any:
    if isinstance(tree, And):
        return b.all_of([_compile(c, b, field_types) for c in tree.clauses])
    if isinstance(tree, Or):
        return b.any_of([_compile(c, b, field_types) for c in tree.clauses])
    if isinstance(tree, Not):
        return b.none_of([_compile(tree.clause, b, field_types)])
    if field_types is not None and tree.field not in field_types:
        raise FilterError(
            f"filter field {tree.field!r} is not a chunk field; allowed: {sorted(field_types)}"
        )
    if isinstance(tree, IsEmpty):
        return b.is_empty(tree.field)
    if isinstance(tree, Eq):
        return _eq(tree.field, tree.value, b)
    if isinstance(tree, In):
        exact = [v for v in tree.values if not isinstance(v, float)]
        floats = [v for v in tree.values if isinstance(v, float)]
        kinds = {type(v) for v in exact}
        conds: list[Any] = []
        if len(exact) > 1 and kinds in ({str}, {int}):
            conds.append(b.match_any(tree.field, list(exact)))
        else:
            conds.extend(b.match(tree.field, v) for v in exact)
        conds.extend(_eq(tree.field, v, b) for v in floats)
        return conds[0] if len(conds) == 1 else b.any_of(conds)
    bounds = _bounds(tree)
    if all(_is_num(v) for v in bounds.values()):
        return b.num_range(tree.field, {k: float(v) for k, v in bounds.items()})
    if all(isinstance(v, str) for v in bounds.values()):
        ftype = (field_types or {}).get(tree.field)
        if ftype not in DATE_TYPES:
            raise FilterError(
                f"range on {tree.field!r} with string bounds needs a date/datetime field "
                f"(the field is {ftype or 'untyped'}); use numbers or a date field"
            )
        return b.dt_range(tree.field, {k: _iso(v) for k, v in bounds.items()})
    raise FilterError(f"range on {tree.field!r} mixes numeric and string bounds: {bounds}")


def _eq(key: str, value: Any, b: _Builder) -> Any:
    if isinstance(value, float):
        return b.num_range(key, {"gte": value, "lte": value})
    return b.match(key, value)


def _iso(v: str) -> str:
    """Normalise a date-only bound to an RFC 3339 instant (midnight UTC)."""
    s = v.strip()
    if len(s) == 10:
        return s + "T00:00:00Z"
    return s


# ---- qdrant-client -----------------------------------------------------------------------
class _ClientBuilder:
    def __init__(self) -> None:
        from qdrant_client import models

        self.m = models

    def match(self, key: str, value: Any) -> Any:
        return self.m.FieldCondition(key=key, match=self.m.MatchValue(value=value))

    def match_any(self, key: str, values: list[Any]) -> Any:
        return self.m.FieldCondition(key=key, match=self.m.MatchAny(any=values))

    def num_range(self, key: str, bounds: dict[str, float]) -> Any:
        return self.m.FieldCondition(key=key, range=self.m.Range(**bounds))

    def dt_range(self, key: str, bounds: dict[str, str]) -> Any:
        return self.m.FieldCondition(key=key, range=self.m.DatetimeRange(**bounds))

    def is_empty(self, key: str) -> Any:
        return self.m.IsEmptyCondition(is_empty=self.m.PayloadField(key=key))

    def all_of(self, conds: list[Any]) -> Any:
        return self.m.Filter(must=conds)

    def any_of(self, conds: list[Any]) -> Any:
        return self.m.Filter(should=conds)

    def none_of(self, conds: list[Any]) -> Any:
        return self.m.Filter(must_not=conds)


def to_qdrant(tree: FilterTree | None, field_types: Mapping[str, str] | None = None) -> Any:
    """Compile to ``qdrant_client.models.Filter`` (None for no filter). Raises FilterError."""
    if tree is None:
        return None
    b = _ClientBuilder()
    out = _compile(tree, b, field_types)
    return out if isinstance(out, b.m.Filter) else b.m.Filter(must=[out])


# ---- qdrant-edge -------------------------------------------------------------------------
class _EdgeBuilder:
    def __init__(self) -> None:
        import qdrant_edge

        self.q = qdrant_edge

    def match(self, key: str, value: Any) -> Any:
        return self.q.FieldCondition(key=key, match=self.q.MatchValue(value))

    def match_any(self, key: str, values: list[Any]) -> Any:
        return self.q.FieldCondition(key=key, match=self.q.MatchAny(values))

    def num_range(self, key: str, bounds: dict[str, float]) -> Any:
        return self.q.FieldCondition(key=key, range=self.q.RangeFloat(**bounds))

    def dt_range(self, key: str, bounds: dict[str, str]) -> Any:
        return self.q.FieldCondition(key=key, range=self.q.RangeDateTime(**bounds))

    def is_empty(self, key: str) -> Any:
        return self.q.IsEmptyCondition(key)

    def all_of(self, conds: list[Any]) -> Any:
        return self.q.Filter(must=conds)

    def any_of(self, conds: list[Any]) -> Any:
        return self.q.Filter(should=conds)

    def none_of(self, conds: list[Any]) -> Any:
        return self.q.Filter(must_not=conds)


def to_edge(tree: FilterTree | None, field_types: Mapping[str, str] | None = None) -> Any:
    """Compile to ``qdrant_edge.Filter`` (None for no filter). Raises FilterError."""
    if tree is None:
        return None
    b = _EdgeBuilder()
    out = _compile(tree, b, field_types)
    return out if isinstance(out, b.q.Filter) else b.q.Filter(must=[out])
