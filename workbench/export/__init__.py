"""Exports: fragment files now; bundles, agent context files and the MCP server later."""
