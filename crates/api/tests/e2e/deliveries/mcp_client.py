"""An MCP client on the official Python SDK (`mcp` from PyPI), for the end-to-end tests.

Reads {"url", "key", "calls": [[tool, arguments], ...]} on stdin, connects over Streamable
HTTP with the key as a bearer token, lists the tools, calls each in turn and prints
{"tools": {name: input schema}, "results": [{"tool", "is_error", "structured", "text"}]}
as JSON; a connection that fails prints {"failed": "<why>"}.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


async def main(case):
    headers = {"Authorization": f"Bearer {case['key']}"}
    async with streamablehttp_client(case["url"], headers=headers) as (read, write, _):
        async with ClientSession(read, write) as session:
            info = await session.initialize()
            listed = await session.list_tools()
            out = {
                "server": info.serverInfo.name,
                "tools": {t.name: t.inputSchema for t in listed.tools},
                "descriptions": {t.name: t.description for t in listed.tools},
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
