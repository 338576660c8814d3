"""The person's environment: what persists across their tasks besides memory and task state.

Today: the workspace (:mod:`~steward.environment.files`), the files the agent keeps for the
person (the same directory where large tool outputs become artifacts), and a shell that runs
commands there under bubblewrap (:mod:`~steward.environment.sandbox`), offered to the agent as
tools (:mod:`~steward.environment.tools`). Not yet: the browser with its persistent profile, and
network access through the egress broker from the sandbox.
"""
