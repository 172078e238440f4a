"""Logical IDs that survive regrouping the constructs.

CloudFormation knows a resource by its logical ID, and CDK makes that ID from the resource's
construct path below the stack (``Api/Logs/Resource`` -> ``ApiLogsCD139AD4``). A resource whose
ID changes is *replaced*: a new table, bucket, key, secret or log group, and the old one deleted
or orphaned with its data. The stack first created every function (with its log group and
role), the stream's on-failure queue and the JWT secret at its top level; the concern constructs
that now own them must not rename them. Two rules keep every ID the flat stack had:

* a ``StackLevelScope``'s children get exactly the IDs they would get as children of the stack
  (the stack's ``_allocate_logical_id`` asks ``stack_level_logical_id`` first);
* CDK's own rule for a child called ``Default`` (left out of IDs *and* of the unique ids CDK
  derives other construct ids from, such as a Lambda permission's or an event source
  mapping's): a concern that wraps an existing component (the gateway, the ingestion bus,
  the state machines) takes the component's old id and holds the component as ``Default``.

``tests/infra/test_logical_ids.py`` pins the IDs of the stateful resources and checks this
module's port of CDK's ID algorithm against CDK's own.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import aws_cdk as cdk
from constructs import Construct

HIDDEN_ID = "Default"  # CDK leaves it out of IDs altogether
HIDDEN_FROM_HUMAN_ID = "Resource"  # CDK leaves it out of the readable part, not the hash
HASH_LENGTH = 8
MAX_HUMAN_LENGTH = 240
MAX_ID_LENGTH = 255


class StackLevelScope(Construct):
    """Groups constructs for the reader without renaming them in the template: every resource
    below it is given the logical ID it would have if the scope's children were the stack's."""


def make_unique_id(components: Sequence[str]) -> str:
    """CDK's ``makeUniqueId`` (core/lib/private/uniqueid.ts): the path without ``Default``,
    its non-alphanumeric characters and repeated components dropped, and an MD5 of the path."""
    path = [c for c in components if c != HIDDEN_ID]
    if not path:
        raise ValueError("no components to make an id from")
    if len(path) == 1 and len(_alphanumeric(path[0])) <= MAX_ID_LENGTH:
        return _alphanumeric(path[0])
    digest = hashlib.md5("/".join(path).encode(), usedforsecurity=False).hexdigest()[:HASH_LENGTH].upper()
    human = "".join(_alphanumeric(c) for c in _without_repeats(path) if c != HIDDEN_FROM_HUMAN_ID)
    return human[:MAX_HUMAN_LENGTH] + digest


def stack_level_logical_id(element: cdk.CfnElement) -> str | None:
    """The ID of an element below a ``StackLevelScope`` (the innermost one decides), or None
    when CDK's own naming applies."""
    scopes = element.node.scopes
    for depth in range(len(scopes) - 1, -1, -1):
        if isinstance(scopes[depth], StackLevelScope):
            return make_unique_id([scope.node.id for scope in scopes[depth + 1 :]])
    return None


def _alphanumeric(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "", text)


def _without_repeats(path: Sequence[str]) -> list[str]:
    """CDK's ``removeDupes``: a component the previous one ends with adds nothing readable."""
    kept: list[str] = []
    for component in path:
        if not kept or not kept[-1].endswith(component):
            kept.append(component)
    return kept
