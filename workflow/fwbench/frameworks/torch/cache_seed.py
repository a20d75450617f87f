"""What inductor probes of the host in an empty cache directory, done once into one
(fwbench.measure.compile_cache seeds every cell's cold cache from it).

    python -m fwbench.frameworks.torch.cache_seed   (TORCHINDUCTOR_CACHE_DIR set)

Inductor picks the CPU's vector ISA (`cpu_vec_isa.pick_vec_isa`) by building and loading a C++
test program per candidate ISA into its cache directory, the first time it compiles or loads
an AOTInductor package there: 8–11 s on the 2-core VMs, in a cache directory that a user's
machine keeps (/tmp/torchinductor_<user>) and a cell's fresh one does not. Prints the ISA
picked and the seconds the probe took, as JSON.
"""

from __future__ import annotations

import json
import time


def main() -> None:
    from torch._inductor import cpu_vec_isa

    start = time.perf_counter()
    isa = cpu_vec_isa.pick_vec_isa()
    print(json.dumps({"isa": str(isa), "probe_s": time.perf_counter() - start}))


if __name__ == "__main__":
    main()
