"""The credential vault: the key file, environment keys, rotation, placeholders, redaction and the
secret store (ciphertext and host bindings only)."""

from __future__ import annotations

import base64
import json
import os
import stat
import threading
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from cryptography.fernet import Fernet

from steward.domain.clock import SimulatedClock
from steward.domain.secrets import placeholder, placeholders_in, substitute
from steward.errors import ConfigError, NotFound, UsageError
from steward.sentinel.vault import (
    KEY_FILE,
    Redactor,
    Vault,
    VaultKeys,
    generate_key,
    retire_old_keys,
    rotate_key_file,
)
from steward.store import Store
from steward.store.vault import normalize_hosts

NO_ENV: dict[str, str] = {}


@pytest.fixture
def secret_store(store: Store) -> Store:
    return store


# --- keys ----------------------------------------------------------------------------------


def test_key_file_is_created_0600_on_first_run_and_reused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    keys = VaultKeys.load(data, environ=NO_ENV)
    path = data / KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert keys.source == str(path)
    assert [f.name for f in data.iterdir()] == [KEY_FILE]  # no temporary file left behind

    token = Vault(keys).encrypt("hunter2")
    assert "hunter2" not in token
    again = VaultKeys.load(data, environ=NO_ENV)
    assert again.keys == keys.keys
    assert Vault(again).decrypt(token) == "hunter2"
    path.chmod(0o400)  # read-only for the owner is fine too
    assert VaultKeys.load(data, environ=NO_ENV).keys == keys.keys


def test_first_run_race_yields_one_key(tmp_path: Path) -> None:
    """Processes starting together must not each create (and use) a key of their own."""
    data = tmp_path / "data"
    found: list[tuple[str, ...]] = []
    barrier = threading.Barrier(8)

    def load() -> None:
        barrier.wait()
        found.append(VaultKeys.load(data, environ=NO_ENV).keys)

    threads = [threading.Thread(target=load) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(found) == 8
    assert len(set(found)) == 1


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o602])
def test_key_file_accessible_to_others_is_refused(tmp_path: Path, mode: int) -> None:
    VaultKeys.load(tmp_path, environ=NO_ENV)
    path = tmp_path / KEY_FILE
    os.chmod(path, mode)
    with pytest.raises(ConfigError, match="chmod 600") as err:
        VaultKeys.load(tmp_path, environ=NO_ENV)
    assert f"{mode:04o}" in str(err.value)
    assert path.read_text().strip() not in str(err.value)


def test_environment_key_takes_precedence_and_no_file_is_written(tmp_path: Path) -> None:
    key = generate_key()
    keys = VaultKeys.load(tmp_path, environ={"STEWARD_VAULT_KEY": key})
    assert keys.keys == (key,)
    assert keys.source == "$STEWARD_VAULT_KEY"
    assert not (tmp_path / KEY_FILE).exists()
    # what the vault writes, the plain Fernet key opens: the key really is the one given
    assert Fernet(key).decrypt(Vault(keys).encrypt("s3cret").encode()) == b"s3cret"


def test_malformed_keys_are_refused_without_echoing_them(tmp_path: Path) -> None:
    bad = "not-a-fernet-key-but-a-long-enough-string"
    with pytest.raises(ConfigError, match="not a Fernet key") as err:
        VaultKeys.load(tmp_path, environ={"STEWARD_VAULT_KEY": bad})
    assert bad not in str(err.value)
    with pytest.raises(ConfigError, match="#2"):
        VaultKeys.load(
            tmp_path,
            environ={"STEWARD_VAULT_KEY": generate_key(), "STEWARD_VAULT_OLD_KEYS": bad},
        )


def test_empty_key_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / KEY_FILE
    path.write_text("# only a comment\n")
    path.chmod(0o600)
    with pytest.raises(ConfigError, match="holds no key"):
        VaultKeys.load(tmp_path, environ=NO_ENV)


# --- rotation ------------------------------------------------------------------------------


async def test_key_file_rotation_rewraps_every_secret(
    secret_store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    p1 = await secret_store.persons.create_person(name="a", now=clock.now())
    p2 = await secret_store.persons.create_person(name="b", now=clock.now())
    old = Vault(VaultKeys.load(tmp_path, environ=NO_ENV))
    plain = {(p1.id, "mail"): "pw-one", (p1.id, "api"): "pw-two", (p2.id, "mail"): "pw-three"}
    for (person_id, name), value in plain.items():
        await secret_store.secrets.put_secret(
            person_id=person_id,
            name=name,
            ciphertext=old.encrypt(value),
            hosts=["mail.example.com"],
            now=clock.now(),
        )
    before = {k: (await secret_store.secrets.secret_ciphertext(*k))[1] for k in plain}

    rotated_keys = rotate_key_file(tmp_path)
    assert len(rotated_keys.keys) == 2
    assert rotated_keys.keys[1] == old.keys.keys[0]
    assert stat.S_IMODE((tmp_path / KEY_FILE).stat().st_mode) == 0o600
    rotated = Vault(rotated_keys)
    # the old key still decrypts until the secrets are rewrapped
    assert {k: rotated.decrypt(v) for k, v in before.items()} == plain

    clock.advance(timedelta(minutes=5))
    assert await secret_store.secrets.rewrap_secrets(rotated.rotate, now=clock.now()) == 3
    after = {k: (await secret_store.secrets.secret_ciphertext(*k)) for k in plain}
    for k, (info, ciphertext) in after.items():
        assert ciphertext != before[k]
        assert info.rotated_at == clock.now()
        with pytest.raises(ConfigError, match="no vault key"):
            old.decrypt(ciphertext)

    current = Vault(retire_old_keys(tmp_path))
    assert current.keys.keys == rotated_keys.keys[:1]
    assert {k: current.decrypt(ct) for k, (_, ct) in after.items()} == plain
    with pytest.raises(ConfigError, match="no vault key"):
        current.decrypt(before[(p1.id, "mail")])


def test_environment_old_keys_still_decrypt(tmp_path: Path) -> None:
    old_key, new_key = generate_key(), generate_key()
    old = Vault(VaultKeys.load(tmp_path, environ={"STEWARD_VAULT_KEY": old_key}))
    token = old.encrypt("value")
    both = Vault(
        VaultKeys.load(
            tmp_path,
            environ={"STEWARD_VAULT_KEY": new_key, "STEWARD_VAULT_OLD_KEYS": f" , {old_key} ,"},
        )
    )
    assert both.decrypt(token) == "value"
    rewrapped = both.rotate(token)
    assert Fernet(new_key).decrypt(rewrapped.encode()) == b"value"
    with pytest.raises(ConfigError):
        old.decrypt(rewrapped)


async def test_rewrap_is_all_or_nothing(
    secret_store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    person = await secret_store.persons.create_person(name="a", now=clock.now())
    vault = Vault(VaultKeys.load(tmp_path, environ=NO_ENV))
    stranger = Vault(VaultKeys.load(tmp_path, environ={"STEWARD_VAULT_KEY": generate_key()}))
    for name, v in (("a", vault), ("b", stranger), ("c", vault)):
        await secret_store.secrets.put_secret(
            person_id=person.id, name=name, ciphertext=v.encrypt(name), hosts=["h"], now=clock.now()
        )
    before = [await secret_store.secrets.secret_ciphertext(person.id, n) for n in "abc"]
    with pytest.raises(ConfigError, match="rotation stopped"):
        await secret_store.secrets.rewrap_secrets(vault.rotate, now=clock.now())
    assert [await secret_store.secrets.secret_ciphertext(person.id, n) for n in "abc"] == before


# --- placeholders and redaction --------------------------------------------------------------


def test_placeholders() -> None:
    text = "Authorization: Bearer {{secret:gh.token}} and {{secret:mail-pw}} {{secret:bad name}}"
    assert placeholders_in(text) == {"gh.token", "mail-pw"}
    assert placeholders_in("{{ secret:x }} {{secret:}} {secret:x}") == set()
    assert placeholder("gh.token") == "{{secret:gh.token}}"
    with pytest.raises(ConfigError, match="invalid secret name"):
        placeholder("../etc")
    assert substitute(text, {"gh.token": "T"}) == text.replace("{{secret:gh.token}}", "T")


def test_redactor_finds_encoded_forms() -> None:
    value = 'sk-live/Ab+9 &x"y'
    redactor = Redactor([("api", value)])
    mark = "{{secret:api}}"
    assert redactor.redact(f"key={value}.") == f"key={mark}."
    assert redactor.redact(quote(value, safe="")) == mark
    assert redactor.redact(json.dumps({"k": value})) == json.dumps({"k": mark})
    for prefix in ("", "u", "us", "Bearer "):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(f"{prefix}{value}".encode()).decode()
            assert redactor.found_in(encoded), (prefix, encoded)
            assert mark in redactor.redact(encoded)
    # a short secret is redacted as itself, but its base64 fragments are too short to look for
    short = Redactor([("pin", "1234")])
    assert short.redact("pin 1234") == "pin {{secret:pin}}"
    assert short.redact("MTIzNA== MjM0") == "MTIzNA== MjM0"
    assert Redactor([]).redact("nothing") == "nothing"


def test_redactor_maps_each_value_to_its_own_handle() -> None:
    redactor = Redactor([("a", "first-secret-value"), ("b", "second-secret-value")])
    text = "first-secret-value / second-secret-value"
    assert redactor.redact(text) == "{{secret:a}} / {{secret:b}}"


# --- the secret store ------------------------------------------------------------------------


async def test_secret_store_keeps_ciphertext_and_bindings_per_person(
    secret_store: Store, clock: SimulatedClock
) -> None:
    a = await secret_store.persons.create_person(name="a", now=clock.now())
    b = await secret_store.persons.create_person(name="b", now=clock.now())
    info = await secret_store.secrets.put_secret(
        person_id=a.id,
        name="github",
        ciphertext="ct-1",
        hosts=["API.GitHub.com.", "api.github.com", "[::1]"],
        now=clock.now(),
    )
    assert info.hosts == ("api.github.com", "::1")
    assert info.rotated_at is None
    assert not hasattr(info, "ciphertext")

    clock.advance(timedelta(hours=1))
    replaced = await secret_store.secrets.put_secret(
        person_id=a.id,
        name="github",
        ciphertext="ct-2",
        hosts=["uploads.github.com"],
        now=clock.now(),
    )
    assert (replaced.id, replaced.created_at) == (info.id, info.created_at)
    assert replaced.rotated_at == clock.now()
    assert await secret_store.secrets.secret_ciphertext(a.id, "github") == (replaced, "ct-2")

    # person b neither sees nor reaches a's secret, and may own one of the same name
    assert await secret_store.secrets.list_secrets(b.id) == []
    with pytest.raises(NotFound):
        await secret_store.secrets.secret_ciphertext(b.id, "github")
    with pytest.raises(NotFound):
        await secret_store.secrets.delete_secret(b.id, "github", now=clock.now())
    other = await secret_store.secrets.put_secret(
        person_id=b.id, name="github", ciphertext="ct-b", hosts=["api.github.com"], now=clock.now()
    )
    assert other.id != info.id
    assert [s.name for s in await secret_store.secrets.list_secrets(a.id)] == ["github"]
    with pytest.raises(ConfigError, match="invalid secret name"):
        await secret_store.secrets.put_secret(
            person_id=a.id, name="a b", ciphertext="ct", hosts=["h"], now=clock.now()
        )
    with pytest.raises(UsageError, match="host"):
        await secret_store.secrets.put_secret(
            person_id=a.id, name="x", ciphertext="ct", hosts=["*.h"], now=clock.now()
        )

    await secret_store.secrets.delete_secret(a.id, "github", now=clock.now())
    assert await secret_store.secrets.list_secrets(a.id) == []
    assert (await secret_store.secrets.secret_ciphertext(b.id, "github"))[1] == "ct-b"


@pytest.mark.parametrize(
    "hosts",
    [[], ["*.github.com"], ["https://api.github.com"], ["api.github.com:443"], ["a/b"], [""]],
)
def test_secret_hosts_must_be_exact_host_names(hosts: list[str]) -> None:
    with pytest.raises(UsageError, match="host"):
        normalize_hosts(hosts)
