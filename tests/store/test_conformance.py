"""The store conformance suite (:mod:`steward.testing.store_conformance`) on SQLite and
PostgreSQL: every test runs once per backend through the ``store`` fixture of
``tests/conftest.py`` (parametrized over both, a fresh database each), with its ``clock``.
"""

from steward.testing.store_conformance.approvals import *  # noqa: F403
from steward.testing.store_conformance.channels import *  # noqa: F403
from steward.testing.store_conformance.control import *  # noqa: F403
from steward.testing.store_conformance.effects import *  # noqa: F403
from steward.testing.store_conformance.goals import *  # noqa: F403
from steward.testing.store_conformance.history import *  # noqa: F403
from steward.testing.store_conformance.mailchannel import *  # noqa: F403
from steward.testing.store_conformance.reports import *  # noqa: F403
from steward.testing.store_conformance.schedule import *  # noqa: F403
from steward.testing.store_conformance.tasks import *  # noqa: F403
from steward.testing.store_conformance.watches import *  # noqa: F403
