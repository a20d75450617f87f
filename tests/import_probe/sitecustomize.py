"""Loaded at start-up by every Python process a fast-layer test starts (tests/conftest.py
puts this folder on PYTHONPATH and names a file in FWBENCH_FRAMEWORK_IMPORT_LOG): each
framework such a process imports is written to that file, and the test fails naming it. So
the fast layer's promise, no framework imported, holds in subprocesses too."""

import importlib.util
import os
import sys
from pathlib import Path


def _framework_imports() -> dict[str, str]:
    """tests/layers.py's FRAMEWORK_IMPORTS, read without putting tests/ on sys.path."""
    spec = importlib.util.spec_from_file_location(
        "_fwbench_layers", Path(__file__).parents[1] / "layers.py"
    )
    layers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(layers)
    return layers.FRAMEWORK_IMPORTS


class _FrameworkImportProbe:
    """A meta path finder that finds nothing: it notes a framework's first import."""

    def __init__(self, log: str) -> None:
        self.log, self.frameworks = log, _framework_imports()

    def find_spec(self, name, path=None, target=None):
        if name in self.frameworks:
            with open(self.log, "a") as log:
                log.write(f"{self.frameworks[name]}\t{' '.join(sys.argv)[:300]}\n")
        return None


if os.environ.get("FWBENCH_FRAMEWORK_IMPORT_LOG"):
    sys.meta_path.insert(0, _FrameworkImportProbe(os.environ["FWBENCH_FRAMEWORK_IMPORT_LOG"]))
