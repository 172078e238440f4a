"""``GET /console``: the operator console, one self-contained page served by the API itself.

The page holds no data and no secret: it asks for an operator token, keeps it for the tab's
session only, and calls the same ``/v1`` routes with it as any client would. So it is public
(like the Swagger UI), locally behind ``episodic serve`` and in AWS behind API Gateway.

Its script and style are inlined from ``episodic/entrypoints/rest/console_page/`` (no build step, no CDN, works
offline), and its headers (:mod:`episodic.entrypoints.rest.browser`) admit exactly those two
blocks by hash, no other script, no frames, and requests to this origin only. Memory text is
untrusted: the script only ever puts it into the page as text, never as markup.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from aws_lambda_powertools.event_handler import Response

from episodic.entrypoints.rest.app import app
from episodic.entrypoints.rest.browser import browser_headers

CONSOLE_PATH = "/console"


@cache
def page() -> str:
    """The page with its script and style inlined."""
    folder = resources.files("episodic.entrypoints.rest.console_page")
    style = folder.joinpath("console.css").read_text(encoding="utf-8")
    script = folder.joinpath("console.js").read_text(encoding="utf-8")
    return (
        folder.joinpath("index.html")
        .read_text(encoding="utf-8")
        .replace("/*STYLE*/", style)
        .replace("/*SCRIPT*/", script)
    )


@app.get(CONSOLE_PATH, include_in_schema=False)
def get_console() -> Response[str]:
    html = page()
    return Response(status_code=200, content_type="text/html; charset=utf-8", body=html, headers=browser_headers(html))
