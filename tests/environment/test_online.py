"""The online shell reaches the hosts it was given, through the proxy and the egress broker's
address check, and nothing else: a local site named by the person's ``web`` connection is
reached with curl and Python's urllib; a host not given, a private host no connection names, and
a direct connection that ignores the proxy are refused; the offline shell still has no network;
each connection is audited once, without what was sent."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from environment.conftest import QUICK, require_bwrap
from steward.domain import Connection, Grant, Lifetime
from steward.domain.actions import ActionRequest, Verdict
from steward.domain.agent_input import AgentTaskInput
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.environment.provenance import Provenance
from steward.environment.sandbox import Sandbox
from steward.environment.tools import workspace_tools
from steward.harness.tools import Tool, ToolContext, ToolError
from steward.sentinel.egress import EgressBroker, system_resolver
from steward.sentinel.index import PolicySnapshot
from steward.sentinel.policy import PolicyDecision, evaluate
from steward.sentinel.vault import Vault, VaultKeys, generate_key
from steward.store import Store
from support.webserver import Site, serve_site

NOW = datetime(2026, 12, 4, 9, 0, tzinfo=UTC)


@dataclass
class World:
    tools: dict[str, Tool]
    ctx: ToolContext
    site: Site
    audits: list[dict[str, Any]]
    provenance: Provenance
    broker: EgressBroker

    async def online(self, command: str, *hosts: str) -> dict[str, Any]:
        found = self.tools["workspace_shell_online"]
        result: dict[str, Any] = await found.invoke(
            found.validate({"command": command, "hosts": list(hosts)}), self.ctx
        )
        return result

    async def offline(self, command: str) -> dict[str, Any]:
        found = self.tools["workspace_shell"]
        result: dict[str, Any] = await found.invoke(found.validate({"command": command}), self.ctx)
        return result


@pytest.fixture
def site() -> Iterator[Site]:
    with serve_site() as served:
        served.page("/hello", "hello from the home server", content_type="text/plain")
        yield served


@pytest.fixture
async def world(store: Store, clock: SimulatedClock, site: Site, tmp_path: Path) -> World:
    require_bwrap()
    person = await store.persons.create_person(name="p", now=clock.now())
    await store.authority.add_connection(
        Connection(
            id=new_id("con"),
            person_id=person.id,
            kind="web",
            name="home",
            scopes=("web.read",),
            hosts=("127.0.0.1", "home.test"),
            created_at=clock.now(),
        )
    )
    audits: list[dict[str, Any]] = []

    async def audit(**entry: Any) -> None:
        audits.append(entry)

    async def resolve(host: str, port: int) -> list[str]:
        # a name only the broker's resolver knows: reaching it proves the proxy connects to
        # the address the broker checked, without a lookup of its own
        return ["127.0.0.1"] if host == "home.test" else await system_resolver(host, port)

    broker = EgressBroker(
        store,
        Vault(VaultKeys(keys=(generate_key(),), source="test")),
        audit=audit,
        now=clock.now,
        resolve=resolve,
    )
    provenance = Provenance(tmp_path / "data" / "environment")
    tools = workspace_tools(Sandbox(QUICK), broker=broker, provenance=provenance)
    workspace = tmp_path / "data" / "workspace" / person.id
    ctx = ToolContext(
        person_id=person.id,
        task_id="tsk_online",
        goal_id=None,
        idempotency_key=None,
        workspace=workspace,
        now=datetime(2026, 12, 4, 9, 0, tzinfo=UTC),
    )
    return World({t.name: t for t in tools}, ctx, site, audits, provenance, broker)


async def test_curl_and_urllib_reach_a_host_the_person_connected(world: World) -> None:
    url = f"{world.site.url}/hello"
    ran = await world.online(f"curl -sS --max-time 20 {url} -o page.txt; cat page.txt", "127.0.0.1")
    assert (ran["result"], ran["output"]) == ("finished", "hello from the home server")
    assert ran["reached"] == ["GET 127.0.0.1"]
    assert ran["files_written"] == ["page.txt"]
    script = f"import urllib.request; print(urllib.request.urlopen('{url}').read().decode())"
    ran = await world.online(f'python3 -c "{script}"', "127.0.0.1")
    assert ran["output"].strip() == "hello from the home server", ran
    [hit, _] = world.site.hits("/hello")
    assert not any(name.startswith("proxy-") for name in hit.headers)
    opened = [a for a in world.audits if a["kind"] == "egress_open"]
    assert [a["data"] for a in opened] == [
        {"host": "127.0.0.1", "port": world.site.port, "method": "GET"}
    ] * 2
    assert all(a["actor"] == "agent:tsk_online" for a in opened)
    # the download's origin is kept, outside the workspace
    origin = await world.provenance.of(world.ctx.person_id, "page.txt")
    assert origin is not None
    assert origin.origin == (
        f"the shell (reaching 127.0.0.1): curl -sS --max-time 20 {url} -o page.txt; cat page.txt"
    )
    assert origin.tool == "workspace_shell_online"


async def test_the_proxy_connects_to_the_address_the_broker_checked(world: World) -> None:
    url = f"http://home.test:{world.site.port}/hello"
    ran = await world.online(f"curl -sS --max-time 20 {url}", "https://home.test")
    assert ran["output"] == "hello from the home server"
    [hit] = world.site.hits("/hello")
    assert hit.headers["host"] == f"home.test:{world.site.port}"


async def test_a_host_not_given_is_refused_in_words(world: World) -> None:
    ran = await world.online(
        f"curl -sS --max-time 20 -w ' %{{http_code}}' {world.site.url}/hello", "example.org"
    )
    assert "is not one of the hosts this command was given (example.org)" in ran["output"]
    assert ran["output"].endswith(" 403")
    assert "hello from the home server" not in ran["output"]
    assert world.site.count() == 0
    assert ran["refused"] == [
        "127.0.0.1 is not one of the hosts this command was given (example.org)"
    ]


async def test_a_private_host_no_connection_names_is_refused(world: World) -> None:
    # localhost is this machine, and the connection names 127.0.0.1, not this name
    ran = await world.online(
        f"curl -sS --max-time 20 http://localhost:{world.site.port}/hello", "localhost"
    )
    assert "local or private network address" in ran["output"]
    assert (
        "no connection of yours that allows web.read or api.call names localhost" in (ran["output"])
    )
    assert world.site.count() == 0
    assert [a["kind"] for a in world.audits] == ["egress_refused"]


async def test_tunnels_go_only_to_given_hosts(world: World) -> None:
    """A CONNECT tunnel carries any bytes: to a given host it opens, to another it does not."""
    raw = (
        "import socket, sys\n"
        "s = socket.create_connection(('127.0.0.1', 3128))\n"
        "s.sendall(f'CONNECT {sys.argv[1]} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'.encode())\n"
        "print(s.recv(200).decode().splitlines()[0])\n"
        "s.sendall(b'GET /hello HTTP/1.0\\r\\n\\r\\n')\n"
        "print(s.makefile('rb').read().decode().splitlines()[-1])\n"
    )
    await world.online(f"cat > tunnel.py <<'EOF'\n{raw}EOF", "127.0.0.1")
    port = world.site.port
    ran = await world.online(f"python3 tunnel.py 127.0.0.1:{port}", "127.0.0.1")
    assert ran["output"].splitlines() == [
        "HTTP/1.1 200 Connection established",
        "hello from the home server",
    ]
    assert ran["reached"] == [f"CONNECT 127.0.0.1:{port}"]
    ran = await world.online(f"python3 tunnel.py 10.1.2.3:{port}", "127.0.0.1")
    assert ran["output"].splitlines()[0] == "HTTP/1.1 403 Forbidden"


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.create_server(("127.0.0.1", 0))
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


async def test_a_direct_connection_finds_no_route(world: World, listener: int) -> None:
    """A program that ignores the proxy variables reaches nothing: the sandbox's network is
    its own loopback, where only the forwarder listens."""
    script = (
        "import socket\n"
        f"for where in [('127.0.0.1', {listener}), ('1.1.1.1', 80)]:\n"
        "    try:\n"
        "        socket.create_connection(where, timeout=5)\n"
        "        print('connected', where)\n"
        "    except OSError as exc:\n"
        "        print('refused', exc.errno)\n"
    )
    await world.offline(f"cat > direct.py <<'EOF'\n{script}EOF")
    ran = await world.online("python3 direct.py", "127.0.0.1", "1.1.1.1")
    assert "connected" not in ran["output"], ran
    assert ran["output"].count("refused") == 2
    assert "reached" not in ran


async def test_the_offline_shell_still_has_no_network(world: World) -> None:
    ran = await world.offline(
        f"env | grep -i proxy; curl -sS --max-time 5 {world.site.url}/hello; echo $?"
    )
    assert "hello from the home server" not in ran["output"]
    assert "proxy" not in ran["output"].lower()
    assert ran["output"].strip().splitlines()[-1] != "0"
    assert world.site.count() == 0


async def test_secret_placeholders_are_not_filled_for_the_shell(world: World) -> None:
    ran = await world.online(
        f"curl -sS --max-time 20 -H 'Authorization: {{{{secret:bank}}}}' {world.site.url}/hello",
        "127.0.0.1",
    )
    assert ran["output"] == "hello from the home server"
    [hit] = world.site.hits("/hello")
    assert hit.headers["authorization"] == "{{secret:bank}}"
    assert "secret" not in json.dumps([a["data"] for a in world.audits])


async def test_a_workspace_over_its_quota_downloads_nothing(world: World) -> None:
    world.ctx.workspace.mkdir(parents=True)
    (world.ctx.workspace / "big.bin").write_bytes(b"x" * 5000)
    tools = workspace_tools(Sandbox(QUICK), broker=world.broker, quota_bytes=4000)
    [online] = [t for t in tools if t.name == "workspace_shell_online"]
    args = online.validate({"command": f"curl -sS {world.site.url}/hello", "hosts": ["127.0.0.1"]})
    with pytest.raises(ToolError, match=r"more than its 4\.0 KB quota.*nothing was run"):
        await online.invoke(args, world.ctx)
    assert world.site.count() == 0


async def test_a_research_task_sends_nothing_whatever_it_is_asked(world: World) -> None:
    found = world.tools["workspace_shell_online"]
    args = found.validate({"command": f"curl -sS {world.site.url}/hello", "hosts": ["127.0.0.1"]})
    with pytest.raises(ToolError, match="a research task sends nothing out"):
        await found.invoke(args, replace(world.ctx, read_only=True))
    assert world.site.count() == 0


async def test_bad_hosts_are_refused_before_anything_runs(world: World) -> None:
    with pytest.raises(ToolError, match="is not a host"):
        await world.online("touch ran.txt", "evil.example/path")
    assert not (world.ctx.workspace / "ran.txt").exists()


def test_the_person_approves_an_online_command_unless_a_grant_covers_it(world: World) -> None:
    found = world.tools["workspace_shell_online"]
    args = found.validate({"command": "pip download x", "hosts": ["https://pypi.org"]})

    def decide(*grants: Grant, mode: str | None = None) -> PolicyDecision:
        request = ActionRequest(
            person_id=world.ctx.person_id,
            task_id="tsk_online",
            goal_id=None,
            tool=found.name,
            args=args,
            effect=found.effect,
            scopes=found.scopes,
            source=found.source,
            wake_reason="start",
            task_input=AgentTaskInput.from_json({"mode": mode} if mode else {}),
            roles=dict(found.roles or {}),
        )
        snapshot = PolicySnapshot(
            person_id=world.ctx.person_id, taken_at=NOW, connections=(), grants=grants, rules=()
        )
        return evaluate(request, snapshot, now=NOW, session_id=None)

    assert (
        found.summary(args)
        == "Run in the workspace sandbox, reaching https://pypi.org: pip download x"
    )
    asked = decide()
    assert (asked.verdict, asked.basis) == (Verdict.ASK, "default:external-asks")
    pypi = Grant(
        id="grt_1",
        person_id=world.ctx.person_id,
        scopes=("workspace.run", "workspace.write"),
        lifetime=Lifetime.STANDING,
        constraints={"tool": found.name, "hosts": ["pypi.org"]},
        issued_by="person",
        created_at=NOW,
    )
    assert decide(pypi).verdict is Verdict.ALLOW
    elsewhere = replace(pypi, constraints={"tool": found.name, "hosts": ["example.org"]})
    assert decide(elsewhere).verdict is Verdict.ASK
    assert decide(pypi, mode="research").verdict is Verdict.DENY
