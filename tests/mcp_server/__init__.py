"""Steward as an MCP server."""
