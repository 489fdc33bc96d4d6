"""The wallet: where its key may come from, and that the key never shows."""

from __future__ import annotations

import pickle
import stat
from pathlib import Path

import pytest
from eth_account import Account
from hypothesis import given, settings
from hypothesis import strategies as st

from golem.actions.wallet import (
    CREDENTIAL,
    SIM_KEY,
    Wallet,
    WalletError,
    open_wallet,
    simulated_key,
)

KEY = bytes.fromhex("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")
ADDRESS = Account.from_key(KEY).address


def key_file(path: Path, mode: int, text: str = "0x" + KEY.hex()) -> Path:
    path.write_text(text + "\n")
    path.chmod(mode)
    return path


def test_a_key_file_readable_by_others_is_refused_naming_path_and_fix(tmp_path: Path) -> None:
    path = key_file(tmp_path / "wallet.key", 0o644)
    with pytest.raises(WalletError) as err:
        open_wallet(str(path), tmp_path / "data", simulated=False, seed=1, environ={})
    message = str(err.value)
    assert str(path) in message and "chmod 600" in message and "0644" in message
    assert KEY.hex() not in message
    key_file(path, 0o640)  # group-readable is refused too
    with pytest.raises(WalletError):
        open_wallet(str(path), tmp_path / "data", simulated=False, seed=1, environ={})


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_a_protected_key_file_is_accepted(tmp_path: Path, mode: int) -> None:
    path = key_file(tmp_path / "wallet.key", mode)
    wallet = open_wallet(str(path), tmp_path / "data", simulated=True, seed=1, environ={})
    assert wallet.address == ADDRESS
    assert not (tmp_path / "data" / SIM_KEY).exists()  # the key file wins in simulation too


def test_the_systemd_credential_is_used_when_no_key_file_is_set(tmp_path: Path) -> None:
    creds = tmp_path / "creds"
    creds.mkdir()
    key_file(creds / CREDENTIAL, 0o400, KEY.hex())  # bare hex works as well
    wallet = open_wallet("", tmp_path / "data", simulated=False, seed=1,
                         environ={"CREDENTIALS_DIRECTORY": str(creds)})
    assert wallet.address == ADDRESS


def test_outside_simulation_a_missing_key_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(WalletError, match=r"actions\.key_file"):
        open_wallet("", tmp_path / "data", simulated=False, seed=1,
                    environ={"CREDENTIALS_DIRECTORY": str(tmp_path)})
    assert not (tmp_path / "data").exists()


def test_simulation_creates_a_0600_key_from_the_seed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = open_wallet("", data, simulated=True, seed=7, environ={})
    path = data / SIM_KEY
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    again = open_wallet("", data, simulated=True, seed=7, environ={})
    elsewhere = open_wallet("", tmp_path / "other", simulated=True, seed=7, environ={})
    assert first.address == again.address == elsewhere.address  # replays identically
    assert open_wallet("", tmp_path / "x", simulated=True, seed=8,
                       environ={}).address != first.address
    path.chmod(0o644)  # a loosened key is refused like any other
    with pytest.raises(WalletError, match="chmod 600"):
        open_wallet("", data, simulated=True, seed=7, environ={})


@pytest.mark.parametrize("text", ["not a key", "0x" + "zz" * 32, "0x1234"])
def test_a_malformed_key_file_is_refused_without_quoting_it(tmp_path: Path, text: str) -> None:
    path = key_file(tmp_path / "wallet.key", 0o600, text)
    with pytest.raises(WalletError) as err:
        open_wallet(str(path), tmp_path, simulated=False, seed=1, environ={})
    assert text not in str(err.value) and err.value.__cause__ is None


def test_the_key_never_shows(tmp_path: Path) -> None:
    wallet = Wallet(KEY)
    shown = [repr(wallet), str(wallet), f"{wallet}", repr(vars(type(wallet)))]
    assert all(KEY.hex() not in s and KEY.hex().upper() not in s for s in shown)
    assert ADDRESS in repr(wallet)
    assert not hasattr(wallet, "__dict__")
    with pytest.raises(TypeError):
        pickle.dumps(wallet)
    with pytest.raises(WalletError) as err:  # eth_account's error is not chained
        wallet.sign_transaction({"to": "not an address", "nonce": -1})
    assert KEY.hex() not in str(err.value) and err.value.__cause__ is None
    assert err.value.__context__ is None or err.value.__suppress_context__
    with pytest.raises(WalletError) as bad:
        Wallet(b"\x00" * 32)
    assert bad.value.__cause__ is None and bad.value.__suppress_context__


def test_signing_is_deterministic_and_recovers_the_address() -> None:
    """RFC 6979 signatures: the same transaction signs to the same bytes (replay)."""
    wallet = Wallet(KEY)
    raw = wallet.sign_transaction({"to": ADDRESS, "value": 1, "nonce": 0, "gas": 21_000,
                                   "maxFeePerGas": 2, "maxPriorityFeePerGas": 1,
                                   "chainId": 31337})
    assert Account.recover_transaction(raw) == ADDRESS
    assert wallet.sign_transaction({"to": ADDRESS, "value": 1, "nonce": 0, "gas": 21_000,
                                    "maxFeePerGas": 2, "maxPriorityFeePerGas": 1,
                                    "chainId": 31337}) == raw


@settings(max_examples=50)
@given(st.integers(min_value=0, max_value=2**63 - 1))
def test_every_seed_derives_a_valid_key(seed: int) -> None:
    key = simulated_key(seed)
    assert len(key) == 32
    assert Wallet(key).address == Account.from_key(key).address
