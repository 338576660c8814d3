"""Code-hosting events: GitHub and GitLab webhook deliveries, checked by each provider's own
scheme and read as typed events (``pr.opened``, ``pr.updated``, ``check.failed``,
``issue.commented``)."""
