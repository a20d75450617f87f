# One job per benchmark cell: framework × mode × architecture × batch (a timing job).


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
