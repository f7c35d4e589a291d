"""The official MCP Python SDK against mcp-edge: initialize, list tools, call echo.

    python python_client.py <url> <http|sse>

Prints one JSON line with what the server answered. Works with the 1.x line (streamablehttp_client)
and the 2.x line (streamable_http_client).
"""
import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.sse import sse_client

try:
    from mcp.client.streamable_http import streamable_http_client as http_client
except ImportError:
    from mcp.client.streamable_http import streamablehttp_client as http_client


def field(obj, snake: str, camel: str):
    """2.x names fields in snake_case; 1.x as the wire does."""
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


async def run(session: ClientSession) -> dict:
    init = await session.initialize()
    tools = await session.list_tools()
    result = await session.call_tool("echo", {"message": "from python"})
    return {
        "server": field(init, "server_info", "serverInfo").name,
        "protocolVersion": field(init, "protocol_version", "protocolVersion"),
        "tools": [t.name for t in tools.tools],
        "text": result.content[0].text,
        "isError": bool(field(result, "is_error", "isError")),
    }


async def main(url: str, transport: str) -> None:
    connect = http_client if transport == "http" else sse_client
    async with connect(url) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            print(json.dumps(await run(session)))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
