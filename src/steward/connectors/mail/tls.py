"""TLS for mail connections: one context for all of them (certificates checked against the
system's authorities), and a failed handshake said in plain words."""

from __future__ import annotations

import functools
import ssl


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The TLS settings every mail connection uses: made once, since loading the authorities
    costs memory per copy."""
    return ssl.create_default_context()


def tls_failure(host: str, protocol: str, exc: ssl.SSLError) -> str:
    """Why a secure connection to ``host`` failed, and what to check."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return (
            f"the certificate of {host} is not trusted ({exc.verify_message}), so the "
            "password was not sent: check the server name"
        )
    return (
        f"{host} did not set up a secure connection ({exc.reason or 'TLS failed'}): check "
        f"the {protocol} port and security (ssl or starttls)"
    )
