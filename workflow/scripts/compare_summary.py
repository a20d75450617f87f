"""Snakemake `compare` job: one summary of every framework's comparison."""

from pathlib import Path

import pandas as pd

from fwbench.atomic import write_text
from fwbench.compare import summary_markdown

tables = {Path(path).stem: pd.read_csv(path) for path in snakemake.input.tables}  # noqa: F821
write_text(summary_markdown(tables), snakemake.output[0])  # noqa: F821
