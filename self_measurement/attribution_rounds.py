"""The attribution pass on one cell, several rounds in one process: a clean timing, then the
pass, as a `bench` job runs them; per round the four parts of the clean median as the
statistics compute them (fwbench.analysis.attribution), the rest outside the framework and the
profiled run's stretch, so their spread from round to round shows.

    .venv/bin/python self_measurement/attribution_rounds.py tensorflow eager mlp 1 --rounds 3

The model's dims are the default config's (config/config.yaml); threads as given (default 2).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import yaml

from fwbench import frameworks
from fwbench.analysis.attribution import clean_kernel_s, rest_outside, time_parts
from fwbench.host.harness import timing_lock
from fwbench.host.threads import setup_threads
from fwbench.measure.attribution import attribute, floor_s, runner_call
from fwbench.model.specs import build_spec
from fwbench.model.weights import make_input, make_weights

CONFIG = Path(__file__).resolve().parents[1] / "config" / "config.yaml"
LOCK = "/tmp/fwbench-timing.lock"


def _parts(median: float, scalars: dict[str, float]) -> dict[str, float]:
    """The parts of `median` from one pass, with the roof left at 0 (no hardware file)."""
    cells = {name: np.array([value]) for name, value in scalars.items()}
    cells["median_s"] = np.array([median])
    names = ("attr_kernel_s", "attr_dispatches", "attr_floor_s", "attr_profiled_work_s")
    parts = time_parts(cells["median_s"], np.zeros(1), *(cells[name] for name in names))
    parts["rest_outside_s"] = rest_outside(parts, cells)
    kernel = clean_kernel_s(
        cells["median_s"], cells["attr_kernel_s"], cells["attr_profiled_work_s"]
    )
    return {name: float(values[0]) for name, values in parts.items()} | {
        "kernel_s": float(kernel[0][0])
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("framework", choices=list(frameworks.FRAMEWORKS))
    parser.add_argument("mode")
    parser.add_argument("arch")
    parser.add_argument("batch", type=int)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--lock", default=LOCK, help="the host-level timing lock's file")
    args = parser.parse_args()
    os.environ.update(frameworks.pre_import_env(args.framework, "cpu"))
    setup_threads(args.threads)
    adapter = frameworks.load_inference(args.framework, args.mode)
    adapter.set_threads(args.threads)
    spec = build_spec(args.arch, yaml.safe_load(CONFIG.read_text())["dims"][args.arch])
    runner = adapter.build(spec, make_weights(spec, 0), args.mode, "cpu")
    prepared = runner.prepare(make_input(spec, args.batch, 0))
    with timing_lock(args.lock):
        null = floor_s(adapter.null_call("cpu"))
        for round_ in range(args.rounds):
            median = floor_s(runner_call(runner, prepared), 15, 20, min_sample_s=0.02)
            scalars, attrs = attribute(adapter, runner, prepared, median, null)
            parts = _parts(median, scalars)
            p = {k: v * 1e6 for k, v in parts.items() if k.endswith("_s")}
            print(
                f"round {round_}: median {median * 1e6:.1f} µs = kernel {p['kernel_s']:.1f} "
                f"+ dispatch {p['dispatch_s']:.1f} ({scalars['attr_dispatches']:.0f} × "
                f"{scalars['attr_floor_s'] * 1e6:.1f}) + rest {p['residual_s']:.1f} (outside "
                f"the framework {p['rest_outside_s']:.1f}); stretch "
                f"{parts['attr_stretch']:.2f}; {attrs['attribution']}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
