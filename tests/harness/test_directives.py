"""Every directive a control tool can return has exactly one handler."""

from __future__ import annotations

from typing import get_args

from steward.harness.control import Directive
from steward.harness.directives import HANDLERS


def test_each_directive_type_has_a_handler() -> None:
    assert set(HANDLERS) == set(get_args(Directive))
