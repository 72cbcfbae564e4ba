"""Error types of the data package.

Both subclass built-in errors so callers may catch `ValueError` / `FileNotFoundError` without importing
vitjax; the subclasses exist so the CLI can tell "your data is wrong" apart from a bug in the code.
"""


class DataError(ValueError):
    """The data or the data config is unusable; the message names the bad value and the fix."""


class MissingDataError(FileNotFoundError):
    """Data that must be on disk (we never download at run time) is not there; the message says how to get it."""
