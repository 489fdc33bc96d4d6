"""Serving the operator API inside the daemon's event loop.

``open_api`` (called by wiring at start-up, before READY=1) reads the token, binds the
socket itself (so a taken port or a bad address is a config error, exit 78, naming
``api.host``/``api.port``, before any loop ticks), subscribes the metrics to the event bus,
registers the history sampler on Delta, and starts uvicorn's ``Server.serve`` as a task
of the daemon's event loop.
uvicorn installs no signal handlers here (the daemon owns SIGTERM and SIGINT) and writes
no access log; on shutdown the server stops accepting, finishes requests in flight for up
to ``SHUTDOWN_S`` and is then cancelled, before the Grimoire closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Generator, Mapping
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

import anyio
import structlog
import uvicorn

from golem.api.app import build_app
from golem.api.history import HistorySampler
from golem.api.metrics import GolemMetrics
from golem.api.sources import Sources
from golem.api.token import load_token
from golem.errors import ConfigError
from golem.runtime.daemon import SetupContext

if TYPE_CHECKING:
    from golem.actions.execution import Executor
    from golem.cognition.model import ModelCognition
    from golem.grimoire.grimoire import Grimoire

log = structlog.get_logger("golem.api")
SHUTDOWN_S = 3.0


class _Server(uvicorn.Server):
    """uvicorn's server without its signal handlers: the daemon owns the signals."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket; ConfigError naming the keys when it cannot be had."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_NUMERICSERV)
    except socket.gaierror as exc:
        raise ConfigError(f"api.host: cannot resolve {host!r}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"api.port: cannot listen on {host}:{port}: {exc.strerror}") \
            from None
    sock.setblocking(False)
    return sock


async def open_api(ctx: SetupContext, stack: AsyncExitStack, grimoire: Grimoire, *,
                   model: ModelCognition | None = None, executor: Executor | None = None,
                   environ: Mapping[str, str] = os.environ) -> Sources:
    """Start the API for this run; it stops when ``stack`` unwinds. Returns its sources."""
    cfg = ctx.config.api
    token = load_token(ctx.config, environ)
    sources = Sources(ctx.config, ctx.clock.now, ctx.loops, grimoire, model, executor)
    metrics = GolemMetrics(sources)
    stack.callback(ctx.events.subscribe(metrics.observe))
    history = await anyio.to_thread.run_sync(HistorySampler.open, sources)
    stack.callback(history.close)
    ctx.registry.register("delta", history)
    sock = bind(cfg.host, cfg.port)
    stack.callback(sock.close)
    server = _Server(uvicorn.Config(
        build_app(sources, metrics, history, token), log_config=None, access_log=False,
        lifespan="off", server_header=False, proxy_headers=False,
        timeout_graceful_shutdown=int(SHUTDOWN_S), limit_concurrency=256,
        h11_max_incomplete_event_size=16 * 1024))
    # A task of the daemon's event loop (asyncio underneath anyio here). Not a task group
    # entered on ``stack``: the daemon closes the stack from a shielded scope of its own,
    # and a task group must be exited where it was entered.
    task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]),
                                                  name="golem-api")
    task.add_done_callback(_report_crash)

    async def stop() -> None:
        server.should_exit = True
        with anyio.move_on_after(SHUTDOWN_S + 1.0):
            await asyncio.wait({task})
        if not task.done():
            task.cancel()
            await asyncio.wait({task})
        log.info("api stopped")

    stack.push_async_callback(stop)
    host, port = sock.getsockname()[:2]
    log.info("api listening", host=host, port=port, loopback=_loopback(cfg.host))
    return sources


def _report_crash(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("api server stopped unexpectedly", error_type=type(task.exception()).__name__)


def _loopback(host: str) -> bool:
    return host in ("127.0.0.1", "::1", "localhost")
