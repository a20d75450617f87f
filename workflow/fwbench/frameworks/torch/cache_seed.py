"""What inductor makes of the host, not of a model, the first time it compiles, done once
(fwbench.measure.compile_cache seeds every cell's cold cache from it).

    python -m fwbench.frameworks.torch.cache_seed   (TORCHINDUCTOR_CACHE_DIR set)

Two things, each paid once on a user's machine, whose cache directories persist, and by every
fresh cache directory otherwise:
- the CPU's vector ISA (`cpu_vec_isa.pick_vec_isa`): a C++ test program built and loaded per
  candidate ISA, into the cache directory (9.6–10.2 s on the 2-core Xeon VM);
- the precompiled header of inductor's C++ kernels, which inductor keeps beside its default
  cache directory (`<temp dir>/torchinductor_<user>/precompiled_headers`, global by its design)
  and names in every kernel's compile command, so in every kernel's cache key: made here by
  compiling one small function (about 7 s).
Prints the ISA picked and each part's seconds, as JSON.
"""

from __future__ import annotations

import json
import time


def main() -> None:
    import torch
    from torch._inductor import cpu_vec_isa

    start = time.perf_counter()
    isa = cpu_vec_isa.pick_vec_isa()
    probed = time.perf_counter()
    with torch.inference_mode():
        torch.compile(lambda x: (x * 2).relu())(torch.ones(64, 64))
    done = {"isa": str(isa), "probe_s": probed - start, "header_s": time.perf_counter() - probed}
    print(json.dumps(done))


if __name__ == "__main__":
    main()
