# Validation, the derived sweep, and the helpers every rule uses.
import glob
import os
import re
from pathlib import Path

from snakemake.settings.types import DeploymentMethod
from snakemake.utils import validate

from fwbench.measure import provenance
from fwbench.frameworks import MODES
from fwbench.model.specs import build_spec
from fwbench.measure.threads import resolve_threads
from fwbench.rng import seeded_shuffle

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
THREADS = resolve_threads(config["threads"])
HOST = provenance.host()
DEVICE = config["device"]
FRAMEWORKS = config["frameworks"]
ARCHS = config["architectures"]
BATCHES = config["batch_sizes"]
HARDWARE_JSON = f"results/hardware/{HOST}-{DEVICE}.json"


def conda_env(name):
    """The conda env file of a rule: a framework's, 'hardware' or 'analysis'. Framework and
    hardware envs have a `-cuda` twin that `device: cuda` selects; analysis runs on CPU.
    """
    suffix = "-cuda" if DEVICE == "cuda" and name != "analysis" else ""
    return str(ENVS / f"{name}{suffix}.yaml")


def framework_env(wildcards):
    return conda_env(wildcards.framework)


def _framework_versions(framework):
    """The versions that name a framework's results: from its conda env file under
    --sdm conda (the env the jobs run in), else from this Python environment."""
    if USE_CONDA:
        return provenance.pinned_versions(conda_env(framework), framework)
    return provenance.installed_versions(framework)


VERSIONS = {fw: _framework_versions(fw) for fw in FRAMEWORKS}
VERSION = {fw: next(iter(versions.values())) for fw, versions in VERSIONS.items()}
CELLS = [
    dict(framework=fw, version=VERSION[fw], mode=mode, arch=arch, batch=batch)
    for fw in FRAMEWORKS
    for mode in config["modes"][fw]
    for arch in ARCHS
    for batch in BATCHES
]
PROCESSES = config["bench"]["processes"]
CELL_PATH = "results/cells/{framework}/{version}/{mode}/{arch}/b{batch}"


def cell_file(cell, process):
    """Process 0 is the cell file of a one-process sweep; process k adds `-p<k>`."""
    suffix = f"-p{process}" if process else ""
    return CELL_PATH.format(**cell) + f"{suffix}.nc"


CELL_FILES = [cell_file(cell, p) for cell in CELLS for p in range(PROCESSES)]
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
TRAIN_RUNS = [
    dict(framework=fw, version=VERSION[fw], mode=mode, model=model, dataset=dataset)
    for fw in FRAMEWORKS
    for mode in TRAIN["modes"][fw]
    for model in TRAIN["models"]
    for dataset in TRAIN["datasets"]
]


def _alternatives(values):
    return "|".join(re.escape(str(value)) for value in values)


wildcard_constraints:
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
    host=r"[^/]+",
    device="cpu|cuda",


def figure_outputs(names, category):
    """Per figure: `<name>` the PNG, registered in the report, and `<name>_svg`."""
    outputs = {}
    for name in names:
        outputs[name] = report(
            f"results/figures/{name}.png",
            caption=f"../report/{name}.rst",
            category="hardware" if name == "hardware" else category,
        )
        outputs[f"{name}_svg"] = f"results/figures/{name}.svg"
    return outputs


def check_cell_wildcards(wildcards):
    """A requested cell must be one the config sweeps, at the installed version."""
    fw, mode = wildcards.framework, wildcards.mode
    if mode not in config["modes"][fw]:
        raise ValueError(
            f"mode {mode!r} is not configured for {fw} (modes.{fw}: {config['modes'][fw]})"
        )
    if wildcards.version != VERSION[fw]:
        raise ValueError(
            f"{fw} results for version {wildcards.version!r} cannot be computed here: the "
            f"installed {fw} is {VERSION[fw]!r}"
        )


def bench_priority(wildcards):
    cell = {
        key: wildcards[key] for key in ("framework", "version", "mode", "arch", "batch")
    }
    return BENCH_ORDER.get(cell_file(cell, int(wildcards.get("process", 0))), 0)


def cell_request(wildcards):
    """Everything that determines a cell; a change in any of it reruns exactly that cell."""
    check_cell_wildcards(wildcards)
    process = int(wildcards.get("process", 0))
    if process >= PROCESSES:
        raise ValueError(
            f"process {process} of {wildcards.framework}/{wildcards.mode}/{wildcards.arch}/"
            f"b{wildcards.batch}: bench.processes is {PROCESSES} (processes 0-{PROCESSES - 1})"
        )
    bench = config["bench"]
    return dict(
        framework=wildcards.framework,
        mode=wildcards.mode,
        arch=wildcards.arch,
        batch=int(wildcards.batch),
        dims=config["dims"][wildcards.arch],
        seed=config["seed"],
        device=DEVICE,
        threads=THREADS,
        warmup=bench["warmup"],
        repeats=bench["repeats"],
        busy_threshold_cores=bench["busy_threshold_cores"],
        pressure_threshold=bench["pressure_threshold"],
        retries=bench["retries"],
        timeout_s=bench["timeout_s"],
        inject_failure=f"{wildcards.framework}/{wildcards.mode}/{wildcards.arch}"
        in bench["inject_failure"],
        versions=VERSIONS[wildcards.framework],
        process=process,
        compile_options=(
            config["torch_compile"].get(wildcards.mode, {})
            if wildcards.framework == "torch"
            else {}
        ),
    )


def table_path(name):
    if name == "latency":
        return f"results/summary/tables/latency_b{config['stats']['table_batch']}.md"
    return f"results/summary/tables/{name}.md"


def _cell_files(framework, version):
    return sorted(glob.glob(f"results/cells/{framework}/{version}/*/*/b*.nc"))


def baseline_version(framework):
    """The configured baseline, else the most recently written earlier version on disk."""
    chosen = config["compare"]["baseline"].get(framework)
    if chosen:
        if not _cell_files(framework, chosen):
            raise ValueError(
                f"compare.baseline.{framework}: no cells for version {chosen!r} "
                f"under results/cells/{framework}/"
            )
        return chosen
    earlier = [
        Path(path).name
        for path in glob.glob(f"results/cells/{framework}/*")
        if Path(path).name != VERSION[framework]
        and _cell_files(framework, Path(path).name)
    ]
    if not earlier:
        return None
    newest = lambda version: max(
        os.path.getmtime(p) for p in _cell_files(framework, version)
    )
    return max(earlier, key=newest)


BASELINES = {fw: baseline_version(fw) for fw in FRAMEWORKS}
COMPARED = [fw for fw in FRAMEWORKS if BASELINES[fw]]


def current_cells(framework):
    return [
        cell_file(cell, process)
        for cell in CELLS
        for process in range(PROCESSES)
        if cell["framework"] == framework
    ]


def train_resources():
    """GPU jobs on the configured partition when device is cuda; nothing extra on CPU."""
    if DEVICE != "cuda":
        return {}
    resources = {"gpu": TRAIN["gpus"], "slurm_partition": TRAIN["slurm_partition"]}
    if TRAIN["gpu_model"]:
        resources["gpu_model"] = TRAIN["gpu_model"]
    return resources


def train_params(wildcards):
    fw = wildcards.framework
    if wildcards.mode not in TRAIN["modes"][fw]:
        raise ValueError(
            f"training mode {wildcards.mode!r} is not configured for {fw} "
            f"(train.modes.{fw}: {TRAIN['modes'][fw]})"
        )
    return dict(versions=VERSIONS[fw])


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
