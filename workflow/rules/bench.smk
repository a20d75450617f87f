# One job per benchmark cell: framework × mode × architecture × batch (a timing job).


def cell_request(wildcards):
    """Everything that determines a cell; a change in any of it reruns exactly that cell."""
    check_cell_wildcards(wildcards)
    bench = config["bench"]
    return dict(
        framework=wildcards.framework,
        mode=wildcards.mode,
        arch=wildcards.arch,
        batch=int(wildcards.batch),
        dims=config["dims"][wildcards.arch],
        seed=config["seed"],
        device=DEVICE,
        threads=THREADS,
        warmup=bench["warmup"],
        repeats=bench["repeats"],
        busy_threshold_cores=bench["busy_threshold_cores"],
        retries=bench["retries"],
        timeout_s=bench["timeout_s"],
        inject_failure=f"{wildcards.framework}/{wildcards.mode}/{wildcards.arch}"
        in bench["inject_failure"],
        lock=config["timing_lock"],
        versions=VERSIONS[wildcards.framework],
    )


rule bench:
    output:
        "results/cells/{framework}/{version}/{mode}/{arch}/b{batch}.nc",
    log:
        "results/logs/bench/{framework}/{version}/{mode}/{arch}/b{batch}.log",
    conda:
        framework_env
    threads: THREADS
    resources:
        timing_slot=1,
    params:
        cell=cell_request,
    script:
        "../scripts/bench.py"
