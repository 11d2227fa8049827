"""The typed filter tree shared by every store.

One tree, one vocabulary: the field names are chunk metadata fields and graph property names
declared in the graph schema (``GraphSchema.filter_fields``). Compilers:

- Qdrant ``models.Filter``: ``hopweave.search.qdrant_filter.to_qdrant``
- Cypher ``(where, params)``: ``hopweave.graph.cypher``
- Python predicate over a payload / node property dict: :func:`matches` (used by networkx and tests)

Values are plain JSON scalars (str, int, float, bool) or ISO dates as strings. Ranges compare
numbers with numbers; two ISO-8601 date/datetime strings compare as UTC instants (a date-only
value is midnight UTC, a datetime without an offset is UTC: Qdrant's datetime index semantics),
any other strings lexicographically.
"""

from __future__ import annotations

import json
import operator
from datetime import date, datetime, timezone
from functools import lru_cache
from typing import Annotated, Any, Callable, Iterable, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hopweave.errors import FilterError

Scalar = Union[str, int, float, bool]

_FIELD_RE = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"


class _Node(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Eq(_Node):
    op: Literal["eq"] = "eq"
    field: str = Field(pattern=_FIELD_RE)
    value: Scalar


class In(_Node):
    op: Literal["in"] = "in"
    field: str = Field(pattern=_FIELD_RE)
    values: tuple[Scalar, ...] = Field(min_length=1)


class Range(_Node):
    """``gte <= field <= lte`` / ``gt < field < lt``; at least one bound."""

    op: Literal["range"] = "range"
    field: str = Field(pattern=_FIELD_RE)
    gt: Scalar | None = None
    gte: Scalar | None = None
    lt: Scalar | None = None
    lte: Scalar | None = None

    @field_validator("lte")
    @classmethod
    def _one_bound(cls, v: Any, info: Any) -> Any:
        d = info.data
        if v is None and all(d.get(k) is None for k in ("gt", "gte", "lt")):
            raise ValueError("a range needs at least one of gt, gte, lt, lte")
        return v


class IsEmpty(_Node):
    """The field is absent, null or an empty list: e.g. "no segment-specific document" for an
    anonymous session (``tier`` unset means the chunk applies to every tier)."""

    op: Literal["is_empty"] = "is_empty"
    field: str = Field(pattern=_FIELD_RE)


class And(_Node):
    op: Literal["and"] = "and"
    clauses: tuple["FilterTree", ...] = Field(min_length=1)


class Or(_Node):
    op: Literal["or"] = "or"
    clauses: tuple["FilterTree", ...] = Field(min_length=1)


class Not(_Node):
    op: Literal["not"] = "not"
    clause: "FilterTree"


FilterTree = Annotated[Union[Eq, In, Range, IsEmpty, And, Or, Not], Field(discriminator="op")]

for _m in (And, Or, Not):
    _m.model_rebuild()


class _Holder(BaseModel):
    tree: FilterTree


def parse_filter(data: Any) -> FilterTree:
    """Parse a dict (or an existing node) into a FilterTree. Raises FilterError."""
    if isinstance(data, (Eq, In, Range, IsEmpty, And, Or, Not)):
        return data
    try:
        return _Holder(tree=data).tree
    except Exception as exc:  # pydantic.ValidationError
        raise FilterError(f"malformed filter tree: {exc}") from exc


#: Trees parsed by :func:`parse_filter_cached`, by canonical JSON of their data (bounded).
_PARSED: dict[str, FilterTree] = {}
_PARSED_MAX = 4096


def parse_filter_cached(data: Any) -> FilterTree:
    """:func:`parse_filter` of pack data parsed again and again (a metric's or a section's
    ``where``): the tree is parsed once per distinct data (trees are frozen). Raises FilterError."""
    try:
        key = json.dumps(data, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):  # not plain JSON data (e.g. a date): parsed every time
        return parse_filter(data)
    tree = _PARSED.get(key)
    if tree is None:
        tree = parse_filter(data)
        if len(_PARSED) < _PARSED_MAX:
            _PARSED[key] = tree
    return tree


def fields(tree: FilterTree) -> set[str]:
    """All field names a tree references."""
    if isinstance(tree, (Eq, In, Range, IsEmpty)):
        return {tree.field}
    if isinstance(tree, Not):
        return fields(tree.clause)
    out: set[str] = set()
    for c in tree.clauses:
        out |= fields(c)
    return out


def check_fields(tree: FilterTree, allowed: Iterable[str]) -> None:
    """Raise FilterError if the tree names a field outside ``allowed`` (the shared vocabulary)."""
    allowed_set = set(allowed)
    unknown = sorted(fields(tree) - allowed_set)
    if unknown:
        raise FilterError(
            f"filter names unknown field(s) {unknown}; allowed fields are {sorted(allowed_set)}"
        )


def clause_field(clause: FilterTree) -> str | None:
    """The one field a leaf clause (``eq``, ``in``, ``range``, ``is_empty``) is on, or an
    ``is_empty(f) or <leaf on f>`` (an "absent means any" clause); None for anything else."""
    if isinstance(clause, (Eq, In, Range, IsEmpty)):
        return clause.field
    if isinstance(clause, Or) and len(clause.clauses) == 2 and isinstance(clause.clauses[0], IsEmpty):
        inner = clause.clauses[1]
        if isinstance(inner, (Eq, In, Range)) and inner.field == clause.clauses[0].field:
            return inner.field
    return None


def and_(*clauses: FilterTree | None) -> FilterTree | None:
    """Conjunction of the non-None clauses, flattening nested Ands; None if there are none."""
    flat: list[FilterTree] = []
    for c in clauses:
        if c is None:
            continue
        if isinstance(c, And):
            flat.extend(c.clauses)
        else:
            flat.append(c)
    if not flat:
        return None
    if len(flat) == 1:
        return flat[0]
    return And(clauses=tuple(flat))


def _cmp_ok(v: Any, bound: Any) -> bool:
    # Only compare like with like: numbers with numbers, strings with strings.
    if isinstance(v, bool) or isinstance(bound, bool):
        return False
    if isinstance(v, (int, float)) and isinstance(bound, (int, float)):
        return True
    return isinstance(v, str) and isinstance(bound, str)


@lru_cache(maxsize=4096)
def iso_instant(s: str) -> datetime | None:
    """An ISO-8601 date (``2026-01-01``: midnight UTC) or datetime string (naive = UTC) as an
    aware UTC datetime; None when ``s`` is not one."""
    t = s.strip()
    if len(t) < 10 or not (t[:4].isdigit() and t[4] == "-"):
        return None
    try:
        if len(t) == 10:
            d = date.fromisoformat(t)
            return datetime(d.year, d.month, d.day, tzinfo=timezone.utc)
        dt = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc)


def _comparable(v: Any, bound: Any) -> tuple[Any, Any]:
    """Two ISO date/datetime strings as instants; anything else unchanged."""
    if isinstance(v, str) and isinstance(bound, str):
        a, b = iso_instant(v), iso_instant(bound)
        if a is not None and b is not None:
            return a, b
    return v, bound


def _eq(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def is_empty_value(v: Any) -> bool:
    """IsEmpty semantics (Qdrant's ``IsEmptyCondition``): absent, null or an empty list."""
    return v is None or (isinstance(v, (list, tuple)) and len(v) == 0)


def matches(tree: FilterTree | None, payload: dict[str, Any]) -> bool:
    """Evaluate a tree against a property dict. A missing field never matches Eq/In/Range.

    A list-valued property matches Eq/In when any element matches (Qdrant semantics).
    """
    if tree is None:
        return True
    if isinstance(tree, And):
        return all(matches(c, payload) for c in tree.clauses)
    if isinstance(tree, Or):
        return any(matches(c, payload) for c in tree.clauses)
    if isinstance(tree, Not):
        return not matches(tree.clause, payload)
    if isinstance(tree, IsEmpty):
        return is_empty_value(payload.get(tree.field))
    if tree.field not in payload or payload[tree.field] is None:
        return False
    raw = payload[tree.field]
    vals = raw if isinstance(raw, (list, tuple)) else [raw]
    if isinstance(tree, Eq):
        return any(_eq(v, tree.value) for v in vals)
    if isinstance(tree, In):
        return any(_eq(v, x) for v in vals for x in tree.values)
    for v in vals:
        ok = True
        for bound, fn in (
            (tree.gt, lambda a, b: a > b),
            (tree.gte, lambda a, b: a >= b),
            (tree.lt, lambda a, b: a < b),
            (tree.lte, lambda a, b: a <= b),
        ):
            if bound is None:
                continue
            if not _cmp_ok(v, bound) or not fn(*_comparable(v, bound)):
                ok = False
                break
        if ok:
            return True
    return False


def compile_matcher(tree: FilterTree | None) -> Callable[[dict[str, Any]], bool]:
    """A function equal to ``lambda payload: matches(tree, payload)``, built once: for hot paths
    that test one tree against many nodes (the walker's time rule). And / Or / Not / IsEmpty /
    Range are compiled; Eq and In defer to :func:`matches`."""
    if tree is None:
        return lambda p: True
    if isinstance(tree, (And, Or)):
        fs = tuple(compile_matcher(c) for c in tree.clauses)
        both = isinstance(tree, And)
        if len(fs) == 1:
            return fs[0]
        if len(fs) == 2:  # the time rule's shape: no generator per call
            a, b = fs
            return (lambda p: a(p) and b(p)) if both else (lambda p: a(p) or b(p))
        if both:
            return lambda p: all(f(p) for f in fs)
        return lambda p: any(f(p) for f in fs)
    if isinstance(tree, Not):
        inner = compile_matcher(tree.clause)
        return lambda p: not inner(p)
    if isinstance(tree, IsEmpty):
        name = tree.field
        return lambda p: is_empty_value(p.get(name))
    if not isinstance(tree, Range):
        leaf = tree
        return lambda p: matches(leaf, p)
    field = tree.field
    bounds = tuple((b, fn) for b, fn in ((tree.gt, operator.gt), (tree.gte, operator.ge), (tree.lt, operator.lt),
                                         (tree.lte, operator.le)) if b is not None)

    def in_range(p: dict[str, Any]) -> bool:
        raw = p.get(field)
        if raw is None:
            return False
        for v in raw if isinstance(raw, (list, tuple)) else (raw,):
            for b, fn in bounds:
                if not (_cmp_ok(v, b) and fn(*_comparable(v, b))):
                    break
            else:
                return True
        return False

    return in_range


def to_text(tree: FilterTree) -> str:
    """A one-line infix form (``valid_from <= 2026-05-12T00:00:00Z or valid_from is empty``)."""
    if isinstance(tree, (And, Or)):
        sep = " and " if isinstance(tree, And) else " or "
        return sep.join(f"({to_text(c)})" if isinstance(c, (And, Or)) else to_text(c) for c in tree.clauses)
    if isinstance(tree, Not):
        return f"not ({to_text(tree.clause)})"
    if isinstance(tree, IsEmpty):
        return f"{tree.field} is empty"
    if isinstance(tree, Eq):
        return f"{tree.field} = {tree.value}"
    if isinstance(tree, In):
        return f"{tree.field} in [{', '.join(str(v) for v in tree.values)}]"
    ops = (("gt", ">"), ("gte", ">="), ("lt", "<"), ("lte", "<="))
    return " and ".join(f"{tree.field} {sym} {getattr(tree, k)}" for k, sym in ops if getattr(tree, k) is not None)


def to_display(tree: FilterTree | None) -> dict[str, Any]:
    """A flat, seed-004-style view: {field: value | [values] | {gte:..}} for a conjunction; its
    other clauses (``or`` / ``not`` / a second clause on one field) are listed as infix text
    under ``"where"`` (e.g. the in-force clause on the validity dates)."""
    if tree is None:
        return {}
    clauses = tree.clauses if isinstance(tree, And) else (tree,)
    out: dict[str, Any] = {}
    rest: list[str] = []
    for c in clauses:
        if isinstance(c, (And, Or, Not)) or c.field in out:
            rest.append(to_text(c))
        elif isinstance(c, Eq):
            out[c.field] = c.value
        elif isinstance(c, In):
            out[c.field] = list(c.values)
        elif isinstance(c, Range):
            out[c.field] = c.model_dump(exclude={"op", "field"}, exclude_none=True)
        else:
            out[c.field] = None
    if rest:
        out["where"] = rest
    return out
