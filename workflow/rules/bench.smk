# One job per benchmark cell and process: system × framework × mode × architecture × batch,
# measured in bench.processes fresh processes (timing jobs, run in one seeded shuffled order).
# A shell job (workarounds.smk says why): bench.py reads the plan's request from --cell.
# The hardware file holds the speed canary's baseline; ancient: a new characterization
# reruns no cell (each cell records the baseline it was read against). An export mode's cells
# take its artifact's manifest (export.smk): a new export reruns them.


rule bench:
    input:
        hardware=ancient(paths.HARDWARE),
        artifact=artifact_input,
    output:
        f"{paths.CELL}.nc",
    log:
        f"{paths.CELL_LOG}.log",
    priority: bench_priority
    conda:
        FRAMEWORK_ENV
    threads: SYSTEM_THREADS
    resources:
        **SYSTEM_RESOURCES,
        timing_slot=1,
    params:
        cell=cell_request,
    shell:
        BENCH_COMMAND


# A later process starts from process 0's compile cache (fwbench.measure.compile_cache), so it
# runs after process 0; ancient: a rerun of process 0 alone reruns no later process.
use rule bench as bench_process with:
    input:
        hardware=ancient(paths.HARDWARE),
        artifact=artifact_input,
        first=ancient(f"{paths.CELL}.nc"),
    output:
        f"{paths.CELL}-p{{process}}.nc",
    log:
        f"{paths.CELL_LOG}-p{{process}}.log",
