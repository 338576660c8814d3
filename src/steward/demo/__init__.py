"""``steward demo``: the whole system working within a minute, offline, with no API key.

A fresh database gets a person, a token to log in with, the authority an agent works within
(connections, a vault secret, a rule, grants), memories and a learned skill; a fake mail and
calendar service runs on loopback; a scripted model (:mod:`steward.demo.script`) plays the
agent, so everything after the model — scheduling, the sentinel, approvals, the egress broker,
the journal, memory and skill rules — runs for real. See :mod:`steward.demo.run`.
"""

from steward.demo.run import DemoOptions, RunningDemo, default_demo_dir, run_demo, running_demo

__all__ = ["DemoOptions", "RunningDemo", "default_demo_dir", "run_demo", "running_demo"]
