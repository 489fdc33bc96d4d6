"""The golem's wallet: one private key, loaded from a protected file and never shown.

Where the key comes from, in order: `actions.key_file` (a file of mode 0600 or
stricter, owned by us, holding a 0x-hex key); the systemd credential
"golem_wallet_key" ($CREDENTIALS_DIRECTORY/golem_wallet_key); and in simulated
mode only, <data_dir>/wallet/key, created (0600, directory 0700) with a key
derived from golem.seed so the simulated chain replays identically. That derived
key is public knowledge for anyone who knows the seed: it is for simulation only.
The key is never read from TOML or the environment.

The key lives in one private attribute; repr, str and every error we raise name
the address or the path, never the key (eth_account's own errors are not chained,
since they may quote their input).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eth_account import Account
from eth_utils.crypto import keccak

from golem.errors import GolemError

CREDENTIAL = "golem_wallet_key"
SIM_KEY = Path("wallet") / "key"
_SECP256K1_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141


class WalletError(GolemError):
    """The wallet key is missing, unprotected or unreadable (the message never holds it)."""


class Wallet:
    """Signs transactions; exposes only its address."""

    __slots__ = ("__key", "address")

    def __init__(self, key: bytes) -> None:
        try:
            account = Account.from_key(key)
        except Exception:  # eth_account raises several types, some quoting the key
            raise WalletError("the wallet key is not a valid secp256k1 private key") from None
        self.__key = key
        self.address: str = str(account.address)

    def sign_transaction(self, tx: Mapping[str, Any]) -> bytes:
        """The raw signed transaction (bytes ready for eth_sendRawTransaction)."""
        try:
            signed = Account.sign_transaction(dict(tx), self.__key)
        except Exception as exc:  # as above: report the type, never the message
            raise WalletError(f"cannot sign the transaction ({type(exc).__name__})") from None
        return bytes(signed.raw_transaction)

    def __repr__(self) -> str:
        return f"Wallet({self.address})"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError("a Wallet cannot be pickled")


def simulated_key(seed: int) -> bytes:
    """A valid private key derived from the seed (simulation only: anyone can derive it)."""
    counter = 0
    while True:
        key = keccak(f"golem simulated wallet:{seed}:{counter}".encode())
        if 0 < int.from_bytes(key, "big") < _SECP256K1_N:
            return key
        counter += 1


def open_wallet(key_file: str, data_dir: Path, *, simulated: bool, seed: int,
                environ: Mapping[str, str]) -> Wallet:
    """Load the key from key_file, the systemd credential, or (simulated) the data dir."""
    if key_file:
        return Wallet(read_key(Path(key_file).expanduser()))
    creds = environ.get("CREDENTIALS_DIRECTORY", "")
    if creds and (Path(creds) / CREDENTIAL).exists():
        # systemd makes credentials readable by the service only; still check
        return Wallet(read_key(Path(creds) / CREDENTIAL))
    if not simulated:
        raise WalletError("no wallet key: set actions.key_file to a file of mode 0600, or "
                          f"pass the systemd credential {CREDENTIAL!r}")
    path = data_dir / SIM_KEY
    if not path.exists():
        _create_key(path, simulated_key(seed))
    return Wallet(read_key(path))


def _create_key(path: Path, key: bytes) -> None:
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(path.parent, 0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write("0x" + key.hex() + "\n")
            out.flush()
            os.fsync(out.fileno())
    except OSError as exc:
        raise WalletError(f"cannot create the simulated wallet key {path}: "
                          f"{exc.strerror}") from None


def read_key(path: Path) -> bytes:
    """The private key in a file that must be ours and mode 0600; WalletError otherwise
    (the message never holds the key)."""
    try:
        info = path.stat()
    except OSError as exc:
        raise WalletError(f"wallet key file {path}: {exc.strerror}") from None
    if info.st_uid != os.getuid():
        raise WalletError(f"wallet key file {path} is not owned by this user "
                          f"(uid {os.getuid()}); chown it")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise WalletError(f"wallet key file {path} has mode "
                          f"{stat.S_IMODE(info.st_mode):04o}: others can read it; "
                          f"run `chmod 600 {path}`")
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        raise WalletError(f"wallet key file {path} is unreadable") from None
    hexkey = text.removeprefix("0x").removeprefix("0X")
    if len(hexkey) != 64:
        raise WalletError(f"wallet key file {path} must hold one 32-byte hex private key")
    try:
        return bytes.fromhex(hexkey)
    except ValueError:
        raise WalletError(f"wallet key file {path} is not hex") from None
