"""The MCP stdio server (`cortex serve`).

Not built yet: the server arrives with the MCP issue and will call the same kernel functions as
the CLI. Nothing in this package is imported by any other command.
"""
