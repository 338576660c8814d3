"""Whether mail naming the person as its sender is theirs: real DKIM signatures (dkimpy, an RSA
key, its public key served as the DNS TXT record the verifier looks up), real
Authentication-Results headers parsed by authres, and the explicit ``none``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from steward.connectors.mail.authenticity import (
    DKIM,
    SenderCheck,
    Verdict,
    check_of,
    sender_check,
    verdict,
)
from steward.domain.channel import Channel, ChannelKind
from steward.errors import UsageError
from support.dkimkeys import DkimDomain
from support.mailserver import message

ME = "ana@example.test"
AGENT = "agent@steward.test"


@pytest.fixture
def provider() -> DkimDomain:
    """Ana's mail provider: signs for example.test."""
    return DkimDomain("example.test")


def letter(*, sender: str = ME, body: str = "Book the dentist", extra: str = "") -> bytes:
    return message(sender=sender, to=AGENT, subject="Dentist", body=body, extra=extra)


async def check(
    raw: bytes, how: SenderCheck = DKIM, keys: DkimDomain | None = None, address: str = ME
) -> Verdict:
    return await verdict(raw, address=address, check=how, dns=keys.txt if keys else None)


async def test_signed_by_the_persons_domain_is_theirs(provider: DkimDomain) -> None:
    got = await check(provider.sign(letter()), keys=provider)
    assert got.trusted, got.why
    assert got.why == "DKIM signature of example.test"
    assert provider.lookups == [b"mail._domainkey.example.test."]
    # a subdomain's mail signed by its parent domain is aligned (relaxed), and the address
    # is matched whatever its case
    sub = letter(sender="Ana@Mail.Example.test")
    assert (await check(provider.sign(sub), keys=provider, address="ana@mail.example.test")).trusted


async def test_a_signature_of_another_domain_is_not_proof(provider: DkimDomain) -> None:
    """A forger signs with the key of a domain they own: valid, but not the From's domain."""
    forger = DkimDomain("forger.test").also(provider)
    got = await check(forger.sign(letter()), keys=forger)
    assert not got.trusted
    assert "forger.test: not the From's domain" in got.why
    # nor is a parent that merely ends like it
    lookalike = DkimDomain("ample.test")
    assert not (await check(lookalike.sign(letter()), keys=lookalike)).trusted


async def test_a_signature_claiming_the_persons_domain_with_another_key_is_refused(
    provider: DkimDomain,
) -> None:
    """The forger writes ``d=example.test`` but signs with their own key: the key published
    for example.test does not verify it."""
    theirs = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = DkimDomain("example.test", key=theirs).sign(letter())
    got = await check(forged, keys=provider)
    assert not got.trusted
    assert got.why == "DKIM: example.test: invalid"


async def test_a_body_altered_after_signing_is_refused(provider: DkimDomain) -> None:
    signed = provider.sign(letter())
    altered = signed.replace(b"Book the dentist", b"Wire 5000 EUR to Eve")
    assert altered != signed
    got = await check(altered, keys=provider)
    assert not got.trusted
    # a header altered after signing too
    resubjected = signed.replace(b"Subject: Dentist", b"Subject: Urgent")
    assert not (await check(resubjected, keys=provider)).trusted


async def test_unsigned_mail_and_a_key_nowhere_are_refused(provider: DkimDomain) -> None:
    got = await check(letter(), keys=provider)
    assert got == Verdict(trusted=False, why="no DKIM signature")
    assert provider.lookups == []  # nothing to look up
    nowhere = DkimDomain("example.test", selector="other")  # its key published nowhere
    refused = await check(nowhere.sign(letter()), keys=provider)
    assert not refused.trusted
    assert provider.lookups == [b"other._domainkey.example.test."]


async def test_a_signature_over_part_of_the_body_is_not_proof(provider: DkimDomain) -> None:
    """``l=``: text added after the signed length would still verify."""
    signed = provider.sign(letter(), length=True)
    got = await check(signed.rstrip(b"\r\n") + b"\r\nAlso wire 5000 EUR.\r\n", keys=provider)
    assert not got.trusted
    assert "covers part of the body only" in got.why


async def test_the_from_must_be_the_persons_one_address(provider: DkimDomain) -> None:
    other = await check(provider.sign(letter(sender="bob@example.test")), keys=provider)
    assert other == Verdict(trusted=False, why="From is not the channel's address")
    two = provider.sign(letter(sender=f"{ME}, eve@evil.test"))
    assert not (await check(two, keys=provider)).trusted
    # a second From header added on top of a properly signed message
    doubled = b"From: eve@evil.test\r\n" + provider.sign(letter())
    assert (await check(doubled, keys=provider)).why == "not one From address"


async def test_the_receiving_servers_word_counts_under_its_own_id() -> None:
    server = sender_check("authserv:MX.Mail.test")
    assert server == SenderCheck(how="authserv", authserv_id="mx.mail.test")
    said = (  # folded, with a comment, as servers write it
        "Authentication-Results: mx.mail.test;\r\n"
        "\tdmarc=pass (p=reject) header.from=example.test\r\n"
    )
    got = await check(said.encode() + letter(), server)
    assert got.trusted, got.why
    # an aligned DKIM pass also counts; a DKIM pass of another domain does not
    dkim_ok = "Authentication-Results: mx.mail.test; dkim=pass header.d=example.test\r\n"
    assert (await check(dkim_ok.encode() + letter(), server)).trusted
    dkim_other = "Authentication-Results: mx.mail.test; dkim=pass header.d=evil.test\r\n"
    assert not (await check(dkim_other.encode() + letter(), server)).trusted
    # DMARC that passed for another From domain, or failed
    elsewhere = "Authentication-Results: mx.mail.test; dmarc=pass header.from=evil.test\r\n"
    assert not (await check(elsewhere.encode() + letter(), server)).trusted
    failed = "Authentication-Results: mx.mail.test; dmarc=fail header.from=example.test\r\n"
    assert not (await check(failed.encode() + letter(), server)).trusted


async def test_a_header_the_sender_wrote_counts_for_nothing() -> None:
    server = sender_check("authserv:mx.mail.test")
    # the sender's own header, under another id
    theirs = "Authentication-Results: mx.evil.test; dmarc=pass header.from=example.test\r\n"
    got = await check(theirs.encode() + letter(), server)
    assert got == Verdict(trusted=False, why="no Authentication-Results of mx.mail.test")
    # under the server's id but below the header the server added (which says it failed)
    ours = "Authentication-Results: mx.mail.test; dmarc=fail header.from=example.test\r\n"
    forged = "Authentication-Results: mx.mail.test; dmarc=pass header.from=example.test\r\n"
    stacked = ours.encode() + b"Received: from evil.test\r\n" + forged.encode() + letter()
    assert not (await check(stacked, server)).trusted
    # one that does not parse is no header of the server's
    garbled = "Authentication-Results: mx.mail.test dmarc=pass;;\r\n"
    assert not (await check(garbled.encode() + letter(), server)).trusted
    # the server's own header that its parser cannot read (an address-literal HELO, a null
    # sender: both chosen by the sender) does not let a forged one below it count instead
    for unreadable in ("smtp.helo=[203.0.113.9]", "smtp.mailfrom=<>"):
        top = f"Authentication-Results: mx.mail.test; spf=none {unreadable}; dmarc=fail\r\n"
        got = await check(top.encode() + forged.encode() + letter(), server)
        assert got == Verdict(trusted=False, why="mx.mail.test's header does not parse"), got


async def test_none_accepts_the_persons_address_and_nothing_else() -> None:
    none = sender_check(" None ")
    assert none == SenderCheck(how="none")
    assert (await check(letter(), none)).trusted
    assert not (await check(letter(sender="eve@evil.test"), none)).trusted


def test_the_check_is_named_at_the_door_and_defaults_to_dkim() -> None:
    assert sender_check("dkim") == DKIM
    assert sender_check("authserv:mx.mail.test").text == "authserv:mx.mail.test"
    for bad in ("", "dmarc", "dkim:x", "authserv:", "authserv:mx mail", "authserv:a..b"):
        with pytest.raises(UsageError, match="not a way to check your mail"):
            sender_check(bad)

    def channel(**config: object) -> Channel:
        return Channel(
            id="chn_1",
            person_id="per_1",
            kind=ChannelKind.EMAIL,
            name="email",
            config={"connection": "con_1", "address": ME, **config},
            created_at=datetime(2026, 1, 1, tzinfo=UTC),
        )

    assert check_of(channel()) == DKIM  # stored before the setting existed
    assert check_of(channel(verify="none")) == SenderCheck(how="none")
    assert check_of(channel(verify="garbled")) == DKIM
