"""Snakemake `compare` job: one summary of every framework's comparison."""

from pathlib import Path

import pandas as pd

from fwbench.compare import summary_markdown
from fwbench.stats import write_text_atomic

tables = {Path(path).stem: pd.read_csv(path) for path in snakemake.input.tables}  # noqa: F821
write_text_atomic(summary_markdown(tables), snakemake.output[0])  # noqa: F821
