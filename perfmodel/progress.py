"""Progress of long work on one line: `  compiled 12/65 kernels (14 s)`.

On a terminal the line is rewritten in place at every count. Written to a file or a pipe (a log, CI,
`2>&1 | tee`), carriage returns would pile every count into one line of thousands of characters, so
there a line is written at the first count, at every tenth of the work, at least every
`QUIET_SECONDS`, and at the last count."""
from __future__ import annotations

import sys
import time
from typing import Callable, Optional, TextIO

QUIET_SECONDS = 30.0  # to a file or pipe: the longest gap between two progress lines


def counter(text: str, stream: Optional[TextIO] = None, enabled: bool = True, t0: Optional[float] = None,
            tty: Optional[bool] = None) -> Callable[[int, int], None]:
    """A progress callback f(j, n) that writes `  {text with j and n} ({seconds} s)`; text is a format string
    naming {j} and {n}, e.g. "scored {j}/{n} runs". stream: where to (default stderr, looked up at each call);
    enabled False: write nothing; t0: the start (time.perf_counter(); default now); tty: whether the stream
    is a terminal (default: its isatty())."""
    start = time.perf_counter() if t0 is None else t0
    last = {"tenth": -1, "at": None}

    def progress(j: int, n: int) -> None:
        if not enabled:
            return
        out = sys.stderr if stream is None else stream
        now = time.perf_counter()
        line = f"  {text.format(j=j, n=n)} ({now - start:.0f} s)"
        is_tty = out.isatty() if tty is None else tty
        if is_tty:
            print(f"\r{line}", end="" if j < n else "\n", file=out, flush=True)
            return
        tenth = 10 * j // max(n, 1)
        if j <= 1 or j >= n or tenth > last["tenth"] or (last["at"] is not None and now - last["at"] >= QUIET_SECONDS):
            print(line, file=out, flush=True)
            last.update(tenth=tenth, at=now)

    return progress
