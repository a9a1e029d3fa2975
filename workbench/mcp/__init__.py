"""The MCP face: the same tools and resources as the CLI's agent commands, over stdio.

``server`` wires tools to the service; ``shapes`` holds the structured output models.
"""
