"""The MCP stdio server (`cortex serve`), on the official SDK.

`tools` is the tool table: each tool's arguments (msgspec types, from which the schemas are
generated), hints and the kernel call it makes; it imports no SDK. `server` wires the table to
the SDK's low-level server and runs calls in worker threads; `wire` repairs what a client sends
before the SDK parses it; `progress` renders the progress channel as notifications and stops a
cancelled call's work. Only `cortex serve` imports this package.
"""
