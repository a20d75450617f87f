"""Every per-cell variable of the result files, declared once: its name, unit, meaning, how a
cell's processes pool it, which files carry it and since which schema version.

The cell file (fwbench.io.cell_file), the aggregate (bench.nc: fwbench.analysis.aggregate,
pooled by fwbench.analysis.processes) and the statistics (stats.nc and stats.csv:
fwbench.analysis.summary_variables) take their variable lists, units and descriptions from
here, and the docs quote it. A stage that adds a variable adds one `Variable` below; the code
that computes it and the code that reads it name it as `V.<name>` (an undeclared name is an
AttributeError at import, not a silent NaN).

The same holds for stats.nc's variables over many cells (AGGREGATES) and the winners' (WINNERS,
over WINNER_DIMS), which only stats.nc carries, and for the rounds file's variables
(ROUNDS_FILE, named as `R.<name>`: fwbench.io.rounds_file).

Files: CELL (a cell's `.nc`), BENCH (results/aggregate/bench.nc), STATS (stats.nc, stats.csv).
A variable in CELL and BENCH is the aggregate's copy of the cell's; one in BENCH and STATS is
taken into the statistics as the aggregate pooled it (NaN where the cell did not succeed).
`attr` names the cell attribute a per-cell number or text is read from (cell files hold them as
attributes; the aggregate and the statistics as variables).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from types import SimpleNamespace

from fwbench.io.comparisons_file import ROW_DIMS
from fwbench.io.dims import VARIANT_DIMS

CELL, BENCH, STATS, ROUNDS = "cell", "bench", "stats", "rounds"


class Pool(Enum):
    """How the values of a cell's fresh processes become the cell's one value."""

    MEDIAN = "the median over the cell's processes"
    WORST = "the largest: a cell is as disturbed and as costly as its worst process"
    TOTAL = "summed over the cell's processes"
    FIRST_PROCESS = "process 0's, the cold one (later processes start from its compile cache)"
    ALL_OF = "the smallest: true only if every process's is"
    LEAST = "the smallest: as starved as its most starved process"
    STACKED = "every process's samples, one after the other"
    STATUS = "failed if any process failed, else ok if any measured, else absent"
    FAILURE_TEXT = "the first failed process's text, prefixed with its process"
    FIRST_TEXT = "the first process's non-empty text"
    NODES = "every distinct value, joined by ' | '"
    COMPUTED = "computed from the pooled cell (stats only)"


@dataclass(frozen=True)
class Variable:
    name: str
    unit: str  # SI unit for numbers; "" for text
    meaning: str
    pool: Pool = Pool.MEDIAN
    files: tuple[str, ...] = (CELL, BENCH)
    since: tuple[tuple[str, int], ...] = ()  # (file, schema version) where later than 1
    attr: str = ""  # the cell attribute it is read from ('' : a variable of the cell file)
    per_sample: bool = False  # a series over the cell's timed samples (dimension repeat)

    @property
    def text(self) -> bool:
        return self.unit == ""

    def since_version(self, file: str) -> int:
        return dict(self.since).get(file, 1)


_C, _CB, _CBS, _S = (CELL,), (CELL, BENCH), (CELL, BENCH, STATS), (STATS,)
_BS = (BENCH, STATS)


def _series(name: str, unit: str, meaning: str, since: int = 1) -> Variable:
    return Variable(name, unit, meaning, Pool.STACKED, _CB, ((CELL, since),), per_sample=True)


def _stat(name: str, unit: str, meaning: str) -> Variable:
    return Variable(name, unit, meaning, Pool.COMPUTED, _S)


def _attr_number(name: str, unit: str, meaning: str, pool: Pool, files=_CB) -> Variable:
    return Variable(name, unit, meaning, pool, files, attr=name)


def _text(name: str, meaning: str, pool: Pool = Pool.FIRST_TEXT, attr: str = "", files=_CB):
    return Variable(name, "", meaning, pool, files, attr=attr or name)


# --- per sample (dimension repeat) ------------------------------------------------------------
SAMPLES = (
    _series(
        "latency_s",
        "s",
        "each timed sample: perf_counter_ns around calls_per_sample consecutive calls (each"
        " synced), divided by calls_per_sample",
    ),
    _series(
        "speed_factor",
        "1",
        "the speed canary probed after the sample, over its quiet baseline (the larger of the"
        " chain's and the read's factor): 1 = quiet",
        6,
    ),
    _series("on_cpu", "1", "the process's CPU time over the sample's wall time", 6),
    _series("slow_sample", "1", "1 where the canary or on_cpu marked the sample slow", 6),
    _series("canary_chain_s", "s", "the canary's dependent add chain after the sample", 6),
    _series("canary_read_s", "s", "the canary's read after the sample", 6),
)

# --- the cell's numbers: the cell file's scalar variables ----------------------------------------
_W, _F, _M = Pool.WORST, Pool.FIRST_PROCESS, Pool.MEDIAN
CELL_NUMBERS = (
    Variable(
        "first_call_s",
        "s",
        "the first call (tracing or compilation and a first run),"
        " not in latency_s; process 0's, cold",
        _F,
        _CBS,
    ),
    Variable(
        "calls_per_sample",
        "1",
        "calls in each timed sample (bench.min_sample_s)",
        _M,
        _CBS,
        ((CELL, 5),),
    ),
    Variable(
        "null_call_s",
        "s",
        "median of the mode's null call (one elementwise op on a"
        " 1-element tensor, synced): its dispatch floor",
        _M,
        _CBS,
        ((CELL, 3),),
    ),
    Variable("flops", "FLOP", "analytic FLOPs per call (fwbench.model.cost)", _M, _CBS),
    Variable(
        "bytes", "B", "analytic compulsory traffic per call (weights, input, output)", _M, _CBS
    ),
    Variable("activation_bytes", "B", "analytic estimate of activation traffic per call"),
    Variable(
        "working_set_bytes",
        "B",
        "analytic estimate of the bytes live at once: picks the roofline's memory level",
        _M,
        _CBS,
        ((CELL, 3),),
    ),
    Variable(
        "recurrent_steps",
        "1",
        "rnn and lstm: cell steps per call, each waiting on the one"
        " before (seq_len × layers); NaN for the others",
        _M,
        _CBS,
        ((CELL, 8),),
    ),
    Variable("counter_flops", "FLOP", "the framework's own FLOP counter (NaN where it has none)"),
    Variable(
        "peak_mem_bytes", "B", "process peak RSS on CPU; allocator peak on an accelerator", _W
    ),
    Variable("compiled", "1", "1 when the callable really ran compiled, else 0", Pool.ALL_OF, _CBS),
    Variable("graph_count", "1", "graphs the compiler made", _M, _CBS),
    Variable("graph_breaks", "1", "graph breaks the compiler reported", _W, _CBS),
    Variable("fallbacks", "1", "ops the compiler left to eager", _W, _CBS),
    Variable("load_before", "1", "1-minute load average at the cell's start", _W),
    Variable("load_after", "1", "1-minute load average at the cell's end", _W),
    Variable(
        "busy_cpu_other",
        "cores",
        "the larger of other_cores_probe and other_cores_during",
        _W,
        _CBS,
    ),
    Variable(
        "other_cores_probe",
        "cores",
        "other processes' CPU use while the cell slept just before its loop",
        _W,
        _CB,
        ((CELL, 2),),
    ),
    Variable(
        "other_cores_during",
        "cores",
        "other processes' CPU use during the warm-up and timed calls",
        _W,
        _CB,
        ((CELL, 2),),
    ),
    Variable(
        "cpu_pressure",
        "1",
        "PSI: share of the warm-up and timed calls in which some task waited for a CPU",
        _W,
        _CBS,
        ((CELL, 2),),
    ),
    Variable(
        "canary_factor", "1", "median speed_factor of the cell's samples", _W, _CBS, ((CELL, 6),)
    ),
    Variable(
        "canary_read_factor",
        "1",
        "median of the canary's read over its baseline"
        " (recorded, decides nothing: the framework's cache footprint moves it)",
        _W,
        _CBS,
        ((CELL, 7),),
    ),
    Variable("on_cpu_median", "1", "median on_cpu", Pool.LEAST, _CBS, ((CELL, 6),)),
    Variable(
        "canary_cv_pct", "%", "the canary's CV over the cell's samples", _W, _CBS, ((CELL, 6),)
    ),
    Variable("slow_samples", "1", "samples marked slow", Pool.TOTAL, _CBS, ((CELL, 6),)),
    Variable(
        "canary_share",
        "1",
        "the canary probes' share of the timed loop's wall time (their cost)",
        _W,
        _CBS,
        ((CELL, 6),),
    ),
    Variable(
        "canary_chain_baseline_s",
        "s",
        "the quiet baseline median of the canary's chain",
        _M,
        _CB,
        ((CELL, 6),),
    ),
    Variable(
        "canary_read_baseline_s",
        "s",
        "the quiet baseline median of the canary's read",
        _M,
        _CB,
        ((CELL, 6),),
    ),
    Variable(
        "low_precision_share",
        "1",
        "a cell in a precision other than float32: the share of its typed work (kernel time or"
        " FLOP: kernel_precision says which) whose floating inputs are in its precision, after"
        " its timed samples (fwbench.frameworks.kernel_precision); NaN for float32 and where"
        " not examined",
        Pool.FIRST_PROCESS,
        _CBS,
        ((CELL, 10),),
    ),
)


def _pass(name: str, unit: str, meaning: str, files=_CB) -> Variable:
    """A reading of the attribution pass (fwbench.measure.attribution; process 0 only)."""
    return Variable(name, unit, meaning, _M, files, ((CELL, 8),))


# --- the attribution pass, per call ---------------------------------------------------------
ATTRIBUTION_PASS = (
    _pass("attr_dispatches", "1", "ops or launches per call", _CBS),
    _pass("attr_kernel_s", "s", "kernel time per call less the profiler's in-event cost", _CBS),
    _pass("attr_kernel_raw_s", "s", "kernel time per call before that correction"),
    _pass("attr_kernel_regions", "1", "kernel regions per call"),
    _pass("attr_floor_s", "s", "the mode's launch floor", _CBS),
    _pass("attr_events", "1", "profiler events per call", _CBS),
    _pass("attr_event_cost_s", "s", "the profiler's cost per event, on the floor call", _CBS),
    _pass("attr_floor_kernel_s", "s", "the floor call's one kernel, as profiled"),
    _pass("attr_profiled_call_s", "s", "the profiled call's wall time", _CBS),
    _pass(
        "attr_profiled_work_s",
        "s",
        "that wall less the events' calibrated cost, at least attr_unprofiled_call_s",
        _CBS,
    ),
    _pass("attr_unprofiled_call_s", "s", "the same calls unprofiled right after the profile", _CBS),
    _pass("attr_in_framework_s", "s", "time dispatching or in kernels per call", _CBS),
    _pass("attr_nested_events", "1", "events inside a kernel region per call", _CBS),
    _pass("attr_calls", "1", "calls profiled"),
    _pass("attr_pass_s", "s", "the pass's wall time", _CBS),
)

# --- numbers the cell records as attributes ------------------------------------------------
CELL_ATTR_NUMBERS = (
    _attr_number("contended", "1", "1 if the machine was busy during the cell", _W, _CBS),
    _attr_number("attempts", "1", "measurements of the process (bench.retries)", _W),
    _attr_number(
        "slow_machine",
        "1",
        "1 if the canary says the machine ran slow after bench.retries",
        _W,
        _CBS,
    ),
    _attr_number(
        "import_s",
        "s",
        "the process's import of the framework (a runtime mode: the runtime alone)",
        _F,
        _CBS,
    ),
    _attr_number(
        "build_s",
        "s",
        "model build and input on the device (an export mode: loading"
        " the artifact, creating the session)",
        _F,
        _CBS,
    ),
    _attr_number(
        "export_s", "s", "an export mode's export or convert time (its manifest)", _F, _CBS
    ),
)

# --- text the cell records as attributes ------------------------------------------------------
_FT, _N = Pool.FAILURE_TEXT, Pool.NODES
CELL_TEXT = (
    _text(
        "status", "'ok' | 'failed' | 'absent' (no cell for this position)", Pool.STATUS, files=_CBS
    ),
    _text("error_type", "exception class of a failed cell", _FT, files=_CBS),
    _text("error", "why the cell failed; empty when it did not", _FT, "error_message", _CBS),
    _text("traceback_tail", "last lines of a failed cell's traceback", _FT),
    _text("compile_how", "how the framework says it compiled", files=_CBS),
    _text("eager_ops", "ops a compiled mode left to the framework's eager kernels", files=_CBS),
    _text("counter_note", "why counter_flops is what it is"),
    _text(
        "attribution",
        "what the attribution pass's profiler saw and could not see, or why no pass ran",
        files=_CBS,
    ),
    _text(
        "kernel_precision",
        "what a low-precision cell's work computed in, the casts, and how that was seen; or"
        " why it was not examined ('' for float32)",
        files=_CBS,
    ),
    _text("start_utc", "when the cell's measurement started"),
    _text("canary", "the speed canary's level and work, or why the cell has none"),
    _text("config_hash", "hash of the settings that determine the cell"),
    _text("git_commit", "commit of the code that measured the cell"),
    _text("threads", "JSON of every thread setting of the cell's process"),
    _text("host", "the node that measured the cell", _N, files=_CBS),
    _text("cpu_model", "the measuring node's CPU model ('' in cells before systems)", _N),
    _text("gpu_model", "the measuring node's GPU model ('' on cpu)", _N),
    _text("slurm_partition", "the SLURM partition the cell ran in ('' locally)", _N),
)

# --- the statistics (stats.nc, stats.csv), computed by fwbench.analysis -----------------------
_LATER = Pool.COMPUTED
STATISTICS = (
    _stat("n", "1", "timed samples the statistics use (after the slow ones the choice drops)"),
    _stat("median_s", "s", "median of the cell's timed samples, its processes pooled"),
    _stat("mean_s", "s", "mean of the timed samples"),
    _stat("std_s", "s", "standard deviation of the timed samples"),
    _stat("cv_pct", "%", "coefficient of variation of the timed samples"),
    _stat("iqr_s", "s", "interquartile range of the timed samples"),
    _stat("min_s", "s", "the fastest timed sample"),
    _stat("p95_s", "s", "95th percentile of the timed samples"),
    _stat("median_ci_low_s", "s", "lower end of the median's CI (stats.nc's median_ci_level)"),
    _stat("median_ci_high_s", "s", "upper end of the median's CI"),
    _stat(
        "paired_median_s",
        "s",
        "where the rounds measured the variant at the cell's batch: its rounds median (the"
        " geometric mean of its sets' medians: the samples its ratios and its rank come from;"
        " NaN elsewhere)",
    ),
    _stat(
        "paired_median_ci_low_s",
        "s",
        "lower end of that median's CI, at the mean of the machine's states its sets met"
        " (σ²[v]/S at σ's dof; state_sigma says how far the state moved it)",
    ),
    _stat("paired_median_ci_high_s", "s", "upper end of that median's CI"),
    Variable(
        "first_call_warm_s",
        "s",
        "the median first call of the cell's later processes and of its variant's rounds"
        " workers, each a fresh process started from a copy of process 0's on-disk compile"
        " cache (NaN where neither measured it)",
        Pool.COMPUTED,
        (STATS,),
    ),
    _stat("compile_overhead_s", "s", "first call less the median: what compiling costs once"),
    _stat(
        "first_answer_s",
        "s",
        "a fresh process's wait for its first answer: import, build and first call (an"
        " export is paid once, offline: not in it)",
    ),
    _stat(
        "first_answer_warm_s",
        "s",
        "the same with the later processes' first call, warm from process 0's compile cache",
    ),
)
ROOFLINE = (
    _stat("arithmetic_intensity", "FLOP/B", "flops over bytes"),
    _stat("achieved_flops_per_s", "FLOP/s", "flops over the median"),
    _stat(
        "lower_bound_s",
        "s",
        "the cache-aware roofline bound: the least time the work takes"
        " here, at the memory level its working set fits in",
    ),
    _stat("efficiency", "1", "lower_bound_s over the median (never clamped; above 1 is flagged)"),
    _stat("dram_lower_bound_s", "s", "the roofline bound with DRAM's bandwidth"),
    _stat("dram_efficiency", "1", "dram_lower_bound_s over the median"),
)
SPEEDUPS = (
    _stat(
        "speedup_vs_eager",
        "1",
        "the framework's eager median over this mode's (same arch and batch; where the rounds"
        " measured both, the ratio of their rounds' medians)",
    ),
    _stat("speedup_ci_low", "1", "lower end of that ratio's CI"),
    _stat("speedup_ci_high", "1", "upper end of that ratio's CI"),
    _stat("break_even_iterations", "1", "calls after which compiling pays off"),
    _stat(
        "speedup_vs_best",
        "1",
        "an export mode: its framework's best own mode's median over this mode's (where the"
        " rounds measured both, the ratio of their rounds' medians)",
    ),
    _stat("speedup_vs_best_ci_low", "1", "lower end of that ratio's CI"),
    _stat("speedup_vs_best_ci_high", "1", "upper end of that ratio's CI"),
    _stat(
        "speedup_vs_float32",
        "1",
        "a low-precision cell: the same variant's float32 median over this cell's (same arch"
        " and batch; where the rounds measured both, the ratio of their rounds' medians)",
    ),
    _stat("speedup_vs_float32_ci_low", "1", "lower end of that ratio's CI"),
    _stat("speedup_vs_float32_ci_high", "1", "upper end of that ratio's CI"),
)
QUALITY = (
    _stat("process_sigma", "1", "σ of log process medians used for the median's CI"),
    _stat(
        "state_sigma",
        "1",
        "σ of the log latency the machine's state moved over the sweep (the rounds' γ·τ), held"
        " once in the median's CI (stats.nc's median_ci_level says how)",
    ),
    _stat("process_count", "1", "the cell's processes"),
    _stat("slow_samples_dropped", "1", "samples the slow-sample choice dropped"),
    _stat("canary_rho", "1", "Spearman ρ between the samples and the canary's speed factor"),
    _stat(
        "slow_processes_machine",
        "1",
        "processes slower than the cell's others whose canary also ran slow (the machine's)",
    ),
    _stat(
        "slow_processes_own",
        "1",
        "processes slower than the cell's others whose canary did not (the framework's own)",
    ),
)
PARTS = (
    _stat("roof_s", "s", "the roofline bound: the least time the cell's work can take here"),
    _stat(
        "kernel_excess_s",
        "s",
        "the kernel time the profiler saw beyond the roof, in the clean median's terms",
    ),
    _stat("dispatch_s", "s", "ops or launches per call × the mode's launch floor"),
    _stat("residual_s", "s", "the rest of the median: allocation, glue, synchronization, idle"),
    _stat("explained_share", "1", "the share of the median the first three parts explain"),
    _stat("attribution_closure", "1", "the four parts' sum over the median"),
    _stat("attr_stretch", "1", "the profiled run's work over the clean median"),
    _stat("batch_fit_alpha_s", "s", "α of latency = α + β·batch over the variant's batches"),
    _stat("batch_fit_beta_s", "s", "β of that fit: the cost per sample of the batch"),
    _stat("gain_dispatch_s", "s", "of the gain over eager, the dispatch removed"),
    _stat("gain_kernel_s", "s", "of the gain over eager, the kernel time changed"),
    _stat("gain_rest_s", "s", "of the gain over eager, the rest"),
    _stat("roof_share", "1", "roof_s over the median"),
    _stat("kernel_excess_share", "1", "kernel_excess_s over the median"),
    _stat("dispatch_share", "1", "dispatch_s over the median"),
    _stat("residual_share", "1", "residual_s over the median"),
    _stat("step_s", "s", "rnn and lstm: the median per recurrent step"),
    _stat("step_dispatch_s", "s", "dispatch per recurrent step"),
    _stat("step_roof_s", "s", "the roof per recurrent step"),
    _stat("step_alpha_s", "s", "α of the batch fit per recurrent step"),
    _stat("step_dispatches", "1", "ops or launches per recurrent step"),
    _stat(
        "step_explained_share",
        "1",
        "a step's dispatch and roof over its time",
    ),
    _stat(
        "rest_outside_s",
        "s",
        "of the rest, the time outside the framework (no event of it"
        " open: the caller's Python between ops); an upper bound",
    ),
)
STATS_TEXT = (
    _text(
        "bound",
        "'compute' or 'memory': which roof sets the cache-aware lower bound",
        Pool.COMPUTED,
        files=_S,
    ),
    _text(
        "memory_level",
        "the memory level whose bandwidth bounds the cell: the smallest its"
        " working set fits in ('' where the working set or the levels are unknown)",
        Pool.COMPUTED,
        files=_S,
    ),
    _text(
        "noise",
        "whose the cell's noise is: 'machine' (a process ran on a slow machine, or"
        " the samples follow the speed canary: Spearman ρ ≥ 0.5) or 'framework' (its own);"
        " '' without a canary",
        Pool.COMPUTED,
        files=_S,
    ),
    _text(
        "flags",
        "comma-separated flags (stats.nc's attribute `flags` says what each means)",
        Pool.COMPUTED,
        files=_S,
    ),
    _text(
        "best_own_mode",
        "an export mode: the fastest of its framework's own modes at the same arch and batch,"
        " the one speedup_vs_best sets it against ('' elsewhere)",
        Pool.COMPUTED,
        files=_S,
    ),
    _text(
        "speedup_verdict",
        "a compiled or exported mode against its eager cell (fwbench.analysis.comparisons):"
        " 'faster' / 'slower' (the CI excludes 1 and the speedup passes stats.min_effect_pct),"
        " 'equivalent' (the CI lies within ±min_effect_pct), 'undetermined' (neither);"
        " '' without a speedup",
        Pool.COMPUTED,
        files=_S,
    ),
    _text(
        "deployment_verdict",
        "an export mode against its framework's best own mode, as speedup_verdict",
        Pool.COMPUTED,
        files=_S,
    ),
    _text(
        "precision_verdict",
        "a low-precision cell against the same variant in float32, as speedup_verdict",
        Pool.COMPUTED,
        files=_S,
    ),
    _text(
        "dominant_part",
        "the largest of the four parts of the median (fwbench.analysis.attribution)",
        Pool.COMPUTED,
        files=_S,
    ),
)

# --- per variant, per framework and per system: what the report prints of many cells ---------


def _per_variant(name: str, unit: str, meaning: str) -> Variable:
    return Variable(name, unit, meaning, Pool.COMPUTED, _S)


# Over the cells of a variant that ran (status ok), at every arch and batch.
PER_VARIANT = (
    _per_variant("variant_cells", "1", "cells of the variant that ran"),
    _per_variant("variant_multi_process_cells", "1", "of them, cells measured in 2+ processes"),
    _per_variant("variant_cv_pct", "%", "median of the cells' CV"),
    _per_variant("variant_canary_cv_pct", "%", "median of the cells' canary CV"),
    _per_variant("variant_canary_factor", "1", "median of the cells' canary factor"),
    _per_variant("variant_canary_factor_max", "1", "the largest canary factor of its cells"),
    _per_variant("variant_read_factor", "1", "median of the cells' canary read factor"),
    _per_variant("variant_on_cpu", "1", "median of the cells' median on-CPU share"),
    _per_variant("variant_on_cpu_min", "1", "the smallest on-CPU share of its cells"),
    _per_variant("variant_slow_samples", "1", "slow samples marked, all cells"),
    _per_variant("variant_slow_samples_dropped", "1", "slow samples dropped, all cells"),
    _per_variant("variant_slow_machine_cells", "1", "cells flagged slow_machine"),
    _per_variant("variant_slow_processes_machine", "1", "slow processes that were the machine's"),
    _per_variant("variant_slow_processes_own", "1", "slow processes that were the variant's own"),
    _per_variant("variant_contended_cells", "1", "cells measured while the machine was busy"),
    _per_variant(
        "variant_process_spread_pct",
        "%",
        "exp(median process σ) − 1: the typical spread between a cell's processes",
    ),
    _per_variant("variant_noise_machine_cells", "1", "cells whose noise was the machine's"),
    _per_variant("variant_noise_own_cells", "1", "cells whose noise was the framework's own"),
    _per_variant("variant_compiled_cells", "1", "cells that really ran compiled"),
    _per_variant("variant_graphs_min", "1", "fewest graphs the compiler made in a cell"),
    _per_variant("variant_graphs_max", "1", "most graphs the compiler made in a cell"),
    _per_variant("variant_graph_breaks", "1", "graph breaks, all cells"),
    _per_variant("variant_fallbacks", "1", "ops left to eager by the compiler, all cells"),
    _per_variant(
        "variant_compile_how",
        "",
        "how the framework says it compiled, every distinct answer joined by '; '",
    ),
    _per_variant(
        "variant_eager_ops",
        "",
        "every distinct set of ops the compiled graphs left"
        " to eager kernels, joined by '; ' ('' when none)",
    ),
    _per_variant("compile_faster_cells", "1", "cells whose speedup over eager is faster"),
    _per_variant("compile_slower_cells", "1", "cells whose speedup over eager is slower"),
    _per_variant("compile_equivalent_cells", "1", "cells whose speedup is within ±min effect"),
    _per_variant("compile_undetermined_cells", "1", "cells whose speedup is undetermined"),
    _per_variant("compile_faster_min", "1", "the smallest speedup of the faster cells"),
    _per_variant("compile_faster_max", "1", "the largest speedup of the faster cells"),
    _per_variant("compile_slower_min", "1", "the smallest speedup of the slower cells"),
    _per_variant("compile_slower_max", "1", "the largest speedup of the slower cells"),
    _per_variant("break_even_min", "1", "the fewest calls to pay a faster cell's compile back"),
    _per_variant("break_even_max", "1", "the most calls to pay a faster cell's compile back"),
)
# Over the cells of a framework that ran.
PER_FRAMEWORK = (
    _per_variant(
        "framework_null_call_s",
        "s",
        "median null call of the framework's cells: its dispatch floor",
    ),
    _per_variant("framework_attributed_cells", "1", "cells with the four parts at the table batch"),
    _per_variant("framework_top_part", "", "the part largest in most of those cells"),
    _per_variant("framework_top_part_cells", "1", "cells in which it is the largest"),
    _per_variant(
        "framework_largest_rest_cell",
        "",
        "of those cells, the one with the largest rest whose outside share is known",
    ),
    _per_variant("framework_largest_rest_s", "s", "that cell's rest"),
    _per_variant("framework_largest_rest_outside_s", "s", "of it, the time outside the framework"),
)
# Over every cell of the system.
PER_SYSTEM = (
    _per_variant("cells_ok", "1", "cells that ran"),
    _per_variant("cells_failed", "1", "cells that failed"),
    _per_variant("system_cv_pct", "%", "median CV of the cells that ran"),
    _per_variant("system_contended_cells", "1", "cells measured while the machine was busy"),
    _per_variant("samples_min", "1", "fewest timed samples of a cell that ran"),
    _per_variant("samples_max", "1", "most timed samples of a cell that ran"),
    _per_variant("calls_per_sample_min", "1", "fewest calls per sample"),
    _per_variant("calls_per_sample_max", "1", "most calls per sample"),
    _per_variant("closure_cells", "1", "cells with the four parts"),
    _per_variant("closure_held", "1", "of them, cells whose parts close within the tolerance"),
    _per_variant("stretch_median", "1", "median attr_stretch over the cells with parts"),
    _per_variant("stretch_min", "1", "the smallest attr_stretch"),
    _per_variant("stretch_max", "1", "the largest attr_stretch"),
    _per_variant(
        "parts_median_spread",
        "1",
        "the slowest over the fastest median of the cells with parts at the table batch",
    ),
    _per_variant("efficiency_low", "1", "the lowest efficiency of a trusted cell that ran"),
    _per_variant("efficiency_low_cell", "", "its cell"),
    _per_variant("efficiency_high", "1", "the highest efficiency of a trusted cell that ran"),
    _per_variant("efficiency_high_cell", "", "its cell"),
    _per_variant("flag_counts", "", "every flag with the cells that carry it: 'N flag, ...'"),
    _per_variant("comparisons_total", "1", "compared pairs at the table batch (every kind)"),
    _per_variant("comparisons_different", "1", "of them, decided faster or slower"),
    _per_variant("comparisons_equivalent", "1", "of them, decided equivalent"),
    _per_variant("comparisons_undetermined", "1", "of them, undetermined"),
    _per_variant("rivalries_total", "1", "rivals against their row's fastest at the table batch"),
    _per_variant(
        "precision_compared", "1", "low-precision cells set against float32 (every batch)"
    ),
    _per_variant("precision_faster", "1", "of them, decided faster than float32"),
    _per_variant("precision_slower", "1", "of them, decided slower than float32"),
    _per_variant("precision_equivalent", "1", "of them, decided equivalent to float32"),
    _per_variant("precision_undetermined", "1", "of them, undetermined"),
    _per_variant("precision_failed_cells", "1", "low-precision cells that failed"),
    _per_variant("rivalries_decided", "1", "of them, decided (faster, slower or equivalent)"),
    _per_variant(
        "rivalry_half_width_pct",
        "%",
        "the median half-width of their ratio CIs: exp(half the CI's width in log) − 1",
    ),
)
# Per (arch, batch).
PER_ROW = (
    _per_variant(
        "onnx_exporter_spread",
        "1",
        "the slowest over the fastest median of the frameworks' ONNX exports in the one"
        " runtime (NaN unless every one ran)",
    ),
)
# stats.nc's variables over many cells, by the dimensions they keep.
AGGREGATES = {
    VARIANT_DIMS: PER_VARIANT,
    ("framework",): PER_FRAMEWORK,
    ("arch", "batch"): PER_ROW,
    (): PER_SYSTEM,
}

# --- the winners: per row of cells and scope, computed by fwbench.analysis.winners -----------
SCOPE = "scope"  # stats.nc's dimension of the contests' scopes
SCOPE_COMPILED, SCOPE_ALL = "compiled", "all"  # among compiled variants, and among all
SCOPES = (SCOPE_COMPILED, SCOPE_ALL)
WINNER_DIMS = (*ROW_DIMS, SCOPE)
# A contest's verdict (winner_verdict).
WINNER, EQUIVALENT_FIRST, UNDETERMINED_FIRST, ONLY, NONE = (
    "winner",
    "equivalent",
    "undetermined",
    "only",
    "none",
)
WINNER_VERDICTS = (WINNER, EQUIVALENT_FIRST, UNDETERMINED_FIRST, ONLY, NONE)
WINNERS = (
    _stat(
        "winner_fastest_median_s",
        "s",
        "the fastest unflagged variant's median: the rounds' (the geometric mean of its sets'"
        " medians) where the rounds measured the row, the same samples as the ratio; else its"
        " cell's",
    ),
    _stat("winner_runner_up_median_s", "s", "the runner-up's median, from the same source"),
    _stat(
        "winner_runner_up_ratio", "1", "the fastest's speedup over the runner-up (the comparison's)"
    ),
    _stat("winner_ratio_ci_low", "1", "lower end of that ratio's CI (at stats.confidence)"),
    _stat("winner_ratio_ci_high", "1", "upper end of that ratio's CI"),
    _stat(
        "winner_p_value", "1", "two-sided p of the fastest against the runner-up (no difference)"
    ),
    _stat("winner_candidates", "1", "the unflagged variants in the contest"),
    _stat("winner_decided", "1", "rivals decided (slower than the fastest, or equivalent to it)"),
    _stat(
        "winner_verdict",
        "",
        f"'{WINNER}': every rival is slower than the fastest (the CI at stats.confidence of"
        " their ratio excludes 1, and the ratio is at least 1 + stats.min_effect_pct);"
        f" '{EQUIVALENT_FIRST}': every rival slower or equivalent (its ratio's CI within"
        f" ±stats.min_effect_pct); '{UNDETERMINED_FIRST}': a rival is neither"
        f" (winner_contenders); '{ONLY}': one unflagged variant; '{NONE}': no unflagged"
        " variant (fwbench.analysis.winners)",
    ),
    _stat("winner", "", f"the declared winner ('' unless {WINNER} or {ONLY})"),
    _stat(
        "winner_fastest", "", "the fastest unflagged variant (by the rounds' median where they ran)"
    ),
    _stat("winner_runner_up", "", "the second fastest"),
    _stat("winner_contenders", "", "the fastest and every rival not decided slower than it"),
    _stat("winner_excluded", "", "variants left out of the contest: their cells are flagged"),
)

DECLARED = (
    *SAMPLES,
    *CELL_TEXT,
    *STATS_TEXT,
    *STATISTICS,
    *CELL_NUMBERS,
    *CELL_ATTR_NUMBERS,
    *ROOFLINE,
    *SPEEDUPS,
    *QUALITY,
    *ATTRIBUTION_PASS,
    *PARTS,
)
_ALL = (*DECLARED, *PER_VARIANT, *PER_FRAMEWORK, *PER_ROW, *PER_SYSTEM, *WINNERS)
BY_NAME = {variable.name: variable for variable in _ALL}
if len(BY_NAME) != len(_ALL):  # pragma: no cover - a declaration error
    raise ValueError("a variable is declared twice")
# Each variable's name, as `V.median_s`: the one spelling every other module uses.
V = SimpleNamespace(**{name: name for name in BY_NAME})


def declared(
    file: str,
    *,
    text: bool | None = None,
    per_sample: bool | None = None,
    from_attr: bool | None = None,
) -> Iterator[Variable]:
    """The variables `file` carries, in declaration order, optionally only text or numbers,
    series or not, read from a cell attribute or not."""
    for variable in DECLARED:
        if file not in variable.files:
            continue
        if text is not None and variable.text != text:
            continue
        if per_sample is not None and variable.per_sample != per_sample:
            continue
        if from_attr is not None and bool(variable.attr) != from_attr:
            continue
        yield variable


def units(variables) -> dict[str, str]:
    return {variable.name: variable.unit for variable in variables}


# The cell file: its per-sample series (latency_s first) and scalar variables, with units.
CELL_SERIES = units(declared(CELL, per_sample=True))
CELL_SCALARS = units(declared(CELL, text=False, per_sample=False, from_attr=False))
# The statistics' per-cell numbers and text, in the order stats.csv's columns take.
STATS_NUMBERS = units(declared(STATS, text=False))
STATS_TEXT_MEANINGS = {v.name: v.meaning for v in declared(STATS, text=True)}
# The statistics' variables taken from the pooled aggregate as they are (NaN where a cell did
# not succeed), the others computed.
FROM_AGGREGATE = tuple(v.name for v in declared(STATS, text=False) if BENCH in v.files) + (
    V.first_call_warm_s,
)


def pooling(name: str) -> Pool:
    """How the aggregate pools `name` across a cell's processes (undeclared: the median)."""
    variable = BY_NAME.get(name)
    return variable.pool if variable else Pool.MEDIAN


# --- the rounds file (fwbench.io.rounds_file): its own names, apart from the cells' -----------
def _rounds(name: str, unit: str, meaning: str, since: int = 1) -> Variable:
    return Variable(name, unit, meaning, Pool.COMPUTED, (ROUNDS,), ((ROUNDS, since),))


ROUNDS_FILE = (
    _rounds(
        "latency_s", "s", "seconds per call of each turn's samples (variant, set, round, sample)"
    ),
    _rounds(
        "position", "1", "the variant's place in the round's shuffled order (variant, set, round)"
    ),
    _rounds(
        "calls_per_sample", "1", "calls per timed sample, from the warm-up's pace (variant, set)"
    ),
    _rounds(
        "setup_s",
        "s",
        "from the worker's start to the end of its warm-up (variant, set; NaN where it failed)",
    ),
    _rounds(
        "first_call_warm_s",
        "s",
        "the worker's first call, timed on the timed cores while the others wait: a fresh"
        " process's first call from a warm compile cache (variant, set; NaN where it failed"
        " before it); `first_call_s` in files before schema 3",
        since=3,
    ),
    _rounds("status", "", "'ok', or 'failed' (variant, set)"),
    _rounds("error_message", "", "the failed worker's error (variant, set)"),
    _rounds("start_utc", "", "when the set took the timing lock (set)", since=2),
)
R = SimpleNamespace(**{v.name: v.name for v in ROUNDS_FILE})
