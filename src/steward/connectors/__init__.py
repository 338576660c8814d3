"""Connectors: the tools through which the agent reaches the person's accounts and services.
Each declares what it touches and the scopes it needs; the sentinel decides every call."""
