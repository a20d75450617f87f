"""One way every job logs: its `log:` file receives everything the process writes.

Redirection is at the file-descriptor level, so what C++ code writes (TensorFlow's and XLA's
logging, oneDNN verbose output, a crash message) lands in the log with Python's own output.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import sys
import traceback
from collections.abc import Iterator
from typing import TextIO

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def flush_all() -> None:
    """Python's streams and C's stdio buffers (C++ code printing through printf/iostream is
    fully buffered when fd 1 is a file): everything written so far reaches the log."""
    sys.stdout.flush()
    sys.stderr.flush()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).fflush(None)


@contextlib.contextmanager
def job_log(path: str | os.PathLike) -> Iterator[TextIO]:
    """For the block: file descriptors 1 and 2, sys.stdout/stderr and the logging root all
    write to `path` (truncated first); yields a line-buffered handle on it. Restored after; an
    exception's traceback is written to the log before it propagates."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    open(path, "w").close()
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    root = logging.getLogger()
    saved_logging = root.handlers[:], root.level
    for handler in saved_logging[0]:
        root.removeHandler(handler)  # set aside, not closed: they are put back after
    # O_APPEND: the handle and the descriptors write at the end whoever writes last.
    with (
        open(path, "a", buffering=1) as log,
        contextlib.redirect_stdout(log),
        contextlib.redirect_stderr(log),
    ):
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        # Python's streams go to the handle as well: they need not be file descriptors 1
        # and 2 (a test runner's capture, say).
        ours = logging.StreamHandler(log)
        ours.setFormatter(logging.Formatter(FORMAT))
        root.addHandler(ours)
        root.setLevel(logging.INFO)
        try:
            yield log
        except SystemExit as error:
            if error.code not in (None, 0):
                traceback.print_exc()
            raise
        except BaseException:
            traceback.print_exc()  # into the log too: the log is where a user looks first
            raise
        finally:
            flush_all()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            root.removeHandler(ours)
            for handler in saved_logging[0]:
                root.addHandler(handler)
            root.setLevel(saved_logging[1])
