"""The train file: one training run (framework × mode × model × dataset × precision) as a
self-describing xarray Dataset (netCDF4 via h5netcdf), written by fwbench.training.run.

Variables (dimension `epoch`; SI units in each `units` attribute):
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
  val_accuracy_as_<evaluation>   1   a float32 run's trained model evaluated as the
                                 framework's cells run a precision, after the timed epochs,
                                 one per EVALUATED_IN (bfloat16, int8, int8_static by the
                                 framework's own means; int8_onnxrt, int8_static_onnxrt by
                                 ONNX Runtime); NaN where not run: `evaluated_in` says why
  compiled, graph_count, graph_breaks, fallbacks   1   as in the bench cells
  load_before, load_after 1      1-minute load average at start and end
Attributes: framework, framework_version, versions (JSON), mode, model, dataset, precision
(float32 where absent: a file from before precision was a dimension), precision_policy and
precision_how (a low-precision run's), evaluated_in (JSON: per evaluation 'ok' or why not),
evaluated_in_details (JSON: each quantization's settings and time), evaluated_in_s (JSON: each
evaluation's seconds, its export and quantization included), evaluated_in_calibration, status
('ok' | 'failed'), error_type, error_message, traceback_tail, compile_how, compile_details,
device, host, threads (JSON), config (JSON of the `train` section), config_hash, git_commit,
spec (JSON), seed, epochs, batch_size, steps_per_epoch, train_samples, val_samples,
image_shape, dataset_fingerprint, batch_order_hash, weight_decay_on, lr_milestones, start_ns,
end_ns, start_utc, end_utc (time.time_ns wall clock), lock_wait_s (set by the script),
schema_version (SCHEMA_VERSION; train files written before the attribute existed have version
1's layout and are read as version 1).
A failed run has the same variables, NaN where nothing was measured (epochs done before the
failure keep their values).

Every reader goes through `read_run`, which checks the schema version.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

from fwbench.io.atomic import write_netcdf
from fwbench.io.common import (
    COMPILE_AND_LOAD_UNITS,
    SCHEMA_KEY,
    attr_value,
    check_schema_version,
    schema_version,
)
from fwbench.precisions import BFLOAT16, INT8, INT8_STATIC

EPOCH_UNITS = {
    "epoch_time_s": "s",
    "eval_time_s": "s",
    "samples_per_s": "1/s",
    "train_loss": "1",
    "val_accuracy": "1",
    "learning_rate": "1",
    "busy_cpu_other": "cores",
}

# The ways a float32 run's trained model is also evaluated (fwbench.training.run), each a
# precision as the framework's cells run it, `<precision>` by the framework's own means
# (bfloat16 cast; int8 and int8_static: torch's PT2E, TensorFlow's LiteRT) and
# `<precision>_onnxrt` by ONNX Runtime's quantization of the framework's ONNX export (its
# onnxrt cells').
ONNXRT_EVALUATION = "_onnxrt"
EVALUATED_IN = (
    BFLOAT16,
    INT8,
    INT8_STATIC,
    INT8 + ONNXRT_EVALUATION,
    INT8_STATIC + ONNXRT_EVALUATION,
)


def evaluated_in(evaluation: str) -> str:
    """The variable of a float32 run's trained model's validation accuracy in `evaluation`
    (one of EVALUATED_IN)."""
    return f"val_accuracy_as_{evaluation}"


def evaluation_parts(evaluation: str) -> tuple[str, bool]:
    """(its precision, whether ONNX Runtime runs it) of one of EVALUATED_IN."""
    if evaluation.endswith(ONNXRT_EVALUATION):
        return evaluation.removesuffix(ONNXRT_EVALUATION), True
    return evaluation, False


SCALAR_UNITS = {
    "first_epoch_overhead_s": "s",
    "steady_epoch_time_s": "s",
    "time_to_target_s": "s",
    "target_accuracy": "1",
    "setup_time_s": "s",
    "peak_mem_bytes": "B",
    "peak_rss_bytes": "B",
    # a float32 run's trained model evaluated as the cells run each of EVALUATED_IN (NaN
    # where not run: the `evaluated_in` attribute says why)
    **{evaluated_in(precision): "1" for precision in EVALUATED_IN},
    **COMPILE_AND_LOAD_UNITS,
}
SCHEMA_VERSION = 1
UNVERSIONED = 1  # train files from before the attribute existed have version 1's layout
WHAT = "train file"


@dataclass
class RunRecord:
    """What one run measured; NaN for what it did not get to."""

    epochs: int
    per_epoch: dict[str, np.ndarray] = field(default_factory=dict)
    scalars: dict[str, float] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)

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
        attrs = {SCHEMA_KEY: SCHEMA_VERSION} | self.attrs
        ds.attrs.update({key: attr_value(value) for key, value in attrs.items()})
        return ds


def write_run(ds: xr.Dataset, path: str | os.PathLike) -> None:
    write_netcdf(ds, path)


def read_run(path: str | os.PathLike) -> xr.Dataset:
    """The whole train file as a Dataset."""
    with xr.open_dataset(path, engine="h5netcdf") as ds:
        check_schema_version(schema_version(ds.attrs, UNVERSIONED), SCHEMA_VERSION, path, WHAT)
        return ds.load()
