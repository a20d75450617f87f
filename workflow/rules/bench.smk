# One job per benchmark cell and process: system × framework × mode × architecture × batch,
# measured in bench.processes fresh processes (timing jobs, run in one seeded shuffled order).
# A shell job (workarounds.smk says why): bench.py reads the plan's request from --cell.


rule bench:
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


use rule bench as bench_process with:
    output:
        f"{paths.CELL}-p{{process}}.nc",
    log:
        f"{paths.CELL_LOG}-p{{process}}.log",
