# Equivalence with the float64 reference, and analytic FLOPs vs framework counters.


rule checks:
    output:
        equivalence="results/checks/{framework}/{version}/equivalence.csv",
        flops="results/checks/{framework}/{version}/flops.csv",
    log:
        "results/logs/checks/{framework}/{version}.log",
    priority: AHEAD_OF_BENCH
    conda:
        framework_env
    threads: THREADS
    resources:
        timing_slot=1,
    params:
        framework="{framework}",
        archs=ARCHS,
        dims=lambda wildcards: {arch: config["dims"][arch] for arch in ARCHS},
        modes=lambda wildcards: config["modes"][wildcards.framework],
        seed=config["seed"],
        batch=lookup(within=config, dpath="equivalence/batch"),
        tolerance=lookup(within=config, dpath="equivalence/tolerance"),
        threads=THREADS,
        versions=lambda wildcards: VERSIONS[wildcards.framework],
    script:
        "../scripts/checks.py"


rule merge_checks:
    input:
        equivalence=[
            f"results/checks/{fw}/{VERSION[fw]}/equivalence.csv" for fw in FRAMEWORKS
        ],
        flops=[f"results/checks/{fw}/{VERSION[fw]}/flops.csv" for fw in FRAMEWORKS],
    output:
        equivalence=report(
            "results/checks/equivalence.csv",
            caption="../report/equivalence.rst",
            category="checks",
        ),
        flops=report(
            "results/checks/flops.csv",
            caption="../report/flops.rst",
            category="checks",
        ),
    log:
        "results/logs/checks/merge.log",
    conda:
        conda_env("analysis")
    resources:
        timing_slot=1,
    script:
        "../scripts/merge_checks.py"
