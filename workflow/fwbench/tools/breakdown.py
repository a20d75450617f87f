"""Where a sweep's wall time goes, from the cells it wrote and Snakemake's own log.

    python -m fwbench breakdown [WORKDIR] [--log .snakemake/log/<run>.log]
        [--after .snakemake/log/<later run>.log ...]

Per cell, the job's measured window (start_ns..end_ns, inside the timing lock) is split into
framework import, model build, first call (compile + run), warm-up calls, timed iterations, the
speed canary's probes between them, the attribution pass after them (`attr_pass_s`), and the
rest (contention probe, counters, compile introspection); rows per framework and per process
(0: cold compile cache; later: warm).
Per training run, its window (start_ns..end_ns) is split into set-up (import, build, data),
the timed epochs (the first one holds the compilation, as a cell's first call does), the
validation passes and the rest. Per rounds file, its workers' start-up (`setup_s`: build and
warm-up, nothing timed) and its rounds (rounds × the median round's wall time).
The sweep's wall time is the span of the Snakemake log; what no window covers is process
start-up, Snakemake's scheduling, writing files and the other jobs (hardware, checks,
aggregation, figures, report). Last, per rule, its jobs' count and the sum of their spans in
the log (start to "Finished"): timing jobs run one at a time, so these add up to the wall time
and say what a rule adds to the sweep, or what a rule another version lacks took from it; and
per precision, what its jobs took (the jobs whose path names it: bench, export, train) plus its
variants' share of the rounds' spans (the rounds alternate every precision's variants of a row,
each variant a worker and a turn per round), plus its work inside jobs every precision shares:
its rows of the checks (their `seconds`) and the evaluations of float32 runs' trained models in
it (`evaluated_in_s`); the hardware_peak job of a dtype counts as that precision's: what the
sweep would save without it. With
`--after`, the logs of later runs in the same directory that redid some jobs (a new version's
code, `--forcerun`): their spans replace the same outputs' (keyed by each job's first output),
so that a partial rerun says what the whole sweep would cost with the new code.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import re
import sys
from collections import defaultdict
from pathlib import Path

from fwbench.io.cell_file import read_cell
from fwbench.io.checks_file import PRECISION, SECONDS, read_equivalence
from fwbench.io.rounds_file import joined_rows, read_rounds, variant_precisions
from fwbench.io.train_file import evaluation_parts, read_run
from fwbench.plan import paths
from fwbench.precisions import FLOAT32

PARTS = (
    "import_s",
    "build_s",
    "first_call_s",
    "warmup_s",
    "timed_s",
    "canary_s",
    "attribution_s",
    "other_s",
)
TRAIN_PARTS = ("setup_s", "epochs_s", "eval_s", "other_s")


def _calls_per_sample(ds) -> float:
    calls = float(ds["calls_per_sample"]) if "calls_per_sample" in ds else 1.0
    return calls if calls == calls else 1.0


def _split_window(parts: dict[str, float], attrs) -> dict[str, float]:
    """The named parts (NaN, of a failed job, as 0), `other_s` (the rest of the job's window
    start_ns..end_ns) and `window_s`."""
    window = (attrs["end_ns"] - attrs["start_ns"]) * 1e-9
    parts = {k: (v if v == v else 0.0) for k, v in parts.items()}
    return parts | {"other_s": window - sum(parts.values()), "window_s": window}


def cell_parts(path: Path) -> tuple[str, dict[str, float]]:
    ds = read_cell(path)
    a = ds.attrs
    timed = float(ds["latency_s"].sum()) * _calls_per_sample(ds)
    share = float(ds["canary_share"]) if "canary_share" in ds else 0.0
    share = share if share == share else 0.0
    parts = {
        "import_s": float(a.get("import_s", 0.0)),
        "build_s": float(a.get("build_s", 0.0)),
        "first_call_s": float(ds["first_call_s"]),
        "warmup_s": float(a.get("warmup_s", 0.0)),
        # a sample is the mean of calls_per_sample calls (absent in cells before it: one)
        "timed_s": timed,
        # canary_share is the probes' share of the timed loop (samples + probes)
        "canary_s": timed * share / (1 - share),
        # the attribution pass after the samples (process 0; NaN where none ran: 0)
        "attribution_s": float(ds["attr_pass_s"]) if "attr_pass_s" in ds else 0.0,
    }
    process = "process 0" if int(a.get("process", 0)) == 0 else "later"
    return (a["framework"], process), _split_window(parts, a)


def run_parts(path: Path) -> dict[str, float]:
    ds = read_run(path)
    parts = {
        "setup_s": float(ds["setup_time_s"]),
        "epochs_s": float(ds["epoch_time_s"].sum()),  # NaN epochs (failed) sum as 0
        "eval_s": float(ds["eval_time_s"].sum()),
    }
    return _split_window(parts, ds.attrs)


def train_totals(workdir: Path) -> dict[str, float]:
    runs = sorted((workdir / "results/train").rglob("*.nc"))
    totals: dict[str, float] = defaultdict(float)
    for path in runs:
        for name, value in run_parts(path).items():
            totals[name] += value
    if runs:
        print(
            f"\n{'training':<11}{'runs':>6}"
            + "".join(f"{p:>14}" for p in (*TRAIN_PARTS, "window_s"))
        )
        print(
            f"{'all':<11}{len(runs):>6}"
            + "".join(f"{totals[p]:>14.1f}" for p in (*TRAIN_PARTS, "window_s"))
        )
    return totals


def rounds_totals(workdir: Path) -> None:
    """The rounds' start-up and rounds, and when each row's sets ran."""
    files = [str(path) for path in sorted((workdir / "results/rounds").rglob("*.nc"))]
    if not files:
        return
    setup = rounds = 0.0
    for row in joined_rows(files):
        setup += float(row["setup_s"].sum()) if "setup_s" in row else float("nan")
        rounds += row.sizes["set"] * row.attrs["rounds"] * float(row.attrs["round_wall_s"])
        if "start_utc" in row:
            starts = ", ".join(str(t)[11:19] for t in row["start_utc"].values)
            print(f"{row.attrs['arch']}/b{row.attrs['batch']}: sets started at {starts} UTC")
    print(
        f"\nrounds files: {len(files)}; workers' start-up "
        + (
            f"{setup:.0f} s (summed over workers, who build side by side)"
            if setup == setup
            else "not recorded (files written before setup_s)"
        )
        + f", rounds {rounds:.0f} s"
    )


# A Snakemake log's time stamp line.
STAMP = r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]\n"


def job_spans(log: Path) -> dict[str, tuple[str, float, str]]:
    """Per job's first output: its rule, its span in the log (its start stamp to its
    "Finished" stamp) and the precision its path names (PRECISION_TAGS; "" where the rule has no
    precision wildcard)."""
    pieces = re.split(STAMP, log.read_text(), flags=re.M)
    started: dict[str, tuple[str, dt.datetime, str, str]] = {}
    spans: dict[str, tuple[str, float, str]] = {}
    for stamp, body in zip(pieces[1::2], pieces[2::2], strict=True):
        when = dt.datetime.strptime(stamp, "%a %b %d %H:%M:%S %Y")
        start = re.match(r"(?:local)?(?:rule|checkpoint) (\w+):", body)
        jobid = re.search(r"jobid: (\d+)", body)
        if start and jobid:
            tag = re.search(r"precision_tag=([-a-z0-9]*)", body)
            dtype = re.search(r"\bdtype=(\w+)", body)  # hardware_peak: one dtype's GEMM peak
            precision = (
                paths.precision_of_tag(tag.group(1)) if tag else dtype.group(1) if dtype else ""
            )
            output = re.search(r"output: ([^,\s]+)", body)
            name = output.group(1) if output else f"{start.group(1)}#{jobid.group(1)}"
            started[jobid.group(1)] = (start.group(1), when, precision, name)
        end = re.match(r"Finished jobid: (\d+)", body)
        if end and end.group(1) in started:
            rule, began, precision, name = started.pop(end.group(1))
            spans[name] = (rule, (when - began).total_seconds(), precision)
    return spans


def rule_spans(log: Path, after: list[Path] = ()) -> dict[str, list[tuple[float, str]]]:
    """Per rule, each job's span and precision (job_spans); a job that a later run (`after`,
    in order) ran again counts at its later span: the sweep as it would cost with the later
    runs' code."""
    jobs = job_spans(log)
    for later in after:
        jobs |= job_spans(later)
    spans: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for rule, seconds, precision in jobs.values():
        spans[rule].append((seconds, precision))
    return spans


def print_rule_spans(log: Path, after: list[Path]) -> dict[str, list[tuple[float, str]]]:
    spans = rule_spans(log, after)
    print(f"\n{'rule':<18}{'jobs':>6}{'span_s':>10}")
    for rule, jobs in sorted(spans.items(), key=lambda item: -sum(s for s, _ in item[1])):
        print(f"{rule:<18}{len(jobs):>6}{sum(s for s, _ in jobs):>10.0f}")
        by_precision: dict[str, list[float]] = defaultdict(list)
        for seconds, precision in jobs:
            if precision:
                by_precision[precision].append(seconds)
        if len(by_precision) > 1:
            for precision, seconds in by_precision.items():
                print(f"  {precision:<16}{len(seconds):>6}{sum(seconds):>10.0f}")
    return spans


def rounds_variant_shares(workdir: Path) -> dict[str, float]:
    """Each precision's share of the rounds' variants (workers and turns), over every file."""
    counts: dict[str, int] = defaultdict(int)
    for path in sorted((workdir / "results/rounds").rglob("*.nc")):
        for precision in variant_precisions(read_rounds(path)):
            counts[precision] += 1
    total = sum(counts.values())
    return {precision: n / total for precision, n in counts.items()} if total else {}


def checks_seconds(workdir: Path) -> dict[str, float]:
    """Per precision, what its rows cost the checks jobs (the rows' `seconds`; none from check
    files written before the column): the checks jobs' own files, not merge_checks' copy of
    their rows (results/checks/equivalence.csv)."""
    seconds: dict[str, float] = defaultdict(float)
    job_files = paths.CHECKS.format(system="*", framework="*", version="*", name="equivalence")
    for path in sorted(workdir.glob(job_files)):
        rows = read_equivalence(path)
        for precision, spent in zip(rows[PRECISION], rows[SECONDS], strict=True):
            if math.isfinite(spent):
                seconds[precision] += float(spent)
    return seconds


def evaluation_seconds(workdir: Path) -> dict[str, float]:
    """Per precision, what evaluating float32 runs' trained models in it cost those runs
    (`evaluated_in_s`; none from train files written before the attribute)."""
    seconds: dict[str, float] = defaultdict(float)
    for path in sorted((workdir / "results/train").rglob("*.nc")):
        spent = json.loads(read_run(path).attrs.get("evaluated_in_s", "{}"))
        for evaluation, value in spent.items():
            seconds[evaluation_parts(evaluation)[0]] += value
    return seconds


def print_precision_costs(spans: dict[str, list[tuple[float, str]]], workdir: Path) -> None:
    """Per low precision: its jobs' spans, its share of the rounds' spans, and its work inside
    the jobs every precision shares (its check rows, its evaluations of float32 runs' trained
    models)."""
    rounds_s = sum(seconds for seconds, _ in spans.get("rounds", []))
    shares = rounds_variant_shares(workdir)
    parts: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for jobs in spans.values():
        for seconds, precision in jobs:
            if precision and precision != FLOAT32:
                parts[precision]["jobs"] += seconds
    for precision, share in shares.items():
        if precision != FLOAT32:
            parts[precision]["rounds"] += share * rounds_s
    for name, found in (
        ("checks", checks_seconds(workdir)),
        ("evaluated", evaluation_seconds(workdir)),
    ):
        for precision, seconds in found.items():
            if precision != FLOAT32:
                parts[precision][name] += seconds
    if parts:
        columns = ("jobs", "rounds", "checks", "evaluated")
        print(
            f"\n{'precision':<16}{'cost_s':>10}"
            + "".join(f"{c + '_s':>12}" for c in columns)
            + "  (its jobs, rounds share, check rows, trained-model evaluations)"
        )
        for precision, by_part in parts.items():
            row = "".join(f"{by_part[c]:>12.0f}" for c in columns)
            print(f"{precision:<16}{sum(by_part.values()):>10.0f}{row}")
        total = sum(sum(by_part.values()) for by_part in parts.values())
        print(f"{'all low':<16}{total:>10.0f} = {total / 60:.1f} min")


def log_span_s(log: Path) -> float:
    stamps = re.findall(STAMP, log.read_text(), re.M)
    if len(stamps) < 2:
        raise ValueError(f"{log}: fewer than two timestamps")
    first, last = (dt.datetime.strptime(s, "%a %b %d %H:%M:%S %Y") for s in (stamps[0], stamps[-1]))
    return (last - first).total_seconds()


def cell_totals(cells: list[Path]) -> tuple[dict, dict[str, int]]:
    """Per framework, per process group ("process 0", "later") and over "all" cells: each
    part's seconds summed (cell_parts), and how many cells."""
    totals: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    counts: dict[str, int] = defaultdict(int)
    for path in cells:
        groups, parts = cell_parts(path)
        for group in groups:
            counts[group] += 1
        for name, value in parts.items():
            for group in (*groups, "all"):
                totals[group][name] += value
    counts["all"] = len(cells)
    return totals, counts


def print_cell_totals(totals: dict, counts: dict[str, int]) -> None:
    header = f"{'framework':<11}{'cells':>6}" + "".join(f"{p:>14}" for p in (*PARTS, "window_s"))
    print(header)
    for framework, parts in totals.items():
        row = "".join(f"{parts[p]:>14.1f}" for p in (*PARTS, "window_s"))
        print(f"{framework:<11}{counts[framework]:>6}{row}")


def print_wall_shares(log: Path, every: dict[str, float], train: dict[str, float]) -> None:
    """The sweep's wall time (the log's span) and what of it the cells' and runs' parts took."""
    wall = log_span_s(log)
    measured = every["first_call_s"] + every["timed_s"]
    loops = measured + every["warmup_s"]
    print(f"\nsweep wall time (Snakemake log {log.name}): {wall:.0f} s = {wall / 60:.1f} min")
    print(f"inside cell windows: {every['window_s']:.0f} s ({every['window_s'] / wall:.0%})")
    print(f"first calls + timed iterations: {measured:.0f} s ({measured / wall:.0%} of wall)")
    print(f"... + warm-up calls: {loops:.0f} s ({loops / wall:.0%} of wall)")
    print(f"framework imports: {every['import_s']:.0f} s ({every['import_s'] / wall:.0%})")
    timed = every["timed_s"] + every["canary_s"]
    print(
        f"speed canary probes: {every['canary_s']:.0f} s ({every['canary_s'] / wall:.1%} of wall, "
        f"{every['canary_s'] / timed if timed else 0:.1%} of the timed loops)"
    )
    attribution = every["attribution_s"]
    print(
        f"attribution pass: {attribution:.0f} s ({attribution / wall:.1%} of wall; the sweep "
        f"without it: {wall - attribution:.0f} s, so it adds "
        f"{attribution / (wall - attribution) if wall > attribution else 0:.1%})"
    )
    if train:
        print(f"training runs' windows: {train['window_s']:.0f} s ({train['window_s'] / wall:.0%})")
        epochs = train["epochs_s"]
        print(f"training epochs (timed, the first with its compilation): {epochs:.0f} s")
        print(
            f"first calls + timed iterations + training epochs: {measured + epochs:.0f} s "
            f"({(measured + epochs) / wall:.0%} of wall)"
        )


def print_after_sum(spans: dict[str, list[tuple[float, str]]]) -> None:
    summed = sum(seconds for jobs in spans.values() for seconds, _ in jobs)
    print(
        f"jobs' spans summed, the later runs' in place of the first's: {summed:.0f} s = "
        f"{summed / 60:.1f} min (timing jobs run one at a time; the log's wall time less "
        "Snakemake's gaps)"
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("workdir", nargs="?", default=".", type=Path, metavar="WORKDIR")
    parser.add_argument("--log", type=Path, help="Snakemake log of the run (default: newest)")
    parser.add_argument(
        "--after",
        type=Path,
        nargs="*",
        default=[],
        help="logs of later partial runs in the same directory (a new version's code rerunning "
        "some jobs): their jobs' spans replace the same outputs' in the per-rule and "
        "per-precision costs",
    )


def run(args: argparse.Namespace) -> int:
    cells = sorted((args.workdir / "results/cells").rglob("b*.nc"))
    if not cells:
        print(f"no cells under {args.workdir / 'results/cells'}", file=sys.stderr)
        return 1
    totals, counts = cell_totals(cells)
    print_cell_totals(totals, counts)
    train = train_totals(args.workdir)
    rounds_totals(args.workdir)
    logs = sorted((args.workdir / ".snakemake/log").glob("*.snakemake.log"))
    log = args.log or (logs[-1] if logs else None)
    if log is None:
        return 0
    print_wall_shares(log, totals["all"], train)
    spans = print_rule_spans(log, args.after)
    if args.after:
        print_after_sum(spans)
    print_precision_costs(spans, args.workdir)
    return 0
