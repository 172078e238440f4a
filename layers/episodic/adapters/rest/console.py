"""``GET /console``: the operator console, one self-contained page served by the API itself.

The page holds no data and no secret: it asks for an operator token, keeps it for the tab's
session only, and calls the same ``/v1`` routes with it as any client would. So it is public
(like the Swagger UI), locally behind ``episodic serve`` and in AWS behind API Gateway.

Its script and style are inlined from ``episodic/console/`` (no build step, no CDN, works
offline), and a Content-Security-Policy allows exactly those two blocks by hash, no other
script, no frames, and requests to this origin only. Memory text is untrusted: the script
only ever puts it into the page as text, never as markup.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources

from aws_lambda_powertools.event_handler import Response

from episodic.adapters.rest.app import app

CONSOLE_PATH = "/console"


@dataclass(frozen=True)
class Page:
    html: str
    policy: str


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@cache
def page() -> Page:
    """The page with its script and style inlined, and the policy that admits only them."""
    folder = resources.files("episodic.console")
    style = folder.joinpath("console.css").read_text(encoding="utf-8")
    script = folder.joinpath("console.js").read_text(encoding="utf-8")
    html = (
        folder.joinpath("index.html")
        .read_text(encoding="utf-8")
        .replace("/*STYLE*/", style)
        .replace("/*SCRIPT*/", script)
    )
    policy = (
        f"default-src 'none'; script-src {_sha256(script)}; style-src {_sha256(style)}; "
        "connect-src 'self'; img-src 'self' data:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
    )
    return Page(html, policy)


@app.get(CONSOLE_PATH, include_in_schema=False)
def get_console() -> Response[str]:
    console = page()
    return Response(
        status_code=200,
        content_type="text/html; charset=utf-8",
        body=console.html,
        headers={
            "Content-Security-Policy": console.policy,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "Cache-Control": "no-store",
        },
    )
