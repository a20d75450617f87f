# Validation, the derived sweep, and the helpers every rule uses.
import glob
import inspect
import json
import os
import re
import sys
from pathlib import Path

from snakemake.common import overwrite_function_params
from snakemake.settings.types import DeploymentMethod
from snakemake.utils import validate

from fwbench.measure import provenance
from fwbench.frameworks import MODES
from fwbench.model.specs import build_spec
from fwbench.measure.threads import resolve_threads
from fwbench.rng import seeded_shuffle
from fwbench.systems import parse_systems

# Keys of the train section that moved to `systems` (where every timing job runs).
_MOVED = sorted(
    {"gpus", "gpu_model", "slurm_partition"} & set(config.get("train") or {})
)
if _MOVED:
    raise ValueError(
        f"train.{', train.'.join(_MOVED)}: where jobs run is now a system's setting "
        "(systems.<name>.slurm: partition, gpus, gpu_model); see config/systems.yaml"
    )
validate(config, schema="../schemas/config.schema.yaml")

for _arch in config["architectures"]:
    try:
        build_spec(_arch, config["dims"][_arch])
    except (TypeError, ValueError) as _error:
        raise ValueError(f"config dims.{_arch}: {_error}") from None

for _mode in config["modes"].get("torch", []):
    if _mode.startswith("compiled_") and _mode not in config["torch_compile"]:
        raise ValueError(
            f"modes.torch names {_mode!r} but torch_compile has no {_mode!r} entry: a compiled "
            "variant needs its torch.compile options"
        )
for _mode in config["torch_compile"]:
    if not (_mode == "compiled" or _mode.startswith("compiled_")):
        raise ValueError(
            f"torch_compile.{_mode}: only compiled modes take options (compiled, compiled_<name>)"
        )
    if _mode not in config["modes"].get("torch", []):
        raise ValueError(
            f"torch_compile.{_mode} names a mode that modes.torch does not list"
        )

USE_CONDA = DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
ENVS = Path(workflow.basedir) / "envs"
RESOURCES = Path(workflow.basedir) / "resources"
# A shell job's Python (the env's own under --sdm conda, else the one running Snakemake) and
# the directory that holds fwbench, through the environment: paths in a rule's command or
# params would rerun every job of a moved checkout. A job on a cluster node parses this file
# again, so its shell gets them there too.
# The timing lock is where timing jobs meet, not a property of a cell: moving it reruns nothing.
os.environ.update(
    FWBENCH_PYTHON="python" if USE_CONDA else sys.executable,
    FWBENCH_LIBRARY=str(Path(workflow.basedir) / "workflow"),
    FWBENCH_TIMING_LOCK=config["timing_lock"],
)
# A bench job's command (Snakemake fills in the doubled braces' contents per job).
BENCH_COMMAND = (
    'PYTHONPATH="$FWBENCH_LIBRARY${{PYTHONPATH:+:$PYTHONPATH}}" "$FWBENCH_PYTHON" '
    '"$FWBENCH_LIBRARY/scripts/bench.py" --cell {params.cell:q} '
    '--lock "$FWBENCH_TIMING_LOCK" --log {log:q} {output:q}'
)
SYSTEMS = parse_systems(
    config, resolve_threads, reserved=tuple(MODES), remote=not workflow.local_exec
)
SYSTEM_NAMES = list(SYSTEMS)
HARDWARE_PATH = "results/hardware/{system}.json"
HARDWARE_FILES = [HARDWARE_PATH.format(system=name) for name in SYSTEM_NAMES]
FRAMEWORKS = config["frameworks"]
ARCHS = config["architectures"]
BATCHES = config["batch_sizes"]


def _layout_before_systems():
    """Result directories named by a framework where a system name belongs now."""
    return sorted(
        f"results/{stage}/{fw}"
        for stage in ("cells", "train", "checks")
        for fw in MODES
        if os.path.isdir(f"results/{stage}/{fw}")
    )


if _layout_before_systems():
    raise ValueError(
        f"{', '.join(_layout_before_systems())}: results of the layout before systems "
        "(results/<stage>/<framework>/...). Move them under the system that measured them "
        "with `python -m fwbench.io.migrate --system <name>` (the default config's machine: "
        "`--system local`; see README), or move them away."
    )


def per_job(function):
    """A function Snakemake calls for every job, with its signature read once: Snakemake
    re-inspects it on each call otherwise (1.5 s of a 20,000-cell dry run)."""
    overwrite_function_params(function, inspect.signature(function).parameters)
    return function


def conda_env(name, device="cpu"):
    """The conda env file of a rule: a framework's, 'hardware' or 'analysis'. Framework and
    hardware envs have a `-cuda` twin for cuda systems; analysis runs on CPU.
    """
    suffix = "-cuda" if device == "cuda" and name != "analysis" else ""
    return str(ENVS / f"{name}{suffix}.yaml")


@per_job
def framework_env(wildcards):
    return conda_env(wildcards.framework, SYSTEMS[wildcards.system].device)


@per_job
def hardware_env(wildcards):
    return conda_env("hardware", SYSTEMS[wildcards.system].device)


# Outside --sdm conda rules name no env: Snakemake evaluates a function-valued `conda`
# for every job even when it deploys none (1.8 s of a 20,000-cell dry run).
FRAMEWORK_ENV = framework_env if USE_CONDA else None
HARDWARE_ENV = hardware_env if USE_CONDA else None


def per_system(attribute):
    """A setting from the job's system, for rules: a constant when every system agrees (Snakemake
    calls a function once per job, which a 20,000-cell plan notices)."""
    values = {getattr(system, attribute) for system in SYSTEMS.values()}
    if len(values) == 1:
        return values.pop()
    return per_job(lambda wildcards: getattr(SYSTEMS[wildcards.system], attribute))


def _system_resource(key):
    return per_job(lambda wildcards: SYSTEMS[wildcards.system].resources().get(key))


# The SLURM resources of a timing job: its system's partition, constraint, account and GPUs.
# A function returning None drops the resource (the profile's default does not come back), so
# what a system does not name the cluster decides; none at all for local systems.
SYSTEM_RESOURCES = {
    key: _system_resource(key)
    for key in sorted(
        {key for system in SYSTEMS.values() for key in system.resources()}
    )
}
SYSTEM_THREADS = per_system("threads")


def _framework_versions(framework, device):
    """The versions that name a framework's results: from its conda env file under
    --sdm conda (the env the jobs run in: a cuda system's differs), else from this Python
    environment."""
    if USE_CONDA:
        return provenance.pinned_versions(conda_env(framework, device), framework)
    return provenance.installed_versions(framework)


_DEVICE_VERSIONS = {
    (device, fw): _framework_versions(fw, device)
    for device in sorted({system.device for system in SYSTEMS.values()})
    for fw in FRAMEWORKS
}
# (system, framework) -> {distribution: version}, and the version that names the results.
VERSIONS = {
    (name, fw): _DEVICE_VERSIONS[(system.device, fw)]
    for name, system in SYSTEMS.items()
    for fw in FRAMEWORKS
}
VERSION = {key: next(iter(versions.values())) for key, versions in VERSIONS.items()}
CELLS = [
    dict(
        system=system,
        framework=fw,
        version=VERSION[(system, fw)],
        mode=mode,
        arch=arch,
        batch=batch,
    )
    for system in SYSTEM_NAMES
    for fw in FRAMEWORKS
    for mode in config["modes"][fw]
    for arch in ARCHS
    for batch in BATCHES
]
PROCESSES = config["bench"]["processes"]
CELL_PATH = "results/cells/{system}/{framework}/{version}/{mode}/{arch}/b{batch}"


def cell_file(cell, process):
    """Process 0 is the cell file of a one-process sweep; process k adds `-p<k>`."""
    suffix = f"-p{process}" if process else ""
    return CELL_PATH.format(**cell) + f"{suffix}.nc"


CELL_FILES = [cell_file(cell, p) for cell in CELLS for p in range(PROCESSES)]
CELL_SYSTEMS = [cell["system"] for cell in CELLS for _ in range(PROCESSES)]
# Every cell's processes in one seeded shuffled order, so drift over the sweep is not
# confounded with the framework or the mode: the scheduler starts the ready timing job of
# highest priority, and bench jobs' priorities are their places in this order.
BENCH_ORDER = {
    path: len(CELL_FILES) - place
    for place, path in enumerate(
        seeded_shuffle(CELL_FILES, config["seed"], "bench order")
    )
}
# The hardware and checks jobs run before any cell, as they did before the order existed: a
# failure there (no C compiler, a wrong output) shows in the first minutes, not the last.
AHEAD_OF_BENCH = len(CELL_FILES) + 1


validate(config["train"], schema="../schemas/train.schema.yaml")
TRAIN = config["train"]
TRAIN_RUN_PATH = (
    "results/train/{system}/{framework}/{version}/{mode}/{model}-{dataset}.nc"
)
TRAIN_RUNS = [
    dict(
        system=system,
        framework=fw,
        version=VERSION[(system, fw)],
        mode=mode,
        model=model,
        dataset=d,
    )
    for system in SYSTEM_NAMES
    for fw in FRAMEWORKS
    for mode in TRAIN["modes"][fw]
    for model in TRAIN["models"]
    for d in TRAIN["datasets"]
]


def _alternatives(values):
    return "|".join(re.escape(str(value)) for value in values)


wildcard_constraints:
    system=_alternatives(SYSTEM_NAMES),
    framework=_alternatives(FRAMEWORKS),
    mode=_alternatives(
        sorted(
            {m for fw in FRAMEWORKS for m in config["modes"][fw] + TRAIN["modes"][fw]}
        )
    ),
    model=_alternatives(TRAIN["models"]),
    dataset=_alternatives(TRAIN["datasets"]),
    arch=_alternatives(ARCHS),
    batch=_alternatives(BATCHES),
    process=r"[1-9][0-9]*",
    # Only the installed versions: earlier versions' cells are plain input files (compare),
    # never something to recompute.
    version=_alternatives(sorted(set(VERSION.values()))),


def figure_outputs(names, category, directory="results/figures/{system}"):
    """Per figure: `<name>` the PNG, registered in the report, and `<name>_svg`."""
    outputs = {}
    for name in names:
        outputs[name] = report(
            f"{directory}/{name}.png",
            caption=f"../report/{name}.rst",
            category="hardware" if name == "hardware" else category,
            subcategory="{system}" if "{system}" in directory else None,
        )
        outputs[f"{name}_svg"] = f"{directory}/{name}.svg"
    return outputs


def check_cell_wildcards(wildcards):
    """A requested cell must be one the config sweeps, at the installed version."""
    fw, mode = wildcards.framework, wildcards.mode
    if mode not in config["modes"][fw]:
        raise ValueError(
            f"mode {mode!r} is not configured for {fw} (modes.{fw}: {config['modes'][fw]})"
        )
    installed = VERSION[(wildcards.system, fw)]
    if wildcards.version != installed:
        raise ValueError(
            f"{fw} results for version {wildcards.version!r} cannot be computed here: the "
            f"{fw} of system {wildcards.system!r} is {installed!r}"
        )


CELL_KEYS = ("system", "framework", "version", "mode", "arch", "batch")


@per_job
def bench_priority(wildcards):
    cell = {key: wildcards[key] for key in CELL_KEYS}
    return BENCH_ORDER.get(cell_file(cell, int(wildcards.get("process", 0))), 0)


@per_job
def cell_request(wildcards):
    """Everything that determines a cell, as JSON for the bench job's command line; a change
    in any of it reruns exactly that cell."""
    check_cell_wildcards(wildcards)
    process = int(wildcards.get("process", 0))
    if process >= PROCESSES:
        raise ValueError(
            f"process {process} of {wildcards.framework}/{wildcards.mode}/{wildcards.arch}/"
            f"b{wildcards.batch}: bench.processes is {PROCESSES} (processes 0-{PROCESSES - 1})"
        )
    bench = config["bench"]
    system = SYSTEMS[wildcards.system]
    request = dict(
        system=system.name,
        placement=system.placement(),
        framework=wildcards.framework,
        mode=wildcards.mode,
        arch=wildcards.arch,
        batch=int(wildcards.batch),
        dims=config["dims"][wildcards.arch],
        seed=config["seed"],
        device=system.device,
        threads=system.threads,
        warmup=bench["warmup"],
        repeats=bench["repeats"],
        min_sample_s=bench["min_sample_s"],
        busy_threshold_cores=bench["busy_threshold_cores"],
        pressure_threshold=bench["pressure_threshold"],
        retries=bench["retries"],
        timeout_s=bench["timeout_s"],
        inject_failure=f"{wildcards.framework}/{wildcards.mode}/{wildcards.arch}"
        in bench["inject_failure"],
        versions=VERSIONS[(wildcards.system, wildcards.framework)],
        process=process,
        compile_options=(
            config["torch_compile"].get(wildcards.mode, {})
            if wildcards.framework == "torch"
            else {}
        ),
    )
    # Key order kept: a framework's first distribution is the one that names its results.
    return json.dumps(request)


def system_params(wildcards):
    """What a system's hardware, checks or train job depends on from the system."""
    return SYSTEMS[wildcards.system].placement()


def table_path(name, system="{system}"):
    stem = f"latency_b{config['stats']['table_batch']}" if name == "latency" else name
    return f"results/summary/{system}/tables/{stem}.md"


def system_tables(name):
    """A summary table's path for every system, in SYSTEM_NAMES order."""
    return expand(table_path(name), system=SYSTEM_NAMES)


def per_system_figures(producer, names):
    """Every system's files of the figure outputs `names` of a per-system producer."""
    return [
        path
        for system in SYSTEM_NAMES
        for name in names
        for path in expand(producer.output[name], system=system)
    ]


def _cell_files(system, framework, version):
    return sorted(glob.glob(f"results/cells/{system}/{framework}/{version}/*/*/b*.nc"))


def baseline_version(system, framework):
    """The configured baseline, else the most recently written earlier version of the
    system's cells on disk."""
    chosen = config["compare"]["baseline"].get(framework)
    if chosen:
        if not _cell_files(system, framework, chosen):
            raise ValueError(
                f"compare.baseline.{framework}: no cells for version {chosen!r} "
                f"under results/cells/{system}/{framework}/"
            )
        return chosen
    earlier = [
        Path(path).name
        for path in glob.glob(f"results/cells/{system}/{framework}/*")
        if Path(path).name != VERSION[(system, framework)]
        and _cell_files(system, framework, Path(path).name)
    ]
    if not earlier:
        return None
    newest = lambda version: max(
        os.path.getmtime(p) for p in _cell_files(system, framework, version)
    )
    return max(earlier, key=newest)


BASELINES = {
    (system, fw): baseline_version(system, fw)
    for system in SYSTEM_NAMES
    for fw in FRAMEWORKS
}
COMPARE_TABLES = [
    f"results/compare/{system}/{fw}.csv"
    for (system, fw), baseline in BASELINES.items()
    if baseline
]


def current_cells(system, framework):
    return [
        cell_file(cell, process)
        for cell in CELLS
        for process in range(PROCESSES)
        if (cell["system"], cell["framework"]) == (system, framework)
    ]


def train_params(wildcards):
    fw = wildcards.framework
    if wildcards.mode not in TRAIN["modes"][fw]:
        raise ValueError(
            f"training mode {wildcards.mode!r} is not configured for {fw} "
            f"(train.modes.{fw}: {TRAIN['modes'][fw]})"
        )
    return dict(versions=VERSIONS[(wildcards.system, fw)])


onstart:
    # Snakemake 9.27 rate-limits job starts by default (--max-jobs-per-timespan 100/1s) and,
    # to do so, re-runs job selection 1 s after every scheduling round; every finished job adds
    # one more such perpetual chain. Measured on a 2-core machine: 58 timer threads at job 60
    # of the default sweep and the main process busy 0.3 cores throughout, on the cores every
    # cell was timing. A local run has no submission rate to protect: the default limiter
    # goes (a limit the user set on the command line stays).
    limiter = getattr(
        getattr(workflow, "scheduler", None), "job_rate_limiter", None
    )
    if (
        workflow.local_exec
        and limiter
        and (limiter.max_jobs, limiter.timespan) == (100, 1)
    ):
        workflow.scheduler.job_rate_limiter = None
