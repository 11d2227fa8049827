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
"""

from __future__ import annotations

from typing import Any, Union

from hopweave.graph.values import UNBOUND
from hopweave.models.filters import Eq, FilterTree, In, Not, Range, matches
from hopweave.models.metagraph import Predicate


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
