"""The tenant word of each episode's row in ``episodes_search``.

Each episode has one row there: its tenant, as one word in a column of its own, and its indexed
text (:func:`~episodic.domain.recall.languages.indexed`). Recall reads the texts into its
in-memory word index (:mod:`.word_index`), tenant by tenant; the tenant column keeps each
tenant's rows findable inside FTS5 as well (:mod:`.upgrade` wrote it for older stores).
"""

from __future__ import annotations

import hashlib


def tenant_token(tenant_id: str) -> str:
    """The tenant as the one word of its rows' tenant column: a hash in lower-case letters and
    digits, so any tenant id is one token to the tokenizer whatever characters it holds, and no
    two tenants share one."""
    return "t" + hashlib.blake2b(tenant_id.encode(), digest_size=12).hexdigest()
