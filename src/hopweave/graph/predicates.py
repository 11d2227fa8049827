"""Pattern predicates as filter trees: the one definition of what a predicate means.

A :class:`~hopweave.models.metagraph.Predicate` with a resolved value (see
:func:`hopweave.graph.values.resolve_value`) becomes a :data:`~hopweave.models.filters.FilterTree`
evaluated by :func:`hopweave.models.filters.matches` (networkx walker) or compiled to Cypher
(``hopweave.graph.cypher``), so both backends share one meaning:

- ``eq`` -> ``Eq``; ``in`` -> ``In`` (a scalar value is a 1-tuple); ``lt/lte/gt/gte`` -> ``Range``;
  ``ne`` -> ``Not(Eq)`` (a node *missing* the property satisfies ``ne``);
- ``exists`` -> :data:`EXISTS` (property present and not None);
- a value that cannot be compared (UNBOUND, an empty tuple, a list for a scalar op, None) ->
  :data:`NOTHING` (the predicate matches no node: patterns fail closed, never open).

It also holds the one definition of time on the graph (:func:`time_tree`, :func:`edge_time_tree`),
which every pattern applies to every node and edge of its walk on every store, like the tenant:

- **known at as_of**: a node or edge is known when it was recorded at or before as_of: its
  ``recorded_at`` when it has one, else (nodes) the event time its label declares
  (``time.event``, e.g. a DecisionTrace's ``timestamp``); a node with neither is timeless (always known).
  ``recorded_at`` is when the fact entered the graph, the event time when it happened: a late fee
  charged on May 3 but recorded on May 20 is not known at a May 10 as_of.
- **in force at as_of**: a node whose label declares ``time.valid_from`` / ``time.valid_until``
  (a workflow, rule or heuristic revision) is seen only when ``valid_from <= as_of < valid_until``
  (an absent bound is open).

Times compare in the property's declared type (a ``date`` property against as_of's date).
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from typing import Any, Callable, Union

from hopweave.graph.values import UNBOUND, format_time
from hopweave.models.filters import And, Eq, FilterTree, In, IsEmpty, Not, Or, Range, compile_matcher, matches
from hopweave.models.metagraph import Predicate
from hopweave.models.schema import RECORDED_AT, LabelSpec


class _Sentinel:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return self.name


#: The predicate holds iff the property is present and not None.
EXISTS = _Sentinel("EXISTS")
#: The predicate holds for no node.
NOTHING = _Sentinel("NOTHING")

PredicateTree = Union[FilterTree, _Sentinel]

_SCALARS = (str, int, float, bool)


def predicate_tree(pred: Predicate, value: Any) -> PredicateTree:
    """The filter tree for ``pred`` with its resolved ``value``.

    Returns a FilterTree over the single field ``pred.property``, or :data:`EXISTS`, or
    :data:`NOTHING`. Never raises for odd values: they yield NOTHING.
    """
    field = pred.property
    if pred.op == "exists":
        return EXISTS
    if value is UNBOUND or value is None:
        return NOTHING
    if pred.op == "in":
        vals = tuple(value) if isinstance(value, (tuple, list)) else (value,)
        if not vals or not all(isinstance(v, _SCALARS) for v in vals):
            return NOTHING
        return In(field=field, values=vals)
    if not isinstance(value, _SCALARS):
        return NOTHING
    if pred.op == "eq":
        return Eq(field=field, value=value)
    if pred.op == "ne":
        return Not(clause=Eq(field=field, value=value))
    return Range(field=field, **{pred.op: value})


def tree_matches(tree: PredicateTree, props: dict[str, Any]) -> bool:
    """Evaluate a :func:`predicate_tree` result against a node's property dict."""
    if tree is NOTHING:
        return False
    if tree is EXISTS:
        return False  # callers handle EXISTS with the field name; see predicate_holds
    return matches(tree, props)  # type: ignore[arg-type]


def predicate_holds(pred: Predicate, tree: PredicateTree, props: dict[str, Any]) -> bool:
    """Whether a node with ``props`` satisfies ``pred`` (whose tree is ``tree``)."""
    if tree is EXISTS:
        return props.get(pred.property) is not None
    return tree_matches(tree, props)


# ---- time: known at as_of, in force at as_of ---------------------------------------------------
def recorded_bound(as_of: datetime) -> str:
    """The latest ``recorded_at`` known at ``as_of`` (``recorded_at <= recorded_bound(as_of)``)."""
    return format_time(as_of, "datetime")


def _recorded(as_of: datetime) -> FilterTree:
    return Range(field=RECORDED_AT, lte=recorded_bound(as_of))


def edge_time_tree(as_of: datetime) -> FilterTree:
    """An edge is known at ``as_of``: no ``recorded_at``, or ``recorded_at <= as_of``."""
    return Or(clauses=(IsEmpty(field=RECORDED_AT), _recorded(as_of)))


def time_tree(label: LabelSpec, as_of: datetime) -> FilterTree:
    """The condition for a node of ``label`` to be seen by a pattern at ``as_of``: known then
    (``recorded_at``, else the label's event time, at or before as_of) and in force then
    (``valid_from <= as_of < valid_until`` when the label declares them). See the module docstring."""
    t = label.time
    event = t.event if t is not None else None
    if event is None:
        known = edge_time_tree(as_of)
    else:
        happened = Range(field=event, lte=format_time(as_of, label.props[event].type))
        known = Or(clauses=(
            _recorded(as_of),
            And(clauses=(IsEmpty(field=RECORDED_AT), Or(clauses=(IsEmpty(field=event), happened)))),
        ))
    clauses: list[FilterTree] = [known]
    if t is not None and t.valid_from is not None:
        at = format_time(as_of, label.props[t.valid_from].type)
        clauses.append(Or(clauses=(IsEmpty(field=t.valid_from), Range(field=t.valid_from, lte=at))))
    if t is not None and t.valid_until is not None:
        at = format_time(as_of, label.props[t.valid_until].type)
        clauses.append(Or(clauses=(IsEmpty(field=t.valid_until), Range(field=t.valid_until, gt=at))))
    return clauses[0] if len(clauses) == 1 else And(clauses=tuple(clauses))


Matcher = Callable[[dict[str, Any]], bool]


def time_matcher(label: LabelSpec, as_of: datetime) -> Matcher:
    """:func:`time_tree` compiled (``filters.compile_matcher``) and cached per label (its name
    and time roles) and as_of: the walker tests it on every node it examines."""
    t = label.time
    roles = tuple((n, label.props[n].type) for n in (t.event, t.valid_from, t.valid_until) if n) if t else ()
    key = (label.name, t.event if t else None, t.valid_from if t else None, t.valid_until if t else None,
           roles, as_of)
    m = _TIME_MATCHERS.get(key)
    if m is None:
        if len(_TIME_MATCHERS) >= 1024:
            _TIME_MATCHERS.clear()
        m = _TIME_MATCHERS[key] = compile_matcher(time_tree(label, as_of))
    return m


_TIME_MATCHERS: dict[tuple[Any, ...], Matcher] = {}


@lru_cache(maxsize=64)
def edge_time_matcher(as_of: datetime) -> Matcher:
    """:func:`edge_time_tree` compiled and cached per as_of."""
    return compile_matcher(edge_time_tree(as_of))
