"""The use cases of the memory service, one module each, over one shared :class:`Deps`.

:class:`episodic.application.service.MemoryService` is a thin facade over them, so entry points keep
calling one object. Each use case is a small class that takes the dependencies it needs and
nothing else; the rules of the product live here and in the domain modules they call.

Invariants every use case keeps:
* the tenant comes from the caller, never from a body, and every read and write is scoped
  to it; another tenant's id answers "not found";
* every policy decision and every forgetting is audited in the same atomic commit as the
  change it describes, and audit records never hold episode text (only ids, reason codes
  and content hashes);
* recall filters first (tenant, scope, status, retention, privacy) and ranks second.
"""
