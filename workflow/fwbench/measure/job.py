"""What every measuring job (a bench cell, an export) does alike around its work: a failure
recorded as data, and a watchdog that records a job outliving its timeout and ends it, even
when the main thread is stuck inside a framework's C code."""

from __future__ import annotations

import os
import shutil
import sys
import threading
import traceback
from collections.abc import Callable

from fwbench.io.dims import STATUS_FAILED
from fwbench.io.joblog import flush_all

TRACEBACK_TAIL_LINES = 15


def failure_attrs(error: BaseException) -> dict[str, str]:
    lines = traceback.format_exception(error)
    tail = "".join(lines).splitlines()[-TRACEBACK_TAIL_LINES:]
    return {
        "status": STATUS_FAILED,
        "error_type": type(error).__name__,
        "error_message": str(error) or type(error).__name__,
        "traceback_tail": "\n".join(tail),
    }


class Watchdog:
    """Calls `record(error)` and ends the process when the job outlives `timeout_s`, unless
    the main path claimed the output first; `what` names the setting in the error."""

    def __init__(
        self,
        record: Callable[[BaseException], None],
        timeout_s: float,
        scratch: str,
        what: str = "bench.timeout_s",
    ) -> None:
        self._record, self._timeout_s, self._scratch, self._what = record, timeout_s, scratch, what
        self._lock = threading.Lock()
        self._done = False
        self._timer = threading.Timer(timeout_s, self._fire)
        self._timer.daemon = True

    def __enter__(self) -> Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def claim(self) -> bool:
        """True for the one writer (main path or watchdog) that may write the output."""
        with self._lock:
            if self._done:
                return False
            self._done = True
            return True

    def _fire(self) -> None:
        if not self.claim():
            return
        error = TimeoutError(f"still running after {self._what}={self._timeout_s} s")
        self._record(error)
        print(f"fwbench: {error}", file=sys.stderr, flush=True)
        flush_all()  # os._exit skips every buffer's flush
        shutil.rmtree(self._scratch, ignore_errors=True)
        os._exit(0)
