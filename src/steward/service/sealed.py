"""A backup archive sealed with a passphrase: scrypt derives the key, AES-256-GCM encrypts.

The ``cryptography`` package has no streaming AEAD, and an archive can be larger than memory,
so the stream is cut into chunks of 1 MiB, each sealed on its own under a nonce made of a
random prefix and the chunk's number; the last chunk says it is last (in its nonce), so a
copy cut short, reordered or spliced fails to open instead of restoring part of a backup.

Layout: ``MAGIC``, salt (16 bytes), nonce prefix (7 bytes), then per chunk its sealed length
(4 bytes, big-endian) and the sealed bytes.
"""

from __future__ import annotations

import io
import os
import struct
from typing import BinaryIO

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from steward.errors import UsageError

MAGIC = b"STEWARD-SEALED-1\n"
CHUNK = 1 << 20
_SALT = 16
_PREFIX = 7


def _key(passphrase: str, salt: bytes) -> AESGCM:
    # n * r * 128 bytes: 32 MiB and a fraction of a second, per backup
    kdf = Scrypt(salt=salt, length=32, n=2**15, r=8, p=1)
    return AESGCM(kdf.derive(passphrase.encode("utf-8")))


def _nonce(prefix: bytes, number: int, last: bool) -> bytes:
    return prefix + struct.pack(">I?", number, last)


def is_sealed(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a sealed archive."""
    return head.startswith(MAGIC)


class SealingWriter(io.RawIOBase):
    """A write-only stream that seals what is written to it into ``out``; :meth:`close`
    seals the last chunk (``out`` stays open)."""

    def __init__(self, out: BinaryIO, passphrase: str) -> None:
        super().__init__()
        salt, self._prefix = os.urandom(_SALT), os.urandom(_PREFIX)
        self._aead = _key(passphrase, salt)
        self._out = out
        self._buffer = bytearray()
        self._number = 0
        out.write(MAGIC + salt + self._prefix)

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        self._buffer += data
        # keep at least one byte back: the chunk that ends the stream must carry the flag
        while len(self._buffer) > CHUNK:
            self._seal(bytes(self._buffer[:CHUNK]), last=False)
            del self._buffer[:CHUNK]
        return len(data)

    def _seal(self, plain: bytes, *, last: bool) -> None:
        sealed = self._aead.encrypt(_nonce(self._prefix, self._number, last), plain, MAGIC)
        self._out.write(struct.pack(">I", len(sealed)) + sealed)
        self._number += 1

    def close(self) -> None:
        if not self.closed:
            self._seal(bytes(self._buffer), last=True)
            self._buffer.clear()
        super().close()


class OpeningReader(io.RawIOBase):
    """A read-only stream of what ``source`` (a sealed archive) holds; a wrong passphrase or
    a damaged, cut or spliced archive raises :class:`UsageError`."""

    def __init__(self, source: BinaryIO, passphrase: str) -> None:
        super().__init__()
        head = source.read(len(MAGIC) + _SALT + _PREFIX)
        if not is_sealed(head) or len(head) < len(MAGIC) + _SALT + _PREFIX:
            raise UsageError("this file is not a passphrase-sealed Steward backup")
        salt = head[len(MAGIC) : len(MAGIC) + _SALT]
        self._prefix = head[len(MAGIC) + _SALT :]
        self._aead = _key(passphrase, salt)
        self._source = source
        self._number = 0
        self._pending = b""
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while not self._pending and not self._done:
            self._pending = self._open_next()
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def _open_next(self) -> bytes:
        header = self._source.read(4)
        if len(header) < 4:
            raise UsageError("this backup is cut short: its end is missing")
        (length,) = struct.unpack(">I", header)
        sealed = self._source.read(length)
        for last in (False, True):
            try:
                plain = self._aead.decrypt(_nonce(self._prefix, self._number, last), sealed, MAGIC)
            except InvalidTag:
                continue
            self._number += 1
            self._done = last
            return plain
        if self._number == 0:
            raise UsageError("wrong passphrase for this backup (or the file is damaged)")
        raise UsageError(f"this backup is damaged (part {self._number + 1} does not open)")
