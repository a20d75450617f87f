# Equivalence with the float64 reference, and analytic FLOPs vs framework counters, per system.


rule checks:
    output:
        equivalence="results/checks/{system}/{framework}/{version}/equivalence.csv",
        flops="results/checks/{system}/{framework}/{version}/flops.csv",
    log:
        "results/logs/checks/{system}/{framework}/{version}.log",
    priority: AHEAD_OF_BENCH
    conda:
        FRAMEWORK_ENV
    threads: SYSTEM_THREADS
    resources:
        **SYSTEM_RESOURCES,
        timing_slot=1,
    params:
        framework="{framework}",
        archs=ARCHS,
        dims=lambda wildcards: {arch: config["dims"][arch] for arch in ARCHS},
        modes=lambda wildcards: config["modes"][wildcards.framework],
        seed=config["seed"],
        batch=lookup(within=config, dpath="equivalence/batch"),
        tolerance=lookup(within=config, dpath="equivalence/tolerance"),
        system=system_params,
        versions=lambda wildcards: VERSIONS[(wildcards.system, wildcards.framework)],
    script:
        "../scripts/checks.py"


CHECK_RUNS = [
    (system, fw, VERSION[(system, fw)]) for system in SYSTEM_NAMES for fw in FRAMEWORKS
]


rule merge_checks:
    input:
        equivalence=[
            f"results/checks/{s}/{fw}/{version}/equivalence.csv"
            for s, fw, version in CHECK_RUNS
        ],
        flops=[
            f"results/checks/{s}/{fw}/{version}/flops.csv"
            for s, fw, version in CHECK_RUNS
        ],
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
    params:
        systems=[system for system, _, _ in CHECK_RUNS],
    script:
        "../scripts/merge_checks.py"
