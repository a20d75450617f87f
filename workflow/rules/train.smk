# Training benchmarks: one job per framework × mode × model × dataset (a timing job).


rule train:
    output:
        "results/train/{framework}/{version}/{mode}/{model}-{dataset}.nc",
    log:
        "results/logs/train/{framework}/{version}/{mode}/{model}-{dataset}.log",
    conda:
        framework_env
    threads: THREADS
    resources:
        **train_resources(),
        timing_slot=1,
    params:
        framework="{framework}",
        mode="{mode}",
        model="{model}",
        dataset="{dataset}",
        settings=TRAIN,
        threads=THREADS,
        device=DEVICE,
        seed=config["seed"],
        checked=train_params,
    script:
        "../scripts/train.py"


rule aggregate_train:
    input:
        runs=[
            "results/train/{framework}/{version}/{mode}/{model}-{dataset}.nc".format(
                **run
            )
            for run in TRAIN_RUNS
        ],
    output:
        nc="results/aggregate/train.nc",
        csv=report(
            "results/summary/train.csv",
            caption="../report/train_summary.rst",
            category="training",
        ),
    log:
        "results/logs/aggregate/train.log",
    conda:
        conda_env("analysis")
    resources:
        timing_slot=1,
    script:
        "../scripts/aggregate_train.py"
