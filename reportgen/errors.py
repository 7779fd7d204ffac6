"""Domain exceptions. The CLI maps every `ReportError` to a one-line message and exit code 2."""

from __future__ import annotations


class ReportError(Exception):
    """Base class for errors the user can act on."""


class NoProfilingData(ReportError):
    """Nothing recognisable was found under the run folder."""


class OutputError(ReportError):
    """The output location cannot be written safely."""
