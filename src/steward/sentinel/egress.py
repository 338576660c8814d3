"""The egress broker: authenticated HTTP calls in which a secret exists only on the wire.

Tools hand the broker a request whose URL, header values or body contain placeholders
``{{secret:<name>}}``. The broker

1. refuses — before decrypting anything, and sending nothing — unless the URL's host is one of
   the hosts each referenced secret is bound to (exact host match, no wildcards), and the
   scheme is ``https`` (plain ``http`` only to ``localhost``, ``127.0.0.1`` or ``::1``);
2. decrypts the secrets and substitutes them into the request at the network boundary
   (URL-encoded in the URL, as is in headers and bodies); redirects are not followed, so a
   secret never travels to a host it was not checked against;
3. scans the response's status line, headers and text and replaces every occurrence of a
   substituted value — also base64, URL-encoded and JSON-escaped — by its placeholder, so a
   secret never reaches a step, a memory, the model's context or a log;
4. records a ``credential_use`` audit entry per secret: which handle, which host, the method
   and status — never the value.

While a request is in flight, log records of the HTTP libraries (``httpx``, ``httpcore`` and
their ``2`` successors) are redacted the same way (:mod:`steward.sentinel.wire`), since they
print URLs and, at debug level, response headers.

Every request — with secrets or without — also passes an address check: the host is
resolved (an IP literal is taken as is) and when any of its addresses is not a public one
(loopback, link-local, private RFC 1918 and ULA, shared CGNAT, unspecified, reserved,
multicast, also embedded in IPv6), the request is refused unless an active connection of the
person that offers the action's scope (``api.call``) names that host among its hosts (hosts,
not ports: naming a private host opens every port on it). The request then goes to the
address that was checked (the URL's host is replaced by it; the ``Host`` header and the TLS
server name stay the host's, so certificates are verified against the name), so a DNS answer
that changes between the check and the connection (rebinding) cannot move it elsewhere. OAuth
token endpoints are checked the same way but connected to by name (Authlib makes that request).

The broker does not decide whether an action is allowed: the harness runs a tool only after
the sentinel allowed the action, and the tool then calls the broker. The broker re-checks the
one thing that must hold whatever the sentinel decided — a secret goes only to its hosts. What
host binding cannot prevent: a bound host that stores what it receives (an API that can write
public content) can be made to publish data, the secret included, if the sentinel allows such
a write; that is the sentinel's decision to make.

**OAuth 2.0.** A secret whose value is an :class:`OAuthTokens` JSON object stands for its
access token. The broker refreshes it (Authlib, refresh-token grant) when it has expired — or
is about to — and when the service answers 401, re-encrypts and stores the new token set, and
retries once. :mod:`steward.sentinel.oauth` implements the authorization-code flow with PKCE
(S256) that produces such a token set.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

from steward import sendby
from steward.domain.authority import Connection
from steward.domain.secrets import SecretInfo, substitute
from steward.errors import DatabaseUnavailable, NotSent, StewardRuntimeError, UsageError
from steward.failpoints import failpoint
from steward.sentinel.oauthtokens import OAuthTokens
from steward.sentinel.urls import (
    IPAddress,
    Url,
    UrlRefused,
    authority_of,
    host_key,
    ip_of,
    is_public,
    parse_url,
)
from steward.sentinel.vault import Redactor, Vault
from steward.sentinel.wire import IN_FLIGHT, filled_body, install_log_filter, referenced

if TYPE_CHECKING:
    import httpx

API_CALL = "api.call"
"""The scope of calling a connected API, with or without a credential: what the broker sends."""
AuditFn = Callable[..., Awaitable[object]]
"""Called as ``audit(person_id=, kind=, actor=, data=, now=)``:
``store.audit.append_audit`` fits."""
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
"""Resolves ``(host, port)`` to IP addresses (text); the system resolver by default."""

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
"""Hosts a secret may be sent to over plain ``http``."""


class EgressRefused(UsageError):
    """The request would send a secret where it may not go; nothing was sent."""

    status_code = 403


class EgressFailed(StewardRuntimeError):
    """The request could not be completed (network error, OAuth refresh failed). The message
    is redacted."""


class EgressNotSent(EgressFailed, NotSent):
    """The request failed before any of it left: a lookup (the database, the host's name, an
    OAuth refresh) failed, or no checked address accepted the connection."""


class SecretReader(Protocol):
    """What the broker needs of the store's secrets (``steward.store.vault``)."""

    async def secret_ciphertext(self, person_id: str, name: str) -> tuple[SecretInfo, str]: ...

    async def put_secret(
        self,
        *,
        person_id: str,
        name: str,
        ciphertext: str,
        hosts: Iterable[str],
        now: datetime,
        actor: str = "person",
    ) -> SecretInfo: ...


class ConnectionLister(Protocol):
    """What the broker needs of the store's authority: the person's connections, for the hosts
    they name."""

    async def list_connections(self, person_id: str) -> list[Connection]: ...


class SecretStore(Protocol):
    """The part of the store the broker needs."""

    @property
    def secrets(self) -> SecretReader: ...

    @property
    def authority(self) -> ConnectionLister: ...


@dataclass(kw_only=True, frozen=True)
class EgressResponse:
    """A response as a tool may see it: every secret value replaced by its placeholder."""

    status: int
    """HTTP status code."""
    reason: str
    """Reason phrase."""
    headers: dict[str, str]
    """Response headers (repeated ones joined with ``, ``)."""
    text: str
    """Decoded body."""
    url: str
    """The URL as requested, with placeholders."""
    secrets: tuple[str, ...]
    """Names of the secrets the request used."""
    truncated: bool = False
    """The body was longer than the ``max_bytes`` asked for: ``text`` is its beginning."""
    public: bool = False
    """Every address the host had was a public one (not this machine, not a private
    network)."""

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.text)


@dataclass(kw_only=True)
class _Secret:
    info: SecretInfo
    value: str
    oauth: OAuthTokens | None
    old: list[str]
    """Values it had earlier in this request (before a refresh): still redacted."""

    def values(self) -> list[str]:
        """Everything to redact as this secret's placeholder."""
        return [self.value, *self.old, *(self.oauth.secret_values() if self.oauth else ())]


@dataclass(kw_only=True, frozen=True)
class Login:
    """A credential opened for one login at one host (IMAP, SMTP, CalDAV): the connector
    that asked uses it at once and keeps it nowhere."""

    secret: str
    """The vault secret's name (what the audit log and errors name)."""
    value: str
    """The password, or the OAuth access token (refreshed if it was about to expire)."""
    oauth: bool
    """The value is an OAuth access token (log in with XOAUTH2 / a bearer token)."""

    def __repr__(self) -> str:  # never print the value by accident
        return f"Login(secret={self.secret!r}, oauth={self.oauth})"


def _utcnow() -> datetime:
    return datetime.now(UTC)


async def system_resolver(host: str, port: int) -> list[str]:
    """The host's addresses, as the operating system resolves them."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


class EgressBroker:
    """Sends HTTP requests on behalf of tools, substituting secrets only for their hosts."""

    def __init__(
        self,
        store: SecretStore,
        vault: Vault,
        *,
        audit: AuditFn | None = None,
        client_factory: Callable[..., httpx.AsyncClient] | None = None,
        now: Callable[[], datetime] = _utcnow,
        timeout_seconds: float = 30.0,
        deadline_seconds: float = 120.0,
        oauth_leeway_seconds: float = 60.0,
        resolve: Resolver = system_resolver,
    ) -> None:
        self._store = store
        self._resolve = resolve
        self._vault = vault
        self._audit = audit
        # httpx is imported by a broker, not by this module: every command imports it
        # through the facade, and httpx costs ~50 ms to import
        import httpx

        self._client_factory = client_factory or httpx.AsyncClient
        self._now = now
        self._timeout = timeout_seconds
        self._deadline = deadline_seconds
        self._leeway = oauth_leeway_seconds
        self._refresh_locks: dict[tuple[str, str], asyncio.Lock] = {}
        install_log_filter()

    async def request(
        self,
        *,
        person_id: str,
        method: str,
        url: str,
        actor: str,
        headers: Mapping[str, str] | None = None,
        content: str | bytes | None = None,
        json: Any = None,
        form: Mapping[str, str] | None = None,
        scope: str = API_CALL,
        secrets_allowed: bool = True,
        max_bytes: int | None = None,
        public_only: bool = False,
    ) -> EgressResponse:
        """Send one request for ``person_id``'s task, an action of ``scope``; at most one of
        ``content``, ``json`` and ``form`` is the body. Raises :class:`EgressRefused` (nothing
        sent) when a secret would go to a host it is not bound to, or the host is not a public
        address and no connection offering ``scope`` names it; :class:`EgressNotSent` when it
        failed before anything left (a lookup, the connection, or the current effect's send
        deadline: :mod:`steward.sendby`); :class:`EgressFailed` when the request fails
        after that.

        ``secrets_allowed=False`` refuses any placeholder, wherever it is (a caller whose URL
        or headers may come from others — a redirect, a stored ``ETag`` — sets it).
        ``max_bytes`` bounds the body: it is read as it arrives, decompressed bytes counted,
        and reading stops past the limit (the response says ``truncated``), all within
        ``deadline_seconds``. ``public_only`` refuses a private or local address even when a
        connection names the host (a redirect from a public site may not lead there)."""
        import httpx

        if sum(body is not None for body in (content, json, form)) > 1:
            raise UsageError("give at most one of content, json and form")
        method = method.upper()
        headers = dict(headers or {})
        names = referenced(url, headers, content, json, form)
        if names and not secrets_allowed:
            raise EgressRefused(
                "refused: this request may carry no {{secret:…}} placeholder; nothing was sent"
            )
        target = _target(url)
        host = target.host
        try:
            secrets, addresses = await self._prepare(
                person_id, actor, method, names, target, scope, public_only
            )
        except DatabaseUnavailable as exc:
            raise EgressNotSent(f"{method} to {host} not sent: {exc}") from exc
        except EgressNotSent:
            raise
        except EgressFailed as exc:
            raise EgressNotSent(str(exc)) from None

        redactor = _redactor(secrets)
        token = IN_FLIGHT.set(redactor)
        status: int | None = None
        request = _Request(method, url, headers, content, json, form, max_bytes)
        try:
            answer = await self._send(request, secrets, target, addresses)
            status = answer.response.status_code
            refreshable = [s for s in secrets.values() if s.oauth and s.oauth.refresh_token]
            if status == 401 and refreshable:
                for secret in refreshable:
                    await self._refresh(person_id, secret.info.name, secret, actor)
                redactor = _redactor(secrets)
                IN_FLIGHT.set(redactor)
                answer = await self._send(request, secrets, target, addresses)
                status = answer.response.status_code
            response = answer.response
            return EgressResponse(
                status=response.status_code,
                reason=redactor.redact(response.reason_phrase),
                headers={
                    redactor.redact(k): redactor.redact(v) for k, v in response.headers.items()
                },
                text=redactor.redact(answer.body.decode(response.encoding or "utf-8", "replace")),
                url=redactor.redact(url),
                secrets=tuple(sorted(names)),
                truncated=answer.truncated,
                public=all(is_public(a) for a in addresses),
            )
        except TimeoutError:
            raise EgressFailed(
                f"{method} to {host} failed: the answer took longer than {self._deadline:g} seconds"
            ) from None
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:  # before any byte left
            detail = redactor.redact(f"{type(exc).__name__}: {exc}")
            raise EgressNotSent(f"{method} to {host} not sent: {detail}") from None
        except httpx.HTTPError as exc:
            detail = redactor.redact(f"{type(exc).__name__}: {exc}")
            raise EgressFailed(f"{method} to {host} failed: {detail}") from None
        finally:
            IN_FLIGHT.reset(token)
            for name in sorted(names):
                await self._record(
                    person_id,
                    actor,
                    "credential_use",
                    {"secret": name, "host": host, "method": method, "status": status},
                )

    async def checked_addresses(
        self,
        *,
        person_id: str,
        host: str,
        port: int,
        scheme: str,
        method: str,
        actor: str,
        scopes: tuple[str, ...] = (API_CALL,),
    ) -> list[IPAddress]:
        """The addresses a connection to ``host`` may be opened to, for a caller that relays
        bytes itself (the workspace shell's proxy): the same address check as :meth:`request`
        (public addresses, or a private host an active connection offering one of ``scopes``
        names), audited as one ``egress_open`` entry (host, port, method; nothing of what is
        sent). No secret is involved: a ``{{secret:…}}`` placeholder in relayed bytes stays
        as written. Connect to what it returns, not to the name again (no second lookup).
        :class:`EgressRefused` when the host may not be reached; :class:`EgressNotSent` when it
        cannot be resolved."""
        authority = f"[{host}]" if ":" in host else host
        target = _target(f"{scheme}://{authority}:{port}/")
        method = method.upper()
        try:
            addresses = await self._addresses(person_id, actor, method, target, scopes)
        except DatabaseUnavailable as exc:
            raise EgressNotSent(f"{method} to {target.host} not sent: {exc}") from exc
        except EgressRefused:
            raise
        except EgressFailed as exc:
            raise EgressNotSent(str(exc)) from None
        await self._record(
            person_id,
            actor,
            "egress_open",
            {"host": target.host, "port": target.port, "method": method},
        )
        return addresses

    # --- steps ------------------------------------------------------------------------------

    async def login(
        self, *, person_id: str, name: str, host: str, secure: bool, actor: str
    ) -> Login:
        """Open the secret ``name`` to log in at ``host`` over a protocol that is not HTTP
        (IMAP, SMTP, CalDAV): only a host the secret is bound to, only over TLS unless the
        host is this machine; an OAuth token set is refreshed first when it is about to
        expire. Every use is audited (``credential_use``), every refusal too."""
        info, ciphertext = await self._store.secrets.secret_ciphertext(person_id, name)
        host = host_key(host)
        await self._check_binding(
            person_id, actor, "LOGIN", info, host, "https" if secure else "plain"
        )
        secret = self._open(info, ciphertext)
        if secret.oauth is not None and secret.oauth.expired(
            self._now(), leeway_seconds=self._leeway
        ):
            await self._refresh(person_id, name, secret, actor)
        await self._record(
            person_id, actor, "credential_use", {"secret": name, "host": host, "method": "LOGIN"}
        )
        return Login(secret=name, value=secret.value, oauth=secret.oauth is not None)

    async def _prepare(
        self,
        person_id: str,
        actor: str,
        method: str,
        names: Iterable[str],
        target: Url,
        scope: str,
        public_only: bool,
    ) -> tuple[dict[str, _Secret], list[IPAddress]]:
        """Everything before the request: the secrets, checked and opened (refreshed when
        expired), and the addresses to try."""
        infos: dict[str, tuple[SecretInfo, str]] = {}
        for name in sorted(names):
            info, ciphertext = await self._store.secrets.secret_ciphertext(person_id, name)
            await self._check_binding(person_id, actor, method, info, target.host, target.scheme)
            infos[name] = (info, ciphertext)
        addresses = await self._addresses(person_id, actor, method, target, (scope,), public_only)
        # decrypt only once every secret passed its binding check
        secrets = {name: self._open(info, ct) for name, (info, ct) in infos.items()}
        for name, secret in secrets.items():
            if secret.oauth is not None and secret.oauth.expired(
                self._now(), leeway_seconds=self._leeway
            ):
                await self._refresh(person_id, name, secret, actor)
        return secrets, addresses

    async def _check_binding(
        self, person_id: str, actor: str, method: str, info: SecretInfo, host: str, scheme: str
    ) -> None:
        problem = None
        if host not in {host_key(h) for h in info.hosts}:
            problem = (
                f"secret {info.name!r} may only be sent to {', '.join(info.hosts)}, not to {host}"
            )
        elif scheme != "https" and host not in LOCAL_HOSTS:
            problem = f"secret {info.name!r} is only sent over https (got {scheme}://{host})"
        if problem is None:
            return
        await self._record(
            person_id,
            actor,
            "credential_refused",
            {"secret": info.name, "host": host, "method": method, "allowed_hosts": info.hosts},
        )
        raise EgressRefused(f"refused: {problem}; nothing was sent")

    async def _addresses(
        self,
        person_id: str,
        actor: str,
        method: str,
        target: Url,
        scopes: tuple[str, ...],
        public_only: bool = False,
    ) -> list[IPAddress]:
        """The addresses to connect to, in the resolver's order: the host's, when every one
        is public or (unless ``public_only``) an active connection of the person that offers
        one of ``scopes`` names the host."""
        if target.address is not None:
            addresses = [target.address]
        else:
            try:
                resolved = await self._resolve(target.host, target.port)
            except OSError as exc:
                raise EgressFailed(f"{method} to {target.host} failed: {exc}") from None
            addresses = [a for a in (ip_of(text.partition("%")[0]) for text in resolved) if a]
            if not addresses:
                raise EgressFailed(f"{method} to {target.host} failed: it has no address")
        private = [a for a in addresses if not is_public(a)]
        if not private:
            return addresses
        if not public_only and await self._named_by_connection(person_id, target.host, scopes):
            return addresses
        shown = target.host if target.address else f"{target.host} ({private[0]})"
        await self._record(
            person_id,
            actor,
            "egress_refused",
            {"host": target.host, "address": str(private[0]), "method": method},
        )
        why = (
            "and a public site may not lead there"
            if public_only
            else f"and no connection of yours that allows {' or '.join(scopes)} names "
            f"{target.host} among its hosts"
        )
        raise EgressRefused(
            f"refused: {shown} is a local or private network address, {why}; nothing was sent"
        )

    async def _named_by_connection(
        self, person_id: str, host: str, scopes: tuple[str, ...]
    ) -> bool:
        """An active connection of the person names ``host`` and offers one of ``scopes``
        (naming a host for mail does not open it to API calls). Connections name hosts, not
        ports: one that names a private host opens every port on it."""
        connections = await self._store.authority.list_connections(person_id)
        return any(
            host in {host_key(h) for h in c.hosts} and any(s in c.scopes for s in scopes)
            for c in connections
            if c.active
        )

    def _open(self, info: SecretInfo, ciphertext: str) -> _Secret:
        plaintext = self._vault.decrypt(ciphertext)
        oauth = OAuthTokens.from_secret(plaintext)
        value = oauth.access_token if oauth is not None else plaintext
        return _Secret(info=info, value=value, oauth=oauth, old=[])

    async def _send(
        self,
        request: _Request,
        secrets: Mapping[str, _Secret],
        target: Url,
        addresses: Sequence[IPAddress],
    ) -> _Answer:
        import httpx

        url = request.url
        values = {name: s.value for name, s in secrets.items()}
        url_values = {name: quote(v, safe="") for name, v in values.items()}
        final_url = substitute(url, url_values)
        final = _target(final_url)
        if (final.scheme, final.host, final.port) != (target.scheme, target.host, target.port):
            # cannot happen with URL-encoded values; checked because it is the whole point
            raise EgressRefused(f"refused: substituting secrets changed the host of {url!r}")
        sent = {k: substitute(v, values) for k, v in request.headers.items() if k.lower() != "host"}
        kwargs: dict[str, Any] = {"headers": sent, "extensions": {}}
        parsed = httpx.URL(final_url)
        if target.address is None:
            # connect to an address that was checked; name the host in Host and TLS SNI
            kwargs["headers"]["Host"] = parsed.netloc.decode("ascii")
            if target.scheme == "https":
                kwargs["extensions"]["sni_hostname"] = target.host
        kwargs.update(filled_body(request.content, request.json, request.form, values))

        def at(address: IPAddress) -> httpx.URL:
            return parsed if target.address is not None else parsed.copy_with(host=str(address))

        async with self._client_factory(follow_redirects=False, timeout=self._timeout) as client:
            for tried, address in enumerate(addresses, 1):
                sendby.check()  # an effect's request starts within its send deadline, or never
                failpoint("egress.before_send")  # the last place to stop before the bytes go
                built = client.build_request(request.method, at(address), **kwargs)
                try:
                    response = await client.send(built, stream=True)
                except (httpx.ConnectError, httpx.ConnectTimeout):
                    if tried == len(addresses):
                        raise
                    continue  # nothing was sent: try the next checked address
                try:
                    return await self._read(response, request.max_bytes)
                finally:
                    await response.aclose()
            raise AssertionError("no address to send to")  # _addresses returns at least one

    async def _read(self, response: httpx.Response, max_bytes: int | None) -> _Answer:
        """The body as it arrives, decompressed; with ``max_bytes``, no more than that is kept
        (a small compressed body can expand to gigabytes) and it all comes within the
        deadline."""
        if max_bytes is None:
            return _Answer(response=response, body=await response.aread(), truncated=False)
        chunks: list[bytes] = []
        size = 0
        async with asyncio.timeout(self._deadline):
            async for chunk in response.aiter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if size > max_bytes:
                    body = b"".join(chunks)[:max_bytes]
                    return _Answer(response=response, body=body, truncated=True)
        return _Answer(response=response, body=b"".join(chunks), truncated=False)

    async def _refresh(self, person_id: str, name: str, secret: _Secret, actor: str) -> None:
        """Refresh an OAuth secret in place (one refresh at a time per secret: another request
        may have refreshed it while this one waited, and a refresh token may be single-use)."""
        lock = self._refresh_locks.setdefault((person_id, name), asyncio.Lock())
        async with lock:
            info, ciphertext = await self._store.secrets.secret_ciphertext(person_id, name)
            current = OAuthTokens.from_secret(self._vault.decrypt(ciphertext))
            if current is None or current.refresh_token is None:
                raise EgressFailed(f"OAuth secret {name!r} has no refresh token; reconnect it")
            refreshed_meanwhile = (
                secret.oauth is not None
                and current.access_token != secret.oauth.access_token
                and not current.expired(self._now(), leeway_seconds=self._leeway)
            )
            if not refreshed_meanwhile:
                current = await self._refresh_at_endpoint(person_id, name, current, actor)
                await self._store.secrets.put_secret(
                    person_id=person_id,
                    name=name,
                    ciphertext=self._vault.encrypt(current.to_secret()),
                    hosts=info.hosts,
                    now=self._now(),
                    actor=actor,
                )
        secret.old.append(secret.value)
        secret.value = current.access_token
        secret.oauth = current

    async def _refresh_at_endpoint(
        self, person_id: str, name: str, tokens: OAuthTokens, actor: str
    ) -> OAuthTokens:
        endpoint = _target(tokens.token_endpoint)
        endpoint_host = endpoint.host
        if endpoint.scheme != "https" and endpoint_host not in LOCAL_HOSTS:
            raise EgressRefused(f"OAuth token endpoint of {name!r} must use https")
        # refreshing a credential is an API call of the broker's own
        await self._addresses(person_id, actor, "POST", endpoint, (API_CALL,))
        redactor = Redactor((name, value) for value in tokens.secret_values())
        data = {"secret": name, "host": endpoint_host, "ok": False}
        # imported here: authlib costs every command ~50 ms to import, and few refresh
        import httpx2
        from authlib.common.errors import AuthlibBaseError
        from authlib.integrations.httpx_client import AsyncOAuth2Client

        try:
            async with AsyncOAuth2Client(
                client_id=tokens.client_id,
                client_secret=tokens.client_secret,
                token=json.loads(tokens.to_secret()),
                timeout=self._timeout,
                follow_redirects=False,
            ) as client:
                fresh = await client.refresh_token(
                    tokens.token_endpoint, refresh_token=tokens.refresh_token
                )
            data["ok"] = True
        except (AuthlibBaseError, httpx2.HTTPError, ValueError, KeyError) as exc:
            detail = redactor.redact(f"{type(exc).__name__}: {exc}")
            raise EgressFailed(f"refreshing OAuth secret {name!r} failed: {detail}") from None
        finally:
            await self._record(person_id, actor, "credential_refresh", data)
        return OAuthTokens.from_response(
            fresh,
            token_endpoint=tokens.token_endpoint,
            client_id=tokens.client_id,
            client_secret=tokens.client_secret,
            now=self._now(),
            previous=tokens,
        )

    async def _record(self, person_id: str, actor: str, kind: str, data: dict[str, Any]) -> None:
        if self._audit is not None:
            await self._audit(
                person_id=person_id, kind=kind, actor=actor, data=data, now=self._now()
            )


# --- helpers ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Request:
    """One request as a tool gave it (placeholders in place)."""

    method: str
    url: str
    headers: dict[str, str]
    content: str | bytes | None
    json: Any
    form: Mapping[str, str] | None
    max_bytes: int | None


@dataclass(frozen=True)
class _Answer:
    """A response and its body, read (at most ``max_bytes`` of it)."""

    response: httpx.Response
    body: bytes
    truncated: bool


def _target(url: str) -> Url:
    """The URL as :func:`~steward.sentinel.urls.parse_url` reads it (the policy reads it the
    same way); a placeholder may not stand for (part of) the host."""
    authority = authority_of(url)
    if "{" in authority or "}" in authority:
        raise EgressRefused(f"refused: {url!r} must name its host literally, not by placeholder")
    try:
        return parse_url(url)
    except UrlRefused as exc:
        raise EgressRefused(f"refused: {exc}; nothing was sent") from None


def _redactor(secrets: Mapping[str, _Secret]) -> Redactor:
    """Redacts every value each secret had in this request — for a token set, all its parts —
    as that secret's placeholder."""
    return Redactor((name, v) for name, secret in secrets.items() for v in secret.values())
