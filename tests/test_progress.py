"""The progress bar: labelled with the run id, counting pass / fail / error, judge calls and
their cost; drawn on a terminal only."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest
from conftest import write_suite

from checkllm_batch.judge.runner import Stats
from checkllm_batch.progress import RunProgress

BATCHES = [  # (test statuses of a batch, postfix after it)
    ([], "pass 0 fail 0 error 0"),
    (["pass", "fail", "pass", None], "pass 2 fail 1 error 0"),
    (["error"] * 1200, "pass 2 fail 1 error 1,200"),
]


def test_counts_accumulate_over_batches():
    progress = RunProgress("r1", 10, enabled=False)
    for statuses, postfix in BATCHES:
        progress.update(pl.DataFrame({"status": statuses}, schema={"status": pl.String}),
                        len(statuses))
        assert progress.postfix() == postfix
    progress.close()


def test_judge_calls_and_cost_are_shown():
    runner = SimpleNamespace(stats=Stats(sent=12, cached=3, failed=1),
                             budget=SimpleNamespace(spent=0.01234))
    progress = RunProgress("r1", None, enabled=False, runner=runner)
    assert progress.postfix().endswith("| judge 12 sent, 3 cached, 1 failed, $0.0123")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_bar_is_drawn_on_a_terminal_with_the_run_id(tmp_path):
    suite = write_suite(tmp_path, {"defaultTest": {"assert": [{"type": "contains",
                                                                "value": "é"}]}})
    outs = tmp_path / "o.jsonl"
    outs.write_text('{"output": "é"}\n{"output": "x"}\n')
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 160, 0, 0))  # a window
    cli = str(Path(sys.executable).parent / "checkllm-batch")
    done = subprocess.run([cli, "eval", str(suite), "--outputs", str(outs), "--db",
                           str(tmp_path / "r.duckdb")], stderr=slave, stdout=subprocess.PIPE,
                          text=True, timeout=120)
    os.close(slave)
    seen = os.read(master, 1 << 20).decode("utf-8", "replace")
    os.close(master)
    run_id = done.stdout.split()[1].rstrip(":")
    assert f"run {run_id}" in seen and "cases" in seen
