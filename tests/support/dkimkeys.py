"""A mail domain's DKIM signing key, as its mail provider holds it: it signs outgoing messages
for real (dkimpy, RSA), and serves its public key as the DNS TXT record
``<selector>._domainkey.<domain>`` to the verifier's lookup (dkimpy's ``dnsfunc``) — the DNS
source, in place of the internet's."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from functools import cache

import dkim
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa


@cache
def _rsa_key() -> rsa.RSAPrivateKey:
    """One 2048-bit key per test session (making one takes a moment)."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class DkimDomain:
    """Signs mail for ``domain`` with selector ``selector``; ``txt`` answers the key lookup."""

    domain: str
    """The domain it signs for (``d=``)."""
    selector: str = "mail"
    """Its selector (``s=``): where under ``_domainkey`` its key is published."""
    key: rsa.RSAPrivateKey = field(default_factory=_rsa_key)
    """The signing key (the session's one: a forger's domain has the same key, published under
    its own name, which is all a verifier can tell apart)."""
    published: dict[bytes, bytes] = field(default_factory=dict)
    """The TXT records served, by name (``sel._domainkey.example.test.``)."""
    lookups: list[bytes] = field(default_factory=list)
    """Every name looked up, in order."""

    def __post_init__(self) -> None:
        der = self.key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        name = f"{self.selector}._domainkey.{self.domain}.".encode()
        self.published[name] = b"v=DKIM1; k=rsa; p=" + base64.b64encode(der)

    def sign(self, raw: bytes, *, domain: str | None = None, length: bool = False) -> bytes:
        """``raw`` with a DKIM-Signature of ``domain`` (this one's by default) on top."""
        pem = self.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
        header = dkim.sign(
            raw,
            self.selector.encode(),
            (domain or self.domain).encode(),
            pem,
            include_headers=[b"from", b"to", b"subject", b"date", b"message-id"],
            length=length,
        )
        assert isinstance(header, bytes)
        return header + raw

    def txt(self, name: bytes, timeout: float = 5) -> bytes | None:
        """The TXT record at ``name``, as a DNS lookup returns it (None: there is none)."""
        self.lookups.append(name)
        return self.published.get(name)

    def also(self, other: DkimDomain) -> DkimDomain:
        """This one serving ``other``'s records too (one DNS for several domains)."""
        self.published.update(other.published)
        return self
