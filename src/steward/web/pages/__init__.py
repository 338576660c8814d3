"""The dashboard's pages, one module per area; each has a ``router``."""
