"""The MCP stdio server (`cortex serve`), on the official SDK.

`tools` is the tool table: each tool's name, hints and arguments (generated from its use case's
input struct, less what this face withholds); it imports no SDK. `session` is one connection's
state (the lease tokens it holds) and the one call every tool makes; `schemas` publishes what a
tool takes and answers; `actions` writes a next step as a tool call. `server` wires the table to
the SDK's low-level server and runs calls in worker threads; `wire` repairs what a client sends
before the SDK parses it; `progress` renders the progress channel as notifications and stops a
cancelled call's work. Only `cortex serve` imports this package.
"""
