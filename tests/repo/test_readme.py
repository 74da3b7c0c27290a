"""The README is run like code: its Python blocks execute on the bundled example, CI runs
its test command, and (slow, CI only) its example command works in a fresh clone. CI is
itself a fresh clone running the test command: this test does not run it again inside."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", README, re.M | re.S)


def two_commands() -> tuple[str, str]:
    """The example command and the test command, from 'The two commands'."""
    section = README.split("## The two commands", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^```sh\n(.*?)\n```", section, re.M | re.S)
    assert len(commands) == 2, commands
    return commands[0], commands[1]


def test_ci_runs_the_readme_test_command():
    lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    _, test_command = two_commands()
    assert shlex.split(lines[-1]) == shlex.split(test_command)  # the command, as written


def test_readme_test_command_is_a_script_in_the_repo():
    _, test_command = two_commands()
    script = ROOT / shlex.split(test_command)[0]
    assert script.is_file() and os.access(script, os.X_OK)


def test_readme_names_no_file_outside_the_clone():
    assert "../" not in README


@pytest.fixture()
def example_dir(tmp_path, monkeypatch):
    shutil.copytree(ROOT / "data", tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_readme_python_blocks_run(example_dir):
    """After the README's eval command, each Python block runs in order, as a reader would."""
    example, _ = two_commands()
    eval_part = example.split("&&")[-1].split()
    assert eval_part[0] == ".venv/bin/checkllm-batch"
    done = subprocess.run([str(BIN / "checkllm-batch"), *eval_part[1:], "--no-progress"],
                          capture_output=True, text=True)
    assert done.returncode == 1, done.stderr  # the example has failing cases, by design
    code = blocks("python")
    assert len(code) >= 2
    for block in code:
        exec(compile(block, "README.md", "exec"), {})  # raises on any broken line
    assert (example_dir / "archive.duckdb").exists()


def test_readme_compare_example_is_what_compare_prints(example_dir):
    """The README's compare lines are a real run's: the bundled example, then its next
    version, compared; and each interval excludes 0 exactly where it says significant."""
    shown = README.split("then `checkllm-batch compare --db results.duckdb previous last`",
                         1)[1]
    lines = re.search(r"```\n(.*?)```", shown, re.S).group(1).strip("\n").splitlines()
    cli = str(BIN / "checkllm-batch")
    for outputs in ("data/outputs.jsonl", "data/outputs_b.jsonl"):
        subprocess.run([cli, "eval", "data/suite.yaml", "--outputs", outputs, "--db",
                        "results.duckdb", "--no-progress"], capture_output=True, check=False)
    done = subprocess.run([cli, "compare", "--db", "results.duckdb", "previous", "last"],
                          capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    for line in lines:
        assert line in done.stdout.splitlines(), (line, done.stdout[:3000])
        low, high = re.search(r"\[(\S+), (\S+)\]", line).groups()
        excludes = low.startswith("+") or high.startswith("−")
        assert excludes == line.endswith(": significant")


@pytest.mark.skipif(os.environ.get("CI") != "true",
                    reason="slow: runs the README's example command in a fresh clone (CI only)")
def test_readme_example_command_in_a_fresh_clone(tmp_path):
    """The example command, as a new user types it: venv, install, eval. (The test command
    is what CI runs: test_ci_runs_the_readme_test_command.)"""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    example, _ = two_commands()
    done = subprocess.run(example, shell=True, cwd=clone, env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL)
    assert done.returncode == 1, done.stderr[-2000:]
    # what the README says it prints: pass rates, named and derived metrics with intervals
    assert "pass_rate_low" in done.stdout
    assert "derived metrics (low, high: 95 % bootstrap interval):" in done.stdout
    assert "│ f1 " in done.stdout
