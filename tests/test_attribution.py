"""Where a cell's time goes: the adapters' XSpace readers, the trace's interval arithmetic and event
rules, the four parts the statistics split a median into, and the pass in a cell (with the
fake adapter; the frameworks' own profilers: test_attribution_frameworks)."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import time

import numpy as np
import pytest

from fwbench import frameworks
from fwbench.analysis.attribution import PART_LABELS, PARTS, dominant_part, time_parts
from fwbench.frameworks.trace import KernelRule, Trace, XSpaceRules, merged, nested, top_level
from fwbench.frameworks.xspace import Event, Line, Plane, xplane_file
from fwbench.io.cell_file import read_cell
from fwbench.measure import bench
from fwbench.measure.attribution import MAX_CALLS, MIN_CALLS, profiled_calls

import fake_adapter

# ---- the adapters' XSpace readers, on an XSpace written out here ---------------------------


def _xspace_text(lines: dict[str, list[tuple[str, int, int]]], line_start_ns: int = 1000) -> str:
    """One host plane as a text-format XSpace; per line its events as (name, offset_ps,
    duration_ps), each with a stat, then an event whose metadata the plane lacks (id 99)."""
    names = sorted({name for events in lines.values() for name, _, _ in events})
    ids = {name: i + 1 for i, name in enumerate(names)}
    plane = 'name: "/host:CPU" '
    for line_name, events in lines.items():
        body = "".join(
            f"events {{ metadata_id: {ids[name]} offset_ps: {offset} duration_ps: {duration} "
            "stats { metadata_id: 1 int64_value: 7 } } "
            for name, offset, duration in events
        )
        body += "events { metadata_id: 99 offset_ps: 0 duration_ps: 0 } "
        plane += f'lines {{ name: "{line_name}" timestamp_ns: {line_start_ns} {body}}} '
    plane += "".join(
        f'event_metadata {{ key: {i} value {{ id: {i} name: "{name}" }} }} '
        for name, i in ids.items()
    )
    return f'planes {{ {plane}}} errors: "an error the readers skip"'


@pytest.fixture(scope="module")
def tensorflow_profiling():
    """The TensorFlow adapter's profiling module (its import blocks jax, as a job's does)."""
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("tensorflow is not installed")
    from fwbench.frameworks.tensorflow import profiling

    return profiling


def _tensorflow_xspace(text: str) -> bytes:
    from google.protobuf import text_format
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    return text_format.Parse(text, xplane_pb2.XSpace()).SerializeToString()


@pytest.mark.tensorflow
def test_the_tensorflow_reader_gives_each_event_its_name_start_and_duration(tensorflow_profiling):
    text = _xspace_text({"python": [("op", 2_000, 5_500), ("op", 9_000, 1_000)]})
    (plane,) = tensorflow_profiling.xspace_planes(_tensorflow_xspace(text))
    assert plane.name == "/host:CPU" and [line.name for line in plane.lines] == ["python"]
    first, second, unnamed = plane.lines[0].events
    assert (first.name, first.start_ns, first.duration_ns) == ("op", 1002.0, 5.5)
    assert second.end_ns == pytest.approx(1010.0)
    assert (unnamed.name, unnamed.start_ns) == ("<metadata 99>", 1000.0)


@pytest.mark.tensorflow
def test_the_tensorflow_reader_reads_a_negative_line_start(tensorflow_profiling):
    text = _xspace_text({"t": [("k", 2_500, 1000)], "u": [("k", 0, 0)]}, line_start_ns=-5)
    (plane,) = tensorflow_profiling.xspace_planes(_tensorflow_xspace(text))
    assert plane.lines[0].events[0].start_ns == -2.5
    assert [line.name for line in plane.lines] == ["t", "u"]
    assert plane.lines[1].events[-1].start_ns == -5.0


def test_a_profile_is_the_one_xplane_file_a_profiler_wrote_under_its_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="found 0"):
        xplane_file(tmp_path)
    run = tmp_path / "plugins" / "profile" / "run"
    run.mkdir(parents=True)
    (run / "host.xplane.pb").write_bytes(b"")
    (run / "host.trace.json.gz").write_bytes(b"")
    assert xplane_file(tmp_path) == run / "host.xplane.pb"
    (run / "other.xplane.pb").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="found 2"):
        xplane_file(tmp_path)


@pytest.mark.tensorflow
def test_the_tensorflow_reader_reads_the_profile_under_a_directory(tensorflow_profiling, tmp_path):
    run = tmp_path / "plugins" / "profile" / "run"
    run.mkdir(parents=True)
    (run / "host.xplane.pb").write_bytes(_tensorflow_xspace(_xspace_text({"t": [("k", 0, 1)]})))
    (plane,) = tensorflow_profiling.read_xspace(tmp_path)
    assert [(e.name, e.duration_ns) for e in plane.lines[0].events] == [
        ("k", 0.001),
        ("<metadata 99>", 0.0),
    ]


@pytest.mark.jax
def test_the_jax_reader_gives_each_event_its_name_and_whole_nanoseconds():
    pytest.importorskip("jax")
    from jax.profiler import ProfileData

    from fwbench.frameworks.jax.profiling import xspace_planes

    text = _xspace_text({"python": [("op", 2_000, 5_500)], "t": [("k", 2_500, 1000)]}, -5)
    (plane,) = xspace_planes(ProfileData.text_proto_to_serialized_xspace(text))
    assert plane.name == "/host:CPU" and [line.name for line in plane.lines] == ["python", "t"]
    (op, _), (k, unnamed) = (line.events for line in plane.lines)
    assert (op.name, op.start_ns, op.duration_ns) == ("op", -3.0, 5.0)  # 5.5 ns truncated
    assert (k.name, k.start_ns, k.end_ns) == ("k", -3.0, -2.0)  # 2.5 truncated
    assert (unnamed.name, unnamed.start_ns, unnamed.duration_ns) == ("", -5.0, 0.0)


# ---- the trace: intervals and rules --------------------------------------------------------


def test_nested_and_overlapping_kernels_count_once():
    assert merged([(5, 6), (0, 4), (1, 2), (3, 5), (8, 9)]) == [(0, 6), (8, 9)]
    trace = Trace(calls=1, dispatches=1, kernels=((0, 4), (1, 2), (3, 5)), events=3)
    assert trace.kernel_ns() == 5 and len(trace.regions()) == 1


def test_events_nested_in_a_kernel_region_are_counted_apart_from_those_that_open_one():
    # a loop kernel (0, 10) holding two body kernels and a marker; a kernel at 20 on its own
    trace = Trace(calls=1, dispatches=1, kernels=((0, 10), (2, 4), (5, 7), (20, 25)), events=6)
    counted = nested(trace, starts=[0, 2, 4.5, 5, 20, 30], kernel_starts=[0, 2, 5, 20])
    assert (counted.inside, counted.kernels_inside) == (3, 2)  # the body's three events
    assert counted.kernel_ns() == trace.kernel_ns() == 15


def test_a_dispatch_inside_a_dispatch_counts_once():
    events = [Event("d", 0, 10), Event("d", 1, 8), Event("d", 12, 3)]
    assert [e.start_ns for e in top_level(events)] == [0, 12]


def _plane(lines: dict[str, list[tuple[str, float, float]]]) -> list[Plane]:
    return [
        Plane(
            "/host:CPU",
            [Line(n, [Event(*e) for e in events]) for n, events in lines.items()],
        ),
        Plane("/host:metadata", [Line("m", [Event("kernel", 0, 1e6)])]),  # not a timeline
    ]


def test_xspace_rules_pick_dispatches_and_kernels_by_name_line_and_container():
    rules = XSpaceRules(
        dispatch=r"^Call",
        kernels=(
            KernelRule(lines=r"^worker"),
            KernelRule(lines=r"^python$", inside=r"^Execute$"),
        ),
        not_kernel=r"^end: ",
    )
    planes = _plane(
        {
            "python": [
                ("Call", 0, 100),
                ("Call", 1, 98),  # nested: the same dispatch
                ("Execute", 10, 50),
                ("inline", 20, 10),  # inside Execute: a kernel
                ("glue", 70, 10),  # outside it: not one
            ],
            "worker/1": [("fusion", 30, 20), ("end: fusion", 50, 1)],
        }
    )
    trace = rules.trace(planes, calls=1)
    assert trace.dispatches == 1 and len(trace.spans) == 7  # every event's interval
    assert trace.in_framework_ns() == 100  # the outer call covers them all
    assert sorted(trace.kernels) == [(20, 30), (30, 50)]
    assert trace.kernel_ns() == 30 and trace.events == 7


def test_the_time_in_the_framework_is_the_union_of_its_events_and_kernels():
    # an event (0, 10), a kernel running on after it closed (5, 30), then Python until 50
    trace = Trace(calls=1, dispatches=1, kernels=((5, 30),), events=2, spans=((0, 10),))
    assert trace.in_framework_ns() == 30


def test_the_rest_outside_the_framework_is_the_idle_profiled_time_at_the_clean_pace():
    from fwbench.analysis.attribution import rest_outside

    cells = {  # profiled call 120, 80 of it in the framework; unprofiled 100, median 50
        "attr_profiled_call_s": np.array([120.0, 120.0, 120.0]),
        "attr_in_framework_s": np.array([80.0, 80.0, math.nan]),
        "attr_unprofiled_call_s": np.array([100.0, 100.0, 100.0]),
        "median_s": np.array([50.0, 50.0, 50.0]),
        "attr_kernel_s": np.array([10.0, 10.0, 10.0]),
    }
    parts = {"residual_s": np.array([30.0, 5.0, 30.0])}
    outside = rest_outside(parts, cells)
    assert outside[0] == pytest.approx(20.0)  # 40 idle at half the pace
    assert outside[1] == 5.0  # never more than the rest
    assert math.isnan(outside[2])  # no events: unknown
    cells["attr_kernel_s"][0] = math.nan  # a trace too dense to resolve its kernels
    assert math.isnan(rest_outside(parts, cells)[0])


# ---- the four parts --------------------------------------------------------------------------


def _parts(median, roof, kernel, dispatches, floor, work=math.nan):
    values = (median, roof, kernel, dispatches, floor, work)
    return time_parts(*(np.array([v], dtype=float) for v in values))


def test_the_kernel_time_is_its_share_of_the_profiled_runs_work_times_the_median():
    # the profiled run's work took 200 (twice the clean median): its 120 of kernels are 60
    parts = _parts(median=100.0, roof=20.0, kernel=120.0, dispatches=2, floor=5.0, work=200.0)
    assert float(parts["kernel_excess_s"][0]) == pytest.approx(40.0)
    assert float(parts["residual_s"][0]) == pytest.approx(30.0)
    assert float(parts["attr_stretch"][0]) == pytest.approx(2.0)
    assert float(parts["attribution_closure"][0]) == pytest.approx(1.0)


def test_the_four_parts_add_up_to_the_median():
    parts = _parts(median=100.0, roof=20.0, kernel=50.0, dispatches=4, floor=5.0)
    assert [float(parts[p][0]) for p in PARTS] == [20.0, 30.0, 20.0, 30.0]
    assert float(parts["explained_share"][0]) == pytest.approx(0.7)
    assert float(parts["attribution_closure"][0]) == pytest.approx(1.0)


def test_kernels_seen_below_the_roof_leave_the_roof_and_no_excess():
    parts = _parts(median=100.0, roof=40.0, kernel=10.0, dispatches=1, floor=10.0)
    assert float(parts["kernel_excess_s"][0]) == 0.0
    assert float(parts["residual_s"][0]) == 50.0


def test_parts_that_overshoot_the_median_show_in_the_closure_not_a_negative_residual():
    parts = _parts(median=100.0, roof=10.0, kernel=80.0, dispatches=5, floor=8.0)
    assert float(parts["residual_s"][0]) == 0.0
    assert float(parts["attribution_closure"][0]) == pytest.approx(1.2)


def test_unseen_kernels_leave_the_excess_unknown_and_in_the_residual():
    parts = _parts(median=100.0, roof=10.0, kernel=math.nan, dispatches=1, floor=20.0)
    assert math.isnan(float(parts["kernel_excess_s"][0]))
    assert float(parts["residual_s"][0]) == 70.0
    assert float(parts["explained_share"][0]) == pytest.approx(0.3)


def test_a_cell_without_a_pass_or_roof_has_no_parts():
    for missing in ({"floor": math.nan}, {"roof": math.nan}):
        values = dict(median=100.0, roof=10.0, kernel=5.0, dispatches=1, floor=2.0) | missing
        parts = _parts(**values)
        assert all(math.isnan(float(parts[p][0])) for p in PARTS)
        assert dominant_part(parts)[0] == ""


def test_the_dominant_part_is_the_largest():
    parts = _parts(median=100.0, roof=5.0, kernel=10.0, dispatches=20, floor=4.0)
    assert dominant_part(parts)[0] == PART_LABELS["dispatch_s"]


def test_the_profiled_calls_last_about_the_target_within_limits():
    assert profiled_calls(1e-6) == MAX_CALLS
    assert profiled_calls(1.0) == MIN_CALLS
    assert profiled_calls(1e-3) == 50
    assert profiled_calls(math.nan) == MIN_CALLS


# ---- the pass in a cell ----------------------------------------------------------------------


@pytest.fixture
def fake(monkeypatch, tmp_path):
    monkeypatch.setattr(frameworks, "load", lambda framework, part="infer": fake_adapter)
    monkeypatch.setattr(fake_adapter, "FAIL_IN_BUILD", None)
    monkeypatch.setattr(bench, "setup_threads", lambda threads: {"threads": threads})
    return tmp_path


def test_a_cell_records_the_pass_after_its_samples(fake):
    bench.run_cell(fake_adapter.request(lock=str(fake / "lock")), fake / "cell.nc")
    cell = read_cell(fake / "cell.nc")
    assert cell.attrs["attribution"] == "the fake profiler: one kernel per call"
    assert float(cell["attr_dispatches"]) == 1.0 and float(cell["attr_kernel_regions"]) == 1.0
    raw, kernel = float(cell["attr_kernel_raw_s"]), float(cell["attr_kernel_s"])
    profiled = float(cell["attr_profiled_call_s"])
    # half of each profiled call is its kernel, less the floor's own recorded kernel
    assert raw == pytest.approx(fake_adapter.KERNEL_SHARE * profiled, rel=0.2)
    overhead = profiled - float(cell["attr_unprofiled_call_s"])  # the profiler's, measured
    in_event = min(float(cell["attr_floor_kernel_s"]), max(overhead, 0.0))
    assert kernel == pytest.approx(raw - in_event, rel=1e-6)
    assert float(cell["attr_floor_s"]) > 0 and float(cell["attr_pass_s"]) > 0
    # the work: the profiled wall less every event's calibrated cost (never a negative cost),
    # never below the same calls unprofiled
    per_event, events = float(cell["attr_event_cost_s"]), float(cell["attr_events"])
    assert per_event >= 0 and float(cell["attr_nested_events"]) == 0
    in_framework = float(cell["attr_in_framework_s"])  # the fake's dispatch: 0.8 of a call
    assert in_framework == pytest.approx(fake_adapter.DISPATCH_SHARE * profiled, rel=0.2)
    work, unprofiled = float(cell["attr_profiled_work_s"]), float(cell["attr_unprofiled_call_s"])
    assert unprofiled > 0
    assert work == pytest.approx(max(profiled - per_event * events, unprofiled), rel=1e-6)


def test_bench_attribution_false_leaves_the_pass_out(fake):
    request = fake_adapter.request(lock=str(fake / "lock"), attribution=False)
    bench.run_cell(request, fake / "cell.nc")
    cell = read_cell(fake / "cell.nc")
    assert "attribution" not in cell.attrs and np.isnan(float(cell["attr_kernel_s"]))


def test_a_failing_pass_is_recorded_and_the_cell_keeps_its_timing(fake, monkeypatch):
    def broken(run, calls):
        raise RuntimeError("profiler exploded")

    monkeypatch.setattr(fake_adapter, "profile", broken)
    bench.run_cell(fake_adapter.request(lock=str(fake / "lock")), fake / "cell.nc")
    cell = read_cell(fake / "cell.nc")
    assert cell.attrs["status"] == "ok" and np.isfinite(cell["latency_s"]).all()
    assert cell.attrs["attribution"] == "failed: RuntimeError: profiler exploded"


# ---- through the aggregate and the statistics into the table and figure ------------------


def _stats_of(tmp_path, **eager_scalars):
    from fwbench.analysis.roofline import HardwareLimits
    from fwbench.analysis.stats import StatsSettings, summarize
    from fwbench.io.cell_file import Cell

    from synthetic import aggregate_of

    cells = []
    for mode, attrs, scalars in (
        ("eager", {"attribution": "aten ops"}, ATTRIBUTED | eager_scalars),
        ("onnxrt", {"attribution": "not measured: onnxrt cells have no pass yet"}, {}),
    ):
        cell = Cell("torch", mode, "mlp", 1, repeats=10)
        cell.latency_s = np.full(10, 100e-6)
        cell.scalars = {"flops": 1e3, "bytes": 1e3, "working_set_bytes": 2e3} | scalars
        cell.attrs = {"host": "h", "device": "cpu", "framework_version": "1.0", "contended": 0}
        cell.attrs |= attrs
        cells.append(cell)
    limits = HardwareLimits(1e12, 1e12, source="test")  # roof: 1e3 FLOP at 1e12/s = 1 ns
    return summarize(aggregate_of(tmp_path, cells), limits, StatsSettings(table_batch=1))


ATTRIBUTED = {"attr_kernel_s": 30e-6, "attr_dispatches": 5.0, "attr_floor_s": 4e-6}


def test_the_statistics_split_each_attributed_median_into_its_parts(tmp_path):
    stats = _stats_of(tmp_path).sel(framework="torch", arch="mlp", batch=1, precision="float32")
    eager, onnx = stats.sel(mode="eager"), stats.sel(mode="onnxrt")
    assert float(eager["roof_s"]) == pytest.approx(1e-9)
    assert float(eager["kernel_excess_s"]) == pytest.approx(30e-6 - 1e-9)
    assert float(eager["dispatch_s"]) == pytest.approx(20e-6)
    assert float(eager["residual_s"]) == pytest.approx(50e-6)
    assert str(eager["dominant_part"].values) == "the rest"
    assert math.isnan(float(onnx["dispatch_s"])) and str(onnx["dominant_part"].values) == ""
    assert str(onnx["attribution"].values).startswith("not measured")


def test_the_table_and_figure_show_the_parts_and_name_the_cells_without(tmp_path):
    from fwbench.io.stats_file import StatsView
    from fwbench.present.attribution import (
        attribution_table,
        draw_attribution,
        unattributed,
    )
    from fwbench.present.figure_data import FigureInputs

    view = StatsView(_stats_of(tmp_path))
    row = next(line for line in attribution_table(view, 1).splitlines() if "torch/eager" in line)
    assert "| 100.0 |" in row and "| 20.0 |" in row and "| 50.0 |" in row and "the rest" in row
    assert unattributed(view, 1) == [("torch/onnxrt", "not measured")]
    figure = draw_attribution(FigureInputs(view))
    assert len([p for ax in figure.axes for p in ax.patches]) == 4  # one cell, four parts


def test_the_batch_fit_recovers_a_fixed_cost_and_a_per_sample_cost():
    from fwbench.analysis.attribution import batch_fit

    batches = np.array([1.0, 8.0, 32.0, 128.0])
    medians = np.array([[5e-6 + 2e-7 * batches, [3e-6, np.nan, np.nan, np.nan]]])
    fit = batch_fit(medians, batches)
    assert fit["batch_fit_alpha_s"][0, 0] == pytest.approx(np.full(4, 5e-6))
    assert fit["batch_fit_beta_s"][0, 0, 2] == pytest.approx(2e-7)
    assert np.isnan(fit["batch_fit_alpha_s"][0, 1]).all()  # one batch: no fit


def test_the_compile_gain_splits_the_saving_by_part():
    from fwbench.analysis.attribution import compile_gain

    parts = {  # (framework, mode: eager then compiled, arch, batch)
        "roof_s": np.array([[[[1.0]], [[1.0]]]]),
        "kernel_excess_s": np.array([[[[4.0]], [[2.0]]]]),
        "dispatch_s": np.array([[[[10.0]], [[1.0]]]]),
        "residual_s": np.array([[[[5.0]], [[6.0]]]]),
    }
    gain = compile_gain(parts, eager=0)
    assert [float(gain[k][0, 1, 0, 0]) for k in gain] == [9.0, 2.0, -1.0]
    assert all(np.isnan(v).all() for v in compile_gain(parts, eager=None).values())


def test_a_recurrent_cells_parts_are_also_given_per_step_and_others_have_none():
    from fwbench.analysis.attribution import per_step

    parts = {
        "dispatch_s": np.array([64e-6, 10e-6]),
        "roof_s": np.array([6.4e-6, 1e-6]),
        "batch_fit_alpha_s": np.array([96e-6, 5e-6]),
    }
    cells = {  # an rnn of 2 layers × 32 steps, and an mlp
        "recurrent_steps": np.array([64.0, np.nan]),
        "median_s": np.array([128e-6, 20e-6]),
        "attr_dispatches": np.array([192.0, 4.0]),
    }
    step = per_step(parts, cells)
    assert step["step_s"][0] == pytest.approx(2e-6) and step["step_dispatches"][0] == 3.0
    assert step["step_dispatch_s"][0] == pytest.approx(1e-6)
    assert step["step_roof_s"][0] == pytest.approx(1e-7)
    assert step["step_alpha_s"][0] == pytest.approx(1.5e-6)
    assert all(np.isnan(values[1]) for values in step.values())


def test_the_step_table_shows_recurrent_cells_only(tmp_path):
    from fwbench.io.stats_file import StatsView
    from fwbench.present.attribution import step_table

    assert step_table(StatsView(_stats_of(tmp_path / "mlp")), 1) == ""  # no recurrent steps
    view = StatsView(_stats_of(tmp_path / "rnn", recurrent_steps=64.0))
    row = next(line for line in step_table(view, 1).splitlines() if "torch/eager" in line)
    # 100 µs over 64 steps; 5 dispatches × the 4 µs floor over 64 steps; the roof is 1 ns
    assert "| 64 | 1.56 | 0.08 | 0.312 | 1.56e-05 | — |" in row  # one batch: no α fit
    assert row.endswith("| 20% |")  # (0.3125 + 0.0000156) / 1.5625


def test_the_closure_note_counts_the_cells_whose_parts_close_and_the_stretch(tmp_path):
    from fwbench.io.stats_file import StatsView
    from fwbench.present.attribution import closure_note

    view = StatsView(_stats_of(tmp_path, attr_profiled_work_s=150e-6))
    note = closure_note(view)
    assert note.startswith("The parts close on the median within 10% in 1 of 1")
    assert "median 1.50, range 1.50–1.50" in note


def test_a_pass_whose_profiler_costs_more_than_the_call_leaves_kernel_time_unresolved(
    fake, monkeypatch
):
    forward, profile = fake_adapter.forward, fake_adapter.profile

    def slowed(*args):  # a call under a profiler that records a dense trace
        time.sleep(200e-6)
        return forward(*args)

    def dense(run, calls):  # its every event inside the one kernel region of each call
        monkeypatch.setattr(fake_adapter, "forward", slowed)
        try:
            trace = profile(run, calls)
            return dataclasses.replace(trace, inside=trace.events, kernels_inside=0)
        finally:
            monkeypatch.setattr(fake_adapter, "forward", forward)

    monkeypatch.setattr(fake_adapter, "profile", dense)
    bench.run_cell(fake_adapter.request(lock=str(fake / "lock")), fake / "cell.nc")
    cell = read_cell(fake / "cell.nc")
    assert np.isnan(float(cell["attr_kernel_s"])) and float(cell["attr_kernel_raw_s"]) >= 0
    assert "kernel time not resolved: the profiler's own cost inside" in cell.attrs["attribution"]
    assert float(cell["attr_profiled_call_s"]) > 2 * float(cell["attr_unprofiled_call_s"])
