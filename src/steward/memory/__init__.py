"""Personal context: long-term memory of the person (with provenance, validity and audience)
and learned skills. It fills the harness's :class:`~steward.domain.personal.PersonalContext`
and is reached by interfaces through the service facade."""
