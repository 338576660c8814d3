"""Helpers the tests share: plain functions and classes, imported as ``support.<module>``.

``tests/`` is on ``sys.path`` because pytest's default ``prepend`` import mode puts there the
first folder without an ``__init__.py`` above each test module; the fixtures that use these
helpers stay in the ``conftest.py`` files.
"""
