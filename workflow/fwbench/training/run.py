"""One training run, framework-free: the epoch loop that feeds every framework the same
batches, the metrics, and the run's record (its file format is fwbench.io.train_file).

One run = one framework × mode × model × dataset × precision (float32, or bfloat16 mixed
precision: fwbench.training.config.MIXED_BFLOAT16). The framework's module
`fwbench.frameworks.<framework>.train` (a frameworks.protocols.TrainingAdapter) builds the
`Trainer`; it is imported only inside `run`, after the job set its environment.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from fwbench import provenance
from fwbench.frameworks import check_framework_mode, is_export_mode, load
from fwbench.frameworks.cache_dirs import cold_training_dirs
from fwbench.frameworks.protocols import Exported, Predictor, Trainer, TrainingAdapter
from fwbench.host.contention import OtherCpu
from fwbench.host.harness import peak_rss_bytes
from fwbench.io.dims import STATUS_FAILED, STATUS_OK
from fwbench.io.train_file import EVALUATED_IN, RunRecord, evaluated_in, evaluation_parts
from fwbench.model import resnet
from fwbench.precisions import FLOAT32
from fwbench.training import data as datasets
from fwbench.training.config import (
    MIXED_BFLOAT16,
    WEIGHT_DECAY_ON,
    TrainConfig,
    check_precision,
    parse_settings,
)

# How many training batches calibrate the quantization of a float32 run's trained model.
CALIBRATION_BATCHES = 8

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


# ---- one run ------------------------------------------------------------------------------


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
    """Train `model` on `dataset` in `framework`/`mode` and the precision `settings` name
    (`precision`, float32 where absent), and return the train file's dataset.

    Never raises for a failure inside the run: the result then has status 'failed' and the
    error in its attributes. `threads` is what threads.setup_threads returned (provenance, and
    its count goes to the framework); set it up before calling.
    """
    precision = str(settings.get("precision", FLOAT32))
    epochs = settings.get("epochs", 1) if isinstance(settings.get("epochs"), int) else 1
    record = RunRecord(epochs=max(epochs, 1))
    trains = Run(framework, mode, model, dataset, precision, device)
    record.attrs |= _provenance(trains, settings, seed, threads)
    record.scalars["load_before"] = os.getloadavg()[0]
    try:
        with cold_training_dirs(framework) as (_, record.attrs["compile_cache"]):
            _train(record, trains, settings, seed, threads)
    except Exception as error:  # every failure becomes a recorded result, never a crash
        record.attrs |= {
            "status": STATUS_FAILED,
            "error_type": type(error).__name__,
            "error_message": str(error),
            "traceback_tail": "".join(traceback.format_exc().splitlines(True)[-30:]),
        }
    record.scalars.setdefault("peak_rss_bytes", peak_rss_bytes())  # a failed run's: now
    record.scalars.setdefault("peak_mem_bytes", record.scalars["peak_rss_bytes"])
    record.scalars["load_after"] = os.getloadavg()[0]
    end_ns = time.time_ns()
    record.attrs |= {"end_ns": end_ns, "end_utc": provenance.utc(end_ns)}
    return record.to_dataset()


def _provenance(
    run: Run, settings: dict[str, Any], seed: int, threads: dict[str, Any] | None
) -> dict[str, Any]:
    """A run's attributes before it starts: what it trains, where, with which code and
    settings, and when it started."""
    start_ns = time.time_ns()
    framework_version, versions = _versions(run.framework)
    return {
        "framework": run.framework,
        "framework_version": framework_version,
        "versions": versions,
        "mode": run.mode,
        "model": run.model,
        "dataset": run.dataset,
        "precision": run.precision,
        "status": STATUS_OK,
        "device": run.device,
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


@dataclasses.dataclass(frozen=True)
class Run:
    """What one run trains, where."""

    framework: str
    mode: str
    model: str
    dataset: str
    precision: str
    device: str


def _train(
    record: RunRecord,
    run: Run,
    settings: dict[str, Any],
    seed: int,
    threads: dict[str, Any] | None,
) -> None:
    config = _checked_config(run, settings)
    data = datasets.load_dataset(run.dataset, settings, seed)
    spec = resnet.build_resnet(config.architectures[run.model], *data.image_shape, data.classes)
    weights = resnet.make_weights(spec, seed)
    orders = [
        datasets.epoch_order(len(data.x_train), config.batch_size, epoch, seed)
        for epoch in range(config.epochs)
    ]
    _record_setup(record, spec, data, config, orders)

    setup_start = time.perf_counter()
    module: TrainingAdapter = load(run.framework, "train")
    trainer: Trainer = module.build(
        spec,
        weights,
        config.optimizer,
        steps_per_epoch=len(data.x_train) // config.batch_size,
        mode=run.mode,
        device=run.device,
        threads=(threads or {}).get("threads"),
        allow_tf32=config.allow_tf32,
        precision=run.precision,
    )
    record.scalars["setup_time_s"] = time.perf_counter() - setup_start
    if run.precision != FLOAT32:
        record.attrs |= {
            "precision_policy": MIXED_BFLOAT16,
            "precision_how": module.BFLOAT16_POLICY,
        }
    _run_epochs(record, trainer, module.INPUT_LAYOUT, data, orders, config.batch_size)
    _record_outcome(record, trainer, config.target_accuracy)
    if run.precision == FLOAT32:
        _record_evaluated_in(record, trainer, module.INPUT_LAYOUT, data, config.batch_size)


def _checked_config(run: Run, settings: dict[str, Any]) -> TrainConfig:
    """The run's typed config; raises for what it cannot run (or was told to fail)."""
    check_framework_mode(run.framework, run.mode)
    if is_export_mode(run.framework, run.mode):
        raise ValueError(
            f"{run.framework}/{run.mode} runs an exported inference artifact and cannot train; "
            "training modes are the in-framework ones (train.modes)"
        )
    if run.device not in ("cpu", "cuda"):
        raise ValueError(f"unknown device {run.device!r}; known: cpu, cuda")
    check_precision(run.precision)
    config = parse_settings(settings)
    if f"{run.framework}/{run.mode}/{run.model}" in config.inject_failure:
        raise RuntimeError(
            f"injected failure for {run.framework}/{run.mode}/{run.model} (train.inject_failure)"
        )
    if run.model not in config.architectures:
        raise ValueError(
            f"unknown model {run.model!r}; train.architectures has {sorted(config.architectures)}"
        )
    return config


def _record_setup(
    record: RunRecord,
    spec: resnet.ResNetSpec,
    data: datasets.Dataset,
    config: TrainConfig,
    orders: list[np.ndarray],
) -> None:
    """What the run trains on, in what order, before it starts."""
    record.attrs |= {
        "spec": dataclasses.asdict(spec),
        "epochs": config.epochs,
        "batch_size": config.batch_size,
        "steps_per_epoch": len(data.x_train) // config.batch_size,
        "train_samples": len(data.x_train),
        "val_samples": len(data.x_val),
        "image_shape": list(data.image_shape),
        "dataset_fingerprint": data.fingerprint(),
        "batch_order_hash": hashlib.sha256(np.stack(orders).tobytes()).hexdigest(),
        "lr_milestones": list(config.optimizer.schedule.milestones),
    }
    record.scalars["target_accuracy"] = config.target_accuracy


def _run_epochs(
    record: RunRecord,
    trainer: Trainer,
    layout: str,
    data: datasets.Dataset,
    orders: list[np.ndarray],
    batch_size: int,
) -> None:
    """Train and evaluate epoch by epoch, each epoch's times, loss and accuracy recorded."""
    x_train = datasets.to_layout(data.x_train, layout)
    x_val = datasets.to_layout(data.x_val, layout)
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
        per_epoch["val_accuracy"][epoch] = _evaluate(trainer.predict, x_val, data.y_val, batch_size)
        per_epoch["eval_time_s"][epoch] = (time.perf_counter_ns() - start) * 1e-9
        trainer.end_epoch()


def _record_outcome(record: RunRecord, trainer: Trainer, target_accuracy: float) -> None:
    """The run's summary scalars and what the framework says about compilation; its peak
    memory before anything else (the trained model's evaluation in other precisions) runs."""
    record.scalars["peak_rss_bytes"] = peak_rss_bytes()
    per_epoch = record.per_epoch
    overhead, steady = first_epoch_overhead(per_epoch["epoch_time_s"])
    info = trainer.compile_info()
    peak_device = trainer.peak_device_memory_bytes()
    record.scalars |= {
        "first_epoch_overhead_s": overhead,
        "steady_epoch_time_s": steady,
        "time_to_target_s": time_to_target(
            per_epoch["epoch_time_s"], per_epoch["val_accuracy"], target_accuracy
        ),
        "compiled": float(info.compiled),
        "graph_count": info.graph_count,
        "graph_breaks": info.graph_breaks,
        "fallbacks": info.fallbacks,
    }
    if peak_device is not None:
        record.scalars["peak_mem_bytes"] = peak_device
    record.attrs |= {"compile_how": info.how, "compile_details": info.details}


def _record_evaluated_in(
    record: RunRecord, trainer: Trainer, layout: str, data: datasets.Dataset, batch_size: int
) -> None:
    """The trained model's validation accuracy in each of EVALUATED_IN as the framework's
    cells run it (train_file.evaluated_in names the variable), after the timed epochs; a
    quantization calibrates on the first CALIBRATION_BATCHES batches of the training split. An
    evaluation the framework does not run, or one that fails, is recorded with its reason."""
    calibration = datasets.to_layout(data.x_train[: CALIBRATION_BATCHES * batch_size], layout)
    batches = [calibration[i : i + batch_size] for i in range(0, len(calibration), batch_size)]
    x_val = datasets.to_layout(data.x_val, layout)
    outcome, details, seconds = {}, {}, {}
    with tempfile.TemporaryDirectory(prefix="fwbench-trained-") as directory:
        onnx = _OnnxExport(trainer, os.path.join(directory, "trained"), batches[0])
        for evaluation in EVALUATED_IN:
            precision, in_onnxrt = evaluation_parts(evaluation)
            start = time.perf_counter()
            try:
                predict, details[evaluation] = (
                    onnx.quantized(precision, batches)
                    if in_onnxrt
                    else trainer.predict_in(precision, batches)
                )
                accuracy_in = _evaluate(predict, x_val, data.y_val, batch_size)
            except NotImplementedError as error:
                outcome[evaluation] = f"not run: {error}"
            except Exception as error:  # a failed quantization is recorded, never a crash
                outcome[evaluation] = f"failed: {type(error).__name__}: {error}"
            else:
                record.scalars[evaluated_in(evaluation)] = accuracy_in
                outcome[evaluation] = STATUS_OK
            seconds[evaluation] = time.perf_counter() - start
    record.attrs |= {
        "evaluated_in": outcome,
        "evaluated_in_details": details,
        "evaluated_in_s": seconds,
        "evaluated_in_calibration": f"the training split's first {len(batches)} batches of "
        f"{batch_size}",
    }


class _OnnxExport:
    """The trained model as its framework's onnxrt cells run it: its ONNX export (made once,
    on first use, into `stem`.onnx) quantized by ONNX Runtime as those cells' artifacts are
    (fwbench.runtimes.onnxrt.quantize), run by an ONNX Runtime session on one thread."""

    def __init__(self, trainer: Trainer, stem: str, example: np.ndarray):
        self._trainer, self._stem, self._example = trainer, stem, example
        self._exported: Exported | Exception | None = None

    def _export(self) -> Exported:
        """The export, made once: a failed one (NotImplementedError for a framework without
        one) is raised again for each later evaluation, not retried."""
        if self._exported is None:
            try:
                self._exported = self._trainer.onnx_export(self._stem + ".onnx", self._example)
            except Exception as error:
                self._exported = error
        if isinstance(self._exported, Exception):
            raise self._exported
        return self._exported

    def quantized(self, precision: str, calibration: list[np.ndarray]) -> Predictor:
        exported = self._export()
        from fwbench.runtimes import onnxrt  # in the env of every framework with onnxrt cells

        start = time.perf_counter()
        quantized = onnxrt.quantize(exported, precision, self._stem, calibration)
        details = quantized.details["quantization"] | {
            "exported_by": exported.how,
            "quantize_s": time.perf_counter() - start,
            "runtime": "onnxruntime.InferenceSession, CPUExecutionProvider, 1 thread",
        }
        return onnxrt.logits_of(quantized.file, threads=1), details


def _evaluate(
    predict: Callable[[np.ndarray], np.ndarray],
    x_val: np.ndarray,
    y_val: np.ndarray,
    batch_size: int,
) -> float:
    logits = [predict(batch)[:valid] for batch, valid in datasets.padded_batches(x_val, batch_size)]
    return accuracy(np.concatenate(logits), y_val)
