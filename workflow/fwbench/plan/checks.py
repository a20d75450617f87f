"""The config checks the schema cannot express, each naming the bad key and value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fwbench import frameworks
from fwbench.model.specs import build_spec

# Keys of the train section that moved to `systems` (where every timing job runs).
MOVED_TRAIN_KEYS = ("gpu_model", "gpus", "slurm_partition")
# Levels that became one: every verdict uses stats.confidence and stats.min_effect_pct.
MERGED_LEVELS = {
    ("stats", "alpha"): "every verdict and its CI use stats.confidence (alpha = 1 − confidence)",
    ("compare", "threshold_pct"): "a version change counts from stats.min_effect_pct",
}


def refuse_moved_keys(config: Mapping[str, Any]) -> None:
    """Before schema validation: keys of an older config, named with where they went."""
    moved = sorted(set(MOVED_TRAIN_KEYS) & set(config.get("train") or {}))
    if moved:
        raise ValueError(
            f"train.{', train.'.join(moved)}: where jobs run is now a system's setting "
            "(systems.<name>.slurm: partition, gpus, gpu_model); see config/systems.yaml"
        )
    for (section, key), instead in MERGED_LEVELS.items():
        if key in (config.get(section) or {}):
            raise ValueError(f"{section}.{key} is gone: {instead}; remove it from the config")


def compile_options_key(framework: str) -> str:
    """The config section of a framework's compile options per compiled mode."""
    return f"{framework}_compile"


def check_config(config: Mapping[str, Any]) -> None:
    """After schema validation: every architecture's dims build, and every compiled variant
    has its compiler options (and every options entry a compiled mode that uses it)."""
    for arch in config["architectures"]:
        try:
            build_spec(arch, config["dims"][arch])
        except (TypeError, ValueError) as error:
            raise ValueError(f"config dims.{arch}: {error}") from None
    for framework in config["frameworks"]:
        if frameworks.takes_compile_options(framework):
            _check_compile_options(config, framework)
    _check_rounds(config)


def _check_rounds(config: Mapping[str, Any]) -> None:
    """Every rounds batch and architecture is a swept one."""
    for key, swept_key in (("batches", "batch_sizes"), ("architectures", "architectures")):
        chosen, swept = config["rounds"][key], config[swept_key]
        unknown = [] if isinstance(chosen, str) else [v for v in chosen if v not in swept]
        if unknown:
            raise ValueError(f"rounds.{key} names {unknown}, not in {swept_key} {swept}")


def _check_compile_options(config: Mapping[str, Any], framework: str) -> None:
    key = compile_options_key(framework)
    options, modes = config.get(key) or {}, config["modes"].get(framework, [])
    for mode in modes:
        if frameworks.is_compiled_variant(framework, mode) and mode not in options:
            raise ValueError(
                f"modes.{framework} names {mode!r} but {key} has no {mode!r} entry: a compiled "
                "variant needs its compile options"
            )
    for mode in options:
        if not frameworks.mode_takes_compile_options(framework, mode):
            raise ValueError(
                f"{key}.{mode}: only compiled modes take options (compiled, compiled_<name>)"
            )
        if mode not in modes:
            raise ValueError(f"{key}.{mode} names a mode that modes.{framework} does not list")
