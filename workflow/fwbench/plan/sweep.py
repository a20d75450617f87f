"""The Plan: the systems, versions, cells, processes, order, runs and requests of one sweep."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import fwbench.plan.paths as paths
from fwbench import frameworks
from fwbench.host.threads import resolve_threads
from fwbench.io.hardware_file import OWN_JOB_DTYPES
from fwbench.plan.baselines import baselines
from fwbench.plan.checks import check_config, compile_options_key
from fwbench.plan.exports import ExportPlan
from fwbench.plan.precision import FLOAT32, PrecisionPlan, is_float32, precision_of
from fwbench.plan.processes import cell_key, multi_process_cells
from fwbench.plan.request import CellRequest
from fwbench.plan.rounds import RoundsPlan
from fwbench.plan.versions import VersionsOf, versions_source
from fwbench.rng import seeded_shuffle
from fwbench.systems import System, parse_systems
from fwbench.training.config import run_settings

CELL_KEYS = ("system", "framework", "version", "mode", "arch", "batch", "precision")


@dataclass
class Plan(ExportPlan, RoundsPlan, PrecisionPlan):
    """Everything a sweep runs, derived from a validated config (see make_plan)."""

    config: Mapping[str, Any]
    systems: dict[str, System]
    versions: dict[tuple[str, str], dict[str, str]]  # (system, framework) -> distributions
    baselines: dict[tuple[str, str], str | None] = field(default_factory=dict)

    @property
    def frameworks(self) -> list[str]:
        return list(self.config["frameworks"])

    @property
    def processes(self) -> int:
        return self.config["bench"]["processes"]

    def version(self, system: str, framework: str) -> str:
        """The version that names a framework's results on a system."""
        return next(iter(self.versions[(system, framework)].values()))

    @cached_property
    def cells(self) -> list[dict[str, Any]]:
        """system × framework × mode × arch × batch × precision, each with its framework's
        version: float32 everywhere, each low precision where its mode runs it (plan.precision)."""
        return [
            dict(
                system=s,
                framework=fw,
                version=self.version(s, fw),
                mode=mode,
                arch=arch,
                batch=batch,
                precision=precision,
            )
            for s in self.systems
            for fw in self.frameworks
            for mode in self.config["modes"][fw]
            for arch in self.config["architectures"]
            for batch in self.config["batch_sizes"]
            for precision in self.cell_precisions(fw, mode, arch, batch)
        ]

    @cached_property
    def multi_process_cells(self) -> frozenset[tuple]:
        """The cells measured in every process (fwbench.plan.processes)."""
        bench = self.config["bench"]
        return multi_process_cells(
            self.cells, self.config["batch_sizes"], bench["multi_process_share"], self.seed
        )

    @property
    def seed(self) -> int:
        return self.config["seed"]

    def cell_processes(self, cell: Mapping[str, Any]) -> range:
        """The processes a cell is measured in: all of them, or process 0 alone (every low
        precision cell: its CI takes the spread the float32 cells measure)."""
        multi = cell_key(cell) in self.multi_process_cells and is_float32(cell)
        return range(self.processes if multi else 1)

    @cached_property
    def cell_files(self) -> list[str]:
        return [paths.cell_file(c, p) for c in self.cells for p in self.cell_processes(c)]

    @cached_property
    def cell_systems(self) -> list[str]:
        """The system of each of cell_files, in the same order."""
        return [c["system"] for c in self.cells for _ in self.cell_processes(c)]

    @cached_property
    def order(self) -> list[str]:
        """Every timing job's output (cells; a rounds job's first) in the order the sweep runs them:
        the cells in one seeded shuffled order, so drift over the sweep is not confounded with the
        framework or the mode, cut into one segment per rounds row (system × architecture, in a
        seeded order) and S − 1 more: segment i holds row i's input cells (every variant's cell at
        every rounds batch: the row's jobs need them) and ends with row i's set 0, the last S − 1
        share the cells no rounds job needs; row i's set k runs inside segment i + k, spread among
        its cells, the last set of the last row at the very end. So a row's sets sample the sweep's
        hours, not its minutes (two sweeps' ratios differed by more than sets minutes apart:
        docs/architecture.md), no two jobs run back to back, and no two rows' sets share a moment:
        the state variance pooled over the tables has the dof it claims (fwbench.analysis.rounds;
        when every row's set k ran back to back, every table sampled the same few moments). Without
        rounds, the shuffled cells alone."""
        shuffled = seeded_shuffle(self.cell_files, self.seed, "bench order")
        if not self.rounds_batches:
            return shuffled
        rows = seeded_shuffle(self.rounds_jobs(set_index=0), self.seed, "rounds order")
        inputs = [set(self.rounds_cells(row)) for row in rows]
        rest = [path for path in shuffled if not any(path in mine for mine in inputs)]
        tails = self.rounds_sets - 1  # the later sets of the last rows, among the rest
        order: list[str] = []
        for i in range(len(rows) + tails):
            cells = [path for path in shuffled if i < len(rows) and path in inputs[i]]
            t = i - len(rows)
            cells += rest[len(rest) * t // tails : len(rest) * (t + 1) // tails] if t >= 0 else []
            sets = range(self.rounds_sets - 1, -1, -1)  # row i - k's set k; set 0 last
            jobs = [rows[i - k] | {"set": k} for k in sets if 0 <= i - k < len(rows)]
            for j, job in enumerate(jobs):
                order += cells[len(cells) * j // len(jobs) : len(cells) * (j + 1) // len(jobs)]
                order.append(self.rounds_outputs(job)[0])
        return order

    @cached_property
    def priorities(self) -> dict[str, int]:
        """Each timing job's place in `order` as its priority (the scheduler starts the ready
        timing job of highest priority)."""
        return {path: len(self.order) - place for place, path in enumerate(self.order)}

    @property
    def ahead_of_bench(self) -> int:
        """The priority of the hardware and checks jobs: before every cell, so a failure there
        (no C compiler, a wrong output) shows in the first minutes, not the last."""
        return len(self.order) + 1

    def bench_priority(self, wildcards: Mapping[str, Any]) -> int:
        cell = cell_of(wildcards)
        return self.priorities.get(paths.cell_file(cell, _process(wildcards)), 0)

    def rounds_priority(self, wildcards: Mapping[str, Any]) -> int:
        return self.priorities.get(self.rounds_outputs(wildcards)[0], 0)

    def hardware_files(self) -> list[str]:
        return [paths.HARDWARE.format(system=name) for name in self.systems]

    def hardware_peak_files(self) -> list[str]:
        """Every system's peak files of the dtypes measured in jobs of their own."""
        return [
            paths.HARDWARE_PEAK.format(system=name, dtype=dtype)
            for name in self.systems
            for dtype in OWN_JOB_DTYPES
        ]

    def check_runs(self) -> list[tuple[str, str, str]]:
        """(system, framework, version) of every checks job."""
        return [(s, fw, self.version(s, fw)) for s in self.systems for fw in self.frameworks]

    def check_files(self, name: str) -> list[str]:
        return [paths.checks_file(s, fw, v, name) for s, fw, v in self.check_runs()]

    def _check_cell(self, wildcards: Mapping[str, Any]) -> None:
        """A requested cell must be one the config sweeps, at the installed version."""
        fw, mode, system = wildcards["framework"], wildcards["mode"], wildcards["system"]
        if mode not in self.config["modes"][fw]:
            raise ValueError(
                f"mode {mode!r} is not configured for {fw} (modes.{fw}: {self.config['modes'][fw]})"
            )
        installed = self.version(system, fw)
        if wildcards["version"] != installed:
            raise ValueError(
                f"{fw} results for version {wildcards['version']!r} cannot be computed here: "
                f"the {fw} of system {system!r} is {installed!r}"
            )
        self._check_precision(cell_of(wildcards))
        process = _process(wildcards)
        cell = f"{fw}/{mode}/{wildcards['arch']}/b{wildcards['batch']}"
        if process >= self.processes:
            raise ValueError(
                f"process {process} of {cell}: bench.processes is {self.processes} "
                f"(processes 0-{self.processes - 1})"
            )
        if process not in self.cell_processes(wildcards):
            raise ValueError(
                f"process {process} of {cell} on {system}: this cell is measured in process 0 "
                f"alone (bench.multi_process_share is "
                f"{self.config['bench']['multi_process_share']}; 1 measures every cell in "
                "every process)"
            )

    def cell_request(self, wildcards: Mapping[str, Any]) -> CellRequest:
        """Everything that determines one cell and process (the bench job's request)."""
        self._check_cell(wildcards)
        fw, mode, arch = wildcards["framework"], wildcards["mode"], wildcards["arch"]
        bench = self.config["bench"]
        return CellRequest(
            **self.model_fields(wildcards),
            batch=int(wildcards["batch"]),
            warmup=bench["warmup"],
            repeats=bench["repeats"],
            min_sample_s=bench["min_sample_s"],
            busy_threshold_cores=bench["busy_threshold_cores"],
            pressure_threshold=bench["pressure_threshold"],
            slow_sample_factor=bench["slow_sample_factor"],
            slow_machine_factor=bench["slow_machine_factor"],
            slow_sample_share=bench["slow_sample_share"],
            slow_on_cpu=bench["slow_on_cpu"],
            retries=bench["retries"],
            timeout_s=bench["timeout_s"],
            inject_failure=f"{fw}/{mode}/{arch}" in bench["inject_failure"],
            attribution=bench["attribution"],
            process=_process(wildcards),
            compile_options=self.compile_options(fw, mode),
            precision=precision_of(wildcards),
        )

    def compile_options(self, framework: str, mode: str) -> dict[str, Any]:
        if not frameworks.takes_compile_options(framework):
            return {}
        return dict((self.config.get(compile_options_key(framework)) or {}).get(mode, {}))

    @cached_property
    def train_runs(self) -> list[dict[str, Any]]:
        train = self.config["train"]
        return [
            dict(
                system=s,
                framework=fw,
                version=self.version(s, fw),
                mode=mode,
                model=model,
                dataset=dataset,
                precision=precision,
            )
            for s in self.systems
            for fw in self.frameworks
            for mode in train["modes"][fw]
            for model in train["models"]
            for dataset in train["datasets"]
            for precision in train["precisions"]
            if precision == FLOAT32 or mode in self.low_precision_train_modes(fw)
        ]

    def train_files(self) -> list[str]:
        return [paths.TRAIN_RUN.format(**paths.with_tag(run)) for run in self.train_runs]

    def train_settings(self, wildcards: Mapping[str, Any]) -> dict[str, Any]:
        """What a train job is told (its `settings` param): the train section less the plan's
        keys, with the run's precision where it is not float32 (training.config.run_settings:
        a float32 run's settings are those from before precision was a dimension, so upgrading
        reruns none). Raises for a precision the config does not train."""
        precision, train = precision_of(wildcards), self.config["train"]
        if precision not in train["precisions"]:
            raise ValueError(
                f"training precision {precision!r} is not configured "
                f"(train.precisions: {train['precisions']})"
            )
        fw, mode = wildcards["framework"], wildcards["mode"]
        low_modes = self.low_precision_train_modes(fw)
        if precision != FLOAT32 and mode not in low_modes:
            raise ValueError(
                f"{fw}/{mode} does not train in {precision} "
                f"(train.low_precision_modes.{fw}: {low_modes})"
            )
        return run_settings(train, precision)

    def train_params(self, wildcards: Mapping[str, Any]) -> dict[str, Any]:
        """What a train job checks against the config: the versions it records. Raises for a
        mode the config does not train."""
        fw, modes = wildcards["framework"], self.config["train"]["modes"]
        if wildcards["mode"] not in modes[fw]:
            raise ValueError(
                f"training mode {wildcards['mode']!r} is not configured for {fw} "
                f"(train.modes.{fw}: {modes[fw]})"
            )
        versions = frameworks.mode_versions(
            fw, wildcards["mode"], self.versions[(wildcards["system"], fw)]
        )
        return dict(versions=versions)

    def table_file(self, name: str, system: str = "{system}") -> str:
        """A summary table's path (of every system: `{system}` left as a wildcard)."""
        return paths.table_file(name, self.config["stats"]["table_batch"], system)

    def table_files(self, names: Sequence[str]) -> list[str]:
        """Every system's path of each table in `names`."""
        return [self.table_file(name, system) for system in self.systems for name in names]

    def compare_tables(self) -> list[str]:
        return [
            paths.COMPARE_TABLE.format(system=s, framework=fw)
            for (s, fw), baseline in self.baselines.items()
            if baseline
        ]

    def current_cells(self, system: str, framework: str) -> list[str]:
        return [
            paths.cell_file(cell, p)
            for cell in self.cells
            if (cell["system"], cell["framework"]) == (system, framework)
            for p in self.cell_processes(cell)
        ]

    def wildcard_patterns(self) -> dict[str, str]:
        """Every wildcard's allowed values as a regex: a target outside the config is a
        missing-rule error, not a silent run. Only the current versions: earlier versions'
        cells are plain input files (compare), never something to recompute."""
        train = self.config["train"]
        modes = {m for fw in self.frameworks for m in self.config["modes"][fw]}
        modes |= {m for fw in self.frameworks for m in train["modes"][fw]}
        versions = {self.version(s, fw) for s, fw in self.versions}
        return {
            "system": _alternatives(self.systems),
            "framework": _alternatives(self.frameworks),
            "mode": _alternatives(sorted(modes)),
            "model": _alternatives(train["models"]),
            "dataset": _alternatives(train["datasets"]),
            "arch": _alternatives(self.config["architectures"]),
            "batch": _alternatives(self.config["batch_sizes"]),
            "process": r"[1-9][0-9]*",
            # float32's tag is empty: grouped, so that float32 alone (precision.low: []) is a
            # pattern matching the empty tag, not an empty constraint Snakemake would ignore
            "precision_tag": f"(?:{_alternatives(self.precision_tags)})",
            "set": r"[0-9]+",
            "dtype": _alternatives(OWN_JOB_DTYPES),
            "version": _alternatives(sorted(versions)),
        }


def cell_of(wildcards: Mapping[str, Any]) -> dict[str, Any]:
    """The cell (CELL_KEYS) a bench job's wildcards name."""
    named = {key: wildcards[key] for key in CELL_KEYS if key != "precision"}
    return named | {"precision": precision_of(wildcards)}


def _process(wildcards: Mapping[str, Any]) -> int:
    return int(wildcards.get("process", 0) or 0)


def _alternatives(values) -> str:
    return "|".join(re.escape(str(value)) for value in values)


def make_plan(
    config: Mapping[str, Any],
    versions_of: VersionsOf | None = None,
    remote: bool = False,
    read_disk: bool = True,
) -> Plan:
    """The plan of a config validated against the schemas (defaults filled in).

    `versions_of(framework, device)`: where versions come from (default: this Python
    environment; see versions_source). `remote`: the jobs go to a cluster, so `threads: auto`
    is refused. `read_disk`: look for earlier versions' cells (compare baselines) and results
    of the layout before systems in the working directory.
    """
    check_config(config)
    if read_disk:
        paths.refuse_layout_before_systems(frameworks.MODES)
    versions_of = versions_of or versions_source(None)
    systems = parse_systems(
        config, resolve_threads, reserved=tuple(frameworks.MODES), remote=remote
    )
    by_device = {
        (device, fw): versions_of(fw, device)
        for device in sorted({system.device for system in systems.values()})
        for fw in config["frameworks"]
    }
    versions = {
        (name, fw): by_device[(system.device, fw)]
        for name, system in systems.items()
        for fw in config["frameworks"]
    }
    plan = Plan(config, systems, versions)
    if read_disk:
        current = {key: plan.version(*key) for key in versions}
        plan.baselines = baselines(current, config["compare"]["baseline"])
    return plan
