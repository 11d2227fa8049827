"""The sizes hopweave accepts, in one place: what a caller may send and what a write may store.

A value past a limit is refused at the boundary with :class:`LimitError` (an InputError naming
the field and the limit) before anything is written, so one request cannot fill the disk or
write what the store cannot read back.

=================================  ==================  ============================================
what                               limit               checked by
=================================  ==================  ============================================
a node id                          256 characters      the write rules (``graph/write_rules.py``)
a session's ``customer_id``,       256 characters      ``Session`` (every interface's session)
``region``, ``channel``,
``agent_id``, ``locale``
a session attribute: its name,     64 attributes,      ``Session``
its string value                   1,024 characters
an utterance                       4,000 characters    ``understand.text`` (``MAX_CHARS``)
a stored string property           1,000,000 chars     the write rules
a stored ``list[str]`` property    10,000 items, each  the write rules
                                   1,000,000 chars
a stored ``json`` property         1,000,000 chars     the write rules (canonical JSON text)
a number anywhere                  finite (no NaN,     ``Session``, the write rules, the engine's
                                   no infinity)        boundary and config, the HTTP bodies
an instant                         0001-01-01 ..       ``models.instants``
                                   9999-12-31 UTC
=================================  ==================  ============================================
"""

from __future__ import annotations

import math
from typing import Any

from hopweave.errors import InputError

#: Longest node id (characters).
MAX_ID_CHARS = 256
#: Longest built-in session field (customer_id, region, channel, agent_id, locale), characters.
MAX_SESSION_FIELD_CHARS = 256
#: Most session attributes a session may carry.
MAX_SESSION_ATTRIBUTES = 64
#: Longest session attribute name or string value (characters).
MAX_SESSION_ATTRIBUTE_CHARS = 1024
#: Longest stored string property (also each item of a list[str] and a json property's text).
MAX_PROPERTY_CHARS = 1_000_000
#: Most items of a stored list[str] property.
MAX_LIST_ITEMS = 10_000

__all__ = ["MAX_ID_CHARS", "MAX_LIST_ITEMS", "MAX_PROPERTY_CHARS", "MAX_SESSION_ATTRIBUTES",
           "MAX_SESSION_ATTRIBUTE_CHARS", "MAX_SESSION_FIELD_CHARS", "LimitError", "check_finite",
           "check_text"]


class LimitError(InputError):
    """A value is larger than hopweave accepts (or a number is NaN / infinite); ``field`` names
    it and the message states the limit."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def check_text(field: str, value: str, limit: int) -> str:
    """``value`` when it has at most ``limit`` characters. Raises LimitError naming ``field``."""
    if len(value) > limit:
        raise LimitError(field, f"{field} is {len(value):,} characters; at most {limit:,} are accepted")
    return value


def check_finite(field: str, value: Any) -> Any:
    """``value`` unless it is a float that is NaN or infinite. Raises LimitError naming ``field``."""
    if isinstance(value, float) and not math.isfinite(value):
        raise LimitError(field, f"{field} is {value!r}; numbers must be finite (no NaN or infinity)")
    return value
