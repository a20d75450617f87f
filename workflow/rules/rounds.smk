# The rounds: at each rounds batch, every variant of an architecture measured in alternation
# (fwbench.measure.rounds) by a set of fresh worker processes, each started with the Python its
# cells ran with (its framework's env under --sdm conda) and serving every rounds batch its
# variant runs at; one job per architecture and set, a rounds file per batch, the sets of a row
# spread over the sweep by their priorities (fwbench.plan.sweep.Plan.order). A timing job: it
# holds the timing slot and lock throughout. Its inputs are the variants' process-0 cells
# (their compile caches warm the workers): an upgraded framework's new cells rerun the row's
# sets, and nothing else does. A shell job for the reason the bench rule is one
# (workarounds.smk). No rule where no batch is measured in rounds (rounds.batches: []).

if PLAN.rounds_batches:

    rule rounds:
        input:
            cells=rounds_cells,
        output:
            expand(paths.ROUNDS, batch=PLAN.rounds_batches, allow_missing=True),
        log:
            paths.ROUNDS_LOG,
        priority: rounds_priority
        conda:
            conda_env("analysis")
        threads: SYSTEM_THREADS
        resources:
            **SYSTEM_RESOURCES,
            timing_slot=1,
        params:
            variants=rounds_variants,
            rounds=config["rounds"]["rounds"],
            seed=config["rounds"]["order_seed"],
            batches=",".join(str(batch) for batch in PLAN.rounds_batches),
        shell:
            ROUNDS_COMMAND
