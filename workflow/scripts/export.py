"""The `export` job: one artifact (fwbench.measure.export), run by the rule's shell command.

    export.py --request JSON --lock PATH --log PATH OUTPUT

--request is the rule's `request` param (the plan's ExportRequest, as JSON); OUTPUT is the
artifact's manifest, the artifact is written beside it.
"""

import argparse
import os

from fwbench.io.joblog import flush_all, job_log
from fwbench.measure.export import run_export
from fwbench.plan.request import ExportRequest

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--request", required=True, help="the export request as JSON")
parser.add_argument("--lock", required=True, help="the host's timing lock file")
parser.add_argument("--log", required=True, help="the job's log file")
parser.add_argument("output", help="the artifact manifest to write")
args = parser.parse_args()
with job_log(args.log):
    run_export(ExportRequest.from_json(args.request, lock=args.lock), args.output)
flush_all()
os._exit(0)  # as bench.py: the manifest is written; the interpreter's teardown holds nothing
