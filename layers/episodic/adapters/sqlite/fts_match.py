"""What the local full-text table holds and how recall's BM25 search is phrased to it.

Each episode has one row in ``episodes_search``: its tenant, as one word in a column of its
own, and its text (:meth:`~episodic.domain.model.Episode.search_text`).

Why a tenant column: FTS5 scores every row that holds a word of the query before SQLite can keep
the caller's, so in a data dir shared by tenants a small tenant's search paid for every other
tenant's texts (a small tenant beside a hundred times larger one with the same words paid many
times its own search: ``benchmarks/recall_at_scale.py``). Asked as ``tenant : <word> AND text : (...)``,
FTS5 scores the tenant's own rows only. It is asked that way only of a tenant that holds a
small share of the rows (:meth:`~.fts_terms.TermFrequencies.holds_few`): for one that holds
most of them, walking its long list of rows costs more than the other tenants' scores did.

Why the scores stay the text's BM25: :data:`RANK` gives the tenant column weight 0, so the tenant
word adds nothing and both forms of a query give a text the same score. The column does add one
word to each row's length, which FTS5's BM25 counts over all columns: its length normalisation
reads ``(D + 1) / (avgdl + 1)`` instead of ``D / avgdl`` (measured on the conversation
benchmark, README).
"""

from __future__ import annotations

import hashlib

RANK = "bm25(0.0, 1.0)"
"""FTS5's rank for every search: the tenant column scores nothing, the text column as BM25."""


def tenant_token(tenant_id: str) -> str:
    """The tenant as the one word of its rows' tenant column: a hash in lower-case letters and
    digits, so any tenant id is one token to the tokenizer whatever characters it holds, and no
    two tenants share one (a shared word would only cost speed: the scope keeps each tenant's
    own rows either way)."""
    return "t" + hashlib.blake2b(tenant_id.encode(), digest_size=12).hexdigest()


def text_match(words: list[str]) -> str:
    """Any of ``words`` (one or more, from :func:`~episodic.domain.recall.query.lexical_terms`) in the text
    column: each quoted, OR-ed (BM25 grades the rest). FTS5 has no stop-word list of its own;
    OpenSearch's ``english`` analyzer and bm25s drop theirs the same way."""
    return "text : (" + " OR ".join(f'"{w}"' for w in words) + ")"


def tenant_match(tenant_id: str) -> str:
    """Every row of the tenant."""
    return f'tenant : "{tenant_token(tenant_id)}"'


def search(words: list[str], tenant_id: str | None) -> str | None:
    """The match for ``words``, limited inside FTS5 to ``tenant_id``'s rows when one is given."""
    if not words:
        return None
    if tenant_id is None:
        return text_match(words)
    return f"{tenant_match(tenant_id)} AND {text_match(words)}"
