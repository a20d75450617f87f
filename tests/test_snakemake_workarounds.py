"""The Snakemake behaviours workflow/rules/workarounds.smk works around, one test each.

Each test passes while the behaviour is there; when one fails, Snakemake changed, and the
workaround named in its docstring can go (and this test with it).
"""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
from pathlib import Path

from snakemake import common
from snakemake.scheduling.job_scheduler import JobScheduler

from conftest import REPO

JOBS = 5


def _dry_run(tmp_path: Path, snakefile: str, *args: str) -> int:
    """Run `snakemake -n` on `snakefile`; return how many times its probe was called."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "Snakefile").write_text(textwrap.dedent(snakefile))
    (tmp_path / "script.py").write_text("")
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--quiet", "-c1", "-d", str(tmp_path), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    probe = tmp_path / "calls"
    return len(probe.read_text().splitlines()) if probe.exists() else 0


PROBE = f"""
def probe(wildcards):
    with open("calls", "a") as calls:
        calls.write(wildcards.i + "\\n")
    return "x"

rule all:
    input: expand("out/{{i}}.txt", i=range({JOBS}))
"""


def test_snakemake_reinspects_a_functions_signature_on_every_call(monkeypatch):
    """per_job: a signature computed once, as __signature__, spares the inspection."""
    calls = []
    real = inspect.signature
    monkeypatch.setattr(common.inspect, "signature", lambda f: calls.append(f) or real(f))

    def function(wildcards):
        return wildcards

    common.get_function_params(function)
    common.get_function_params(function)
    assert len(calls) == 2, "Snakemake caches signatures now: per_job can go"


def test_snakemake_evaluates_a_function_valued_conda_for_every_job_without_sdm_conda(tmp_path):
    """conda_env_of: outside --sdm conda rules name no env."""
    snakefile = (
        PROBE
        + """
rule one:
    output: "out/{i}.txt"
    conda: probe
    shell: "touch {output}"
"""
    )
    assert _dry_run(tmp_path, snakefile) >= JOBS, "conda functions are no longer called"


SOURCE_PROBE = """
import snakemake.jobs

_resolve = snakemake.jobs.Job._path_to_source_file


def _counted(self, path):
    with open("calls", "a") as calls:
        calls.write(str(path) + "\\n")
    return _resolve(self, path)


snakemake.jobs.Job._path_to_source_file = _counted
"""


def test_snakemake_resolves_a_script_rules_source_for_every_job_while_planning(tmp_path):
    """The bench rule is a shell job: while planning, Snakemake resolves a script rule's source
    file once per job (formatting its path, then parsing it as a URI: 3.6 s of 8.0 for a 5,000-job
    dry run here), and never for a shell rule."""
    rule = f"""
rule all:
    input: expand("out/{{i}}.txt", i=range({JOBS}))

rule one:
    output: "out/{{i}}.txt"
"""
    script = SOURCE_PROBE + rule + '    script: "script.py"\n'
    assert _dry_run(tmp_path / "script", script) >= JOBS
    shell = SOURCE_PROBE + rule + '    shell: "touch {output}"\n'
    assert _dry_run(tmp_path / "shell", shell) == 0


def test_the_rate_limiter_rearms_a_timer_after_every_round_by_default():
    """The onstart hook drops the default limiter on local runs."""
    from snakemake.cli import get_argument_parser

    default = get_argument_parser().parse_args([]).max_jobs_per_timespan
    assert (default.max_jobs, default.timespan) == (100, 1)
    assert "_schedule_reevalutation(self.job_rate_limiter.timespan)" in inspect.getsource(
        JobScheduler.schedule
    )
    assert "threading.Timer" in inspect.getsource(JobScheduler._schedule_reevalutation)


def test_every_snakemake_internal_the_workflow_touches_is_in_workarounds_smk():
    rules = REPO / "workflow" / "rules"
    for path in [*rules.glob("*.smk"), REPO / "Snakefile"]:
        text = path.read_text()
        if path.name != "workarounds.smk":
            internals = ("job_rate_limiter", "__signature__", "DeploymentMethod", "scheduler")
            for internal in internals:
                assert internal not in text, f"{path.name} uses {internal}"
