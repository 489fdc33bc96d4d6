"""The JSON-RPC client's errors, apart from the client: capture and the block reader
catch them in every chain mode, and importing them must not load the HTTP and
WebSocket stacks (aiohttp, websockets: ~8 MB) that only RPC mode uses."""

from __future__ import annotations

from golem.errors import EXIT_TEMPFAIL, GolemError


class RpcError(GolemError):
    """The node could not be asked or answered nonsense: transient, back off and retry."""

    exit_code = EXIT_TEMPFAIL


class RpcRefused(RpcError):
    """The node answered with a JSON-RPC error object."""

    def __init__(self, method: str, code: int, message: str) -> None:
        super().__init__(f"{method}: node error {code}: {message}")
        self.code = code
        self.node_message = message
