"""The JAX export adapter (frameworks.protocols.ExportAdapter): mode `export`.

jax.export lowers the jitted forward (recurrences via lax.scan, the weights closed over as
constants) with a symbolic batch dimension for the platform of the cell's device, and
serializes it: the portable StableHLO artifact a serving stack deserializes and calls
(`jax.export.deserialize(...).call`, frameworks.jax.infer). The params and the argument are
in the cell's precision (models.DTYPES), so the artifact takes and computes in it.
"""

from __future__ import annotations

import jax
import numpy as np
from jax import export as jax_export

from fwbench.frameworks import FLOAT32, check_precision
from fwbench.frameworks.jax import models
from fwbench.frameworks.protocols import Exported
from fwbench.model.specs import ArchSpec
from fwbench.model.weights import Weights

SUFFIX = ".jaxexport"
LOOP = "scan"


def _symbolic_batch(spec: ArchSpec) -> tuple:
    """The input's shape in jax's layout with its batch axis symbolic (the axis that grows
    with the batch: 0, or 1 in the time-major layout of the recurrences)."""
    one, two = (
        models.to_layout(spec, np.zeros(spec.input_shape(b), np.float32)).shape for b in (1, 2)
    )
    axis = next(i for i, (a, b) in enumerate(zip(one, two, strict=True)) if a != b)
    (batch,) = jax_export.symbolic_shape("batch")
    return (*one[:axis], batch, *one[axis + 1 :])


def export(
    spec: ArchSpec,
    weights: Weights,
    mode: str,
    device: str,
    stem: str,
    precision: str = FLOAT32,
    calibration: list[np.ndarray] | None = None,  # no static quantization here (protocols)
) -> Exported:
    if mode != "export":
        raise ValueError(f"jax has no export mode {mode!r}; its export mode: export")
    check_precision("jax", mode, precision)
    target = jax.devices(device)[0]
    params = models.to_params(spec, weights, target, precision)
    forward = models.forward_fn(spec, loop=LOOP)
    argument = jax.ShapeDtypeStruct(_symbolic_batch(spec), models.DTYPES[precision])
    exported = jax_export.export(
        jax.jit(lambda x: forward(params, x)), platforms=[target.platform]
    )(argument)
    path = stem + SUFFIX
    with open(path, "wb") as handle:
        handle.write(exported.serialize())
    return Exported(
        file=path,
        how="jax.export.export(jax.jit(forward with the weights as constants), symbolic batch)"
        ".serialize()",
        details={
            "platforms": list(exported.platforms),
            "calling_convention_version": exported.calling_convention_version,
            "dynamic": "batch (symbolic)",
            "in_shape": str(exported.in_avals[0].shape),
            "in_dtype": str(exported.in_avals[0].dtype),
            "precision": precision,
            "jax": jax.__version__,
        }
        | models.describe_loop(spec, LOOP),
    )
