"""``navigator mcp``: the navigator's runs as MCP tools and resources for coding agents.

``command`` (the typer command and the server's lifetime), ``tools`` (tools and resources),
``runs`` (runs through the Temporal client), ``backend`` (the Temporal session), ``pack``
(the pack within the client's token budget), ``paths`` (allowed roots), ``cancel`` (a
client's cancellation vs. a disconnect), ``models`` (structured outputs).
"""
