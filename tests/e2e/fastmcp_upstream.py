"""An MCP server written with FastMCP 4 (PyPI `fastmcp`), as an upstream of mcp-edge in
tests/e2e/listen_fanin.test.mjs: Streamable HTTP on 127.0.0.1, with sessions.

    python fastmcp_upstream.py <port>

Tools: grow (adds a tool named by its argument, and says so on the call's own stream, before
its result, as FastMCP's Context sends a notification: related to the request).
"""
import sys

import mcp.types as mcp_types
from fastmcp import Context, FastMCP
from fastmcp.tools import Tool

mcp = FastMCP("fastmcp-upstream")


@mcp.tool
async def grow(name: str, ctx: Context) -> str:
    """Adds a tool named `name`."""

    def grown() -> str:
        return name

    mcp.add_tool(Tool.from_function(grown, name=name, description=f"grown {name}"))
    await ctx.send_notification(mcp_types.ToolListChangedNotification())
    return f"grew {name}"


mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), show_banner=False)
