"""The workflow through a real SLURM: a one-node cluster on localhost (tests/slurm/cluster.py)
runs a cut of the smoke sweep on two systems, one per partition (the second asks for one of
the node's fake GPUs), submitted with profiles/slurm, overridden only where this machine differs
from a cluster (tests/slurm/profile). `sacct` (from SLURM's job completion file, there being no
accounting database) proves where each job ran. Needs root; installs Debian's SLURM packages
when they are missing."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import xarray as xr
import yaml
from slurm import cluster as local_cluster  # tests/slurm/cluster.py

from fwbench.frameworks import is_export_mode
from fwbench.io.comparisons_file import COMPARISON

from conftest import REPO, SMOKE, SNAKEMAKE, snakemake

# end to end; `slurm` lets make test run it in the lane beside the smoke sweep
pytestmark = [pytest.mark.e2e, pytest.mark.slurm]

PROFILE = REPO / "profiles/slurm"
TEST_PROFILE = REPO / "tests/slurm/profile"
SWEEP = REPO / "tests/slurm/sweep.yaml"
PROFILES = ("--profile", str(PROFILE), "--profile", str(TEST_PROFILE))
# make test runs it beside the smoke sweep's lane (tests/run_layers.py): room for that
RUN_TIMEOUT_S = 1200
CPU_PARTITION, GPU_PARTITION = "cpu", "gpu"
# Two systems, one per partition. The node has no real GPU, so the second system measures on
# the CPU while its jobs ask SLURM for one fake GPU: what is proven is the request and the
# placement, not CUDA (a cuda system's plan: test_a_cuda_system_plans_its_jobs_with_gpus).
SYSTEMS = {
    "cpu_nodes": {"threads": 1, "slurm": {"partition": CPU_PARTITION}},
    "gpu_nodes": {"threads": 1, "slurm": {"partition": GPU_PARTITION, "gpus": 1}},
}
# docs/architecture.md
TIMING_RULES = ("hardware", "hardware_peak", "bench", "bench_process", "rounds", "export", "train")
SUBMITTED = re.compile(r"Job \d+ has been submitted with SLURM jobid (\d+) \(log: (\S+)\)\.")


@dataclass
class SlurmJob:
    """One job as SLURM's controller remembers it (`scontrol show job`)."""

    id: str
    log: Path
    fields: dict[str, str]

    @property
    def rule(self) -> str:
        return self.fields["Comment"].removeprefix("rule_").split("_wildcards_")[0]

    @property
    def wildcards(self) -> dict[str, str]:
        """The job's wildcards (its SLURM log lists them)."""
        found = re.search(r"wildcards: (.*)", self.log.read_text())
        pairs = found.group(1).split(", ") if found else []
        return dict(pair.strip().partition("=")[::2] for pair in pairs)

    @property
    def system(self) -> str | None:
        return self.wildcards.get("system")

    @property
    def waits_for(self) -> tuple:
        """What the job waits for besides the timing slot: its system's hardware file, and
        an export mode's cell its artifact."""
        wildcards = self.wildcards
        exported = is_export_mode(wildcards.get("framework", ""), wildcards.get("mode", ""))
        return (self.rule, self.system, wildcards.get("arch") if exported else None)


@dataclass
class Run:
    workdir: Path
    output: str
    jobs: list[SlurmJob]


def profile() -> dict:
    return yaml.safe_load((PROFILE / "config.yaml").read_text())


def rule_resources(rule: str) -> dict:
    """The resources the profile gives a rule: its defaults, then its set-resources."""
    settings = profile()
    return settings["default-resources"] | settings["set-resources"].get(rule, {})


def scontrol(what: str, name: str, env: dict[str, str]) -> dict[str, str]:
    text = subprocess.run(
        ["scontrol", "show", what, "--oneliner", name],
        capture_output=True,
        text=True,
        timeout=30,
        env=os.environ | env,
        check=True,
    ).stdout
    return dict(re.findall(r"(\S+?)=(\S*)", text))


def run_with_slurm(args: list[str], workdir: Path, cluster, snakefile: Path) -> Run:
    """Run snakemake under the profiles on the cluster; a hung executor fails the test."""
    command = [*SNAKEMAKE, "--snakefile", str(snakefile), "--directory", str(workdir)]
    try:
        result = subprocess.run(
            [*command, *args, *PROFILES],
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            env=os.environ | cluster.env(),
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"snakemake with the SLURM executor did not finish in {RUN_TIMEOUT_S} s")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    jobs = [
        SlurmJob(job_id, Path(log), scontrol("job", job_id, cluster.env()))
        for job_id, log in SUBMITTED.findall(output)
    ]
    return Run(workdir, output, jobs)


def sweep_args(workdir: Path) -> list[str]:
    # a private timing lock: other runs never block it
    local = {"timing_lock": str(workdir / "timing.lock"), "systems": SYSTEMS}
    (workdir / "config-local.yaml").write_text(yaml.safe_dump(local))
    return ["--configfile", SMOKE, str(SWEEP), str(workdir / "config-local.yaml")]


def sacct(cluster) -> dict[str, dict[str, str]]:
    """Every finished job as `sacct` reports it, by job id: no slurmdbd here, so from the job
    completion file (`-c`), which has partition, CPUs, node and state but no TRES."""
    fields = ("JobID", "Partition", "AllocCPUS", "NodeList", "State")
    text = subprocess.run(
        ["sacct", "-c", "-P", "-n", f"--format={','.join(fields)}"],
        capture_output=True,
        text=True,
        timeout=30,
        env=os.environ | cluster.env(),
        check=True,
    ).stdout
    rows = [dict(zip(fields, line.split("|"), strict=True)) for line in text.splitlines()]
    return {row["JobID"]: row for row in rows}


def planned_resources(output: str) -> list[tuple[str, dict[str, str]]]:
    """(rule, resources) of every job a dry run lists."""
    jobs, rule = [], None
    for line in output.splitlines():
        if match := re.match(r"(?:local)?rule (\w+):$", line):
            rule = match.group(1)
        elif rule and line.strip().startswith("resources:"):
            pairs = line.split("resources:", 1)[1].split(", ")
            jobs.append((rule, dict(pair.strip().partition("=")[::2] for pair in pairs)))
            rule = None
    return jobs


@pytest.fixture(scope="module")
def planned(tmp_path_factory) -> list[tuple[str, dict[str, str]]]:
    """The smoke sweep planned with the cluster profile (no cluster needed for a dry run)."""
    workdir = tmp_path_factory.mktemp("slurm-plan")
    result = snakemake("-n", "--configfile", SMOKE, "--profile", str(PROFILE), cwd=workdir)
    assert result.returncode == 0, result.stderr[-4000:]
    return planned_resources(result.stdout + result.stderr)


def test_with_the_profile_timing_jobs_get_a_whole_node_and_no_other_job_does(planned):
    assert {rule for rule, _ in planned} >= {"hardware", "bench", "checks", "aggregate_bench"}
    for rule, resources in planned:
        exclusive = "--exclusive" in resources.get("slurm_extra", "")
        assert exclusive == (rule in TIMING_RULES), f"{rule}: {resources}"


def test_with_the_profile_no_job_waits_for_the_workstation_timing_slot(planned):
    # profiles/default caps timing_slot at 1 and wins over --profile for `resources`; on a
    # cluster every rule that declares the slot takes none of it instead.
    for rule, resources in planned:
        assert resources.get("timing_slot", "0") == "0", f"{rule}: {resources}"


# Every other rule is a `localrules` entry of the Snakefile: cheap, never a cluster job.
CLUSTER_RULES = (*TIMING_RULES, "checks")


@pytest.fixture(scope="module")
def cluster():
    # not under pytest's basetemp: slurmstepd's socket paths must stay short (cluster.py's
    # check_socket_room); make test's per-layer basetemp made them too long once
    state = Path(tempfile.mkdtemp(prefix="fwbench-slurm-"))
    try:
        running = local_cluster.start(state, CPU_PARTITION, GPU_PARTITION)
    except local_cluster.NotRoot as error:
        pytest.skip(str(error))
    except local_cluster.ClusterError as error:
        pytest.fail(f"no local SLURM cluster for the test: {error}")
    yield running
    local_cluster.stop(state)
    shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="module")
def slurm_run(cluster, tmp_path_factory) -> Run:
    workdir = tmp_path_factory.mktemp("slurm-run")
    return run_with_slurm(sweep_args(workdir), workdir, cluster, REPO / "Snakefile")


@pytest.fixture(scope="module")
def local_run(tmp_path_factory) -> Path:
    workdir = tmp_path_factory.mktemp("local-run")
    result = snakemake("--cores", "2", *sweep_args(workdir), cwd=workdir, timeout=RUN_TIMEOUT_S)
    assert result.returncode == 0, result.stderr[-4000:]
    return workdir


def test_timing_jobs_run_on_slurm_and_the_cheap_rules_where_snakemake_runs(slurm_run):
    finished = re.findall(r"Finished jobid: \d+ \(Rule: (\w+)\)", slurm_run.output)
    ran = sorted(rule for rule in finished if rule != "all")
    assert {"hardware", "bench", "checks", "merge_checks", "aggregate_bench"} <= set(ran)
    on_cluster = sorted(rule for rule in ran if rule in CLUSTER_RULES)
    assert sorted(job.rule for job in slurm_run.jobs) == on_cluster
    assert set(ran) - set(CLUSTER_RULES), "no cheap rule ran: the test would not see localrules"
    for job in slurm_run.jobs:
        assert job.fields["JobState"] == "COMPLETED", (job.id, job.rule)
        assert Path(job.fields["WorkDir"]) == slurm_run.workdir
        # The job's own SLURM log: named by its job id, written by the job step that ran it.
        assert job.log.name == f"{job.id}.log" and f"rule {job.rule}:" in job.log.read_text()
    assert (slurm_run.workdir / "results/aggregate/bench.nc").is_file()


def test_each_job_got_its_systems_partition_and_gpus_and_its_rules_memory_and_time(slurm_run):
    for job in slurm_run.jobs:
        wanted = rule_resources(job.rule)
        slurm = SYSTEMS[job.system]["slurm"]
        assert job.fields["Partition"] == slurm["partition"], (job.rule, job.system)
        gpus = slurm.get("gpus")
        tres = job.fields.get("TresPerJob")
        assert tres == (f"gres:gpu:{gpus}" if gpus else None), (job.rule, job.system)
        # Memory and time as Snakemake evaluated them for this job (its log lists them).
        lines = job.log.read_text().splitlines()
        line = next(line for line in lines if line.strip().startswith("resources:"))
        asked = dict(pair.partition("=")[::2] for pair in line.split(":", 1)[1].split(", "))
        assert job.fields["MinMemoryNode"] == f"{asked['mem_mb']}M", job.rule
        minutes = int(asked["runtime"])
        assert job.fields["TimeLimit"] == f"{minutes // 60:02d}:{minutes % 60:02d}:00", job.rule
        assert "slurm_partition" not in wanted  # every system names its own


def test_sacct_shows_each_systems_hardware_and_bench_jobs_on_its_own_partition(slurm_run, cluster):
    accounted = sacct(cluster)
    node_cpus = scontrol("node", "localhost", cluster.env())["CPUTot"]
    seen = set()
    for job in slurm_run.jobs:
        row = accounted[job.id]
        assert row["State"] == "COMPLETED", (job.id, row)
        assert row["Partition"] == SYSTEMS[job.system]["slurm"]["partition"], (job.rule, row)
        if job.rule in TIMING_RULES:
            assert row["AllocCPUS"] == node_cpus, (job.rule, row)  # the whole node
        seen.add((job.rule, job.system))
    for system in SYSTEMS:
        assert {("hardware", system), ("bench", system), ("checks", system)} <= seen, system


def test_the_aggregate_holds_both_systems_each_measured_on_its_partition(slurm_run):
    with xr.open_dataset(slurm_run.workdir / "results/aggregate/bench.nc") as bench:
        assert list(bench["system"].values) == list(SYSTEMS)
        for system, settings in SYSTEMS.items():
            cells = bench.sel(system=system)
            measured = cells["status"].values != "absent"
            assert measured.sum() >= 2, system
            assert set(cells["status"].values[measured]) == {"ok"}, system
            partitions = set(cells["slurm_partition"].values[measured])
            assert partitions == {settings["slurm"]["partition"]}, system
    for system in SYSTEMS:
        hardware = json.loads((slurm_run.workdir / f"results/hardware/{system}.json").read_text())
        assert hardware["system"] == system
        assert hardware["node"]["slurm_partition"] == SYSTEMS[system]["slurm"]["partition"]
        expected_gpus = str(SYSTEMS[system]["slurm"].get("gpus", ""))
        assert hardware["node"]["slurm_gpus"] in (expected_gpus, "0" if not expected_gpus else "")
    with xr.open_dataset(slurm_run.workdir / "results/summary/stats.nc") as stats:
        assert list(stats["system"].values) == list(SYSTEMS)


def test_timing_jobs_are_submitted_together_and_never_share_the_node(slurm_run, cluster):
    node_cpus = scontrol("node", "localhost", cluster.env())["CPUTot"]
    timing = [job for job in slurm_run.jobs if job.rule in TIMING_RULES]
    others = [job for job in slurm_run.jobs if job.rule not in TIMING_RULES]
    assert len(timing) >= 3 and others
    for job in timing:
        assert job.fields["OverSubscribe"] == "NO", f"{job.rule} job {job.id} is not exclusive"
        assert job.fields["NumCPUs"] == node_cpus, f"{job.rule} did not get the whole node"
    for job in others:
        assert job.fields["OverSubscribe"] == "OK", f"{job.rule} job {job.id} took a whole node"
    # The single timing slot of a workstation run is lifted: SLURM had every timing job that
    # waits for the same inputs queued before the first of them finished, and ran them one
    # after another on the one node. Bench jobs wait for their own system's hardware file (it
    # holds the speed canary's baseline) and an export mode's cells for their artifact, and
    # those jobs share the node too, so the groups are queued one after another.
    for waits_for in {job.waits_for for job in timing}:
        jobs = [job for job in timing if job.waits_for == waits_for]
        first_end = min(job.fields["EndTime"] for job in jobs)
        late = [job.id for job in jobs if job.fields["SubmitTime"] >= first_end]
        assert not late, f"{waits_for} jobs {late} submitted only after the first ended"
    spans = sorted((job.fields["StartTime"], job.fields["EndTime"], job.rule) for job in timing)
    for (_, end, first), (start, _, second) in zip(spans, spans[1:], strict=False):
        assert start >= end, f"{first} and {second} ran on the node at the same time"


# How many pairs are compared follows the data (which variant is fastest, which cells are
# flagged and so left out of the winners): its length is a value, not the file's shape.
DATA_SIZED = (COMPARISON, "comparisons.csv")


def _sized(sizes) -> dict:
    return {dim: size for dim, size in sizes.items() if dim not in DATA_SIZED}


def structure(path: Path):
    """What a result file holds, without its values: variables, dimensions, keys, columns."""
    if path.suffix == ".nc":
        with xr.open_dataset(path, engine="h5netcdf") as ds:
            variables = {name: _sized(ds[name].sizes) for name in ds.variables}
            return {"sizes": _sized(ds.sizes), "variables": variables, "attrs": sorted(ds.attrs)}
    if path.suffix == ".json":
        return keys_of(json.loads(path.read_text()))
    if path.suffix == ".csv":
        lines = path.read_text().splitlines()
        rows = None if path.name in DATA_SIZED else len(lines) - 1
        return {"header": lines[0], "rows": rows}
    return None


def keys_of(value):
    """The shape of a JSON value; a list by the distinct shapes of its items, not its length
    (the hardware file's GEMM sweep visits as many sizes as the rates take to level off)."""
    if isinstance(value, dict):
        return {key: keys_of(item) for key, item in value.items()}
    if isinstance(value, list):
        return sorted({json.dumps(keys_of(item), sort_keys=True) for item in value})
    return type(value).__name__


def same_structure(first, second) -> bool:
    """Equal shapes, where an empty list matches any list: its items' shape is unknown (a
    measured peak names the instructions that served it only where its rate tells them)."""
    if isinstance(first, dict) and isinstance(second, dict):
        return first.keys() == second.keys() and all(
            same_structure(first[key], second[key]) for key in first
        )
    if isinstance(first, list) and isinstance(second, list):
        return not first or not second or first == second
    return first == second


def test_outputs_have_the_shape_of_a_local_run(slurm_run, local_run):
    def outputs(workdir: Path) -> list[Path]:
        """Every result file; a compile cache down to its cell's cache directory, the host
        probe's seed down to its own (inside them the framework names its entries by hashes of
        its own)."""
        results = workdir / "results"
        found = set()
        for path in results.rglob("*"):
            relative = path.relative_to(results)
            depth = 6 if relative.parts[4:5] == ("_host_probe",) else 8
            if relative.parts[0] == "compile_cache" and len(relative.parts) > depth:
                relative = Path(*relative.parts[:depth])
            if path.is_file() or relative != path.relative_to(results):
                found.add(relative)
        return sorted(found)

    assert outputs(slurm_run.workdir) == outputs(local_run)
    compared = 0
    for relative in outputs(local_run):
        local = structure(local_run / "results" / relative)
        if local is not None:
            remote = structure(slurm_run.workdir / "results" / relative)
            assert same_structure(remote, local), (relative, remote, local)
            compared += 1
    assert compared >= 5  # hardware json, two cells, the aggregate, the checks


def test_a_gpu_systems_train_job_ran_with_its_gpu(slurm_run):
    trained = [job for job in slurm_run.jobs if job.rule == "train"]
    assert {job.system for job in trained} == set(SYSTEMS)
    for job in trained:
        gpus = SYSTEMS[job.system]["slurm"].get("gpus")
        assert job.fields.get("TresPerJob") == (f"gres:gpu:{gpus}" if gpus else None)
    runs = sorted((slurm_run.workdir / "results/train/gpu_nodes").rglob("*.nc"))
    assert runs
    for path in runs:
        with xr.open_dataset(path) as run:
            assert run.attrs["slurm_partition"] == GPU_PARTITION
            assert run.attrs["slurm_gpus"] == "1"  # SLURM gave the job step one GPU


def test_a_cuda_system_plans_its_jobs_with_gpus_on_its_partition(tmp_path):
    systems = {
        "laptop": {},
        "h200": {
            "device": "cuda",
            "threads": 8,
            "slurm": {"partition": "gpu", "gpu_model": "h200"},
        },
    }
    (tmp_path / "systems.yaml").write_text(yaml.safe_dump({"systems": systems}))
    result = snakemake(
        "-n",
        "-p",
        "--configfile",
        SMOKE,
        str(tmp_path / "systems.yaml"),
        "--profile",
        str(PROFILE),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    jobs = planned_resources(result.stdout + result.stderr)
    timing = [(rule, r) for rule, r in jobs if rule in (*TIMING_RULES, "checks")]
    gpu_jobs = [r for _, r in timing if r.get("slurm_partition") == "gpu"]
    # A system without a partition leaves it to the cluster (sbatch without -p).
    cpu_jobs = [r for _, r in timing if "slurm_partition" not in r]
    assert gpu_jobs and cpu_jobs and len(gpu_jobs) + len(cpu_jobs) == len(timing)
    for resources in gpu_jobs:
        assert (resources["gpu"], resources["gpu_model"]) == ("1", "h200")
    for resources in cpu_jobs:
        assert "gpu" not in resources
    assert "results/hardware/h200.json" in result.stdout


def test_an_empty_list_stands_for_a_list_of_any_shape():
    assert same_structure({"a": [], "b": "int"}, {"a": ['"str"'], "b": "int"})
    assert not same_structure({"a": ['"str"']}, {"a": ['"int"']})
    assert not same_structure({"a": "str"}, {"b": "str"})
    assert not same_structure({"a": []}, {"a": "str"})
