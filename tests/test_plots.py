"""The figures, drawn from the small synthetic stats.nc of synthetic.py (built by the real
aggregate and stats code), and the hardware summary and stats.nc helpers they read through.
"""

from __future__ import annotations

import itertools
import runpy
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba
from matplotlib.image import imread

from fwbench import frameworks
from fwbench.analysis.attribution import PARTS, SHARE_OF
from fwbench.analysis.estimators import ci_level
from fwbench.analysis.over_cells import _parts_spread
from fwbench.io.hardware_file import read_hardware_record, record_from_document
from fwbench.io.stats_file import StatsView
from fwbench.io.train_file import RunRecord
from fwbench.present import catalog
from fwbench.present.figure_data import FigureInputs, roofs
from fwbench.present.figures import INFERENCE_FIGURES, TRAINING_FIGURES, draw_requested
from fwbench.present.plots_roofline import draw_roofline
from fwbench.present.style import (
    FRAMEWORK_COLORS,
    bar_style,
    framework_color,
    marker_style,
    save_figure,
    variant_color,
)
from fwbench.training.summary import stack_runs

from conftest import REPO
from synthetic import (
    ARCHS,
    BATCHES,
    FAILED,
    MEMORY_LEVELS,
    MODES,
    NOISY,
    PEAK_FLOPS,
    TOO_FAST,
    TRIAD_BPS,
    UNCOMPILED,
    SyntheticResults,
    copy_of,
    hardware_document,
    training_runs,
)


@pytest.fixture(scope="module")
def results(synthetic_sweep, tmp_path_factory) -> SyntheticResults:
    return copy_of(synthetic_sweep, tmp_path_factory.mktemp("synthetic"))


@pytest.fixture(scope="module")
def stats(results) -> xr.Dataset:
    with xr.open_dataset(results.stats, engine="h5netcdf") as ds:
        return ds.load()


def inputs(stats: xr.Dataset, hardware=None, **attrs) -> FigureInputs:
    """The figures' inputs over `stats` (its attributes overridden by `attrs`)."""
    if attrs:
        stats = stats.copy()
        stats.attrs = stats.attrs | attrs
    return FigureInputs(StatsView(stats), hardware)


def variants(stats: xr.Dataset, compiled_only: bool = False) -> list[tuple[str, str]]:
    return StatsView(stats).variants(compiled_only)


@pytest.fixture(scope="module")
def rendered(results, tmp_path_factory) -> dict[str, Path]:
    """Every inference figure through the rule script, as the workflow runs it."""
    from snakemake.iocontainers import Namedlist

    out = tmp_path_factory.mktemp("figures")
    outputs = {}
    for name in INFERENCE_FIGURES:
        outputs[name] = str(out / f"{name}.png")
        outputs[f"{name}_svg"] = str(out / f"{name}.svg")
    fake = type("Snakemake", (), {})()
    fake.input = Namedlist(
        fromdict={"stats": str(results.stats), "hardware": str(results.hardware)}
    )
    fake.output = Namedlist(fromdict=outputs)
    fake.params = Namedlist(fromdict={"dpi": 150})
    fake.log = Namedlist([str(out / "figures.log")])
    runpy.run_path(str(REPO / "workflow/scripts/figures.py"), init_globals={"snakemake": fake})
    return {name: Path(path) for name, path in outputs.items()}


# ---- the synthetic data is what the tests assume -------------------------------------------


def test_the_synthetic_stats_hold_a_failed_a_noisy_a_too_fast_and_an_uncompiled_cell(stats):
    def at(name, cell):
        framework, mode, arch, batch = cell
        return stats[name].sel(framework=framework, mode=mode, arch=arch, batch=batch).item()

    assert at("status", FAILED) == "failed"
    assert "high_cv" in at("flags", NOISY)
    assert at("efficiency", TOO_FAST) > 1 and "invalid_fast" in at("flags", TOO_FAST)
    assert "not_compiled" in at("flags", UNCOMPILED)


# ---- every figure --------------------------------------------------------------------------


# The synthetic stats hold float32 alone: the precision figure draws bf16 cells in
# tests/test_precision_report.py, and here says there are none.
SYNTHETIC_FIGURES = [name for name in INFERENCE_FIGURES if name != "precision"]


@pytest.mark.parametrize("name", SYNTHETIC_FIGURES)
def test_each_figure_is_a_nontrivial_png_at_150_dpi_and_an_svg(rendered, name):
    png, svg = rendered[name], rendered[f"{name}_svg"]
    assert png.stat().st_size > 20_000, f"{name}.png is suspiciously small"
    pixels = imread(png)
    height, width = pixels.shape[:2]
    assert width >= 900 and height >= 500, (width, height)  # ≥ 6 × 3.3 inches at 150 dpi
    assert pixels[..., :3].std() > 0.05, f"{name}.png is almost one colour"
    assert svg.read_text().lstrip().startswith("<?xml") and "<svg" in svg.read_text()[:2000]


def test_figures_leave_no_temporary_files(rendered):
    directory = next(iter(rendered.values())).parent
    assert not [p.name for p in directory.iterdir() if p.name.startswith(".")]


def test_the_roofline_draws_every_memory_level_the_peaks_and_the_ridge(stats, results):
    figure = draw_roofline(inputs(stats, read_hardware_record(results.hardware)))
    panels = [ax for ax in figure.axes if ax.get_visible() and ax.axison]
    assert len(panels) == len(BATCHES)
    for ax in panels:
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
        # one roof per level, smallest first: min(peak, bandwidth × intensity) in GFLOP/s
        for roof, (_, bandwidth, _) in zip(ax.lines, MEMORY_LEVELS.values(), strict=False):
            x, y = roof.get_data()
            assert y.max() == pytest.approx(PEAK_FLOPS / 1e9)
            assert y[0] == pytest.approx(bandwidth * x[0] / 1e9)
        labels = [t.get_text() for t in ax.texts]
        for name, (_, bandwidth, _) in MEMORY_LEVELS.items():
            assert f"{name} {bandwidth / 1e9:.0f} GB/s" in labels
        assert "bf16 2200 GFLOP/s" in labels  # the hardware file's bf16 GEMM peak
    ridge_labels = [t.get_text() for t in panels[0].texts if "ridge" in t.get_text()]
    assert ridge_labels == [f"DRAM ridge {PEAK_FLOPS / TRIAD_BPS:.3g} FLOP/B"]


def test_each_roofline_column_names_the_memory_level_its_working_set_fits_in(stats):
    figure = draw_roofline(inputs(stats))
    labels = {t.get_text() for ax in figure.axes for t in ax.texts}
    for arch in ARCHS:
        for batch in BATCHES:
            level = stats["memory_level"].sel(arch=arch, batch=batch).values.ravel()
            assert f"{arch} · {sorted(set(level) - {''})[0]}" in labels


def test_the_roofline_plots_one_point_per_measured_cell(stats):
    figure = draw_roofline(inputs(stats))
    points = sum(
        1 for ax in figure.axes for line in ax.lines if line.get_linestyle() in ("None", "none")
    )
    measured = int((stats["status"] == "ok").sum())
    assert points == measured == len(BATCHES) * len(ARCHS) * 6 - 1


def test_a_failed_cell_is_skipped_and_named_in_the_figure_note(stats):
    for name in ("latency", "roofline", "scaling", "stability"):
        figure = INFERENCE_FIGURES[name](inputs(stats, table_batch=8))
        notes = " ".join(text.get_text() for text in figure.texts)
        assert "jax/jit/lstm/b8" in notes.replace("\n", " "), name


def test_latency_bars_are_the_medians_at_the_table_batch_in_microseconds(stats):
    figure = INFERENCE_FIGURES["latency"](inputs(stats))
    ax = figure.axes[0]
    heights = sorted(round(p.get_height(), 6) for p in ax.patches if p.get_height() > 0)
    expected = stats["median_s"].sel(batch=32).values * 1e6
    expected = sorted(round(v, 6) for v in expected[np.isfinite(expected)])
    assert heights == expected and ax.get_yscale() == "log"


def test_the_noisy_cell_is_named_as_flagged_high_cv(stats):
    figure = INFERENCE_FIGURES["stability"](inputs(stats))
    notes = " ".join(text.get_text() for text in figure.texts).replace("\n", " ")
    assert "Noisy (high_cv, circled: CV above 10% and above 2× the speed canary" in notes
    assert "tensorflow/eager/mlp/b1" in notes
    ax = figure.axes[0]
    assert any(line.get_ydata()[0] == 10 for line in ax.lines if len(line.get_ydata()) == 2)


def test_the_heatmap_marks_the_cell_faster_than_the_roofline(stats):
    figure = INFERENCE_FIGURES["efficiency"](inputs(stats))
    ax = figure.axes[0]
    red_boxes = [p for p in ax.patches if p.get_edgecolor()[:3] == (0.7529411764705882, 0.0, 0.0)]
    assert len(red_boxes) == int((stats["efficiency"] > 1).sum()) == 1
    efficiency = (
        stats["efficiency"].sel(framework="torch", mode="compiled", arch="mlp", batch=32).item()
    )
    assert f"{100 * efficiency:.0f}%" in [t.get_text() for t in ax.texts]


def test_figures_survive_stats_without_roofline_limits(stats, tmp_path):
    bare = stats.copy()
    bare["efficiency"][:] = np.nan
    bare["arithmetic_intensity"][:] = np.nan
    bare.attrs |= {"roofline_peak_flops_per_s": np.nan, "roofline_bandwidth_Bps": np.nan}
    for name, draw in INFERENCE_FIGURES.items():
        save_figure(draw(inputs(bare)), tmp_path / f"{name}.png", None)
        assert (tmp_path / f"{name}.png").stat().st_size > 5_000


# ---- inputs --------------------------------------------------------------------------------


def test_each_framework_keeps_its_colour_and_unknown_ones_get_a_stable_spare():
    assert framework_color("jax") == FRAMEWORK_COLORS["jax"]
    assert len(set(FRAMEWORK_COLORS.values())) == len(FRAMEWORK_COLORS)
    assert framework_color("mxnet") == framework_color("mxnet") not in FRAMEWORK_COLORS.values()


def test_the_hardware_record_reads_the_keys_characterize_writes(results):
    hardware = read_hardware_record(results.hardware)
    assert hardware.measured_flops_per_s["float32"] == PEAK_FLOPS
    assert hardware.peaks["float32"].measured_by == "torch"
    assert hardware.stream_Bps["triad"] == TRIAD_BPS
    assert hardware.peaks["float32"].gemm_flops_per_s["numpy"] == 3.7e11
    assert hardware.theoretical_flops_per_s["float32"] == 6.4e11
    assert hardware.theoretical_bandwidth_Bps is None


def test_the_hardware_record_names_the_system_its_file_records_and_none_before_version_3():
    document = hardware_document() | {"schema_version": 3, "system": "gpu-node"}
    assert record_from_document(document, "local.json").system == "gpu-node"
    assert record_from_document(hardware_document(), "local.json").system == ""


def test_the_hardware_record_notes_stream_and_sweep_errors_and_peaks_above_theory():
    document = hardware_document()
    document["bandwidth"]["error"] = "STREAM crashed"
    document["memory"]["note"] = "no C compiler"
    document["compute"]["dtypes"]["float32"] |= {"above_theoretical": True}
    document["compute"]["dtypes"]["float32"]["best_over_theoretical"] = 1.25
    notes = record_from_document(document, "hw.json").notes
    assert notes[0] == "STREAM: STREAM crashed"
    assert notes[1].startswith("float32: the measured GEMM peak is 1.25× the theoretical one")
    assert notes[2] == "working-set sweep: no C compiler"


def test_a_bad_hardware_value_raises_naming_it():
    document = hardware_document()
    document["bandwidth"]["kernels"]["triad"]["best_bandwidth_Bps"] = -3
    with pytest.raises(ValueError, match=r"triad.best_bandwidth_Bps .* got -3"):
        record_from_document(document, "hw.json")
    document = hardware_document()
    document["memory"]["levels"]["L2"]["bandwidth_Bps"] = 0
    with pytest.raises(ValueError, match=r"memory.levels.L2.bandwidth_Bps .* got 0"):
        record_from_document(document, "hw.json")


def test_roofs_are_the_limits_stats_nc_used_with_theory_from_the_hardware_file(stats, results):
    hardware = read_hardware_record(results.hardware)
    drawn = roofs(StatsView(stats), hardware)
    assert drawn.peak_flops_per_s == PEAK_FLOPS == stats.attrs["roofline_peak_flops_per_s"]
    assert drawn.theoretical_peak_flops_per_s == 6.4e11
    bare = stats.copy()
    bare.attrs = bare.attrs | {"roofline_peak_flops_per_s": np.nan}
    # no second derivation from the hardware file: what stats.nc lacks stays unknown
    assert not roofs(StatsView(bare), hardware).known


def test_variants_are_the_framework_modes_with_cells(stats):
    assert variants(stats) == [(f, m) for f, modes in MODES.items() for m in modes]
    assert ("jax", "eager") not in variants(stats, compiled_only=True)


# ---- training ------------------------------------------------------------------------------


def test_training_figures_draw_from_the_stacked_runs_and_name_the_failed_one(tmp_path):
    outputs = {name: tmp_path / f"{name}.png" for name in TRAINING_FIGURES}
    drawn = draw_requested(outputs, train_stats=training_runs(tmp_path))
    assert drawn == list(TRAINING_FIGURES)
    for name, path in outputs.items():
        pixels = imread(path)
        assert pixels.shape[1] >= 900 and pixels[..., :3].std() > 0.05, name


def test_training_time_shows_the_steady_epoch_and_the_overhead_stacked(tmp_path):
    with xr.open_dataset(training_runs(tmp_path), engine="h5netcdf") as train:
        figure = TRAINING_FIGURES["training_time"](train.load())
    time_ax = figure.axes[0]
    widths = sorted(round(bar.get_width(), 6) for bar in time_ax.patches)
    assert widths == [2.1, 2.9]  # the failed jax run is not drawn
    notes = " ".join(text.get_text() for text in figure.texts)
    assert "jax/jit/resnet8/digits" in notes


def test_stack_runs_marks_missing_combinations_absent():
    runs = []
    for framework, mode in (("torch", "eager"), ("jax", "jit")):
        record = RunRecord(epochs=2)
        record.attrs |= {"framework": framework, "mode": mode, "model": "m", "dataset": "d"}
        record.attrs["status"] = "ok"
        runs.append(record.to_dataset())
    status = stack_runs(runs)["status"].squeeze(["model", "dataset"])
    assert status.sel(framework="torch", mode="jit").item() == "absent"
    assert status.sel(framework="jax", mode="jit").item() == "ok"


def test_draw_requested_rejects_an_unknown_figure_by_name(results, tmp_path):
    with pytest.raises(ValueError, match="rooftop"):
        draw_requested({"rooftop": tmp_path / "x.png"}, stats=results.stats)


def test_figures_survive_when_every_cell_failed_and_say_so(stats, tmp_path):
    failed = stats.copy(deep=True)
    status = failed["status"].values
    status[status == "ok"] = "failed"
    for name, draw in INFERENCE_FIGURES.items():
        figure = draw(inputs(failed))
        save_figure(figure, tmp_path / f"{name}.png", None)
        if name != "hardware":
            text = " ".join(t.get_text() for t in figure.texts).replace("\n", " ")
            text += " ".join(t.get_text() for ax in figure.axes for t in ax.texts)
            assert "failed" in text or "No " in text, name


# ---- crowded figures: every registered variant, medians two orders of magnitude apart --------


def crowded_stats() -> xr.Dataset:
    """Every registered (framework, mode) and a torch compiled variant (13 variants) at six
    architectures and one batch: neighbouring
    bars of similar height (labels side by side), medians over two orders of magnitude
    (tensorflow eager's recurrent cells), a slowdown, CIs as from three processes, the
    attribution's four parts."""
    rng = np.random.default_rng(7)
    names = list(frameworks.MODES)
    known = {f: (*frameworks.MODES[f], *(("compiled_max",) if f == "torch" else ())) for f in names}
    modes = list(dict.fromkeys(m for f in names for m in known[f]))
    archs = ["mlp", "cnn", "resnet", "rnn", "lstm", "transformer"]
    own = np.array([[m in known[f] for m in modes] for f in names])[:, :, None, None]
    shape = (len(names), len(modes), len(archs), 1)
    base = np.array([3e-5, 4e-4, 2e-3, 1e-3, 1.5e-3, 9e-4])[None, None, :, None]
    median = np.where(own, base * rng.lognormal(0.0, 0.1, shape), np.nan)
    eager = modes.index("eager")
    median[:, eager] *= 6
    median[names.index("tensorflow"), eager, 3:5] *= 100
    median[names.index("jax"), modes.index("export"), 0] *= 10
    speedup = median[:, eager : eager + 1] / median
    speedup[:, eager] = np.nan
    dims = ("framework", "mode", "arch", "batch")
    data = {
        "status": np.where(np.isfinite(median), "ok", "absent"),
        "flags": np.full(shape, ""),
        "median_s": median,
        "median_ci_low_s": median * np.exp(-0.4),
        "median_ci_high_s": median * np.exp(0.4),
        "speedup_vs_eager": speedup,
        "speedup_ci_low": speedup * np.exp(-0.3),
        "speedup_ci_high": speedup * np.exp(0.3),
    }
    parts = {part: median * share for part, share in zip(PARTS, (0.2, 0.1, 0.3, 0.4), strict=True)}
    data |= parts | {SHARE_OF[part]: parts[part] / median for part in PARTS}
    attrs = {"stats_confidence": 0.95, "stats_table_batch": 32, "table_batch": 32}
    attrs |= {"stats_cv_threshold_pct": 10.0, "processes": 3, "median_ci_level": ci_level(3, True)}
    coords = {"framework": names, "mode": modes, "arch": archs, "batch": [32]}
    crowded = xr.Dataset({k: (dims, v) for k, v in data.items()}, coords=coords, attrs=attrs)
    return crowded.assign(parts_median_spread=_parts_spread(crowded, 32))


def test_the_crowded_stats_hold_many_variants_slowdowns_and_a_hundredfold_spread():
    stats = crowded_stats()
    assert len(variants(stats)) == 13 and len(variants(stats, compiled_only=True)) == 10
    assert float(stats["median_s"].max() / stats["median_s"].min()) >= 100
    assert (stats["speedup_vs_eager"] < 1).any() and (stats["speedup_vs_eager"] > 20).any()


@pytest.mark.parametrize(
    ("name", "labelled"), [("speedup", "speedup_vs_eager"), ("latency", "median_s")]
)
def test_value_labels_neither_overlap_each_other_nor_leave_the_axes(name, labelled):
    stats = crowded_stats()
    figure = INFERENCE_FIGURES[name](inputs(stats))
    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw_without_rendering()
    ax = figure.axes[0]
    boxes = [text.get_window_extent(renderer) for text in ax.texts]
    assert len(boxes) == int(np.isfinite(stats[labelled]).sum())
    for first, second in itertools.combinations(boxes, 2):
        assert not first.overlaps(second), (first, second)
    inside = ax.get_window_extent(renderer)
    caps = [  # the whiskers' ends
        ax.transData.transform(point)
        for line in ax.lines
        if line.get_marker() == "_"
        for point in line.get_xydata()
    ]
    assert len(caps) == 2 * len(boxes)
    for box in boxes:
        assert inside.x0 <= box.x0 and box.x1 <= inside.x1, box
        assert inside.y0 <= box.y0 and box.y1 <= inside.y1, box
        assert not any(box.contains(*cap) for cap in caps), box


def test_each_speedup_variant_has_its_own_face_colour_and_its_legend_entry_shows_it():
    stats = crowded_stats()
    figure = INFERENCE_FIGURES["speedup"](inputs(stats))
    legend = {h.get_label(): h.get_facecolor() for h in figure.legends[0].legend_handles}
    assert len(legend) == len(variants(stats, compiled_only=True))
    assert len(set(legend.values())) == len(legend)
    assert {patch.get_facecolor() for patch in figure.axes[0].patches} == set(legend.values())


def test_every_registered_variant_keeps_one_colour_apart_from_the_others_in_bars_and_markers():
    pairs = [(f, m) for f, modes in frameworks.MODES.items() for m in modes]

    def on_white(colour):
        red, green, blue, alpha = to_rgba(colour)
        return np.array([red, green, blue]) * alpha + (1 - alpha)

    faces = {pair: on_white(bar_style(*pair)["facecolor"]) for pair in pairs}
    closest = min(np.linalg.norm(faces[a] - faces[b]) for a, b in itertools.combinations(pairs, 2))
    assert closest > 0.1
    for framework, mode in pairs:
        assert marker_style(framework, mode)["color"] == variant_color(framework, mode)
    assert variant_color("torch", "eager") == framework_color("torch")


def test_each_figure_note_says_in_one_sentence_what_its_whiskers_cover_and_names_the_method(
    stats,
):
    # the synthetic sweep: one process per cell; the crowded one: its CIs between processes
    expected = {
        id(stats): "a bootstrap of one process's timings, which covers within-process variation",
        id(crowded := crowded_stats()): "which covers the variation between fresh processes",
    }
    for data in (stats, crowded):
        for name in ("latency", "speedup", "scaling"):
            figure = INFERENCE_FIGURES[name](inputs(data))
            # notes wrap at any space or hyphen: compared without white space
            notes = "".join("".join(t.get_text() for t in figure.texts).split())
            assert notes.count("Whiskers:") == 1, name
            sentence = notes[notes.index("Whiskers:") :].split(").")[0]
            assert "".join(expected[id(data)].split()) in sentence, name
            assert "(how:docs/method.md" in sentence, name
            assert "σ" not in notes and "√" not in notes, name  # the formula: docs/method.md


CAPTIONS = sorted((REPO / "workflow" / "report").glob("*.rst"))


@pytest.mark.parametrize("caption", CAPTIONS, ids=lambda p: p.stem)
def test_no_caption_repeats_a_ci_formula_and_a_whiskered_one_names_the_method_page(caption):
    text = caption.read_text()
    assert not any(sign in text for sign in ("σ²", "γ²", "√", "exp(±")), caption.name
    if "Whiskers" in text or "confidence interval" in text:
        assert "docs/method.md" in text, caption.name
        assert text.count("Whiskers") <= 1, caption.name


def test_every_figure_with_whiskers_has_a_caption_that_says_what_they_are():
    for entry in catalog.FIGURES:
        if entry.whiskers:
            text = (REPO / "workflow" / "report" / f"{entry.name}.rst").read_text()
            (sentence,) = [s for s in text.split(". ") if s.startswith("Whiskers")]
            assert "docs/method.md" in sentence, entry.name


def test_attribution_bars_are_shares_of_each_cells_own_median_whatever_its_size():
    stats = crowded_stats()
    figure = INFERENCE_FIGURES["attribution"](inputs(stats))
    panels = [ax for ax in figure.axes if ax.patches]
    assert len(panels) == stats.sizes["arch"]
    for ax in panels:
        ends = {}
        for patch in ax.patches:
            row = round(patch.get_y() + patch.get_height() / 2)
            ends[row] = max(ends.get(row, 0.0), patch.get_x() + patch.get_width())
        assert len(ends) == len(variants(stats))
        assert all(end == pytest.approx(1.0) for end in ends.values())
        assert ax.get_xscale() == "linear"
