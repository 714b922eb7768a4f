"""The use cases and their rules: open, record, status, audit, configuration, workspace identity.

The CLI and the MCP server call these functions and render what they return; no business logic
lives in a surface. Nothing here reads the environment or touches the terminal: callers pass the
environment in.
"""
