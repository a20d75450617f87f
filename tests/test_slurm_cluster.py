"""The local test cluster's own checks (tests/slurm/cluster.py), without starting it."""

from __future__ import annotations

from pathlib import Path

import pytest
from slurm import cluster as local_cluster  # tests/slurm/cluster.py


def test_a_state_directory_too_deep_for_slurmstepds_socket_is_refused_by_name():
    # the depth make test's per-layer basetemp once gave it: every batch job stayed held
    deep = Path("/tmp/fwbench-layers-in3rf0l9/e2e-and-not-smoke-and-not-quiet-tmp/slurm-state0")
    with pytest.raises(local_cluster.ClusterError, match="slurm-state0 is too deep"):
        local_cluster.check_socket_room(deep)


def test_a_short_state_directory_has_room_for_the_longest_step_socket():
    local_cluster.check_socket_room(Path("/tmp/fwbench-slurm-abcdefgh"))
