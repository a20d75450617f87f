"""Atomic writes: a killed job leaves the previous file or none, never half of one.

Every file fwbench writes goes through `atomic_path` (directly or through the helpers below).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


def _file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path beside `path` to write to; when the block ends without an error it is
    fsynced, given a normal file's mode (mkstemp makes files private) and renamed onto `path`;
    on an error it is removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.chmod(tmp, _file_mode())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, newline: str | None = None) -> Iterator[IO[str]]:
    """A text handle whose content replaces `path` when the block ends without an error."""
    with atomic_path(path) as tmp, open(tmp, "w", newline=newline) as handle:
        yield handle


def write_text(text: str, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_json(data: Any, path: str | os.PathLike) -> None:
    """Strict JSON (NaN and infinity refused), indented for people."""
    write_text(json.dumps(data, indent=2, allow_nan=False), path)


def write_netcdf(ds: Any, path: str | os.PathLike) -> None:
    """An xarray Dataset as netCDF4 (h5netcdf)."""
    with atomic_path(path) as tmp:
        ds.to_netcdf(tmp, engine="h5netcdf")
