"""A Dovecot and an SMTP server for the session (``support.mailserver``), and per test a fresh
person with a fresh mailbox on them, ready to connect."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from steward.domain.clock import SimulatedClock
from steward.store import Store
from support.mailbox import Mailbox, mailbox_of
from support.mailserver import BASIC, MailServer, dovecot_missing, running_mail, skip_or_fail


@pytest.fixture(scope="session")
def mail_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MailServer]:
    missing = dovecot_missing()
    if missing is not None:
        skip_or_fail(missing)
    with running_mail(tmp_path_factory.mktemp("dovecot")) as server:
        yield server


@pytest.fixture
async def mailbox(
    mail_server: MailServer, store: Store, clock: SimulatedClock, tmp_path: Path
) -> Mailbox:
    return await mailbox_of(mail_server, store, clock, tmp_path / "workspace")


@pytest.fixture(scope="session")
def basic_mail_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MailServer]:
    """A Dovecot that speaks neither IDLE nor MOVE."""
    missing = dovecot_missing()
    if missing is not None:
        skip_or_fail(missing)
    with running_mail(tmp_path_factory.mktemp("dovecot-basic"), capabilities=BASIC) as server:
        yield server


@pytest.fixture
async def basic_mailbox(
    basic_mail_server: MailServer, store: Store, clock: SimulatedClock, tmp_path: Path
) -> Mailbox:
    return await mailbox_of(basic_mail_server, store, clock, tmp_path / "workspace")
