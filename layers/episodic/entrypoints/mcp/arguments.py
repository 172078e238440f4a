"""What a tool call's arguments must be, and what a model is told when they are not.

The MCP SDK validates arguments against each tool's signature, leniently: an argument it does not
know is dropped without a word (``actor_id`` given to a write that acts for its credential's actor
would look accepted), and its error message quotes the rejected values, which may be a secret the
model was about to store. :class:`CheckedServer` refuses unknown arguments by name, and answers a
validation failure with each field and what is wrong with it, never the value; the types themselves
are strict where the API's are (:data:`IsoDatetime`, and ``StrictInt``/``StrictBool`` in the tools'
signatures: ``true`` is no limit, ``"yes"`` no vote).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BeforeValidator, ValidationError

from episodic.domain.model import iso_text

IsoDatetime = Annotated[datetime, BeforeValidator(iso_text)]
"""A time as ISO 8601 text (not a number of seconds, which pydantic would read either way)."""


def problems(invalid: ValidationError) -> str:
    """Each field at fault and what is wrong with it, without the value given."""
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in invalid.errors())


class CheckedServer(MCPServer):
    """The SDK's server, with a tool call's arguments checked by name and its validation errors
    told without the values (see the module docstring)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        schema = next((tool.input_schema for tool in await self.list_tools() if tool.name == name), None)
        known = set((schema or {}).get("properties", {}))
        unknown = sorted(set(arguments) - known) if schema is not None else []  # an unknown tool: the SDK says so
        if unknown:
            takes = ", ".join(sorted(known)) or "no arguments"
            raise ToolError(f"Error executing tool {name}: unknown arguments {', '.join(unknown)} (it takes {takes})")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            if isinstance(error.__cause__, ValidationError):
                raise ToolError(f"Error executing tool {name}: invalid arguments: {problems(error.__cause__)}") from (
                    error.__cause__
                )
            raise
