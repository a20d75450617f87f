# One job per benchmark cell and process: system × framework × mode × architecture × batch,
# measured in bench.processes fresh processes (timing jobs, run in one seeded shuffled order).
# A shell job, not a `script:` one: Snakemake reads a script rule's source once per job while
# it plans, 13 of the 31 s a 20,000-cell dry run took (self_measurement/dry_run_scale.py).


rule bench:
    output:
        f"{CELL_PATH}.nc",
    log:
        "results/logs/bench/{system}/{framework}/{version}/{mode}/{arch}/b{batch}.log",
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
        f"{CELL_PATH}-p{{process}}.nc",
    log:
        "results/logs/bench/{system}/{framework}/{version}/{mode}/{arch}/b{batch}-p{process}.log",
