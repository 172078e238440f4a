"""What every page the API serves to a browser is sent with: the operator console and the
Swagger UI alike.

Each page inlines its own scripts and styles (no CDN: it works offline), and its
Content-Security-Policy admits exactly those blocks, by their SHA-256, and nothing from
anywhere but this origin: no other script, no frames around it or in it, no form posting
elsewhere. Pages are never framed (``frame-ancestors 'none'`` and ``X-Frame-Options: DENY``),
never sniffed as another type, never named in a referrer, never cached.
"""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache

from episodic.domain import linear

_INLINE = linear.compile(r"<(?P<tag>script|style)>(?P<body>.*?)</(?:script|style)>", dot_all=True)
"""An inline block, as a browser reads one: it ends at the first closing tag."""

HEADERS = {"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"}
"""For every response a browser may load, pages and their documents alike."""


def browser_headers(html: str | None) -> dict[str, str]:
    """:data:`HEADERS`, and for a page (``html``) its policy and no caching."""
    if html is None:
        return dict(HEADERS)
    return {**HEADERS, "Content-Security-Policy": page_policy(html), "Cache-Control": "no-store"}


@lru_cache(maxsize=4)
def page_policy(html: str) -> str:
    """A Content-Security-Policy that admits exactly the inline ``<script>`` and ``<style>`` blocks
    of ``html`` and otherwise this origin only (requests, images)."""
    admitted: dict[str, list[str]] = {"script": [], "style": []}
    for block in _INLINE.finditer(html):
        digest = base64.b64encode(hashlib.sha256(block.group("body").encode()).digest()).decode()
        admitted[block.group("tag")].append(f"'sha256-{digest}'")
    scripts, styles = (" ".join(admitted[tag]) or "'none'" for tag in ("script", "style"))
    return (
        f"default-src 'none'; script-src {scripts}; style-src {styles}; connect-src 'self'; "
        "img-src 'self' data:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
    )
