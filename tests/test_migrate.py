"""Moving results of the layout before systems under a system: every move planned and checked
before the first, nothing overwritten."""

from __future__ import annotations

from pathlib import Path

import pytest

from fwbench.io.migrate import main, planned_moves


def old_layout(results: Path) -> None:
    for stage in ("cells/torch/2.13.0/eager/mlp", "train/jax/0.10.2/jit", "logs/bench/torch"):
        (results / stage).mkdir(parents=True)
        (results / stage / "x.nc").write_text("data")
    (results / "hardware").mkdir()
    (results / "hardware/vm-cpu.json").write_text("{}")


def test_every_framework_directory_and_the_hardware_file_move_under_the_system(tmp_path):
    results = tmp_path / "results"
    old_layout(results)
    assert main(["--system", "local", "--results", str(results)]) == 0
    assert (results / "cells/local/torch/2.13.0/eager/mlp/x.nc").read_text() == "data"
    assert (results / "train/local/jax/0.10.2/jit/x.nc").exists()
    assert (results / "logs/bench/local/torch/x.nc").exists()
    assert (results / "hardware/local.json").exists()
    assert (
        not (results / "cells/torch").exists() and not (results / "hardware/vm-cpu.json").exists()
    )


def test_a_dry_run_moves_nothing(tmp_path, capsys):
    results = tmp_path / "results"
    old_layout(results)
    assert main(["--system", "local", "--results", str(results), "-n"]) == 0
    assert "would move" in capsys.readouterr().out
    assert (results / "cells/torch").is_dir() and not (results / "cells/local").exists()


def test_an_existing_destination_stops_it_before_any_move(tmp_path, capsys):
    results = tmp_path / "results"
    old_layout(results)
    (results / "hardware/local.json").write_text("{}")
    assert main(["--system", "local", "--results", str(results)]) == 2
    assert "already there, nothing moved: " in capsys.readouterr().err
    assert (results / "cells/torch").is_dir()  # nothing moved


def test_two_old_hardware_files_need_the_users_choice(tmp_path):
    results = tmp_path / "results"
    old_layout(results)
    (results / "hardware/other-cuda.json").write_text("{}")
    with pytest.raises(ValueError, match="name the system's with --hardware"):
        planned_moves(results, "local")
    chosen = results / "hardware/other-cuda.json"
    moves = planned_moves(results, "gpu", chosen)
    assert (chosen, results / "hardware/gpu.json") in moves
