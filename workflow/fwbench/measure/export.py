"""One export job, start to finish: a framework's export mode on one architecture, its
artifact beside its manifest (fwbench.io.artifact_file) — or the manifest of the failure.

Like a cell it is a timing job: it holds the host's timing lock, runs on the system's threads
and cores, and its compile caches start empty (measure.compile_cache.cold_dirs), so export_s
is a first export's. A quantized precision's artifact (fwbench.precisions.QUANTIZED) is made
in the same job: where the runtime quantizes files (ONNX Runtime, frameworks.quantizer), from
the framework's float32 export, export_s the export's and quantize_s the quantization's; where
the converter quantizes while converting (LiteRT), within export_s. A static quantization
(int8_static) is calibrated on model.weights.make_calibration's seeded set, handed to whichever
quantizes. The manifest holds the settings and the calibration set's.
The artifact is written in the job's scratch directory and moved beside
the manifest whole, so a killed job leaves no partial artifact.
"""

from __future__ import annotations

import os
import shutil
import time
import traceback
from pathlib import Path
from typing import Any

from fwbench import frameworks, provenance
from fwbench.host.harness import peak_rss_bytes, timing_lock
from fwbench.host.threads import setup_threads
from fwbench.io.artifact_file import write_manifest
from fwbench.io.atomic import atomic_path
from fwbench.io.dims import STATUS_OK
from fwbench.measure import compile_cache
from fwbench.measure.job import Watchdog, failure_attrs
from fwbench.plan.request import ExportRequest
from fwbench.precisions import FLOAT32, INT8_STATIC


def _export(request: ExportRequest, output: Path, scratch: str) -> dict[str, Any]:
    """The artifact, exported and moved beside `output`; what the manifest says of it."""
    from fwbench.model.specs import build_spec
    from fwbench.model.weights import calibration_settings, make_calibration, make_weights

    spec = build_spec(request.arch, request.dims)
    start = time.perf_counter()
    exporter = frameworks.load(request.framework, frameworks.EXPORT_PART)
    threads = frameworks.load(request.framework).set_threads(request.threads)
    imported = time.perf_counter()
    weights = make_weights(spec, request.seed)
    built = time.perf_counter()
    quantizer = frameworks.quantizer(request.framework, request.mode, request.precision)
    calibrated = request.precision == INT8_STATIC
    calibration = {"calibration": make_calibration(spec)} if calibrated else {}
    path = os.path.join(scratch, request.arch)
    exported = exporter.export(
        spec,
        weights,
        request.mode,
        request.device,
        path,
        precision=FLOAT32 if quantizer else request.precision,
        **({} if quantizer else calibration),
    )
    done = time.perf_counter()
    quantized = {}
    if quantizer is not None:  # the runtime quantizes the float32 export, timed on its own
        exported = quantizer.quantize(exported, request.precision, path, **calibration)
        quantized = {"quantize_s": time.perf_counter() - done}
    if calibrated:
        quantized["calibration"] = calibration_settings()
    # Named as its manifest (`<arch><precision tag>`), so each precision's artifact is its own.
    target = output.with_name(output.stem + "".join(Path(exported.file).suffixes))
    with atomic_path(target) as partial:
        shutil.copyfile(exported.file, partial)
    return {
        "status": STATUS_OK,
        "file": target.name,
        "size_bytes": target.stat().st_size,
        "how": exported.how,
        "details": exported.details,
        "framework_threads": threads,
        "import_s": imported - start,
        "build_s": built - imported,
        "export_s": done - built,
        **quantized,
    }


def _document(request: ExportRequest, threads: dict[str, Any], cache_note: str) -> dict:
    return {
        "framework": request.framework,
        "mode": request.mode,
        "arch": request.arch,
        "precision": request.precision,
        "system": request.system,
        "device": request.device,
        "versions": request.versions | provenance.runtime(),
        "threads": threads,
        "compile_cache": cache_note,
        "git_commit": provenance.git_commit(Path(__file__).parent),
        **provenance.node_identity(request.device),
        "file": "",
    }


def run_export(request: ExportRequest, output: str | os.PathLike) -> dict[str, Any]:
    """Export one artifact and write its manifest to `output`; a failure is a manifest too."""
    frameworks.check_framework_mode(request.framework, request.mode)
    if not frameworks.is_export_mode(request.framework, request.mode):
        raise ValueError(f"{request.framework}/{request.mode} is no export mode")
    os.environ.update(frameworks.pre_import_env(request.framework, request.device))
    threads = setup_threads(request.threads)
    output = Path(output)
    with compile_cache.cold_dirs(request) as (scratch, cache_note):
        document = _document(request, threads, cache_note)

        def record_timeout(error: BaseException) -> None:
            write_manifest(document | failure_attrs(error) | _ended(), output)

        with timing_lock(request.lock) as waited_s:
            document |= {"lock_wait_s": waited_s, "start_utc": provenance.utc(time.time_ns())}
            with Watchdog(record_timeout, request.timeout_s, scratch) as watchdog:
                try:
                    document |= _export(request, output, scratch)
                except Exception as error:  # a model that cannot export is data
                    document |= failure_attrs(error)
                    traceback.print_exc()
                if watchdog.claim():
                    document |= _ended()
                    write_manifest(document, output)
    return document


def _ended() -> dict[str, Any]:
    return {"end_utc": provenance.utc(time.time_ns()), "peak_rss_bytes": peak_rss_bytes()}
