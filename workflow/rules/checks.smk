# Equivalence with the float64 reference (every mode, export modes through their artifacts),
# and analytic FLOPs vs framework counters, per system.


rule checks:
    input:
        # every export mode's artifacts (each precision's), each run against the reference
        artifacts=per_job(
            lambda wildcards: PLAN.artifact_manifests(
                wildcards.system, wildcards.framework
            )
        ),
    output:
        equivalence=paths.checks_file(
            "{system}", "{framework}", "{version}", "equivalence"
        ),
        flops=paths.checks_file("{system}", "{framework}", "{version}", "flops"),
    log:
        "results/logs/checks/{system}/{framework}/{version}.log",
    priority: PLAN.ahead_of_bench
    conda:
        FRAMEWORK_ENV
    threads: SYSTEM_THREADS
    resources:
        **SYSTEM_RESOURCES,
        timing_slot=1,
    params:
        framework="{framework}",
        archs=ARCHS,
        dims={arch: config["dims"][arch] for arch in ARCHS},
        modes=per_job(lambda wildcards: config["modes"][wildcards.framework]),
        precisions=per_job(
            lambda wildcards: PLAN.check_precisions(
                wildcards.system, wildcards.framework
            )
        ),
        seed=config["seed"],
        batch=lookup(within=config, dpath="equivalence/batch"),
        tolerance=lookup(within=config, dpath="equivalence/tolerance"),
        system=system_params,
        versions=per_job(
            lambda wildcards: PLAN.versions[(wildcards.system, wildcards.framework)]
        ),
    script:
        "../scripts/checks.py"


rule merge_checks:
    input:
        equivalence=PLAN.check_files("equivalence"),
        flops=PLAN.check_files("flops"),
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
        systems=[system for system, _, _ in PLAN.check_runs()],
    script:
        "../scripts/merge_checks.py"
