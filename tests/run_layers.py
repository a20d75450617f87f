"""Run test layers, each in a fresh pytest process, and say what each took.

    python tests/run_layers.py [SELECTION ...] [--beside SELECTION ...] [-- PYTEST_ARGS ...]

A SELECTION is a layer (tests/layers.py) or a marker expression over the layers and the
markers `quiet`, `smoke`, `slurm` ("e2e and not smoke"). The SELECTIONs run one after the
other; `--beside` SELECTIONs run one after the other in a second lane, started with the first
lane's last. Without arguments: the whole suite as `make test` runs it (PLAN): first, alone,
the tests that hold a timing against a quiet machine (`quiet`: the canary, the contention
probe, the attribution's shares); then the smoke sweep and what reads it, whose timing jobs
take one core at a time, beside every other test (the rest of the fast layer, the framework
layers, SLURM), none of which asserts a timing. Every selection runs even when another
fails; its output is printed whole when it ends. The exit status is 0 only when every
selection passed; the last lines are a table of each one's counts and wall time and one line
that counts every test.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from layers import FRAMEWORK_LAYERS, LAYERS  # noqa: E402

COUNTS = ("passed", "failed", "errors", "skipped")
# make test: (first lane, second lane); every layer once (tests/test_layers.py checks it)
PLAN = (
    ["quiet", "e2e and smoke and not quiet"],
    [f"{layer} and not quiet" for layer in ("fast", *FRAMEWORK_LAYERS)]
    + ["e2e and not smoke and not quiet"],
)
WORDS = {*LAYERS, "quiet", "smoke", "slurm", "and", "or", "not", "(", ")"}
PRINTING = threading.Lock()


def counts_of(junit: Path) -> dict[str, int]:
    """passed, failed, errors and skipped from a pytest junit XML file (a missing one: an
    error, since pytest writes it whatever its tests did)."""
    if not junit.exists():
        return dict.fromkeys(COUNTS, 0) | {"errors": 1}
    suite = ET.parse(junit).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    total, failed, errors, skipped = (
        int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")
    )
    passed = total - failed - errors - skipped
    return {"passed": passed, "failed": failed, "errors": errors, "skipped": skipped}


def unknown_words(selection: str) -> list[str]:
    """The words of a marker expression that name no layer, `slurm` or operator."""
    return [
        word
        for word in selection.replace("(", " ( ").replace(")", " ) ").split()
        if word not in WORDS
    ]


def run_layer(layer: str, extra: list[str], directory: Path) -> tuple[int, float, dict]:
    """One selection in a pytest process of its own; its output printed whole when it ends."""
    name = "-".join(layer.split())
    junit, log = directory / f"{name}.xml", directory / f"{name}.log"
    # a temporary root of its own: pytest's clean-up of old roots never meets another lane's
    own = [f"--junitxml={junit}", f"--basetemp={directory / name}-tmp"]
    command = [sys.executable, "-m", "pytest", "-m", layer, *own, *extra]
    start = time.monotonic()
    with log.open("w") as output:
        code = subprocess.run(command, stdout=output, stderr=subprocess.STDOUT).returncode
    seconds = time.monotonic() - start
    with PRINTING:
        print(f"\n=== layer {layer} ({seconds / 60:.1f} min): {' '.join(command[1:])}")
        print(log.read_text(), end="", flush=True)
    return code, seconds, counts_of(junit)


def run_lanes(first: list[str], beside: list[str], extra: list[str], directory: Path) -> dict:
    """`first` one after the other; `beside` in a second lane, started with `first`'s last."""
    results: dict[str, tuple[int, float, dict]] = {}

    def lane(layers: list[str]) -> None:
        for layer in layers:
            results[layer] = run_layer(layer, extra, directory)

    for layer in first[:-1]:
        results[layer] = run_layer(layer, extra, directory)
    second = threading.Thread(target=lane, args=(beside,))
    second.start()
    lane(first[-1:])
    second.join()
    return results


def summary(results: dict[str, tuple[int, float, dict]], wall_s: float) -> list[str]:
    lines = ["| layer | exit | passed | failed | errors | skipped | minutes |"]
    lines.append("|---|---|---|---|---|---|---|")
    for layer, (code, seconds, counts) in results.items():
        row = " | ".join(str(counts[k]) for k in COUNTS)
        lines.append(f"| {layer} | {code} | {row} | {seconds / 60:.1f} |")
    total = {k: sum(counts[k] for _, _, counts in results.values()) for k in COUNTS}
    lines.append(f"all layers: {wall_s / 60:.1f} min wall")
    failed = total["failed"] + total["errors"]
    lines.append(f"{total['passed']} passed, {failed} failed, {total['skipped']} skipped")
    return lines


def main(argv: list[str]) -> int:
    split = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("layers", nargs="*")
    parser.add_argument("--beside", nargs="*", default=[])
    args = parser.parse_args(argv[:split])
    layers, beside = (args.layers, args.beside) if args.layers else PLAN
    unknown = [word for selection in [*layers, *beside] for word in unknown_words(selection)]
    if unknown:
        print(f"unknown layer(s) {unknown}; the layers: {', '.join(LAYERS)}", file=sys.stderr)
        return 2
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fwbench-layers-") as directory:
        results = run_lanes(layers, beside, argv[split + 1 :], Path(directory))
    print("\n" + "\n".join(summary(results, time.monotonic() - start)))
    # pytest's 5 (no test collected) is a failure here: a layer that selects nothing is a bug
    return 0 if all(code == 0 for code, _, _ in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
