"""One error root for everything hopweave raises.

Backend errors (networkx, Neo4j, FalkorDB, Qdrant, sentence-transformers) are translated at the
store boundary into these types, so callers see the same error for the same failure everywhere.
Every message says what was wrong and what to fix.
"""

from __future__ import annotations


class HopweaveError(Exception):
    """Root of every error hopweave raises on purpose."""


class ConfigError(HopweaveError):
    """A setting is missing or invalid (names the setting)."""


class MissingDependencyError(ConfigError):
    """An optional dependency is not installed; the message carries the install hint."""

    def __init__(self, package: str, extra: str, purpose: str) -> None:
        super().__init__(
            f"{purpose} needs the optional package {package!r}: "
            f"install it with `pip install 'hopweave[{extra}]'`"
        )
        self.package = package
        self.extra = extra


class StoreURIError(ConfigError):
    """A store URI is malformed or has a scheme hopweave does not open (names the URI and the
    schemes it accepts)."""


class StoreAuthError(ConfigError):
    """A store server refused the credentials (names the server and the settings to fix)."""


class InputError(HopweaveError):
    """A caller-supplied value (utterance, session, file, argument) is malformed."""


class SchemaError(HopweaveError):
    """A label, relationship type or property is not in the declared graph schema."""


class UnsafeIdentifierError(SchemaError):
    """An identifier could inject Cypher (or is otherwise not a safe identifier)."""


class FilterError(HopweaveError):
    """A filter tree is malformed or names a field outside the shared vocabulary."""


class ScopeFilterError(FilterError):
    """A caller's filter would widen the session's scope: it names a field the scope alone sets
    (tenant, customer, status, validity, a session attribute) or gives an authoritative attribute
    (tier, plan, product...) a value the record does not have. The message names the clause and
    the value on record."""


class PatternValidationError(HopweaveError):
    """A TraversalPattern / GoalType write was rejected by a gate.

    Attributes name the pattern, the offending field and what to fix.
    """

    def __init__(self, pattern: str, field: str, problem: str, fix: str = "") -> None:
        msg = f"pattern {pattern!r}: field {field!r}: {problem}"
        if fix:
            msg += f" (fix: {fix})"
        super().__init__(msg)
        self.pattern = pattern
        self.field = field
        self.problem = problem
        self.fix = fix


class PatternConflictError(PatternValidationError):
    """Two patterns answer one sub-question, or a definition changed without a version bump."""


class PIIError(PatternValidationError):
    """A pattern would return a PII property it did not declare."""


class NotFoundError(HopweaveError):
    """A node, pattern, goal, trace, profile or document does not exist (in this tenant)."""


class UnknownProfileError(NotFoundError):
    """A ranking profile name is not registered."""


class StoreError(HopweaveError):
    """A store failed (I/O, corruption, backend error)."""


class StoreUnavailableError(StoreError):
    """A store (server or embedded) cannot be reached right now."""


class StoreCorruptError(StoreError):
    """A store directory is unreadable or inconsistent."""


class QueryTimeoutError(StoreError):
    """A backend query exceeded its budget."""


class TenantError(HopweaveError):
    """A request has no tenant, or tried to cross a tenant boundary."""


class IdentityError(TenantError):
    """A write names a record of another subject than the session's (another customer's decision
    trace): the session decides whose records a caller may write, never the request body."""


class EmbeddingSpaceError(HopweaveError):
    """A vector does not belong to the collection's embedding space."""


class PatternIdentifierError(PatternValidationError, UnsafeIdentifierError):
    """A pattern names a label, relationship type or property that is not a safe identifier."""


class PackError(InputError):
    """A domain pack (``hopweave.yaml`` and its files) is missing, malformed or inconsistent.
    The message names the file (and line or record) and what to fix."""


class StoreBusyError(StoreUnavailableError):
    """A store lock was not acquired within its timeout (names the lock file and the holder)."""

    def __init__(self, message: str, lock_path: str = "", holder: str | None = None) -> None:
        super().__init__(message)
        self.lock_path = lock_path
        self.holder = holder


class StoreIOError(StoreError):
    """An operating-system error (disk full, I/O error, permission) reading or writing a store.

    ``errno`` is the OS error number (e.g. ``errno.ENOSPC``), ``path`` the file concerned."""

    def __init__(self, message: str, path: str = "", errno: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.errno = errno


class StoreNotLoadedError(StoreError):
    """A store holds no hopweave data (never loaded from a pack) where some was expected, or data
    of a store format this version does not read (names the store and the load command)."""


class StoreIncompleteError(StoreCorruptError):
    """A store part (e.g. a vector index) was left unfinished by an interrupted load or ingest."""


class MetagraphWriteError(PatternValidationError):
    """A GoalType / TraversalPattern / FilterMapping node was written outside the gated path
    (``hopweave.graph.metagraph_io.write_metagraph`` / ``gated_items``), or its stored
    definition fails the gates."""


class RuleExpressionError(InputError):
    """A rule condition or case-state expression outside the safe expression language
    (``hopweave.models.expr``): the message says where and what was expected."""


class OutcomeError(InputError):
    """A decision outcome cannot be recorded as given (its goal declares no outcomes, a cited id
    is unknown, a field is malformed): the message names the field and what to send instead."""


class UnknownOutcomeError(OutcomeError):
    """The outcome is not in the goal's outcome vocabulary (the message lists the vocabulary)."""


class OutcomeTimeError(OutcomeError):
    """The outcome's instant is before the retrieval it decides (a decision cannot precede the
    case it was made on)."""


class FactError(InputError):
    """A run-time fact write is malformed or names what only the engine writes (a decision trace,
    the metagraph, a reserved property): the message names the record and what to send."""


class DeadlineError(HopweaveError):
    """A stage's work started after its request's deadline had passed, so it was skipped (the
    request is returned degraded within its budget). Raise the request's ``budget_ms``, or add
    capacity, if this happens under normal load."""


class UnsafeRegexError(ConfigError):
    """A regular expression from data (a pack file, a store's settings) is invalid, too long, or
    has a shape whose matching time can explode (nested repetition, a backreference): the message
    names the file and key or setting, and what to rewrite."""


class RegexTimeoutError(ConfigError):
    """A regular expression from data did not finish within its time bound on some input: the
    message names the pattern and where it came from; simplify the pattern."""


class OverloadedError(HopweaveError):
    """The service's bounded request queue is full: the request was not started. Retry after
    the delay the service gives (HTTP 503 + Retry-After)."""


class WorkerError(HopweaveError):
    """A worker process of an engine pool (:mod:`hopweave.adapters.pool`) died, failed to start or
    raised something that is not a HopweaveError: the request was not answered (the message names
    the worker and its exit status). The pool restarts a worker that died; retry the request."""


class AuthenticationError(HopweaveError):
    """The service could not verify who is calling (HTTP 401): no credential, a malformed one, a
    bad signature, an expired or not-yet-valid token, another issuer or audience, an unknown key.
    Send ``Authorization: Bearer <token or API key>`` as ``docs/serve.md`` ("Identity") says."""


class CallerMismatchError(TenantError):
    """A verified caller asked for more than its credential allows (HTTP 403): a body session
    naming another tenant or customer than the token, or an agent-tool-only key calling a full
    retrieval. The message names the field."""


class RateLimitedError(HopweaveError):
    """A tenant or caller exceeded its request rate (HTTP 429; ``retry_after_s`` says when the
    next request is admitted)."""

    def __init__(self, message: str, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
