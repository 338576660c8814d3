"""The person's environment: what persists across their tasks besides memory and task state.

The workspace (:mod:`~steward.environment.files`), the files the agent keeps for the person (the
same directory where large tool outputs become artifacts), within a quota
(:mod:`~steward.environment.quota`), each file's origin kept outside it
(:mod:`~steward.environment.provenance`), and a shell that runs commands there under bubblewrap
(:mod:`~steward.environment.sandbox`) — offline, or online to named hosts through a proxy that
goes by the egress broker's address check (:mod:`~steward.environment.proxy`) — offered to the
agent as tools (:mod:`~steward.environment.tools`); the browser with its persistent profile
(:mod:`~steward.environment.browser`).
"""
