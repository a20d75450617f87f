"""A job's log receives everything its process writes, C-level writes to fd 1 and 2 included."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True
    )


def test_python_logging_and_file_descriptor_writes_land_in_the_log(tmp_path):
    log = tmp_path / "logs" / "job.log"
    result = _run(f"""
        import logging, os, sys
        from fwbench.io.joblog import job_log
        with job_log({str(log)!r}) as handle:
            print("from print")
            logging.getLogger("fwbench.test").warning("from logging")
            os.write(2, b"from fd 2, as C++ logging writes\\n")
            os.write(1, b"from fd 1\\n")
            handle.write("from the handle\\n")
        print("after the block")
    """)
    text = log.read_text()
    for line in ("from print", "from logging", "from fd 2", "from fd 1", "from the handle"):
        assert line in text
    assert "after the block" not in text
    assert result.stdout.strip() == "after the block"  # descriptors restored


def test_the_log_is_truncated_and_holds_the_traceback_when_the_job_raises(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("an earlier run's log\n")
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from fwbench.io.joblog import job_log\n"
            f"with job_log({str(log)!r}):\n"
            "    raise RuntimeError('the job failed here')\n",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "earlier run" not in log.read_text()
    assert "RuntimeError: the job failed here" in log.read_text()
    assert "the job failed here" in result.stderr  # and Snakemake's own output shows it
