"""A host probe for tests of compile_cache's seed (run as `python -m fake_cache_seed`): writes
one file into the cache directory it is given and counts its runs beside it."""

import json
import os
from pathlib import Path

if __name__ == "__main__":
    cache = Path(os.environ["TORCHINDUCTOR_CACHE_DIR"])
    cache.mkdir(parents=True)
    (cache / "isa.so").write_text("probed")
    with open(os.environ["FAKE_SEED_RUNS"], "a") as runs:
        runs.write("run\n")
    print(json.dumps({"isa": "fake", "probe_s": 0.0}))
