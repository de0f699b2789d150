"""The live progress line and the verdict lines that `trainguard run` writes on stderr while CMD runs.

`Progress` is driven by `supervise.Supervisor` (the main thread updates the progress line, the evaluator
thread writes verdict lines). It draws, and decides nothing: what a line says is the caller's. On a
terminal the progress line keeps the bottom row; elsewhere it is a plain line at most every few seconds.
Message lines, here and in the end-of-run summary, are wrapped within 80 columns by `wrap`.
"""

from __future__ import annotations

import shutil
import textwrap
import threading
import time
from typing import TextIO

WIDTH = 80
"""Columns of a message line (wrapped, later lines indented): a terminal's default width."""


def wrap(text: str, *, prefix: str = "", width: int = WIDTH) -> str:
    """`text` in lines of at most `width` columns, the first one after `prefix`, the others indented. A word
    longer than a line (a path, a URI) stays whole on a line of its own, so it can be copied."""
    return textwrap.fill(
        text, width=width, initial_indent=prefix, subsequent_indent="    ", break_long_words=False,
        break_on_hyphens=False,
    )  # fmt: skip


class Progress:
    """The live progress line and the rule lines on stderr.

    On a terminal the progress line sits on the bottom row, outside a scroll region that holds
    everything else (the way apt draws its progress bar), so CMD's own output scrolls above it and
    never mixes with it; it is redrawn only when its text changes. Elsewhere (CI logs, pipes) a
    plain line is written at most every `interval_seconds`, and only when the step moved. Rule
    lines are written at once. Thread-safe: the evaluator thread prints rule lines.
    """

    def __init__(
        self, stream: TextIO, *, tty: bool | None = None, interval_seconds: float = 10.0, quiet: bool = False
    ):
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.interval_seconds = interval_seconds
        self.quiet = quiet
        self._lock = threading.Lock()
        self._rows = 0
        self._drawn = ""
        self._last_line_at = 0.0
        self._last_step: int | None = None

    def start(self) -> None:
        """Reserve the terminal's bottom row for the progress line (terminals only)."""
        if self.quiet or not self.tty:
            return
        rows = shutil.get_terminal_size((80, 0)).lines
        if rows < 4:
            return
        with self._lock:
            self._rows = rows
            # newline first, so the cursor's line is not the one taken away; then save cursor, set
            # the scroll region to rows 1..N-1, restore the cursor inside it.
            self.stream.write(f"\n\x1b7\x1b[1;{rows - 1}r\x1b8\x1b[1A")
            self.stream.flush()

    def line(self, text: str) -> None:
        """Write a message on its own line (wrapped within `WIDTH` columns)."""
        if self.quiet:
            return
        with self._lock:
            self.stream.write(wrap(text, prefix="[trainguard] ") + "\n")
            self.stream.flush()

    def update(
        self,
        *,
        step: int | None,
        findings: int,
        critical: int,
        elapsed_seconds: float,
        loss: float | None = None,
    ) -> None:
        if self.quiet:
            return
        where = "waiting for the first saved step" if step is None else f"step {step}"
        text = f"[trainguard] {where}"
        text += "" if loss is None else f" | loss {loss:.4g}"
        text += f" | findings: {findings}"
        text += f" ({critical} critical)" if critical else ""
        text += f" | {elapsed_seconds:.0f}s"
        with self._lock:
            if self._rows:
                if text == self._drawn:
                    return
                width = shutil.get_terminal_size((100, 20)).columns - 1
                self.stream.write(f"\x1b7\x1b[{self._rows};1H\x1b[2K\x1b[7m{text[:width]}\x1b[0m\x1b8")
                self._drawn = text
            else:
                now = time.monotonic()
                if step == self._last_step or now - self._last_line_at < self.interval_seconds:
                    return
                self._last_line_at = now
                self._last_step = step
                self.stream.write(text + "\n")
            self.stream.flush()

    def done(self) -> None:
        """Give the bottom row back: reset the scroll region and clear the progress line."""
        with self._lock:
            if self._rows:
                self.stream.write(f"\x1b7\x1b[r\x1b[{self._rows};1H\x1b[2K\x1b8")
                self._rows = 0
            self.stream.flush()
