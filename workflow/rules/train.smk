# Training benchmarks: one job per system × framework × mode × model × dataset × precision (a
# timing job; float32's file has no precision tag, as before precision was a dimension).


rule train:
    output:
        paths.TRAIN_RUN,
    log:
        "results/logs/train/{system}/{framework}/{version}/{mode}/{model}-{dataset}{precision_tag}.log",
    conda:
        FRAMEWORK_ENV
    threads: SYSTEM_THREADS
    resources:
        **SYSTEM_RESOURCES,
        timing_slot=1,
    params:
        framework="{framework}",
        mode="{mode}",
        model="{model}",
        dataset="{dataset}",
        settings=train_settings,
        system=system_params,
        seed=config["seed"],
        checked=train_params,
    script:
        "../scripts/train.py"


rule aggregate_train:
    input:
        runs=PLAN.train_files(),
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
    params:
        systems=[run["system"] for run in PLAN.train_runs],
    script:
        "../scripts/aggregate_train.py"
