"""Clear Snakemake's lock on a working directory when no live Snakemake holds it.

A sweep killed outright (SIGKILL of its process group, a lost terminal) leaves
`.snakemake/locks/` behind, and the next run refuses until `--unlock`, though nothing is lost:
cells are written whole or not at all. `make run` calls this first:

    python -m fwbench.io.stale_lock [-d DIRECTORY] [any other snakemake arguments]

It unlocks (with `snakemake --unlock`) only when the directory holds a lock and no Snakemake
process works in it (its current directory or its --directory); otherwise it does nothing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

LOCKS = Path(".snakemake") / "locks"


def has_lock(directory: Path) -> bool:
    locks = directory / LOCKS
    return locks.is_dir() and any(locks.iterdir())


def _argv(pid: str) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def _workdir(pid: str, argv: list[str]) -> Path | None:
    """The directory a Snakemake process works in: its --directory, else its cwd."""
    for flag in ("-d", "--directory"):
        if flag in argv[:-1]:
            base = _cwd(pid)
            return (base / argv[argv.index(flag) + 1]) if base else None
    return _cwd(pid)


def _cwd(pid: str) -> Path | None:
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return None


def is_snakemake(argv: list[str]) -> bool:
    """`snakemake ...`, `.../bin/snakemake ...` or `python -m snakemake ...`."""
    names = [Path(arg).name for arg in argv[:3]]
    return "snakemake" in names and "fwbench.io.stale_lock" not in argv


def live_snakemakes(directory: Path) -> list[int]:
    """Processes of Snakemake working in `directory` (this process excluded)."""
    target = directory.resolve()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        argv = _argv(pid)
        if int(pid) == os.getpid() or not is_snakemake(argv):
            continue
        workdir = _workdir(pid, argv)
        if workdir is not None and workdir.resolve() == target:
            found.append(int(pid))
    return found


def clear_if_stale(directory: Path, snakemake: list[str]) -> bool:
    """Unlock `directory` when it is locked and nothing lives there; True when it did."""
    if not has_lock(directory) or live_snakemakes(directory):
        return False
    subprocess.run(
        [*snakemake, "--unlock", "--directory", str(directory)], check=True, capture_output=True
    )
    print(f"fwbench: cleared a stale Snakemake lock in {directory}", file=sys.stderr)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-d", "--directory", type=Path, default=Path.cwd())
    args, rest = parser.parse_known_args(argv)
    snakemake = [sys.executable, "-m", "snakemake", *_snakefile(rest)]
    clear_if_stale(args.directory, snakemake)
    return 0


def _snakefile(args: list[str]) -> list[str]:
    for flag in ("-s", "--snakefile"):
        if flag in args[:-1]:
            return [flag, args[args.index(flag) + 1]]
    return []


if __name__ == "__main__":
    sys.exit(main())
