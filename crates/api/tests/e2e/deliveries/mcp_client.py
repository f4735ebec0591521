"""An MCP client on the official Python SDK (`mcp` from PyPI), for the end-to-end tests.

Reads {"url", "key", "calls": [[tool, arguments], ...]} on stdin, connects over Streamable
HTTP with the key as a bearer token (or, given {"command", "args", "env"} instead of "url",
starts that stdio server as the SDK's stdio client does), lists the tools, calls each in turn
and prints
{"tools": {name: input schema}, "output_schemas", "annotations",
 "results": [{"tool", "is_error", "structured", "text"}]}
as JSON (the SDK checks each structured result against the tool's output schema); a connection
or a check that fails prints {"failed": "<why>"}.
"""

import asyncio
import json
import sys

from contextlib import asynccontextmanager

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client


@asynccontextmanager
async def connect(case):
    """The read and write streams of the case's transport."""
    if "command" in case:
        server = StdioServerParameters(
            command=case["command"], args=case["args"], env=case["env"]
        )
        async with stdio_client(server) as (read, write):
            yield read, write
    else:
        headers = {"Authorization": f"Bearer {case['key']}"}
        async with streamablehttp_client(case["url"], headers=headers) as (read, write, _):
            yield read, write


async def main(case):
    async with connect(case) as (read, write):
        async with ClientSession(read, write) as session:
            info = await session.initialize()
            listed = await session.list_tools()
            out = {
                "server": info.serverInfo.name,
                "tools": {t.name: t.inputSchema for t in listed.tools},
                "descriptions": {t.name: t.description for t in listed.tools},
                "output_schemas": {t.name: t.outputSchema for t in listed.tools},
                "annotations": {
                    t.name: t.annotations.model_dump(exclude_none=True) if t.annotations else None
                    for t in listed.tools
                },
                "results": [],
            }
            for tool, arguments in case["calls"]:
                result = await session.call_tool(tool, arguments)
                out["results"].append(
                    {
                        "tool": tool,
                        "is_error": bool(result.isError),
                        "structured": result.structuredContent,
                        "text": [c.text for c in result.content if c.type == "text"],
                    }
                )
            return out


def flatten(error):
    """The messages of an exception group, or of one exception."""
    inner = getattr(error, "exceptions", None)
    if inner:
        return "; ".join(flatten(e) for e in inner)
    return f"{type(error).__name__}: {error}"


if __name__ == "__main__":
    case = json.load(sys.stdin)
    try:
        print(json.dumps(asyncio.run(main(case))))
    except BaseException as error:  # noqa: BLE001 - the test reads why
        print(json.dumps({"failed": flatten(error)}))
