//! Code mode (`"toolDiscovery": "code"`): a model writes one short program against every tool
//! of a server, and mcp-edge runs it in an isolate of its own.

pub mod declarations;
