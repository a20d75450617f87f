"""fwbench's harness vs torch.utils.benchmark.Timer on the same torch model and threads.

Builds one cell's model with the torch adapter, times it with
fwbench.host.harness.time_calls (what a `bench` job does) and with
torch.utils.benchmark.Timer.blocked_autorange, alternating the two for several rounds, and
prints both medians and their ratio (goal: 1.00 ± 0.05).

    .venv/bin/python self_measurement/timer_ratio.py --arch mlp --batch 32 --threads 1
"""

from __future__ import annotations

import argparse
import statistics
import sys

from fwbench import frameworks
from fwbench.host.harness import time_calls, timing_lock
from fwbench.host.threads import setup_threads
from fwbench.model.specs import ARCHITECTURES, build_spec
from fwbench.model.weights import make_input, make_weights


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=ARCHITECTURES, default="mlp")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--mode", choices=frameworks.MODES["torch"], default="eager")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=15)
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--lock", default="/tmp/fwbench-timing.lock")
    args = parser.parse_args()

    setup_threads(args.threads)
    adapter = frameworks.load("torch")
    adapter.set_threads(args.threads)
    from torch.utils.benchmark import Timer  # after the thread set-up, like the adapter

    spec = build_spec(args.arch)
    runner = adapter.build(spec, make_weights(spec), args.mode, "cpu")
    prepared = runner.prepare(make_input(spec, args.batch))

    def call():  # what a bench job times: inside the runner's context, entered once
        return runner.call_in_context(prepared)

    def call_alone():  # torch.utils.benchmark times one whole call, context included
        return runner(prepared)

    timer = Timer(
        stmt="sync(call())",
        globals={"call": call_alone, "sync": runner.sync},
        num_threads=args.threads,
        label=f"{args.arch} b{args.batch} {args.mode}",
    )
    ours, theirs = [], []
    with timing_lock(args.lock):
        for _ in range(args.rounds):
            timing = time_calls(
                call, runner.sync, args.warmup, args.repeats, context=runner.timing_context
            )
            ours.append(statistics.median(timing.latency_s))
            theirs.append(timer.blocked_autorange(min_run_time=1.0).median)
    ours_s, theirs_s = statistics.median(ours), statistics.median(theirs)
    print(f"cell: torch/{args.mode}/{args.arch}/b{args.batch}, threads={args.threads}")
    print(f"fwbench harness median   {ours_s * 1e6:10.2f} µs  (rounds: {_us(ours)})")
    print(f"torch Timer median       {theirs_s * 1e6:10.2f} µs  (rounds: {_us(theirs)})")
    ratio = ours_s / theirs_s
    print(f"ratio fwbench / Timer    {ratio:10.3f}  (goal 1.00 ± 0.05)")
    return 0 if abs(ratio - 1) <= 0.05 else 1


def _us(values: list[float]) -> str:
    return ", ".join(f"{v * 1e6:.1f}" for v in values)


if __name__ == "__main__":
    sys.exit(main())
