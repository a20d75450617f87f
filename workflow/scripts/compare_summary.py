"""Snakemake `compare` job: one summary of every framework's comparison.
All logic lives in fwbench.analysis.compare."""

from pathlib import Path

import pandas as pd

from fwbench.analysis.compare import summary_markdown
from fwbench.io.atomic import write_text
from fwbench.io.joblog import job_log

sm = snakemake  # noqa: F821 (injected by snakemake)
with job_log(sm.log[0]):
    # results/compare/<system>/<framework>.csv: one section per system and framework
    tables = {
        f"{Path(path).parent.name}/{Path(path).stem}": pd.read_csv(path) for path in sm.input.tables
    }
    write_text(summary_markdown(tables), sm.output[0])
