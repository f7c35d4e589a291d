"""An MCP server written with the official Python SDK (mcp 1.x, FastMCP), as an upstream of
mcp-edge in tests/e2e/mcp_upstream.test.mjs: Streamable HTTP on 127.0.0.1, with sessions.

    python python_upstream.py <port>

Tools: add (a plain result), slow_count (progress and log lines), ask_name (elicitation).
"""
import asyncio
import sys

from pydantic import BaseModel
from mcp.server.fastmcp import Context, FastMCP

mcp = FastMCP("python-upstream", host="127.0.0.1", port=int(sys.argv[1]))


@mcp.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@mcp.tool()
async def slow_count(ctx: Context, steps: int = 3) -> str:
    """Counts to `steps`, reporting progress and logging each step."""
    for i in range(1, steps + 1):
        await asyncio.sleep(0.1)
        await ctx.report_progress(i, steps, f"step {i}/{steps}")
        await ctx.info(f"did step {i}")
    return f"counted to {steps}"


class Name(BaseModel):
    name: str


@mcp.tool()
async def ask_name(ctx: Context) -> str:
    """Asks the client for a name."""
    answer = await ctx.elicit("What is your name?", Name)
    return f"hello {answer.data.name}" if answer.action == "accept" else f"elicitation {answer.action}"


mcp.run("streamable-http")
