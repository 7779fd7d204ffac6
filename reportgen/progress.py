"""Progress and stage timings on stderr: a bar on a terminal, plain lines in CI logs, never a silent long gap.

`Progress.stage(name)` times one pipeline stage (logged under -v); `Progress.counter(label)` gives a
`(done, total)` callback for loops (ranks loaded, pages written). A heartbeat thread says what is running when a
stage has been quiet for `QUIET_S` seconds, so a long phase without a counter is never silent.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Optional, TextIO

from reportgen import i18n

log = logging.getLogger("msreport")

QUIET_S = 3.0  # a stage quiet this long gets a line (or its bar redrawn)
LINE_EVERY_S = 5.0  # plain-line mode: at most one progress line per counter this often
BAR_WIDTH = 28


class Progress:
    def __init__(self, enabled: bool = True, *, stream: Optional[TextIO] = None, tty: Optional[bool] = None,
                 lang: Optional[str] = None):
        self.enabled = enabled
        self.lang = lang  # the language of the lines (the command's messages); None: the current one
        self.stream = stream or sys.stderr
        self.tty = bool(tty if tty is not None else getattr(self.stream, "isatty", lambda: False)())
        self.timings: list[tuple[str, float]] = []
        self._stage: Optional[str] = None
        self._stage_t0 = 0.0
        self._last_out = time.monotonic()
        self._count: Optional[tuple[str, int, int]] = None
        self._bar_shown = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    # -- stages -----------------------------------------------------------------------------------------------

    def text(self, value: Any) -> str:
        """A stage name or label (a `lazy` message or plain text) in the language of the lines."""
        return value.render(self.lang) if isinstance(value, i18n.Msg) else str(value)

    def info(self, message: Any) -> None:
        """A line about the run (logged at INFO, so -q hides it), in the language of the lines."""
        log.info("%s", self.text(message))

    @contextmanager
    def stage(self, name: Any):
        """Time one stage; under -v its duration is logged ("stage load: 2.31 s"). `name`: a `lazy` message (shown
        in the language of the lines; the timings keep its English text) or plain text."""
        name_en = name.en if isinstance(name, i18n.Msg) else str(name)
        name = self.text(name)
        with self._lock:
            self._stage, self._stage_t0, self._count = name, time.monotonic(), None
            self._last_out = self._stage_t0
        self._start_heartbeat()
        try:
            yield
        finally:
            dt = time.monotonic() - self._stage_t0
            with self._lock:
                self._clear_bar()
                self._stage, self._count = None, None
            self.timings.append((name_en, dt))
            log.debug("stage %s: %.2f s", name_en, dt)

    def counter(self, label: Any) -> Callable[[int, int], None]:
        label = self.text(label)

        def report(done: int, total: int) -> None:
            if not self.enabled:
                return
            with self._lock:
                self._count = (label, done, total)
                now = time.monotonic()
                if self.tty:
                    if now - self._last_out > 0.2 or done == total:
                        self._draw_bar()
                elif total >= 20 and (now - self._last_out >= LINE_EVERY_S or (done == total and self._said(label))):
                    self._line(f"{label} {done}/{total}")
        return report

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1)
        with self._lock:
            self._clear_bar()

    # -- output -----------------------------------------------------------------------------------------------

    def _said(self, label: str) -> bool:
        return self._last_out > self._stage_t0

    def _line(self, text: str) -> None:
        self._clear_bar()
        self.stream.write(f"msreport: {text}\n")
        self.stream.flush()
        self._last_out = time.monotonic()

    def _draw_bar(self) -> None:
        elapsed = time.monotonic() - self._stage_t0
        if self._count is not None:
            label, done, total = self._count
            frac = done / total if total else 1.0
            filled = int(BAR_WIDTH * frac)
            text = f"msreport: {label} [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{total} {elapsed:.0f} s"
        else:
            text = f"msreport: {self._stage} ... {elapsed:.0f} s"
        self.stream.write("\r" + text[:120].ljust(80))
        self.stream.flush()
        self._bar_shown = True
        self._last_out = time.monotonic()

    def _clear_bar(self) -> None:
        if self._bar_shown:
            self.stream.write("\r" + " " * 80 + "\r")
            self.stream.flush()
            self._bar_shown = False

    def _start_heartbeat(self) -> None:
        if not self.enabled or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._beat, name="msreport-progress", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(0.5):
            with self._lock:
                if self._stage is None:
                    continue
                quiet = time.monotonic() - self._last_out
                if self.tty and quiet >= (0.5 if self._bar_shown else QUIET_S):
                    self._draw_bar()
                elif not self.tty and quiet >= QUIET_S + (LINE_EVERY_S if self._said("") else 0):
                    elapsed = time.monotonic() - self._stage_t0
                    if self._count is not None:
                        label, done, total = self._count
                        self._line(f"{self._stage}: {label} {done}/{total} ({elapsed:.0f} s)")
                    else:
                        self._line(f"{self._stage} ... ({elapsed:.0f} s)")
