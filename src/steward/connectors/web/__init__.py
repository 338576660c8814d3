"""The web: a polite fetcher (:mod:`.fetch`), the ``web_read`` tool and the ``web`` connector
whose connections name the private hosts a person lets Steward read."""
