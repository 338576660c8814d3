"""The harness: one activation of an agent task done right — context, model loop, tools,
authorization checks, observations, write-back. It knows nothing of scheduling."""
