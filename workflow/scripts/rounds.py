"""The `rounds` job (fwbench.measure.rounds), run by the rule's shell command.

    rounds.py --variants JSON --batches B1,B2,... --set K --rounds R --seed N|fresh
              --lock PATH --log PATH OUTPUT...

--variants is the plan's list (fwbench.plan.rounds.RoundsPlan.rounds_variants): per variant's
worker, per batch it serves its cell's request, its artifact manifest and its process-0 cell
file (whose `python` starts the worker) and, for the A/A control's second worker,
"replica": 1. The OUTPUTs are the batches' rounds files, in --batches' order. --seed fresh
draws the set's order seed now (config rounds.order_seed); the rounds file records the seed
either way.
"""

import argparse
import json
import os

from fwbench.io.cell_file import read_cell_record
from fwbench.io.joblog import flush_all, job_log
from fwbench.measure.rounds import Variant, order_seed, python_of, run_rounds
from fwbench.plan.request import CellRequest

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--variants", required=True, help="the plan's variants as JSON")
parser.add_argument("--set", type=int, required=True, help="which set of the row's rounds")
parser.add_argument("--rounds", type=int, required=True)
parser.add_argument("--seed", type=order_seed, required=True, help='an integer or "fresh"')
parser.add_argument("--lock", required=True, help="the host's timing lock file")
parser.add_argument("--log", required=True, help="the job's log file")
parser.add_argument("--batches", required=True, help="the OUTPUTs' batches, comma-separated")
parser.add_argument("outputs", nargs="+", help="each batch's rounds file, in --batches' order")
args = parser.parse_args()
batches = [int(batch) for batch in args.batches.split(",")]
if len(batches) != len(args.outputs):
    parser.error(f"--batches names {len(batches)} batches for {len(args.outputs)} outputs")
with job_log(args.log):
    variants = [
        Variant(
            tuple(
                CellRequest.from_json(b["request"], lock=args.lock, artifact=b["artifact"])
                for b in v["batches"]
            ),
            python_of(read_cell_record(v["batches"][0]["cell"]).attrs),
            v.get("replica", 0),
        )
        for v in json.loads(args.variants)
    ]
    outputs = dict(zip(batches, args.outputs, strict=True))
    run_rounds(variants, args.set, args.rounds, args.seed, args.lock, outputs)
flush_all()
os._exit(0)
