"""A small, safe expression language for rule conditions and case states (pack data, never eval).

Grammar (keywords are lower-case)::

    expr    := or
    or      := and ("or" and)*
    and     := not ("and" not)*
    not     := "not" not | cmp
    cmp     := sum (("==" | "!=" | "<" | "<=" | ">" | ">=") sum
                    | "in" list | "not" "in" list
                    | "during" MONTHDAY "to" MONTHDAY | "on" list)?
    sum     := term (("+" | "-") term)*
    term    := unary (("*" | "/") unary)*
    unary   := "-" unary | operand
    operand := NUMBER | STRING | DATE | "true" | "false" | "null" | NAME | "(" expr ")"
    list    := "[" (operand ("," operand)*)? "]"

``NUMBER`` is ``digits[.digits]``, ``STRING`` is single- or double-quoted (no escapes),
``DATE`` is an ISO date ``YYYY-MM-DD`` (compared with a fact's ISO date or datetime string by
its date), ``NAME`` a fact name (``[A-Za-z_][A-Za-z0-9_]*``), ``MONTHDAY`` a quoted
``"MM-DD"``. There are no calls, attributes or indexing; input is bounded (length, tokens,
nesting, list size).

- **Arithmetic** (``+ - * /``) is over numbers only: ``amount > 1.5 * avg_monthly_usage``.
  A fact that is not a number, or a division by zero, makes the comparison *unknown*.
- **Recurring windows**: ``d during "11-15" to "03-15"`` holds when the date ``d`` falls on a
  month-day from the first to the second, both included, every year (a window whose start comes
  after its end runs over the new year); ``d on ["sat", "sun"]`` holds when ``d`` falls on one of
  the weekdays (``mon`` ... ``sun``). ``d`` is a date fact, an ISO date or datetime string, or
  ``as_of`` (the request's instant, which rules see unless a case fact of that name exists).

Evaluation is three-valued over a mapping of fact values: a comparison with a fact that is
absent (or None) is *unknown*, and every verdict carries the reason in words
(``plan == "Unlimited_Plus" is false (plan = Unlimited_Basic)``), so a context can say why a rule does not fire.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime
from functools import lru_cache
from typing import Any, Callable, Mapping, Union

from hopweave.errors import RuleExpressionError

MAX_LENGTH = 1000
MAX_TOKENS = 200
MAX_DEPTH = 20
MAX_LIST = 50

_TOKEN = re.compile(
    r"\s*(?:(?P<date>\d{4}-\d{2}-\d{2})(?![\d.])|(?P<num>\d+(?:\.\d+)?)(?![\w.])"
    r"|\"(?P<dq>[^\"\\]*)\"|'(?P<sq>[^'\\]*)'|(?P<op>==|!=|<=|>=|<|>|\(|\)|\[|\]|,|\+|-|\*|/)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*))"
)
_KEYWORDS = {"and", "or", "not", "in", "true", "false", "null", "during", "to", "on"}
_CMP = ("==", "!=", "<", "<=", ">", ">=")
_ARITH = ("+", "-", "*", "/")
_WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_MONTHDAY = re.compile(r"(\d{2})-(\d{2})")

Value = Union[str, int, float, bool, date, None]


@dataclass(frozen=True)
class Lit:
    value: Value


@dataclass(frozen=True)
class Name:
    name: str


@dataclass(frozen=True)
class Cmp:
    op: str
    left: "Expr"
    right: "Expr"


@dataclass(frozen=True)
class In:
    item: "Expr"
    options: tuple["Expr", ...]
    negated: bool = False


@dataclass(frozen=True)
class BoolOp:
    op: str  # "and" | "or"
    items: tuple["Expr", ...]


@dataclass(frozen=True)
class Not:
    item: "Expr"


@dataclass(frozen=True)
class Arith:
    op: str  # "+" | "-" | "*" | "/" | "neg" (unary minus: ``left`` only)
    left: "Expr"
    right: "Expr | None" = None


@dataclass(frozen=True)
class During:
    """``item during start to end``: a yearly month-day window, both ends included."""

    item: "Expr"
    start: tuple[int, int]
    end: tuple[int, int]


@dataclass(frozen=True)
class OnWeekday:
    """``item on [days]``: the date falls on one of these weekdays (0 = Monday)."""

    item: "Expr"
    days: tuple[int, ...]


Expr = Union[Lit, Name, Cmp, In, BoolOp, Not, Arith, During, OnWeekday]


@dataclass(frozen=True)
class Verdict:
    """``value`` True / False / None (unknown: a fact is missing or not comparable) and why."""

    value: bool | None
    reason: str


# ------------------------------------------------------------------------------- tokenize
def _tokens(text: str) -> list[tuple[str, Any]]:
    if not isinstance(text, str):
        raise RuleExpressionError(f"an expression must be a string, not {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise RuleExpressionError(f"expression longer than {MAX_LENGTH} characters; split the rule")
    out: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            bad = text[pos:].lstrip()[:20]
            raise RuleExpressionError(f"unexpected {bad!r} at character {pos} in {text!r}: only fact names, "
                                      "numbers, quoted strings, ISO dates, comparisons, + - * /, and/or/not, "
                                      "in [...], during ... to ..., on [...] and parentheses are allowed")
        pos = m.end()
        kind = m.lastgroup
        if kind == "date":
            try:
                out.append(("lit", date.fromisoformat(m.group("date"))))
            except ValueError:
                raise RuleExpressionError(f"{m.group('date')!r} is not a valid date in {text!r}") from None
        elif kind == "num":
            s = m.group("num")
            out.append(("lit", float(s) if "." in s else int(s)))
        elif kind in ("dq", "sq"):
            out.append(("lit", m.group(kind)))
        elif kind == "op":
            out.append(("op", m.group("op")))
        else:
            word = m.group("name")
            if word.startswith("__"):
                raise RuleExpressionError(f"fact name {word!r} is not allowed in {text!r}")
            if word in _KEYWORDS:
                out.append(("lit", {"true": True, "false": False, "null": None}[word]) if word in
                           ("true", "false", "null") else ("kw", word))
            else:
                out.append(("name", word))
        if len(out) > MAX_TOKENS:
            raise RuleExpressionError(f"expression has more than {MAX_TOKENS} tokens; split the rule")
    if not out:
        raise RuleExpressionError("empty expression")
    return out


# ------------------------------------------------------------------------------- parse
class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0
        self.depth = 0

    def peek(self) -> tuple[str, Any] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def accept(self, kind: str, value: Any = None) -> bool:
        t = self.peek()
        if t is not None and t[0] == kind and (value is None or t[1] == value):
            self.i += 1
            return True
        return False

    def fail(self, what: str) -> RuleExpressionError:
        t = self.peek()
        at = "the end" if t is None else repr(t[1])
        return RuleExpressionError(f"expected {what} at {at} (token {self.i + 1}) in {self.text!r}")

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise RuleExpressionError(f"expression nested deeper than {MAX_DEPTH} levels in {self.text!r}")

    def parse(self) -> Expr:
        e = self.or_()
        if self.peek() is not None:
            raise self.fail("and/or or the end")
        self.condition(e)
        return e

    def condition(self, e: Expr) -> None:
        """Refuse arithmetic where a condition is expected (``amount + 1`` decides nothing)."""
        if isinstance(e, Arith):
            raise RuleExpressionError(f"{show(e)} is a number, not a condition, in {self.text!r}: compare it "
                                      "(e.g. > 0)")
        if isinstance(e, BoolOp):
            for i in e.items:
                self.condition(i)
        elif isinstance(e, Not):
            self.condition(e.item)

    def or_(self) -> Expr:
        items = [self.and_()]
        while self.accept("kw", "or"):
            items.append(self.and_())
        return items[0] if len(items) == 1 else BoolOp("or", tuple(items))

    def and_(self) -> Expr:
        items = [self.not_()]
        while self.accept("kw", "and"):
            items.append(self.not_())
        return items[0] if len(items) == 1 else BoolOp("and", tuple(items))

    def not_(self) -> Expr:
        if self.accept("kw", "not"):
            self.enter()
            e = Not(self.not_())
            self.depth -= 1
            return e
        return self.cmp()

    def cmp(self) -> Expr:
        left = self.sum_()
        t = self.peek()
        if t is not None and t[0] == "op" and t[1] in _CMP:
            self.i += 1
            return Cmp(t[1], left, self.sum_())
        if self.accept("kw", "in"):
            return In(left, self.list_())
        if t == ("kw", "not") and self.i + 1 < len(self.toks) and self.toks[self.i + 1] == ("kw", "in"):
            self.i += 2
            return In(left, self.list_(), negated=True)
        if self.accept("kw", "during"):
            start = self.month_day()
            if not self.accept("kw", "to"):
                raise self.fail("'to' in during \"MM-DD\" to \"MM-DD\"")
            return During(left, start, self.month_day())
        if self.accept("kw", "on"):
            return OnWeekday(left, self.weekdays())
        return left

    def sum_(self) -> Expr:
        return self.left_assoc(("+", "-"), self.term)

    def term(self) -> Expr:
        return self.left_assoc(("*", "/"), self.unary)

    def left_assoc(self, ops: tuple[str, ...], operand: Callable[[], Expr]) -> Expr:
        """``operand (op operand)*`` for the operators ``ops``, left-associative (the token bound
        limits a chain's length)."""
        left = operand()
        while (t := self.peek()) is not None and t[0] == "op" and t[1] in ops:
            self.i += 1
            left = Arith(t[1], left, operand())
        return left

    def unary(self) -> Expr:
        if self.accept("op", "-"):
            self.enter()
            item = self.unary()
            self.depth -= 1
            if isinstance(item, Lit) and _is_num(item.value):
                return Lit(-item.value)  # type: ignore[operator]
            return Arith("neg", item)
        return self.operand()

    def month_day(self) -> tuple[int, int]:
        t = self.peek()
        m = _MONTHDAY.fullmatch(t[1]) if t is not None and t[0] == "lit" and isinstance(t[1], str) else None
        if m is None:
            raise self.fail('a month-day "MM-DD"')
        self.i += 1
        md = (int(m.group(1)), int(m.group(2)))
        try:
            date(2000, *md)  # a leap year: "02-29" is a valid month-day
        except ValueError:
            raise RuleExpressionError(f"{m.group(0)!r} is not a valid month-day in {self.text!r}") from None
        return md

    def weekdays(self) -> tuple[int, ...]:
        days: list[int] = []
        for o in self.list_():
            if not (isinstance(o, Lit) and isinstance(o.value, str) and o.value.lower()[:3] in _WEEKDAYS):
                raise RuleExpressionError(f"on [...] takes weekday names ({', '.join(_WEEKDAYS)}) in {self.text!r}")
            days.append(_WEEKDAYS.index(o.value.lower()[:3]))
        if not days:
            raise RuleExpressionError(f"on [...] needs at least one weekday in {self.text!r}")
        return tuple(sorted(set(days)))

    def operand(self) -> Expr:
        t = self.peek()
        if t is None:
            raise self.fail("a value")
        if t[0] == "lit":
            self.i += 1
            return Lit(t[1])
        if t[0] == "name":
            self.i += 1
            return Name(t[1])
        if self.accept("op", "("):
            self.enter()
            e = self.or_()
            self.depth -= 1
            if not self.accept("op", ")"):
                raise self.fail("')'")
            return e
        raise self.fail("a value")

    def list_(self) -> tuple[Expr, ...]:
        if not self.accept("op", "["):
            raise self.fail("'[' after in")
        items: list[Expr] = []
        if self.accept("op", "]"):
            return ()
        while True:
            o = self.unary()
            if not isinstance(o, (Lit, Name)):
                raise RuleExpressionError(f"list items must be values or fact names in {self.text!r}")
            items.append(o)
            if len(items) > MAX_LIST:
                raise RuleExpressionError(f"a list has more than {MAX_LIST} items in {self.text!r}")
            if self.accept("op", "]"):
                return tuple(items)
            if not self.accept("op", ","):
                raise self.fail("',' or ']'")


def parse(text: str) -> Expr:
    """Parse ``text``. Returns the expression tree; raises RuleExpressionError (with the position
    and what was expected) for anything outside the grammar."""
    if not isinstance(text, str):
        return _Parser(text).parse()  # (raises: an expression must be a string)
    return _parse_cached(text)


@lru_cache(maxsize=4096)  # the trees are immutable; a rule's condition is parsed once, not per request
def _parse_cached(text: str) -> Expr:
    return _Parser(text).parse()


def names(e: Expr) -> set[str]:
    """The fact names ``e`` reads."""
    if isinstance(e, Name):
        return {e.name}
    if isinstance(e, Cmp):
        return names(e.left) | names(e.right)
    if isinstance(e, In):
        return names(e.item).union(*(names(o) for o in e.options))
    if isinstance(e, BoolOp):
        return set().union(*(names(i) for i in e.items))
    if isinstance(e, Not):
        return names(e.item)
    if isinstance(e, Arith):
        return names(e.left) | (names(e.right) if e.right is not None else set())
    if isinstance(e, (During, OnWeekday)):
        return names(e.item)
    return set()


# ------------------------------------------------------------------------------- evaluate
_MISSING = object()


def show(e: Expr) -> str:
    """``e`` written back in the language (canonical spacing)."""
    if isinstance(e, Lit):
        v = e.value
        if isinstance(v, bool):
            return "true" if v else "false"
        if v is None:
            return "null"
        if isinstance(v, str):
            return f'"{v}"'
        return v.isoformat() if isinstance(v, date) else repr(v)
    if isinstance(e, Name):
        return e.name
    if isinstance(e, Cmp):
        return f"{show(e.left)} {e.op} {show(e.right)}"
    if isinstance(e, In):
        return f"{show(e.item)} {'not in' if e.negated else 'in'} [{', '.join(show(o) for o in e.options)}]"
    if isinstance(e, BoolOp):
        return f" {e.op} ".join(f"({show(i)})" if isinstance(i, BoolOp) else show(i) for i in e.items)
    if isinstance(e, Arith):
        if e.op == "neg":
            return f"-{_show_operand(e.left)}"
        assert e.right is not None
        return f"{_show_operand(e.left)} {e.op} {_show_operand(e.right)}"
    if isinstance(e, During):
        return f'{show(e.item)} during "{e.start[0]:02d}-{e.start[1]:02d}" to "{e.end[0]:02d}-{e.end[1]:02d}"'
    if isinstance(e, OnWeekday):
        return f"{show(e.item)} on [{', '.join(repr(_WEEKDAYS[d]).replace(chr(39), chr(34)) for d in e.days)}]"
    return f"not {show(e.item)}"


def _show_operand(e: Expr) -> str:
    return f"({show(e)})" if isinstance(e, Arith) and e.op != "neg" else show(e)


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return v.isoformat() if isinstance(v, (date, datetime)) else str(v)


class _NotANumber(Exception):
    """Arithmetic over a value that is not a number, or a division by zero (a verdict of unknown)."""


def _value(e: Expr, facts: Mapping[str, Any]) -> Any:
    if isinstance(e, Lit):
        return e.value
    if isinstance(e, Name):
        v = facts.get(e.name, _MISSING)
        return _MISSING if v is None else v
    if isinstance(e, Arith):
        return _arith(e, facts)
    raise RuleExpressionError(f"{show(e)} is not a value")


def _arith(e: Arith, facts: Mapping[str, Any]) -> float | int:
    a = _value(e.left, facts)
    b = _value(e.right, facts) if e.right is not None else 0
    if not (_is_num(a) and _is_num(b)):
        raise _NotANumber(f"{show(e)} needs numbers")
    if e.op == "neg":
        return -a
    if e.op == "/":
        if b == 0:
            raise _NotANumber(f"{show(e)} divides by zero")
        q = a / b
        return int(q) if q.is_integer() else q
    return {"+": a + b, "-": a - b, "*": a * b}[e.op]


def _as_date(v: Any) -> date | None:
    """``v`` as a date: a date, the date of a datetime, or an ISO date / datetime string; else None."""
    if isinstance(v, datetime):
        return v.date()
    if isinstance(v, date):
        return v
    if isinstance(v, str):
        try:
            return datetime.fromisoformat(v[:19]).date() if len(v) > 10 else date.fromisoformat(v)
        except ValueError:
            return None
    return None


def _in_window(d: date, start: tuple[int, int], end: tuple[int, int]) -> bool:
    md = (d.month, d.day)
    return start <= md <= end if start <= end else (md >= start or md <= end)


def _coerce(a: Any, b: Any) -> tuple[Any, Any]:
    """Make a date comparable with an ISO date/datetime string; numbers with numbers."""
    if isinstance(b, date) and not isinstance(a, date):
        a, b = _coerce(b, a)[::-1]
        return a, b
    if isinstance(a, date):
        if isinstance(a, datetime):
            a = a.date()
        if isinstance(b, datetime):
            b = b.date()
        elif isinstance(b, str):
            b = _as_date(b) or b
    return a, b


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _compare(op: str, a: Any, b: Any) -> bool | None:
    a, b = _coerce(a, b)
    if op in ("==", "!="):
        same = (a == b) if (_is_num(a) and _is_num(b)) or type(a) is type(b) else False
        return same if op == "==" else not same
    if not ((_is_num(a) and _is_num(b)) or (type(a) is type(b) and isinstance(a, (str, date)))):
        return None
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _facts_shown(e: Expr, facts: Mapping[str, Any]) -> str:
    shown = [f"{n} = {_fmt(facts[n])}" for n in sorted(names(e)) if facts.get(n) is not None]
    return f" ({', '.join(shown)})" if shown else ""


def evaluate(e: Expr | str, facts: Mapping[str, Any]) -> Verdict:
    """Evaluate ``e`` (a tree or its text) over ``facts``. Returns a :class:`Verdict`; raises
    RuleExpressionError only for text outside the grammar."""
    if isinstance(e, str):
        e = parse(e)
    if isinstance(e, BoolOp):
        return _bool_op(e, facts)
    if isinstance(e, Not):
        v = evaluate(e.item, facts)
        return Verdict(None if v.value is None else not v.value, f"not ({v.reason})")
    if isinstance(e, Lit) and isinstance(e.value, bool):
        return Verdict(e.value, "always" if e.value else "never")
    if isinstance(e, (Lit, Name)):
        v = _value(e, facts)
        if v is _MISSING:
            return Verdict(None, f"{show(e)} is unknown")
        return Verdict(v is True, f"{show(e)} is {_fmt(v)}")
    missing = sorted(n for n in names(e) if facts.get(n) is None)
    if missing:
        return Verdict(None, f"{show(e)} cannot be evaluated: {', '.join(missing)} unknown")
    try:
        r = _judge(e, facts)
    except _NotANumber as exc:
        return Verdict(None, f"{show(e)} cannot be evaluated: {exc}{_facts_shown(e, facts)}")
    if r is None:
        return Verdict(None, f"{show(e)} cannot be evaluated: values are not comparable{_facts_shown(e, facts)}")
    return Verdict(r, f"{show(e)} is {'true' if r else 'false'}{_facts_shown(e, facts)}")


def _judge(e: Expr, facts: Mapping[str, Any]) -> bool | None:
    """True / False / None (not comparable) for a comparison, membership, window or weekday."""
    if isinstance(e, Cmp):
        return _compare(e.op, _value(e.left, facts), _value(e.right, facts))
    if isinstance(e, In):
        item = _value(e.item, facts)
        hit = any(_compare("==", item, _value(o, facts)) is True for o in e.options)
        return (not hit) if e.negated else hit
    if isinstance(e, (During, OnWeekday)):
        d = _as_date(_value(e.item, facts))
        if d is None:
            return None
        return _in_window(d, e.start, e.end) if isinstance(e, During) else d.weekday() in e.days
    if isinstance(e, Arith):  # a bare sum is not a condition
        _value(e, facts)
        return None
    raise RuleExpressionError(f"{show(e)} is not a condition")


def _bool_op(e: BoolOp, facts: Mapping[str, Any]) -> Verdict:
    vs = [evaluate(i, facts) for i in e.items]
    decisive = e.op == "or"  # the value that decides: True for or, False for and
    hit = next((v for v in vs if v.value is decisive), None)
    if hit is not None:
        return Verdict(decisive, hit.reason)
    unknown = next((v for v in vs if v.value is None), None)
    if unknown is not None:
        return Verdict(None, unknown.reason)
    return Verdict(not decisive, f" {e.op} ".join(v.reason for v in vs))
