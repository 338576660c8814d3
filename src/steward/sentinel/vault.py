"""The credential vault: secrets encrypted at rest, and the placeholders that stand for them.

The model and tools only ever see ``{{secret:<name>}}``; the real value exists in plaintext only
inside the egress broker, for the duration of one request to a host the secret is bound to.

**The key.** A Fernet key (AES-128-CBC + HMAC-SHA256, from the ``cryptography`` package) comes
from ``$STEWARD_VAULT_KEY`` or, failing that, from ``<data_dir>/vault.key``, which is created on
first run with mode 0600. A key file that group or others can access is refused: a secret is only
as safe as the key beside it. Back the key up separately from the database — a database backup
without its key is a pile of ciphertext, and the key without a backup loses every secret.

**Rotating the key.**

1. ``rotate_key_file(data_dir)`` writes a new key as the first line of ``vault.key`` and keeps
   the old ones below it (with an environment key: set ``STEWARD_VAULT_KEY`` to a new key from
   ``generate_key()`` and move the old one into ``STEWARD_VAULT_OLD_KEYS``, comma-separated).
   From then on new secrets are encrypted with the new key; every listed key still decrypts.
2. Re-encrypt what is stored: ``store.secrets.rewrap_secrets(vault.rotate, now=...)``.
3. ``retire_old_keys(data_dir)`` (or clear ``STEWARD_VAULT_OLD_KEYS``): the old key opens
   nothing any more.
"""

from __future__ import annotations

import base64
import json
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, quote_plus

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from steward.domain.secrets import placeholder
from steward.errors import ConfigError

KEY_ENV = "STEWARD_VAULT_KEY"
"""Environment variable holding the current key (takes precedence over the key file)."""
OLD_KEYS_ENV = "STEWARD_VAULT_OLD_KEYS"
"""Environment variable holding retired keys that still decrypt, comma-separated."""
KEY_FILE = "vault.key"
"""Name of the key file in the data directory: current key first, older keys below."""

# encoded fragments shorter than this would match ordinary text by chance
_MIN_FRAGMENT = 8


def generate_key() -> str:
    """A new random Fernet key, as text for ``$STEWARD_VAULT_KEY`` or the key file."""
    return Fernet.generate_key().decode("ascii")


@dataclass(kw_only=True, frozen=True)
class VaultKeys:
    """The vault's keys: the first encrypts, all of them decrypt."""

    keys: tuple[str, ...]
    """Fernet keys, current first."""
    source: str
    """Where they came from (``$STEWARD_VAULT_KEY`` or the key file's path), for messages."""

    @classmethod
    def load(
        cls,
        data_dir: Path,
        *,
        stored_secrets: int = 0,
        environ: Mapping[str, str] | None = None,
    ) -> VaultKeys:
        """Keys from the environment, else from ``data_dir/vault.key``, created on first run:
        while no secret is stored (``stored_secrets``, as the database counts them). A key
        file missing when secrets exist is refused, changing nothing: a new key would leave
        them unreadable and encrypt new ones under a key the old ones cannot share."""
        env = os.environ if environ is None else environ
        old_env = [k.strip() for k in env.get(OLD_KEYS_ENV, "").split(",") if k.strip()]
        current = env.get(KEY_ENV, "").strip()
        if current:
            return cls._checked((current, *old_env), source=f"${KEY_ENV}")
        path = data_dir / KEY_FILE
        if not path.exists():
            if stored_secrets:
                raise MissingVaultKey(path, stored_secrets)
            _create_key_file(path, generate_key())
        return cls._checked((*_read_key_file(path), *old_env), source=str(path))

    @classmethod
    def _checked(cls, keys: tuple[str, ...], *, source: str) -> VaultKeys:
        for position, key in enumerate(keys):
            try:
                Fernet(key)
            except (ValueError, TypeError):
                # never echo the key itself: the message may end up in a log
                raise ConfigError(
                    f"vault key #{position + 1} from {source} is not a Fernet key (32 bytes, "
                    "url-safe base64); make one with steward.sentinel.vault.generate_key()"
                ) from None
        return cls(keys=tuple(dict.fromkeys(keys)), source=source)


class MissingVaultKey(ConfigError):
    """The key file is gone although the database holds secrets encrypted with it."""

    def __init__(self, path: Path, stored: int) -> None:
        super().__init__(
            f"the vault key {path} is missing, but the database holds {stored} secret(s) "
            "encrypted with it, which nothing else can decrypt. Restore the file from your "
            f"backup (or set ${KEY_ENV} to the key), then start again. If the key is lost for "
            f"good, delete the {stored} secret(s) you can no longer read (`steward secret "
            "list`, `steward secret delete NAME`) and set them anew (a webhook's by asking "
            "for a new one). Nothing was changed."
        )
        self.path = path
        self.stored = stored


class Vault:
    """Encrypts and decrypts secret values with :class:`VaultKeys`."""

    def __init__(self, keys: VaultKeys) -> None:
        self.keys = keys
        self._fernet = MultiFernet([Fernet(k) for k in keys.keys])

    def encrypt(self, plaintext: str) -> str:
        """Ciphertext of ``plaintext`` under the current key."""
        return self._fernet.encrypt(plaintext.encode("utf-8")).decode("ascii")

    def decrypt(self, token: str) -> str:
        """The plaintext of ``token``, which any configured key may have encrypted."""
        try:
            return self._fernet.decrypt(token.encode("ascii")).decode("utf-8")
        except (InvalidToken, UnicodeEncodeError):
            raise ConfigError(
                f"no vault key from {self.keys.source} decrypts this secret: was the key "
                f"rotated without keeping the old one (in {KEY_FILE} or ${OLD_KEYS_ENV}) "
                "until the secrets were rewrapped?"
            ) from None

    def rotate(self, token: str) -> str:
        """``token`` re-encrypted under the current key (for ``store.secrets.rewrap_secrets``)."""
        try:
            return self._fernet.rotate(token.encode("ascii")).decode("ascii")
        except (InvalidToken, UnicodeEncodeError):
            raise ConfigError(
                f"no vault key from {self.keys.source} decrypts a stored secret; "
                "rotation stopped before changing anything"
            ) from None


def rotate_key_file(data_dir: Path) -> VaultKeys:
    """Put a new key first in ``data_dir/vault.key``, keeping the old ones to decrypt with.

    Afterwards rewrap the stored secrets, then :func:`retire_old_keys`.
    """
    path = data_dir / KEY_FILE
    old = _read_key_file(path) if path.exists() else []
    _replace_key_file(path, [generate_key(), *old])
    return VaultKeys._checked(tuple(_read_key_file(path)), source=str(path))


def retire_old_keys(data_dir: Path) -> VaultKeys:
    """Keep only the current key in ``data_dir/vault.key`` (after the secrets were rewrapped)."""
    path = data_dir / KEY_FILE
    _replace_key_file(path, _read_key_file(path)[:1])
    return VaultKeys._checked(tuple(_read_key_file(path)), source=str(path))


# --- redaction -------------------------------------------------------------------------------


class Redactor:
    """Replaces secret values, and the usual encodings of them, with their placeholders.

    Besides the value itself it finds its URL-encoded and JSON-escaped forms and its base64
    (standard and url-safe alphabets), including where the value was encoded as part of a longer
    text such as ``Basic <base64(user:password)>`` or ``Bearer <token>``: for each of the three
    byte alignments the characters that depend on the value alone are searched for.
    """

    def __init__(self, secrets: Iterable[tuple[str, str]]) -> None:
        """``secrets`` are (name, value) pairs; a name may come with several values (an old and
        a new token), and empty values are ignored."""
        forms: dict[str, str] = {}
        for name, value in secrets:
            if value:
                for form in _encoded_forms(value):
                    forms.setdefault(form, placeholder(name))
        ordered = sorted(forms, key=len, reverse=True)
        self._forms = forms
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def redact(self, text: str) -> str:
        """``text`` with every known form of every secret replaced by its placeholder."""
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(lambda m: self._forms[m.group(0)], text)

    def found_in(self, text: str) -> bool:
        """Whether any form of any secret occurs in ``text``."""
        return self._pattern is not None and self._pattern.search(text) is not None


def _encoded_forms(value: str) -> set[str]:
    forms = {value, quote(value, safe=""), quote_plus(value), json.dumps(value)[1:-1]}
    if len(value) >= _MIN_FRAGMENT:
        raw = value.encode("utf-8")
        for offset in range(3):
            encoded = base64.b64encode(b"\0" * offset + raw).decode("ascii")
            # characters whose 6 bits all come from the value's bytes
            start = -(-8 * offset // 6)
            end = 8 * (offset + len(raw)) // 6
            fragment = encoded[start:end]
            if len(fragment) >= _MIN_FRAGMENT:
                forms.add(fragment)
                forms.add(fragment.replace("+", "-").replace("/", "_"))
    forms.discard("")
    return forms


# --- the key file ----------------------------------------------------------------------------


def _read_key_file(path: Path) -> list[str]:
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(
            f"vault key file {path} is accessible to group or others (mode "
            f"{stat.S_IMODE(mode):04o}); run `chmod 600 {path}` and check who may have read it"
        )
    lines = [ln.strip() for ln in path.read_text("ascii").splitlines()]
    keys = [ln for ln in lines if ln and not ln.startswith("#")]
    if not keys:
        raise ConfigError(f"vault key file {path} holds no key")
    return keys


def _create_key_file(path: Path, key: str) -> None:
    """Create the key file with mode 0600 and complete contents, or leave one another process
    created meanwhile: the key is written to a private temporary file which is then hard-linked
    into place, so nobody ever sees it empty or half written."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = _write_private(path, [key])
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass  # another process won the race: its key is the key
    finally:
        tmp.unlink()


def _replace_key_file(path: Path, keys: list[str]) -> None:
    tmp = _write_private(path, keys)
    os.replace(tmp, path)


def _write_private(path: Path, keys: list[str]) -> Path:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    # O_EXCL: never write a key into a file (or symlink) someone else prepared
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, "".join(f"{k}\n" for k in keys).encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    return tmp
