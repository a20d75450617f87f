"""`python -m fwbench`: the commands it lists, each one's usage, an unknown one refused, and
`diff` on two results directories that differ in one number."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fwbench.__main__ import COMMANDS, main

NAMES = ("agreement", "breakdown", "decided", "reanalyse", "diff", "variation")


def _fwbench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fwbench", *args], capture_output=True, text=True, timeout=120
    )


def test_help_lists_the_six_commands_each_with_its_summary():
    result = _fwbench("--help")
    assert result.returncode == 0, result.stderr
    assert tuple(COMMANDS) == NAMES
    for name, (_, summary) in COMMANDS.items():
        assert f"  {name:<11} {summary}\n" in result.stdout


def test_an_unknown_command_exits_non_zero_naming_it_and_the_choices():
    result = _fwbench("nosuch")
    assert result.returncode != 0
    assert "invalid choice: 'nosuch'" in result.stderr
    assert all(f"'{name}'" in result.stderr for name in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_each_commands_help_shows_its_usage_and_its_text(name, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([name, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: python -m fwbench {name} ")
    assert f"python -m fwbench {name}" in out.split("\n\n", 2)[2]  # the module text's usage line


def _results(path, ratio: str, line: str):
    (path / "summary").mkdir(parents=True)
    (path / "summary/stats.csv").write_text(
        "system,framework,mode,arch,batch,median_s,status\n"
        f"local,torch,eager,mlp,32,{ratio},ok\nlocal,jax,jit,mlp,32,0.002,ok\n"
    )
    (path / "report.md").write_text(f"# Report\n\n{line}\n\n320 cells measured.\n")
    return str(path)


def test_diff_names_the_one_number_and_the_one_column_that_differ(tmp_path, capsys):
    old = _results(tmp_path / "old", "0.0031", "torch/eager is 1.42× slower than jax/jit")
    new = _results(tmp_path / "new", "0.0033", "torch/eager is 1.57× slower than jax/jit")
    assert main(["diff", old, new]) == 0
    out = capsys.readouterr().out
    assert "stats.csv: 2 cells (old), 2 (new)" in out
    assert "2 shared columns; differing (cells): {'median_s': 1}" in out
    assert "only old: 1.42 ×1  | torch/eager is 1.42× slower than jax/jit" in out
    assert "only new: 1.57 ×1  | torch/eager is 1.57× slower than jax/jit" in out
    assert "report.md: 2 numbers (old), 2 (new); 1 printed only by old, 1 only by new" in out
