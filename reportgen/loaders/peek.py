"""Streaming Chrome-trace readers shared by the loaders (timeline, host steps, overlap, step operators).

The one safe reader lives in `reportgen.loaders.common` (regular files only, links out of the run refused, nesting
and numbers bounded); this module keeps the names the Kineto and GPU loaders import. The discovery peeks (rank
ids, world size) live in `reportgen.discover.peek`: discovery imports nothing from the loaders.
"""

from __future__ import annotations

from reportgen.loaders.common import open_binary as open_maybe_gzip, trace_events

__all__ = ["open_maybe_gzip", "trace_events"]
