"""Training benchmarks, framework-free: the `train` config, the step learning-rate schedule,
the epoch loop that feeds every framework the same batches, the metrics, and the train file.

One run = one framework × mode × model × dataset. The framework's module
`frameworks/<framework>_train.py` exposes `INPUT_LAYOUT` ("NCHW" or "NHWC") and
`build(spec, weights, optimizer, *, steps_per_epoch, mode, device, threads, allow_tf32)`,
returning a `Trainer`; it is imported only inside `run`, after the job set its environment.

The train file (xarray netCDF, dimension `epoch`; SI units in each `units` attribute):
  epoch_time_s(epoch)     s      the epoch's training steps, host→device copies and final sync
  eval_time_s(epoch)      s      validation pass after the epoch (not in epoch_time_s)
  samples_per_s(epoch)    1/s    training samples per second of epoch_time_s
  train_loss(epoch)       1      mean over the epoch's steps of the batch-mean cross-entropy
  val_accuracy(epoch)     1      fraction of validation samples classified right (BN in eval mode)
  learning_rate(epoch)    1      the rate the epoch's steps used, read back from the framework
  busy_cpu_other(epoch)   cores  other processes' CPU use during the epoch
  first_epoch_overhead_s  s      first epoch − median of the later ones (compilation, warm-up)
  steady_epoch_time_s     s      median of the epochs after the first
  time_to_target_s        s      summed epoch_time_s up to the first epoch whose val_accuracy
                                 reaches target_accuracy (evaluation excluded); NaN if never
  target_accuracy         1
  setup_time_s            s      framework import + model build + weight load
  peak_mem_bytes          B      device allocator peak on an accelerator, else peak RSS
  peak_rss_bytes          B      the process's peak resident set (imports and data included)
  compiled, graph_count, graph_breaks, fallbacks   1   as in the bench cells
  load_before, load_after 1      1-minute load average at start and end
Attributes: framework, framework_version, versions (JSON), mode, model, dataset, status
('ok' | 'failed'), error_type, error_message, traceback_tail, compile_how, compile_details,
device, host, threads (JSON), config (JSON of the `train` section), config_hash, git_commit,
spec (JSON), seed, epochs, batch_size, steps_per_epoch, train_samples, val_samples,
image_shape, dataset_fingerprint, batch_order_hash, weight_decay_on, lr_milestones, start_ns,
end_ns, start_utc, end_utc (time.time_ns wall clock), lock_wait_s (set by the script).
A failed run has the same variables, NaN where nothing was measured (epochs done before the
failure keep their values).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import resource
import time
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd
import xarray as xr

from fwbench import data as datasets
from fwbench import provenance, resnet
from fwbench.dataset import STATUS_FAILED, STATUS_OK, attr_value, write_atomic
from fwbench.frameworks import MODES, CompileInfo, check_framework_mode, load
from fwbench.harness import OtherCpu
from fwbench.weights import Weights

VARIANT_DIMS = ("framework", "mode")
RUN_KEYS = ("model", "dataset")
SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "train.schema.yaml"
EPOCH_UNITS = {
    "epoch_time_s": "s",
    "eval_time_s": "s",
    "samples_per_s": "1/s",
    "train_loss": "1",
    "val_accuracy": "1",
    "learning_rate": "1",
    "busy_cpu_other": "cores",
}
SCALAR_UNITS = {
    "first_epoch_overhead_s": "s",
    "steady_epoch_time_s": "s",
    "time_to_target_s": "s",
    "target_accuracy": "1",
    "setup_time_s": "s",
    "peak_mem_bytes": "B",
    "peak_rss_bytes": "B",
    "compiled": "1",
    "graph_count": "1",
    "graph_breaks": "1",
    "fallbacks": "1",
    "load_before": "1",
    "load_after": "1",
}
WEIGHT_DECAY_ON = "every trainable tensor: conv kernels, BN gamma and beta, head W and b"
_SETTING_KEYS = {
    "modes",
    "models",
    "datasets",
    "architectures",
    "epochs",
    "batch_size",
    "learning_rate",
    "momentum",
    "weight_decay",
    "lr_milestones",
    "lr_gamma",
    "target_accuracy",
    "val_fraction",
    "max_train_samples",
    "max_val_samples",
    "allow_tf32",
    "imagefolder",
    "inject_failure",
    # Where the job runs (the rule's resources), not how it trains: accepted, not used here.
    "gpus",
    "gpu_model",
    "slurm_partition",
}


# ---- configuration ------------------------------------------------------------------------


@dataclass(frozen=True)
class StepSchedule:
    """Learning rate base_lr · gamma^k in epoch e, k = how many milestones are ≤ e (repeated
    milestones count repeatedly): torch's MultiStepLR, stepped once per epoch."""

    base_lr: float
    milestones: tuple[int, ...]
    gamma: float

    @classmethod
    def from_fractions(
        cls, base_lr: float, fractions: Iterable[float], gamma: float, epochs: int
    ) -> StepSchedule:
        """Milestones at round(fraction · epochs) (Python rounding, half to even), at least
        epoch 1."""
        fractions = list(fractions)
        for fraction in fractions:
            if not 0.0 < fraction < 1.0:
                raise ValueError(f"lr milestone fractions must lie in (0, 1), got {fraction}")
        milestones = sorted(max(1, round(fraction * epochs)) for fraction in fractions)
        return cls(base_lr, tuple(milestones), gamma)

    def lr_at_epoch(self, epoch: int) -> float:
        passed = sum(1 for milestone in self.milestones if milestone <= epoch)
        return self.base_lr * self.gamma**passed


@dataclass(frozen=True)
class SGDConfig:
    """torch.optim.SGD semantics: g ← g + weight_decay·w; buf ← momentum·buf + g (buf = g on
    the first step); w ← w − lr·buf, with lr from `schedule` per epoch."""

    momentum: float
    weight_decay: float
    schedule: StepSchedule


@dataclass(frozen=True)
class TrainConfig:
    epochs: int
    batch_size: int
    optimizer: SGDConfig
    target_accuracy: float
    allow_tf32: bool
    architectures: dict[str, dict[str, Any]]
    inject_failure: tuple[str, ...]


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def parse_settings(settings: dict[str, Any]) -> TrainConfig:
    """The typed config of a validated `train` section (every key present, defaults filled)."""
    missing, unknown = _SETTING_KEYS - set(settings), set(settings) - _SETTING_KEYS
    _require(not missing, f"train settings lack {sorted(missing)}: validate them first")
    _require(not unknown, f"unknown train settings {sorted(unknown)}")
    epochs, batch = settings["epochs"], settings["batch_size"]
    _require(isinstance(epochs, int) and epochs >= 1, f"train.epochs must be ≥ 1, got {epochs!r}")
    _require(
        isinstance(batch, int) and batch >= 2,
        f"train.batch_size must be ≥ 2 (batch norm needs two samples), got {batch!r}",
    )
    lr, momentum = settings["learning_rate"], settings["momentum"]
    weight_decay, gamma = settings["weight_decay"], settings["lr_gamma"]
    _require(lr > 0, f"train.learning_rate must be > 0, got {lr!r}")
    _require(0 <= momentum < 1, f"train.momentum must lie in [0, 1), got {momentum!r}")
    _require(weight_decay >= 0, f"train.weight_decay must be ≥ 0, got {weight_decay!r}")
    _require(0 < gamma <= 1, f"train.lr_gamma must lie in (0, 1], got {gamma!r}")
    target = settings["target_accuracy"]
    _require(0 < target <= 1, f"train.target_accuracy must lie in (0, 1], got {target!r}")
    schedule = StepSchedule.from_fractions(lr, settings["lr_milestones"], gamma, epochs)
    return TrainConfig(
        epochs=epochs,
        batch_size=batch,
        optimizer=SGDConfig(momentum, weight_decay, schedule),
        target_accuracy=float(target),
        allow_tf32=bool(settings["allow_tf32"]),
        architectures=dict(settings["architectures"]),
        inject_failure=tuple(settings["inject_failure"]),
    )


def default_settings(**overrides: Any) -> dict[str, Any]:
    """The `train` section with the schema's defaults filled in (needs snakemake), then
    `overrides` validated on top: for tests and interactive use."""
    from snakemake.utils import validate

    settings = dict(overrides)
    validate(settings, str(SCHEMA), set_default=True)
    return settings


# ---- the framework's side -----------------------------------------------------------------


class Trainer(Protocol):
    """One model, its optimizer and schedule, in one mode on one device."""

    def train_epoch(self, batches: Iterable[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """One training step per (images, labels) batch (images in INPUT_LAYOUT); returns each
        step's loss after waiting for the device to finish the epoch."""

    def end_epoch(self) -> None:
        """Advance the learning-rate schedule by one epoch where the framework does it so."""

    def learning_rate(self) -> float:
        """The rate the next step uses, read from the framework's own state."""

    def predict(self, images: np.ndarray) -> np.ndarray:
        """Logits for one batch with batch norm in eval mode (running statistics)."""

    def state(self) -> Weights:
        """Every weight and running statistic, in the neutral names and layouts."""

    def compile_info(self) -> CompileInfo:
        """Valid after the first epoch."""

    def peak_device_memory_bytes(self) -> int | None:
        """The framework allocator's peak on an accelerator; None on CPU."""


# ---- metrics ------------------------------------------------------------------------------


def first_epoch_overhead(epoch_time_s: np.ndarray) -> tuple[float, float]:
    """(first epoch − median of the later ones, that median); NaN without a later epoch."""
    times = np.asarray(epoch_time_s, dtype=float)
    if len(times) < 2 or np.isnan(times[1:]).all():
        return float("nan"), float("nan")
    steady = float(np.nanmedian(times[1:]))
    return float(times[0] - steady), steady


def time_to_target(epoch_time_s: np.ndarray, val_accuracy: np.ndarray, target: float) -> float:
    """Summed epoch time through the first epoch with val_accuracy ≥ target; NaN if none."""
    reached = np.flatnonzero(np.asarray(val_accuracy) >= target)
    if len(reached) == 0:
        return float("nan")
    return float(np.sum(np.asarray(epoch_time_s)[: reached[0] + 1]))


def accuracy(logits: np.ndarray, labels: np.ndarray) -> float:
    return float(np.mean(np.argmax(logits, axis=1) == labels))


def _peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


# ---- one run ------------------------------------------------------------------------------


@dataclass
class RunRecord:
    """What one run measured; NaN for what it did not get to."""

    epochs: int
    per_epoch: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    scalars: dict[str, float] = dataclasses.field(default_factory=dict)
    attrs: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in EPOCH_UNITS:
            self.per_epoch.setdefault(name, np.full(self.epochs, np.nan))

    def to_dataset(self) -> xr.Dataset:
        variables = {name: ("epoch", self.per_epoch[name]) for name in EPOCH_UNITS}
        for name in SCALAR_UNITS:
            variables[name] = ((), float(self.scalars.get(name, np.nan)))
        ds = xr.Dataset(variables, coords={"epoch": np.arange(self.epochs)})
        for name, unit in EPOCH_UNITS.items() | SCALAR_UNITS.items():
            ds[name].attrs["units"] = unit
        ds.attrs.update({key: attr_value(value) for key, value in self.attrs.items()})
        return ds


def _versions(framework: str) -> tuple[str, dict[str, str]]:
    """(the version that names the results, every relevant version); a framework that is
    not installed fails the run later, where load() imports it."""
    try:
        installed = provenance.installed_versions(framework)
    except (KeyError, RuntimeError):
        return "unknown", provenance.runtime()
    return next(iter(installed.values())), installed | provenance.runtime()


def run(
    framework: str,
    mode: str,
    model: str,
    dataset: str,
    settings: dict[str, Any],
    *,
    seed: int = 0,
    device: str = "cpu",
    threads: dict[str, Any] | None = None,
) -> xr.Dataset:
    """Train `model` on `dataset` in `framework`/`mode` and return the train file's dataset.

    Never raises for a failure inside the run: the result then has status 'failed' and the
    error in its attributes. `threads` is what threads.setup_threads returned (provenance, and
    its count goes to the framework); set it up before calling.
    """
    start_ns = time.time_ns()
    epochs = settings.get("epochs", 1) if isinstance(settings.get("epochs"), int) else 1
    record = RunRecord(epochs=max(epochs, 1))
    framework_version, versions = _versions(framework)
    record.attrs |= {
        "framework": framework,
        "framework_version": framework_version,
        "versions": versions,
        "mode": mode,
        "model": model,
        "dataset": dataset,
        "status": STATUS_OK,
        "device": device,
        "host": provenance.host(),
        "threads": threads or {},
        "config": json.dumps(settings, sort_keys=True, default=str),
        "config_hash": provenance.config_hash(settings),
        "git_commit": provenance.git_commit(Path(__file__).resolve().parent),
        "seed": seed,
        "weight_decay_on": WEIGHT_DECAY_ON,
        "start_ns": start_ns,
        "start_utc": provenance.utc(start_ns),
    }
    record.scalars["load_before"] = os.getloadavg()[0]
    try:
        _train(record, framework, mode, model, dataset, settings, seed, device, threads)
    except Exception as error:  # every failure becomes a recorded result, never a crash
        record.attrs |= {
            "status": STATUS_FAILED,
            "error_type": type(error).__name__,
            "error_message": str(error),
            "traceback_tail": "".join(traceback.format_exc().splitlines(True)[-30:]),
        }
    record.scalars["peak_rss_bytes"] = _peak_rss_bytes()
    record.scalars.setdefault("peak_mem_bytes", record.scalars["peak_rss_bytes"])
    record.scalars["load_after"] = os.getloadavg()[0]
    end_ns = time.time_ns()
    record.attrs |= {"end_ns": end_ns, "end_utc": provenance.utc(end_ns)}
    return record.to_dataset()


def _train(
    record: RunRecord,
    framework: str,
    mode: str,
    model: str,
    dataset: str,
    settings: dict[str, Any],
    seed: int,
    device: str,
    threads: dict[str, Any] | None,
) -> None:
    check_framework_mode(framework, mode)
    if device not in ("cpu", "cuda"):
        raise ValueError(f"unknown device {device!r}; known: cpu, cuda")
    config = parse_settings(settings)
    if f"{framework}/{mode}/{model}" in config.inject_failure:
        raise RuntimeError(
            f"injected failure for {framework}/{mode}/{model} (train.inject_failure)"
        )
    if model not in config.architectures:
        raise ValueError(
            f"unknown model {model!r}; train.architectures has {sorted(config.architectures)}"
        )

    data = datasets.load_dataset(dataset, settings, seed)
    spec = resnet.build_resnet(config.architectures[model], *data.image_shape, data.classes)
    weights = resnet.make_weights(spec, seed)
    steps_per_epoch = len(data.x_train) // config.batch_size
    orders = [
        datasets.epoch_order(len(data.x_train), config.batch_size, epoch, seed)
        for epoch in range(config.epochs)
    ]
    record.attrs |= {
        "spec": dataclasses.asdict(spec),
        "epochs": config.epochs,
        "batch_size": config.batch_size,
        "steps_per_epoch": steps_per_epoch,
        "train_samples": len(data.x_train),
        "val_samples": len(data.x_val),
        "image_shape": list(data.image_shape),
        "dataset_fingerprint": data.fingerprint(),
        "batch_order_hash": hashlib.sha256(np.stack(orders).tobytes()).hexdigest(),
        "lr_milestones": list(config.optimizer.schedule.milestones),
    }
    record.scalars["target_accuracy"] = config.target_accuracy

    setup_start = time.perf_counter()
    module = load(framework, "train")
    trainer: Trainer = module.build(
        spec,
        weights,
        config.optimizer,
        steps_per_epoch=steps_per_epoch,
        mode=mode,
        device=device,
        threads=(threads or {}).get("threads"),
        allow_tf32=config.allow_tf32,
    )
    record.scalars["setup_time_s"] = time.perf_counter() - setup_start
    x_train = datasets.to_layout(data.x_train, module.INPUT_LAYOUT)
    x_val = datasets.to_layout(data.x_val, module.INPUT_LAYOUT)

    per_epoch = record.per_epoch
    for epoch, order in enumerate(orders):
        per_epoch["learning_rate"][epoch] = trainer.learning_rate()
        with OtherCpu() as other_cpu:
            start = time.perf_counter_ns()
            losses = trainer.train_epoch(datasets.batches(x_train, data.y_train, order))
            per_epoch["epoch_time_s"][epoch] = (time.perf_counter_ns() - start) * 1e-9
        per_epoch["busy_cpu_other"][epoch] = other_cpu.cores
        per_epoch["train_loss"][epoch] = float(np.mean(losses))
        per_epoch["samples_per_s"][epoch] = order.size / per_epoch["epoch_time_s"][epoch]
        start = time.perf_counter_ns()
        per_epoch["val_accuracy"][epoch] = _evaluate(trainer, x_val, data.y_val, config.batch_size)
        per_epoch["eval_time_s"][epoch] = (time.perf_counter_ns() - start) * 1e-9
        trainer.end_epoch()

    overhead, steady = first_epoch_overhead(per_epoch["epoch_time_s"])
    info = trainer.compile_info()
    peak_device = trainer.peak_device_memory_bytes()
    record.scalars |= {
        "first_epoch_overhead_s": overhead,
        "steady_epoch_time_s": steady,
        "time_to_target_s": time_to_target(
            per_epoch["epoch_time_s"], per_epoch["val_accuracy"], config.target_accuracy
        ),
        "compiled": float(info.compiled),
        "graph_count": info.graph_count,
        "graph_breaks": info.graph_breaks,
        "fallbacks": info.fallbacks,
    }
    if peak_device is not None:
        record.scalars["peak_mem_bytes"] = peak_device
    record.attrs |= {"compile_how": info.how, "compile_details": info.details}


def _evaluate(trainer: Trainer, x_val: np.ndarray, y_val: np.ndarray, batch_size: int) -> float:
    logits = [
        trainer.predict(batch)[:valid]
        for batch, valid in datasets.padded_batches(x_val, batch_size)
    ]
    return accuracy(np.concatenate(logits), y_val)


def write_run(ds: xr.Dataset, path: str | os.PathLike) -> None:
    write_atomic(ds, path)


def read_run(path: str | os.PathLike) -> xr.Dataset:
    with xr.open_dataset(path, engine="h5netcdf") as ds:
        return ds.load()


def stack_runs(runs: Iterable[xr.Dataset], keys: tuple[str, ...] = RUN_KEYS) -> xr.Dataset:
    """Train files (fwbench.training.read_run) as one dataset, dims framework, mode, *keys,
    epoch; `status` per run ('absent' where a combination has no run) and `error` (the failed
    run's message)."""
    dims = (*VARIANT_DIMS, *keys)
    expanded = []
    for run in runs:
        missing = [d for d in dims if d not in run.attrs]
        if missing:
            raise ValueError(f"a train file lacks the attributes {missing}")
        labels = {d: [str(run.attrs[d])] for d in dims}
        plain = run.assign(
            status=((), str(run.attrs.get("status", "ok"))),
            error=((), str(run.attrs.get("error_message", ""))),
        )
        plain.attrs = {}
        expanded.append(plain.expand_dims(labels))
    if not expanded:
        raise ValueError("no training runs to stack")
    combined = xr.merge(expanded, combine_attrs="drop", join="outer", compat="no_conflicts")
    known = [f for f in MODES if f in combined["framework"].values]
    others = sorted(set(combined["framework"].values.tolist()) - set(known))
    combined = combined.reindex(framework=known + others)  # the registry's framework order
    status = combined["status"].values.astype(object)
    absent = np.vectorize(lambda v: not isinstance(v, str), otypes=[bool])(status)
    status[absent] = "absent"
    combined["status"] = (combined["status"].dims, status)
    return combined


def aggregate_runs(paths: Iterable[str | os.PathLike]) -> xr.Dataset:
    """Every train file into one dataset (dims framework, mode, model, dataset, epoch), with
    the versions each framework's runs come from."""
    runs = [read_run(path) for path in paths]
    stacked = stack_runs(runs)
    versions = {run.attrs["framework"]: run.attrs.get("framework_version", "") for run in runs}
    stacked.attrs["framework_versions"] = json.dumps(versions, sort_keys=True)
    stacked.attrs["host"] = ",".join(sorted({str(run.attrs.get("host", "")) for run in runs}))
    for name, unit in (EPOCH_UNITS | SCALAR_UNITS).items():
        if name in stacked:
            stacked[name].attrs["units"] = unit
    return stacked


def summary_frame(stacked: xr.Dataset) -> pd.DataFrame:
    """One row per run (absent combinations left out): its status and per-run scalars, the
    final validation accuracy and the median samples/s of the steady epochs."""
    keys = (*VARIANT_DIMS, *RUN_KEYS)
    scalars = [name for name in SCALAR_UNITS if name in stacked]
    frame = stacked[scalars + ["status", "error"]].to_dataframe().reset_index()
    frame = frame[frame["status"] != "absent"]
    steady = stacked["samples_per_s"].isel(epoch=slice(1, None)).median("epoch")
    accuracy = stacked["val_accuracy"]
    last_measured = accuracy.notnull().cumsum("epoch").argmax("epoch")  # a failed run stops early
    final = accuracy.isel(epoch=last_measured)
    extra = xr.Dataset({"steady_samples_per_s": steady, "final_val_accuracy": final})
    frame = frame.merge(extra.to_dataframe().reset_index(), on=list(keys), how="left")
    return frame[[*keys, "status", "final_val_accuracy", "steady_samples_per_s", *scalars, "error"]]
