"""The dashboard page and its sign-in form, rendered on the server.

The page is a frame: the golem's name and configuration, escaped, and empty chart panels.
``static/dashboard.js`` fills them from the JSON routes every few seconds, inserting any
text it shows (on-chain strings included) as text nodes, never as markup; the charts are
drawn by our own ``static/charts.js``. A Content-Security-Policy allows scripts, styles and
fetches from this server only.
"""

from __future__ import annotations

import html
from importlib import resources
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from golem import __version__
from golem.api.guard import SESSION_COOKIE, SESSION_TTL_S, Guard
from golem.api.sources import Sources

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
HEADERS = {"content-security-policy": CSP, "x-content-type-options": "nosniff",
           "referrer-policy": "no-referrer", "cache-control": "no-store"}


def template(name: str) -> str:
    return resources.files("golem.api").joinpath(f"static/{name}").read_text("utf-8")


def signin_page(message: str = "") -> bytes:
    """The sign-in form (no golem data): the token goes to POST /signin."""
    note = f'<p class="error">{html.escape(message)}</p>' if message else ""
    return template("signin.html").replace("{{message}}", note).encode()


def dashboard_routes(sources: Sources, guard: Guard) -> list[Route]:
    cfg = sources.config

    async def page(request: Request) -> Response:
        fields = {
            "name": cfg.golem.name, "version": __version__,
            "clock": "real" if cfg.clock.mode == "real" else "simulated",
            "chain": cfg.chain.mode, "namespace": cfg.grimoire.namespace,
            "mortality": "on" if cfg.mortality.enabled else "off",
        }
        text = template("dashboard.html")
        for key, value in fields.items():
            text = text.replace("{{" + key + "}}", html.escape(str(value)))
        return HTMLResponse(text, headers=HEADERS)

    async def signin_form(request: Request) -> Response:
        return HTMLResponse(signin_page(), headers=HEADERS)

    async def signin(request: Request) -> Response:
        form = parse_qs((await request.body()).decode("utf-8", "replace"))
        token = (form.get("token") or [""])[0].strip()
        if not token or not guard.token_matches(token):
            return HTMLResponse(signin_page("That is not this golem's API token."),
                                status_code=401, headers=HEADERS)
        response = RedirectResponse("/", status_code=303, headers=HEADERS)
        response.set_cookie(SESSION_COOKIE, guard.sessions.open(), max_age=int(SESSION_TTL_S),
                            httponly=True, samesite="strict", path="/")
        return response

    async def signout(request: Request) -> Response:
        sid = request.cookies.get(SESSION_COOKIE)
        if sid:
            guard.sessions.close(sid)
        response = RedirectResponse("/", status_code=303, headers=HEADERS)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    return [Route("/", page), Route("/signin", signin_form, methods=["GET"]),
            Route("/signin", signin, methods=["POST"]),
            Route("/signout", signout, methods=["POST"])]
