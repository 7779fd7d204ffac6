"""The loaders' safety net: `@guarded` makes a loader entry point that never raises into the report."""

from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import Callable, Optional, TypeVar

from reportgen.loaders.issuelog import IssueLog

F = TypeVar("F", bound=Callable)


def guarded(fn: Optional[F] = None, *, empty: Callable[[], object] = lambda: None):
    """Decorate a loader function taking a `log` parameter: an unexpected exception while it reads a file (a
    defect the loader's own checks missed) becomes an error entry on `log` naming the file, and the function returns
    `empty()` instead, so the rank (and the run) go on. The file named is the first `Path` argument, else the
    first `Path` in a dict argument, else the run folder. Use as `@guarded`, `@guarded(empty=dict)` or
    `guarded(module.function, empty=list)`."""
    if fn is None:
        return lambda f: guarded(f, empty=empty)
    sig = inspect.signature(fn)
    if "log" not in sig.parameters:
        raise TypeError(f"{fn.__qualname__}: a guarded loader names its IssueLog parameter `log`")

    @functools.wraps(fn)
    def run(*args, **kw):
        try:
            return fn(*args, **kw)
        except Exception as e:  # noqa: BLE001 - the safety net: named, never fatal
            bound = sig.bind_partial(*args, **kw).arguments
            log = bound.get("log")
            if not isinstance(log, IssueLog):
                raise
            values = list(bound.values())
            path = next((a for a in values if isinstance(a, Path)), None)
            if path is None:
                path = next((x for a in values if isinstance(a, dict) for x in a.values() if isinstance(x, Path)),
                            log.root)
            log.add(path, f"could not be read ({type(e).__name__}: {str(e)[:160]}); skipped", "error")
            return empty()
    return run
