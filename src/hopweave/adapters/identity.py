"""Who is calling: the service's one check of a caller's identity (``hopweave serve``, MCP over HTTP).

Every ``/v1`` request and every MCP tool call over HTTP goes through :meth:`Verifier.caller`
(the credentials in the request's headers) and then :meth:`Verifier.session_for` (the session
the engine is given). Four modes, chosen by :class:`IdentityConfig`:

- **JWT** (``jwt_secret_file`` for HS256; ``jwt_public_key`` for RS256/ES256; ``jwks_file`` for
  a key set chosen by the token's ``kid``): ``Authorization: Bearer <token>``, verified by PyJWT
  with signature, ``exp``, ``nbf``, ``iss`` (``jwt_issuer``) and ``aud`` (``jwt_audience``)
  checked. The session comes from the claims (:attr:`IdentityConfig.claims`: session field ->
  claim name; ``customer_id`` from ``sub`` and ``tenant_id`` from ``tenant_id`` by default,
  pack-declared attributes from the ``attributes`` claim). A body ``session`` may only repeat
  what the token says: a key the token does not carry, or a different value, is refused
  (:class:`~hopweave.errors.CallerMismatchError`, 403).
- **API keys** (``api_keys_file``): ``Authorization: Bearer <key>`` or ``X-API-Key: <key>``,
  compared by SHA-256 digest against the file (the file holds digests, never keys). A key is
  scoped to one tenant and to ``tool`` (agent-tool calls only) or ``full``; the service behind
  it names the customer in the body session, whose tenant must be the key's.
- **Trusted gateway** (``trust_body_session``): a gateway in front verified the caller and wrote
  the body session; it is taken as it is. Asked for by name only, and logged at start.
- **Loopback** (none of the above): body sessions are taken as they are, and ``hopweave serve``
  refuses to listen on anything but a loopback address (:func:`check_bind`).

JWT and API keys may be combined (a bearer credential that is not a JWT is looked up as a key);
either excludes the trusted-gateway mode. The caller's id (token subject, key id, ``gateway`` or
``loopback``; never a token or a key) is recorded on the decision trace.

Repeated tokens: a verified JWT is remembered (:class:`TokenCache`, keyed by the SHA-256 of the
token, bounded, each entry kept until the token's ``exp`` and at most :data:`TOKEN_CACHE_MAX_AGE_S`),
so a caller sending the same token again is not verified again; only verified tokens are kept,
so a forged one never names a tenant to the rate limits.

Failed credentials (:class:`FailureBudget`): each source (the client address) may present
:data:`FAILURES_PER_SOURCE_S` credentials per second that fail verification (burst twice that);
past it, a credential from that source that is neither a known key nor a token verified before is
refused with 429 before any signature is checked, so forged tokens cannot buy unbounded
signature checks.

Rate limits (:class:`RateLimiter`): a token bucket per tenant and one per caller id, each
``rate`` requests per second with a burst of ``burst``; an exhausted bucket is a
:class:`~hopweave.errors.RateLimitedError` (429 with ``Retry-After``). The buckets live in the
server process, or, for the N processes of ``hopweave serve --workers N``, in one table they all
share (:class:`~hopweave.adapters.shared_buckets.SharedBuckets`), so the service as a whole allows
the stated rate however a caller's connections reach the workers.
"""

from __future__ import annotations

import collections
import hashlib
import ipaddress
import json
import math
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Mapping, Optional

from hopweave.errors import (
    AuthenticationError,
    CallerMismatchError,
    ConfigError,
    InputError,
    MissingDependencyError,
    RateLimitedError,
)
from hopweave.models.common import Session, parse_session

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.adapters.shared_buckets import SharedBuckets

__all__ = [
    "ApiKey",
    "Caller",
    "FailureBudget",
    "IdentityConfig",
    "RateLimiter",
    "TokenCache",
    "Verifier",
    "check_bind",
    "hash_key",
    "new_api_key",
]

#: Where the claims of a verified token go in the session, by default (session field -> claim).
DEFAULT_CLAIMS: dict[str, str] = {
    "tenant_id": "tenant_id",
    "customer_id": "sub",
    "region": "region",
    "channel": "channel",
    "agent_id": "agent_id",
    "locale": "locale",
    "attributes": "attributes",
}
#: The header a trusted gateway may use to name the caller it verified (recorded as ``gateway:<value>``).
GATEWAY_CALLER_HEADER = "x-hopweave-caller"
#: Largest credential accepted in a header (a JWT with a few claims is well under 2 KB).
MAX_CREDENTIAL_CHARS = 8192
#: Seconds of clock skew tolerated on ``exp`` / ``nbf``.
DEFAULT_LEEWAY_S = 30
#: Verified tokens remembered at most (:class:`TokenCache`), and for how long at most (seconds).
TOKEN_CACHE_SIZE = 4096
TOKEN_CACHE_MAX_AGE_S = 300.0
#: Credentials failing verification tolerated per second from one source (burst twice that).
FAILURES_PER_SOURCE_S = 20.0
#: Sources whose failures are remembered at most (the oldest are forgotten first).
FAILURE_SOURCES = 4096
Scope = Literal["tool", "full"]
CallerKind = Literal["jwt", "api_key", "gateway", "loopback", "stdio"]


@dataclass(frozen=True)
class Caller:
    """A verified caller.

    Attributes:
        id: what the trace records: ``jwt:<sub>``, ``key:<key id>``, ``gateway``, ``loopback``
            or ``stdio:<name>``.
        kind: how the caller was established.
        scope: ``full`` (every endpoint) or ``tool`` (agent-tool calls only).
        tenant_id: the tenant the credential is bound to (None: any, in the loopback and
            gateway modes).
        session: the session the credential names (a JWT's claims, a stdio session file);
            None when the body names it (API key, gateway, loopback).
        grants: a JWT's OAuth scopes (its ``scope`` claim, space-separated, and its ``scp``
            claim, a list or a string); empty for every other kind.
    """

    id: str
    kind: CallerKind
    scope: Scope = "full"
    tenant_id: Optional[str] = None
    session: Optional[Mapping[str, Any]] = None
    grants: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ApiKey:
    """One service key of an ``--api-keys`` file: its id, the SHA-256 hex digest of the key,
    the tenant it may act for and its scope."""

    id: str
    sha256: str
    tenant_id: str
    scope: Scope = "tool"


@dataclass(frozen=True)
class IdentityConfig:
    """How ``hopweave serve`` verifies callers (all paths; files are read by :class:`Verifier`).

    Attributes:
        jwt_secret_file: a file holding the HS256 secret.
        jwt_public_key: a PEM public key file (RS256 or ES256).
        jwks_file: a JSON Web Key Set file (keys chosen by the token's ``kid``).
        jwt_issuer: the required ``iss`` (None: not checked).
        jwt_audience: the required ``aud`` (None: a token carrying ``aud`` is refused).
        claims: session field -> claim name, over :data:`DEFAULT_CLAIMS`; a field
            ``attributes.NAME`` takes one session attribute from a claim of its own (over the
            same name in the ``attributes`` claim).
        api_keys_file: a JSON file ``{"keys": [{"id", "sha256", "tenant_id", "scope"}]}``.
        trust_body_session: accept body sessions from a trusted gateway (no verification here).
        leeway_s: clock skew tolerated on ``exp`` / ``nbf``.
        rate_per_tenant: requests per second per tenant (0: unlimited).
        rate_per_caller: requests per second per caller id (0: unlimited).
        tenant_concurrency: requests of one tenant in progress at once for the service (0: no
            cap; past it: 429; each of N server processes holds 1/N of it, at least 1), so one
            tenant's burst cannot hold every engine slot.
        decision_scope: the OAuth scope a JWT must grant (``scope`` / ``scp`` claim) to record
            an outcome (None: any verified JWT may, for its own customer's traces). Service
            keys of scope ``full`` always may; the gateway and loopback modes are not checked.
        refusal_hold_ms: how late, at most, a verified caller's rate-limit 429 may be sent: the
            front layer holds it until the caller's bucket next has a token (0: at once), so a
            client retrying at once is paced by its answers instead of costing the server a
            refusal per retry.
    """

    jwt_secret_file: Optional[str] = None
    jwt_public_key: Optional[str] = None
    jwks_file: Optional[str] = None
    jwt_issuer: Optional[str] = None
    jwt_audience: Optional[str] = None
    claims: Mapping[str, str] = field(default_factory=dict)
    api_keys_file: Optional[str] = None
    trust_body_session: bool = False
    leeway_s: int = DEFAULT_LEEWAY_S
    rate_per_tenant: float = 0.0
    rate_per_caller: float = 0.0
    tenant_concurrency: int = 0
    decision_scope: Optional[str] = None
    refusal_hold_ms: int = 1000

    @property
    def jwt(self) -> bool:
        """Whether bearer tokens are verified as JWTs."""
        return any((self.jwt_secret_file, self.jwt_public_key, self.jwks_file))

    @property
    def verifies(self) -> bool:
        """Whether callers are verified here (JWT or API keys)."""
        return self.jwt or self.api_keys_file is not None

    @property
    def mode(self) -> str:
        """``verified``, ``gateway`` or ``loopback``."""
        return "verified" if self.verifies else "gateway" if self.trust_body_session else "loopback"

    def to_json(self) -> str:
        """The settings as JSON (paths and names only: never a secret), for server workers."""
        return json.dumps({k: (dict(v) if isinstance(v, Mapping) else v) for k, v in self.__dict__.items()},
                          sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "IdentityConfig":
        """The inverse of :meth:`to_json`. Raises ConfigError for malformed settings."""
        try:
            data = json.loads(text)
            return cls(**data)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"malformed identity settings: {exc}") from None


def hash_key(key: str) -> str:
    """The SHA-256 hex digest an ``--api-keys`` file stores for ``key``."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_api_key() -> str:
    """A new random service key (``hwk_`` + 43 URL-safe characters, 256 bits)."""
    return "hwk_" + secrets.token_urlsafe(32)


def check_bind(host: str, config: IdentityConfig) -> None:
    """Refuse to listen beyond loopback without verification.

    Raises:
        ConfigError: ``host`` is not a loopback address (or ``localhost``) and ``config``
            neither verifies callers nor trusts a gateway; the message names the flags.
    """
    if config.mode != "loopback" or _is_loopback(host):
        return
    raise ConfigError(
        f"refusing to listen on {host}: without caller verification anyone who reaches the port could name any "
        "tenant and customer. Verify callers with --jwt-secret-file, --jwt-public-key or --jwks-file (bearer JWTs) "
        "and/or --api-keys FILE (service keys), or, behind a gateway that authenticates callers, pass "
        "--trust-body-session; or listen on 127.0.0.1")


def _is_loopback(host: str) -> bool:
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _read(path: str, what: str, limit: int = 1 << 20) -> str:
    p = Path(path)
    try:
        if p.stat().st_size > limit:
            raise ConfigError(f"{what} {path} is over {limit} bytes")
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{what} {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc}") from None


def load_keys(path: str) -> dict[str, ApiKey]:
    """digest -> key, from an ``--api-keys`` file. Raises ConfigError naming the entry."""
    try:
        data = json.loads(_read(path, "API keys file"))
    except ValueError as exc:
        raise ConfigError(f"API keys file {path} is not JSON: {exc}") from None
    entries = data.get("keys") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ConfigError(f'API keys file {path} must be {{"keys": [{{"id", "sha256", "tenant_id", "scope"}}, ...]}}')
    keys: dict[str, ApiKey] = {}
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or set(e) - {"id", "sha256", "tenant_id", "scope"}:
            raise ConfigError(f"API keys file {path}, entry {i}: keys are id, sha256, tenant_id, scope")
        digest = str(e.get("sha256", "")).lower()
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise ConfigError(f"API keys file {path}, entry {i}: sha256 must be a 64-digit hex digest "
                              "(hopweave keys add writes it)")
        scope = e.get("scope", "tool")
        if scope not in ("tool", "full") or not e.get("id") or not e.get("tenant_id"):
            raise ConfigError(f"API keys file {path}, entry {i}: needs id, tenant_id and scope tool|full")
        keys[digest] = ApiKey(str(e["id"]), digest, str(e["tenant_id"]), scope)
    return keys


class TokenCache:
    """Callers of verified bearer tokens, by the SHA-256 of the token (thread-safe).

    Args:
        size: entries kept at most (the least recently used go first).
        max_age_s: an entry is kept at most this long after it was verified.
        clock: wall-clock seconds since the epoch (the clock of ``exp``; injected in tests).
    """

    def __init__(self, size: int = TOKEN_CACHE_SIZE, max_age_s: float = TOKEN_CACHE_MAX_AGE_S,
                 clock: Any = time.time) -> None:
        self.size, self.max_age_s, self._clock = size, max_age_s, clock
        self._entries: collections.OrderedDict[bytes, tuple[Caller, float]] = collections.OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0

    @staticmethod
    def key(token: str) -> bytes:
        """The cache key of ``token`` (its SHA-256 digest: the token itself is not kept)."""
        return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()

    def get(self, token: str) -> Optional[Caller]:
        """The caller ``token`` was verified as, or None (never verified, expired, or forgotten)."""
        k = self.key(token)
        with self._lock:
            entry = self._entries.get(k)
            if entry is None:
                return None
            if self._clock() >= entry[1]:
                del self._entries[k]
                return None
            self._entries.move_to_end(k)
            self.hits += 1
            return entry[0]

    def put(self, token: str, caller: Caller, exp: float) -> None:
        """Remember that ``token`` verified as ``caller`` until ``exp`` (epoch seconds; at most
        ``max_age_s`` from now)."""
        now = self._clock()
        until = min(float(exp), now + self.max_age_s)
        if until <= now or self.size <= 0:
            return
        with self._lock:
            self._entries[self.key(token)] = (caller, until)
            self._entries.move_to_end(self.key(token))
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


class FailureBudget:
    """Token buckets of failed credentials, one per source (thread-safe, bounded).

    Args:
        rate: failures per second a source may present (0: unlimited); the burst is twice it.
        sources: sources remembered at most (the least recently failing are forgotten).
        clock: a monotonic clock in seconds (injected in tests).
    """

    def __init__(self, rate: float = FAILURES_PER_SOURCE_S, sources: int = FAILURE_SOURCES,
                 clock: Any = time.monotonic) -> None:
        self.rate, self.sources, self._clock = rate, sources, clock
        self._buckets: collections.OrderedDict[str, tuple[float, float]] = collections.OrderedDict()
        self._lock = threading.Lock()
        self.refused = 0

    def _tokens(self, source: str, now: float) -> float:
        burst = max(2.0 * self.rate, 1.0)
        tokens, at = self._buckets.get(source, (burst, now))
        return min(burst, tokens + (now - at) * self.rate)

    def check(self, source: Optional[str]) -> None:
        """Raises RateLimitedError when ``source`` has spent its failures (None: not limited)."""
        if source is None or self.rate <= 0:
            return
        with self._lock:
            if source not in self._buckets:
                return
            tokens = self._tokens(source, self._clock())
        if tokens < 1.0:
            self.refused += 1
            raise RateLimitedError(f"too many failed credentials from {source}: retry in "
                                   f"{(1.0 - tokens) / self.rate:.2f} s with a valid one",
                                   retry_after_s=(1.0 - tokens) / self.rate)

    def spend(self, source: Optional[str]) -> None:
        """Count one failed credential from ``source``."""
        if source is None or self.rate <= 0:
            return
        with self._lock:
            now = self._clock()
            self._buckets[source] = (self._tokens(source, now) - 1.0, now)
            self._buckets.move_to_end(source)
            while len(self._buckets) > self.sources:
                self._buckets.popitem(last=False)


class Verifier:
    """The one check of who is calling (see the module docstring).

    Args:
        config: the verification settings; the key files are read here, once.

    Raises:
        ConfigError: unreadable or malformed key files, or a trusted gateway combined with
            verification.
        MissingDependencyError: JWT verification without PyJWT (the ``serve`` extra).
    """

    def __init__(self, config: IdentityConfig) -> None:
        if config.trust_body_session and config.verifies:
            raise ConfigError("--trust-body-session is for a gateway that verifies callers itself: do not combine it "
                              "with --jwt-secret-file / --jwt-public-key / --jwks-file / --api-keys")
        unknown = {f for f in config.claims if f not in DEFAULT_CLAIMS and not _attribute_field(f)}
        if unknown:
            raise ConfigError(f"claim mapping names {sorted(unknown)}: session fields are {sorted(DEFAULT_CLAIMS)} "
                              "or attributes.NAME (one declared session attribute from a claim of its own)")
        self.config = config
        self.claims = {**DEFAULT_CLAIMS, **config.claims}
        self._keys = load_keys(config.api_keys_file) if config.api_keys_file else {}
        self._jwt_key: Any = None
        self._jwks: Any = None
        self._algorithms: list[str] = []
        #: Verified tokens (a repeated token is not verified again).
        self.tokens = TokenCache()
        #: Failed credentials per source.
        self.failures = FailureBudget()
        if config.jwt:
            self._init_jwt(config)

    def _init_jwt(self, config: IdentityConfig) -> None:
        try:
            import jwt
        except ModuleNotFoundError as exc:  # pragma: no cover - depends on the extra
            raise MissingDependencyError(exc.name or "jwt", "serve", "verifying bearer tokens") from exc
        if sum(bool(x) for x in (config.jwt_secret_file, config.jwt_public_key, config.jwks_file)) > 1:
            raise ConfigError("name one of --jwt-secret-file, --jwt-public-key, --jwks-file")
        if config.jwt_secret_file:
            secret = _read(config.jwt_secret_file, "JWT secret file").strip()
            if len(secret.encode()) < 32:
                raise ConfigError(f"the JWT secret in {config.jwt_secret_file} is under 32 bytes: use a longer one")
            self._jwt_key, self._algorithms = secret, ["HS256"]
        elif config.jwt_public_key:
            pem = _read(config.jwt_public_key, "JWT public key file")
            try:
                from cryptography.hazmat.primitives.asymmetric import ec, rsa
                from cryptography.hazmat.primitives.serialization import load_pem_public_key

                key = load_pem_public_key(pem.encode())
            except ValueError as exc:
                raise ConfigError(f"{config.jwt_public_key} is not a PEM public key: {exc}") from None
            if isinstance(key, rsa.RSAPublicKey):
                self._algorithms = ["RS256"]
            elif isinstance(key, ec.EllipticCurvePublicKey):
                self._algorithms = ["ES256"]
            else:
                raise ConfigError(f"{config.jwt_public_key}: only RSA (RS256) and EC P-256 (ES256) keys are supported")
            self._jwt_key = key
        else:
            assert config.jwks_file is not None
            try:
                self._jwks = jwt.PyJWKSet.from_json(_read(config.jwks_file, "JWKS file"))
            except (jwt.PyJWTError, ValueError) as exc:
                raise ConfigError(f"{config.jwks_file} is not a usable JSON Web Key Set: {exc}") from None
            self._algorithms = ["RS256", "ES256"]

    # ---- credentials -> caller ---------------------------------------------------------------------
    def caller(self, headers: Mapping[str, str], source: Optional[str] = None) -> Caller:
        """The caller named by a request's headers.

        Args:
            headers: the request headers (case-insensitive mapping, e.g. Starlette's).
            source: where the request came from (the client address), for the budget of
                failed credentials (None: not limited).

        Returns:
            The verified :class:`Caller` (a token verified before: from :attr:`tokens`).

        Raises:
            AuthenticationError: verification is on and the credential is missing, malformed,
                badly signed, expired, not yet valid, for another issuer or audience, or an
                unknown key (401).
            RateLimitedError: ``source`` presented too many failing credentials lately and this
                one is neither a known key nor a token verified before (429).
        """
        headers = {k.lower(): v for k, v in headers.items()}
        mode = self.config.mode
        if mode == "loopback":
            return Caller(id="loopback", kind="loopback")
        if mode == "gateway":  # the gateway may name who it verified
            named = headers.get(GATEWAY_CALLER_HEADER)
            if named is not None and not (0 < len(named) <= 200 and named.isprintable()):
                raise AuthenticationError(f"{GATEWAY_CALLER_HEADER} must be 1 to 200 printable characters")
            return Caller(id=f"gateway:{named}" if named else "gateway", kind="gateway")
        try:
            credential = _credential(headers)
            if credential is None:
                raise AuthenticationError("no credential: send Authorization: Bearer <token or API key>")
            if len(credential) > MAX_CREDENTIAL_CHARS:
                raise AuthenticationError(f"the credential is over {MAX_CREDENTIAL_CHARS} characters")
        except AuthenticationError:
            self.failures.spend(source)
            raise
        if self.config.jwt:
            known = self.tokens.get(credential)
            if known is not None:
                return known
        if self._keys:  # a digest lookup: as cheap as the budget's check
            key = self._keys.get(hash_key(credential))
            if key is not None:
                return Caller(id=f"key:{key.id}", kind="api_key", scope=key.scope, tenant_id=key.tenant_id)
        self.failures.check(source)  # before any signature check
        try:
            if not self.config.jwt:
                raise AuthenticationError("unknown API key")
            return self._from_jwt(credential)
        except AuthenticationError:
            self.failures.spend(source)
            raise

    def _from_jwt(self, token: str) -> Caller:
        import jwt

        try:
            key = self._jwt_key
            if self._jwks is not None:
                kid = jwt.get_unverified_header(token).get("kid")
                matching = [k for k in self._jwks.keys if kid is None or k.key_id == kid]
                if not matching:
                    raise AuthenticationError(f"the token's key id {kid!r} is not in the key set")
                key = matching[0].key
            claims = jwt.decode(token, key, algorithms=self._algorithms, audience=self.config.jwt_audience,
                                issuer=self.config.jwt_issuer, leeway=self.config.leeway_s,
                                options={"require": ["exp", "sub"]})
        except jwt.PyJWTError as exc:
            raise AuthenticationError(f"the bearer token was refused: {exc}") from None
        session = self._claims_session(claims)
        caller = Caller(id=f"jwt:{claims['sub']}", kind="jwt", scope="full", tenant_id=session["tenant_id"],
                        session=session, grants=_grants(claims))
        exp = claims.get("exp")
        if isinstance(exp, (int, float)) and not isinstance(exp, bool):
            self.tokens.put(token, caller, exp)
        return caller

    def _claims_session(self, claims: Mapping[str, Any]) -> dict[str, Any]:
        session: dict[str, Any] = {}
        for name, claim in self.claims.items():
            if claim in claims and claims[claim] is not None and not _attribute_field(name):
                session[name] = claims[claim]
        for name, claim in self.claims.items():  # attributes.NAME <- a claim of its own, over the attributes claim
            attr = _attribute_field(name)
            if attr and claims.get(claim) is not None:
                base = session.get("attributes")
                session["attributes"] = {**(base if isinstance(base, Mapping) else {}), attr: claims[claim]}
        if not isinstance(session.get("tenant_id"), str):
            raise AuthenticationError(f"the token carries no tenant (claim {self.claims['tenant_id']!r})")
        try:
            return parse_session(session, "the token's claims").model_dump(mode="json", exclude_defaults=True)
        except Exception as exc:  # a claim the Session model refuses
            raise AuthenticationError(f"the token's claims are not a session: {exc}") from None

    def check_may_decide(self, caller: Caller) -> None:
        """That ``caller`` may record an outcome: with :attr:`IdentityConfig.decision_scope` set, a
        JWT must grant that scope. Raises CallerMismatchError (403) naming the scope otherwise."""
        need = self.config.decision_scope
        if need and caller.kind == "jwt" and need not in caller.grants:
            raise CallerMismatchError(
                f"the caller {caller.id} may not record outcomes: its token does not grant the scope {need!r} "
                "(scope or scp claim; serve --jwt-decision-scope)")

    # ---- caller + body -> session -------------------------------------------------------------------
    def session_for(self, caller: Caller, body: Optional[Mapping[str, Any]], *, need: Scope = "full") -> Session:
        """The session the engine is given for ``caller``'s request.

        Args:
            caller: from :meth:`caller`.
            body: the request's ``session`` object (None: not given).
            need: ``tool`` for agent-tool calls, ``full`` for whole retrievals and writes.

        Returns:
            The session: the token's (a body may only repeat it), or the body's (API key,
            gateway, loopback modes; an API key's tenant must match).

        Raises:
            CallerMismatchError: the body names another tenant or customer, or a value the token
                does not carry; the key's scope does not cover ``need`` (403).
            InputError / TenantError: no session where one is needed, or a malformed one.
        """
        if need == "full" and caller.scope == "tool":
            raise CallerMismatchError(f"the caller {caller.id} may call the agent tool only (scope tool)")
        if caller.session is not None:
            token = parse_session(caller.session, "the verified session")
            if body:
                _check_repeats(token, body, caller)
            return token
        if body is None:
            raise InputError("the request needs a session object (tenant_id, customer_id, ...)")
        session = parse_session(body, "session")
        if caller.tenant_id is not None and session.tenant_id != caller.tenant_id:
            raise CallerMismatchError(f"the caller {caller.id} acts for tenant {caller.tenant_id!r}, "
                                      f"not {session.tenant_id!r}")
        return session


def _grants(claims: Mapping[str, Any]) -> frozenset[str]:
    """A token's OAuth scopes: its ``scope`` claim (space-separated) and its ``scp`` claim (a list
    of strings or one space-separated string); anything else grants nothing."""
    out: set[str] = set()
    for name in ("scope", "scp"):
        value = claims.get(name)
        if isinstance(value, str):
            out.update(value.split())
        elif isinstance(value, list):
            out.update(v for v in value if isinstance(v, str))
    return frozenset(out)


def _attribute_field(field_name: str) -> Optional[str]:
    """``NAME`` of a claim-mapping field ``attributes.NAME`` (an identifier), else None."""
    prefix, dot, name = field_name.partition(".")
    return name if prefix == "attributes" and dot and name.isidentifier() else None


def _credential(headers: Mapping[str, str]) -> Optional[str]:
    auth = headers.get("authorization")
    if auth:
        scheme, _, value = auth.strip().partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise AuthenticationError("Authorization must be 'Bearer <token or API key>'")
        return value.strip()
    key = headers.get("x-api-key")
    return key.strip() if key else None


def _check_repeats(token: Session, body: Mapping[str, Any], caller: Caller) -> None:
    """A body session may only repeat the token's: every key it names has the token's value."""
    effective = token.model_dump(mode="json")
    for key, value in body.items():
        if key == "as_of":
            continue
        if key == "attributes" and isinstance(value, Mapping):
            attrs = effective.get("attributes") or {}
            for name, v in value.items():
                if attrs.get(name) != v:
                    raise CallerMismatchError(f"the body session's attributes.{name}={v!r} is not what the token of "
                                              f"{caller.id} says ({attrs.get(name)!r}): send the token's session, or none")
            continue
        if key not in effective or effective[key] != value:
            raise CallerMismatchError(f"the body session's {key}={value!r} is not what the token of {caller.id} "
                                      f"says ({effective.get(key)!r}): send the token's session, or none")


class RateLimiter:
    """Token buckets per tenant and per caller id (thread-safe; one per server process).

    Args:
        per_tenant: requests per second per tenant for the service (0: unlimited); the burst is
            the same number, at least 1.
        per_caller: requests per second per caller id for the service (0: unlimited).
        clock: a monotonic clock in seconds (injected in tests; with ``shared``, the clock of
            every process sharing the table, ``time.monotonic`` in service).
        processes: server processes sharing the limits, each with its own limiter and no
            ``shared`` table: each allows ``1/processes`` of each rate (and of its burst, at
            least 1), so all of them together allow at most the stated rate.
        shared: the table of buckets the server processes share (``serve --workers N``): each
            process then allows the stated rates, which the table counts once for all of them
            (``processes`` is then ignored).

    Raises:
        InputError: a negative or non-finite rate, or ``processes`` < 1.
    """

    def __init__(self, per_tenant: float = 0.0, per_caller: float = 0.0, clock: Any = time.monotonic,
                 processes: int = 1, shared: "SharedBuckets | None" = None) -> None:
        for name, v in (("per-tenant", per_tenant), ("per-caller", per_caller)):
            if not math.isfinite(v) or v < 0:
                raise InputError(f"the {name} rate limit must be a finite number >= 0, not {v}")
        if processes < 1:
            raise InputError(f"processes must be >= 1, not {processes}")
        self.processes = 1 if shared is not None else processes
        per_tenant, per_caller = per_tenant / self.processes, per_caller / self.processes
        self.per_tenant, self.per_caller, self._clock = per_tenant, per_caller, clock
        self.shared = shared
        self._buckets: dict[tuple[str, str], tuple[float, float]] = {}
        self._lock = threading.Lock()
        self.refused = 0

    @property
    def active(self) -> bool:
        """Whether any limit is set."""
        return self.per_tenant > 0 or self.per_caller > 0

    def take(self, tenant_id: str, caller_id: str) -> None:
        """Spend one request of ``tenant_id``'s and ``caller_id``'s buckets.

        Raises:
            RateLimitedError: a bucket is empty (``retry_after_s`` says when it has a token).
            StoreUnavailableError: the shared table stayed locked (see
                :meth:`~hopweave.adapters.shared_buckets.SharedBuckets.take`).
        """
        if not self.active:
            return
        if self.shared is not None:
            wait = self.shared.take([(f"tenant\0{tenant_id}", self.per_tenant), (f"caller\0{caller_id}", self.per_caller)],
                                    self._clock())
            if wait > 0:
                with self._lock:
                    self.refused += 1
                raise RateLimitedError(f"rate limit reached for tenant {tenant_id!r} / caller {caller_id}; "
                                       f"retry in {wait:.2f} s", retry_after_s=wait)
            return
        with self._lock:
            now = self._clock()
            wait = max(self._wait(("tenant", tenant_id), self.per_tenant, now),
                       self._wait(("caller", caller_id), self.per_caller, now))
            if wait > 0:
                self.refused += 1
                raise RateLimitedError(f"rate limit reached for tenant {tenant_id!r} / caller {caller_id}; "
                                       f"retry in {wait:.2f} s", retry_after_s=wait)
            for key, rate in ((("tenant", tenant_id), self.per_tenant), (("caller", caller_id), self.per_caller)):
                if rate > 0:
                    tokens, _ = self._buckets[key]
                    self._buckets[key] = (tokens - 1.0, now)

    def _wait(self, key: tuple[str, str], rate: float, now: float) -> float:
        if rate <= 0:
            return 0.0
        burst = max(rate, 1.0)
        tokens, at = self._buckets.get(key, (burst, now))
        tokens = min(burst, tokens + (now - at) * rate)
        self._buckets[key] = (tokens, now)
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / rate

