# Every workaround for a Snakemake behaviour, in one place. Each keeps something a user would
# feel; tests/test_snakemake_workarounds.py fails when the behaviour it works around changes,
# so it can be dropped then.
import inspect

from snakemake.settings.types import DeploymentMethod

USE_CONDA = DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method


def per_job(function):
    """A function Snakemake calls for every job, with its signature computed once: Snakemake
    re-inspects it on every call otherwise (test: ..._reinspects_a_functions_signature).
    """
    function.__signature__ = inspect.signature(function)
    return function


def per_system(value_of):
    """A job's setting taken from its system: a constant when every system agrees, as
    Snakemake calls a function once per job (a 20,000-cell plan notices)."""
    values = {value_of(system) for system in PLAN.systems.values()}
    if len(values) == 1:
        return values.pop()
    return per_job(lambda wildcards: value_of(PLAN.systems[wildcards.system]))


def conda_env_of(function):
    """A rule's env, named only under --sdm conda: Snakemake evaluates a function-valued
    `conda` for every job even when it deploys none (test: ..._evaluates_conda_per_job).
    """
    return per_job(function) if USE_CONDA else None


# Bench jobs run a shell command, not a Snakemake script; while it plans, Snakemake resolves a
# script rule's source file once per job (test: ..._resolves_a_script_rules_source_for_every_job
# _while_planning): 13 of the 31 s a 20,000-cell dry run took.
# Its Python and library come through the environment: paths in the command would rerun every
# cell of a moved checkout. A job on a cluster node parses this file again and gets them there.
os.environ.update(
    FWBENCH_PYTHON="python" if USE_CONDA else sys.executable,
    FWBENCH_LIBRARY=str(Path(workflow.basedir) / "workflow"),
    FWBENCH_TIMING_LOCK=config["timing_lock"],
)
BENCH_COMMAND = (
    'PYTHONPATH="$FWBENCH_LIBRARY${{PYTHONPATH:+:$PYTHONPATH}}" "$FWBENCH_PYTHON" '
    '"$FWBENCH_LIBRARY/scripts/bench.py" --cell {params.cell:q} --hardware {input.hardware:q} '
    '--artifact={input.artifact:q} --lock "$FWBENCH_TIMING_LOCK" --log {log:q} {output:q}'
)
# The rounds job (rounds.smk), a shell job for the same reason; its workers inherit PYTHONPATH.
ROUNDS_COMMAND = (
    'PYTHONPATH="$FWBENCH_LIBRARY${{PYTHONPATH:+:$PYTHONPATH}}" "$FWBENCH_PYTHON" '
    '"$FWBENCH_LIBRARY/scripts/rounds.py" --variants {params.variants:q} '
    "--batches {params.batches} --set {wildcards.set} --rounds {params.rounds} "
    '--seed {params.seed} --lock "$FWBENCH_TIMING_LOCK" --log {log:q} {output:q}'
)
# The export job, a shell job for the same reason.
EXPORT_COMMAND = (
    'PYTHONPATH="$FWBENCH_LIBRARY${{PYTHONPATH:+:$PYTHONPATH}}" "$FWBENCH_PYTHON" '
    '"$FWBENCH_LIBRARY/scripts/export.py" --request {params.request:q} '
    '--lock "$FWBENCH_TIMING_LOCK" --log {log:q} {output:q}'
)


def drop_default_rate_limiter(workflow):
    """Called by the Snakefile's onstart. Snakemake rate-limits job starts by default
    (--max-jobs-per-timespan 100/1s) and, to do so, re-runs job selection 1 s after every
    scheduling round; every finished job adds one more such perpetual chain (test:
    ..._rate_limiter_rearms_a_timer). Measured on 2 cores: 58 timer threads at job 60 of the
    default sweep, the main process busy 0.3 cores on the cores every cell was timing. A local
    run has no submission rate to protect: the default limiter goes (a limit set on the
    command line stays)."""
    limiter = getattr(getattr(workflow, "scheduler", None), "job_rate_limiter", None)
    if (
        workflow.local_exec
        and limiter
        and (limiter.max_jobs, limiter.timespan) == (100, 1)
    ):
        workflow.scheduler.job_rate_limiter = None
