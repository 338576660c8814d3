"""The security and identity plane: the deterministic system between every action the model
proposes and every real resource — grants, rules, hard limits, the credential vault, the egress
broker and the audit log."""
