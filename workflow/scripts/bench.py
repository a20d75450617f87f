"""The `bench` job: one cell (fwbench.measure.bench), run by the rule's shell command.

    bench.py --cell JSON --hardware PATH [--artifact MANIFEST] --lock PATH --log PATH OUTPUT

--cell is the rule's `cell` param (the plan's CellRequest of the job, as JSON); the lock
file is where timing jobs meet and the hardware file holds the speed canary's baseline: not
properties of the cell, so moving them reruns nothing. --artifact: an export mode's artifact
manifest (empty for other modes).
"""

import argparse
import os

from fwbench.io.joblog import flush_all, job_log
from fwbench.measure.bench import run_cell
from fwbench.plan.request import CellRequest

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--cell", required=True, help="the cell request as JSON")
parser.add_argument("--lock", required=True, help="the host's timing lock file")
parser.add_argument("--hardware", help="the system's hardware file (the canary's baseline)")
parser.add_argument("--artifact", default="", help="an export mode's artifact manifest")
parser.add_argument("--log", required=True, help="the job's log file")
parser.add_argument("output", help="the cell file to write")
args = parser.parse_args()
with job_log(args.log):
    request = CellRequest.from_json(
        args.cell, lock=args.lock, hardware=args.hardware, artifact=args.artifact
    )
    run_cell(request, args.output)
# The cell file is written and closed, the scratch directory removed: the interpreter's
# teardown is left out, as it holds nothing of the cell and takes TensorFlow about 1 s here
# (torch 0.4 s), once per job.
flush_all()
os._exit(0)
