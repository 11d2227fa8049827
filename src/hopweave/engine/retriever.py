"""The one interface of everything that answers retrievals in process:
:class:`~hopweave.engine.engine.Engine` and :class:`~hopweave.adapters.pool.EnginePool` (N engine
processes behind the same calls). Adapters that serve either (the HTTP app) take a
:class:`Retriever`."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Mapping, Protocol, runtime_checkable

from hopweave.engine.config import EngineConfig
from hopweave.engine.result import RetrievalResult
from hopweave.models.common import Session


@runtime_checkable
class Retriever(Protocol):
    """Retrievals for authenticated sessions, synchronous and async, under one config."""

    config: EngineConfig

    def retrieve(
        self,
        utterance: str,
        *,
        session: Session | Mapping[str, Any],
        as_of: datetime | date | str | None = None,
        budget_ms: int | None = None,
        profile: str | None = None,
        token_budget: int | None = None,
        record: bool | None = None,
        pattern_overrides: Mapping[str, Mapping[str, Any]] | None = None,
        caller: str | None = None,
    ) -> RetrievalResult:
        """The working set for one utterance. Raises InputError, TenantError, ConfigError (and
        OverloadedError / WorkerError for a pool)."""
        ...

    async def aretrieve(self, utterance: str, *, arrived: float | None = None, shed: bool = False,
                        **kwargs: Any) -> RetrievalResult:
        """Async :meth:`retrieve`; the budget runs from ``arrived``. Raises as :meth:`retrieve`
        and OverloadedError with ``shed``."""
        ...

    def finish_reserve_ms(self, budget_ms: float) -> float:
        """The end of a budget kept for finishing a request that did no work (ms)."""
        ...

    def close(self) -> None:
        """Release the stores, pools and processes."""
        ...


__all__ = ["Retriever"]
