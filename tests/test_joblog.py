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


def test_c_stdio_output_still_buffered_at_the_end_lands_in_the_log(tmp_path):
    log = tmp_path / "job.log"
    _run(f"""
        import ctypes
        from fwbench.io.joblog import job_log
        with job_log({str(log)!r}):
            ctypes.CDLL(None).printf(b"from C printf, still in stdio's buffer\\n")
    """)
    assert "from C printf" in log.read_text()


def test_logging_handlers_set_before_the_block_work_again_after_it(tmp_path):
    log, own = tmp_path / "job.log", tmp_path / "own.log"
    _run(f"""
        import logging
        from fwbench.io.joblog import job_log
        logging.basicConfig(filename={str(own)!r}, level=logging.INFO)
        with job_log({str(log)!r}):
            logging.info("inside")
        logging.info("after")
    """)
    assert "inside" in log.read_text() and "after" not in log.read_text()
    assert "after" in own.read_text() and "inside" not in own.read_text()
