# One job per export mode and architecture on each system: the framework exports the model
# (any batch) to an artifact beside its manifest (fwbench.measure.export), which that mode's
# cells load and time, and its checks run. A timing job: export_s is measured. A shell job, as
# bench (workarounds.smk says why).


rule export:
    output:
        f"{paths.ARTIFACT}.json",
    log:
        f"{paths.ARTIFACT_LOG}.log",
    priority: PLAN.ahead_of_bench
    conda:
        FRAMEWORK_ENV
    threads: SYSTEM_THREADS
    resources:
        **SYSTEM_RESOURCES,
        timing_slot=1,
    params:
        request=export_request,
    shell:
        EXPORT_COMMAND
