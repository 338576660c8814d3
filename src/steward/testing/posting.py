"""``http_post`` against a test service on this machine, wired as a worker wires it.

Requests from the ``http_post`` task kind pass the person's policy and the egress broker, which
refuses loopback addresses unless a connection of the person names the host: tests that post
to a local service connect the person to it first (:func:`connect_local_service`).
"""

from __future__ import annotations

from datetime import datetime

from steward.app import step_harness
from steward.connectors.http import API_CALL
from steward.domain import Connection
from steward.domain.clock import Clock
from steward.domain.ids import new_id
from steward.runtime.stepfn import StepHarness
from steward.sentinel.egress import EgressBroker
from steward.sentinel.policy import PolicySentinel
from steward.sentinel.urls import parse_url
from steward.sentinel.vault import Vault, VaultKeys, generate_key
from steward.store import Store


async def connect_local_service(store: Store, person_id: str, url: str, *, now: datetime) -> None:
    """Give ``person_id`` a connection offering ``api.call`` that names the host of ``url``."""
    await store.authority.add_connection(
        Connection(
            id=new_id("con"),
            person_id=person_id,
            kind="http",
            name="local test service",
            scopes=(API_CALL,),
            hosts=(parse_url(url).host,),
            created_at=now,
        )
    )


def posting(store: Store, clock: Clock) -> StepHarness:
    """The built-in step functions with ``http_post``, its broker on a throwaway vault key."""
    vault = Vault(VaultKeys(keys=(generate_key(),), source="test"))
    broker = EgressBroker(store, vault, audit=store.audit.append_audit, now=clock.now)
    return step_harness(broker, PolicySentinel(store, clock))
