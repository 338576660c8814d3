"""The store conformance suite (:mod:`steward.testing.store_conformance`) on SQLite and
PostgreSQL: every test runs once per backend through the ``store`` fixture of
``tests/conftest.py`` (parametrized over both, a fresh database each), with its ``clock``.
"""

import pytest

pytest.register_assert_rewrite("steward.testing.store_conformance")

from steward.testing.store_conformance.channels import *  # noqa: E402, F403
from steward.testing.store_conformance.control import *  # noqa: E402, F403
from steward.testing.store_conformance.effects import *  # noqa: E402, F403
from steward.testing.store_conformance.goals import *  # noqa: E402, F403
from steward.testing.store_conformance.history import *  # noqa: E402, F403
from steward.testing.store_conformance.mailchannel import *  # noqa: E402, F403
from steward.testing.store_conformance.reports import *  # noqa: E402, F403
from steward.testing.store_conformance.schedule import *  # noqa: E402, F403
from steward.testing.store_conformance.tasks import *  # noqa: E402, F403
from steward.testing.store_conformance.watches import *  # noqa: E402, F403
