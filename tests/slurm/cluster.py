"""A real single-node SLURM cluster on localhost, for tests: start it, use it, stop it.

    python tests/slurm/cluster.py start STATE_DIR   # prints the SLURM_CONF to export
    python tests/slurm/cluster.py stop STATE_DIR

Start installs Debian's munge, slurmctld, slurmd and slurm-client when they are missing
(needs root and apt-get), writes slurm.conf and gres.conf under STATE_DIR, starts munged,
slurmctld and slurmd bound to 127.0.0.1 on free ports, and waits until the node is idle.
Config, state, logs and pid files stay under STATE_DIR; stop cancels the cluster's jobs and
ends the daemons by their pid files. The node has two fake GPUs, so `sbatch --gpus=1 -p gpu`
is scheduled for real.

Outside STATE_DIR, while the cluster runs: munged's socket, in /tmp/fwbench-munge-<hash>
(munged wants every directory above its socket open to all), and the link /run/slurm/conf
-> STATE_DIR/etc. Commands on the login side find the cluster through SLURM_CONF, but the
executor plugin's jobstep removes SLURM_CONF before it calls srun inside a job, so srun looks
where it would on a compute node: /etc/slurm/slurm.conf, then /run/slurm/conf (where slurmd
keeps the config of a "configless" cluster). Start refuses to run where either path belongs
to another SLURM installation.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import signal
import socket
import string
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGES = ("munge", "slurmctld", "slurmd", "slurm-client")
DAEMONS = ("/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/sbatch")
# Stop order: the node, then the controller, then the authentication they both use.
PID_FILES = {"slurmd": "slurmd.pid", "slurmctld": "slurmctld.pid", "munged": "munged.pid"}
MIN_JOB_AGE_S = 900
SYSTEM_CONF = Path("/etc/slurm/slurm.conf")
NODE_CONF_LINK = Path("/run/slurm/conf")
# slurmstepd listens on SlurmdSpoolDir/<node>_<jobid>.<stepid>, a Unix socket: the path must fit
# sun_path (108 bytes with its NUL), or every batch job fails to launch and stays held.
# A step id can be 4294967291 (the batch step), a job id as long.
SOCKET_PATH_MAX = 107
LONGEST_STEP_SOCKET = "localhost_4294967295.4294967291"


class ClusterError(RuntimeError):
    """The local cluster could not be installed, started or stopped."""


class NotRoot(ClusterError):
    """Starting daemons as SlurmUser=root needs root."""


@dataclass(frozen=True)
class Cluster:
    """A running local cluster: its state directory and partition names."""

    state: Path
    cpu_partition: str
    gpu_partition: str

    @property
    def conf(self) -> Path:
        return self.state / "etc" / "slurm.conf"

    def env(self) -> dict[str, str]:
        """Environment entries that point SLURM's client commands at this cluster."""
        return {"SLURM_CONF": str(self.conf)}


def _run(command: list[str], env: dict[str, str] | None = None, timeout: float = 30) -> str:
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    if result.returncode != 0:
        raise ClusterError(
            f"{' '.join(command)} exited {result.returncode}: {result.stderr.strip()}"
        )
    return result.stdout


def ensure_packages(timeout: float = 300) -> None:
    """Install Debian's SLURM and munge packages unless their daemons are already there."""
    if all(Path(path).exists() for path in DAEMONS):
        return
    if shutil.which("apt-get") is None:
        raise ClusterError(
            f"SLURM is not installed ({', '.join(p for p in DAEMONS if not Path(p).exists())} "
            f"missing) and apt-get is not available to install {' '.join(PACKAGES)}"
        )
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    try:
        _run(["apt-get", "update", "-qq"], env=env, timeout=timeout)
        _run(["apt-get", "install", "-y", "-qq", *PACKAGES], env=env, timeout=timeout)
    except (ClusterError, subprocess.TimeoutExpired) as error:
        raise ClusterError(f"installing {' '.join(PACKAGES)} failed: {error}") from None


def _munge_dir(state: Path) -> Path:
    """The directory of munged's socket, one per state directory (see the module's doc)."""
    return Path("/tmp") / f"fwbench-munge-{hashlib.sha1(bytes(state)).hexdigest()[:12]}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _node_line() -> str:
    """This machine's node definition as slurmd detects it, named localhost, with RealMemory
    at 80% of the detected memory (slurmd drains a node that declares more than it has)."""
    detected = _run(["/usr/sbin/slurmd", "-C"]).splitlines()[0]
    memory = re.search(r"RealMemory=(\d+)", detected)
    if not detected.startswith("NodeName=") or memory is None:
        raise ClusterError(f"unexpected `slurmd -C` output: {detected!r}")
    node = re.sub(r"^NodeName=\S+", "NodeName=localhost NodeAddr=127.0.0.1", detected)
    return node.replace(memory.group(0), f"RealMemory={int(memory.group(1)) * 8 // 10}")


def _write_config(cluster: Cluster) -> None:
    fields = {
        "state": str(cluster.state),
        "ctld_port": _free_port(),
        "slurmd_port": _free_port(),
        "munge_socket": str(_munge_dir(cluster.state) / "munge.socket"),
        "min_job_age": MIN_JOB_AGE_S,
        "node": _node_line(),
        "cpu_partition": cluster.cpu_partition,
        "gpu_partition": cluster.gpu_partition,
    }
    for name in ("slurm.conf", "gres.conf"):
        template = string.Template((HERE / f"{name}.in").read_text())
        (cluster.state / "etc" / name).write_text(template.substitute(fields))


def _link_node_conf(cluster: Cluster) -> None:
    if SYSTEM_CONF.exists():
        raise ClusterError(
            f"{SYSTEM_CONF} exists: srun inside a job would read it instead of this test "
            "cluster's configuration; run the test on a machine without a SLURM installation"
        )
    stale = (
        NODE_CONF_LINK.is_symlink()
        and not (NODE_CONF_LINK.resolve().parent / "run" / "slurmctld.pid").exists()
    )
    if stale:
        NODE_CONF_LINK.unlink()  # left behind by a test cluster that is no longer running
    if NODE_CONF_LINK.exists() or NODE_CONF_LINK.is_symlink():
        raise ClusterError(
            f"{NODE_CONF_LINK} exists (-> {NODE_CONF_LINK.resolve()}): another SLURM "
            "configuration is in use on this machine; stop it first"
        )
    NODE_CONF_LINK.parent.mkdir(parents=True, exist_ok=True)
    NODE_CONF_LINK.symlink_to(cluster.conf.parent)


def _unlink_node_conf(state: Path) -> None:
    if NODE_CONF_LINK.is_symlink() and NODE_CONF_LINK.readlink() == state / "etc":
        NODE_CONF_LINK.unlink()


def _start_munged(state: Path) -> None:
    key = state / "etc" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    _munge_dir(state).mkdir(mode=0o755, exist_ok=True)
    _run(
        [
            "/usr/sbin/munged",
            f"--socket={_munge_dir(state) / 'munge.socket'}",
            f"--key-file={key}",
            f"--pid-file={state / 'run' / 'munged.pid'}",
            f"--log-file={state / 'log' / 'munged.log'}",
            f"--seed-file={state / 'run' / 'munged.seed'}",
        ]
    )


def _log_tails(state: Path, lines: int = 15) -> str:
    tails = []
    for log in sorted((state / "log").glob("*.log")):
        tail = log.read_text(errors="replace").splitlines()[-lines:]
        tails.append(f"--- {log.name}\n" + "\n".join(tail))
    return "\n".join(tails)


def wait_until_idle(cluster: Cluster, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    states = ""
    while time.monotonic() < deadline:
        try:
            states = _run(["sinfo", "--noheader", "--Node", "-o", "%T"], env=cluster.env())
        except (ClusterError, subprocess.TimeoutExpired) as error:
            states = str(error)
        if states.split() and set(states.split()) == {"idle"}:
            return
        time.sleep(0.5)
    raise ClusterError(
        f"the node is not idle after {timeout:.0f} s (sinfo: {states.strip()!r})\n"
        + _log_tails(cluster.state)
    )


def start(state: str | Path, cpu_partition: str = "cpu", gpu_partition: str = "gpu") -> Cluster:
    """Install if needed, configure and start a one-node cluster whose files live in `state`."""
    if os.geteuid() != 0:
        raise NotRoot("a local SLURM cluster runs its daemons as root; this user is not root")
    ensure_packages()
    cluster = Cluster(Path(state).resolve(), cpu_partition, gpu_partition)
    check_socket_room(cluster.state)
    for sub in ("etc", "run", "log", "spool/slurmctld", "spool/slurmd"):
        (cluster.state / sub).mkdir(parents=True, exist_ok=True)
    (cluster.state / "etc").chmod(0o700)  # munged refuses a key others can read
    _write_config(cluster)
    _link_node_conf(cluster)
    try:
        _start_munged(cluster.state)
        _run(["/usr/sbin/slurmctld", "-f", str(cluster.conf)], env=cluster.env())
        _run(["/usr/sbin/slurmd", "-f", str(cluster.conf), "-N", "localhost"], env=cluster.env())
        wait_until_idle(cluster)
    except (ClusterError, subprocess.TimeoutExpired) as error:
        stop(cluster.state)
        raise ClusterError(f"starting the local cluster failed: {error}") from None
    return cluster


def check_socket_room(state: Path) -> None:
    """Refuse a state directory too deep for slurmstepd's sockets (see SOCKET_PATH_MAX)."""
    longest = state / "spool" / "slurmd" / LONGEST_STEP_SOCKET
    if len(bytes(longest)) > SOCKET_PATH_MAX:
        raise ClusterError(
            f"state directory {state} is too deep: slurmstepd's socket {longest} would be "
            f"{len(bytes(longest))} bytes, more than a Unix socket path holds "
            f"({SOCKET_PATH_MAX}); use a shorter directory, e.g. under /tmp"
        )


def _cancel_jobs(state: Path) -> None:
    env = {"SLURM_CONF": str(state / "etc" / "slurm.conf")}
    try:
        jobs = _run(["squeue", "--noheader", "-o", "%i"], env=env, timeout=10).split()
        if jobs:
            _run(["scancel", *jobs], env=env, timeout=10)
    except (ClusterError, subprocess.TimeoutExpired, FileNotFoundError):
        pass  # no controller to ask: its jobs ended with it


def _stop_daemon(pid_file: Path, name: str, timeout: float = 15) -> None:
    if not pid_file.exists():
        return
    pid = int(pid_file.read_text().split()[0])
    try:
        command = Path(f"/proc/{pid}/comm").read_text().strip()
    except FileNotFoundError:
        return  # already gone
    if command != name:
        return  # the pid was reused by another process: not ours to stop
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    if Path(f"/proc/{pid}").exists():
        os.kill(pid, signal.SIGKILL)


def stop(state: str | Path) -> None:
    """Cancel the cluster's jobs and stop its daemons by their pid files; safe to repeat."""
    state = Path(state).resolve()
    if (state / "etc" / "slurm.conf").exists():
        _cancel_jobs(state)
    for name, pid_file in PID_FILES.items():
        _stop_daemon(state / "run" / pid_file, name)
    _unlink_node_conf(state)
    shutil.rmtree(_munge_dir(state), ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("start", "stop"))
    parser.add_argument("state", type=Path, help="directory for config, logs and pid files")
    args = parser.parse_args(argv)
    try:
        if args.action == "start":
            cluster = start(args.state)
            print(f"export SLURM_CONF={cluster.conf}")
        else:
            stop(args.state)
    except ClusterError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
