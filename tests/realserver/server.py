"""Start and stop llama.cpp's `llama-server` on a free 127.0.0.1 port, for tests and
benchmarks: chat, json_schema, logprobs, `n` and (with --embeddings) embeddings on one
server, `-np` slots decoding in parallel. Ready in well under a second."""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

READY_SECONDS = 60.0


def _die_with_parent() -> None:
    """In the child: killed when the process that started it dies (Linux), so a killed
    test run leaves no server behind."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """One llama-server process. `slots`: parallel sequences (-np); `threads`: CPU threads,
    1 by default: on 2 cores shared with the test process (and other work), 2 threads that
    spin-wait for each other took 2-25 s per 30-token reply, 1 thread 1.1-2.2 s (measured on
    a loaded machine; idle, 2 threads are ~1.5x faster)."""

    def __init__(self, binary: Path, model: Path, *, slots: int = 4, threads: int = 1,
                 context: int = 8192, extra: tuple[str, ...] = ()):
        self.binary, self.model, self.slots = binary, model, slots
        self.args = ["-t", str(threads), "-c", str(context), "-np", str(slots), "--no-webui",
                     "--embeddings", "--pooling", "mean", *extra]
        self.process: subprocess.Popen | None = None
        self.port = 0
        self.log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LlamaServer:
        for _ in range(3):  # a free port may be taken between probe and bind: try another
            self.port = free_port()
            cmd = [str(self.binary), "-m", str(self.model), "--host", "127.0.0.1",
                   "--port", str(self.port), *self.args]
            self.process = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL,
                                            preexec_fn=_die_with_parent)
            if self._wait_ready():
                return self
        raise RuntimeError(f"llama-server did not start; its log:\n{self.log_tail()}")

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + READY_SECONDS
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        return True
            except OSError:  # not listening yet, or 503 while the model loads
                pass
            time.sleep(0.05)
        self.stop()
        return False

    def log_tail(self, chars: int = 3000) -> str:
        return Path(self.log.name).read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def close(self) -> None:
        self.stop()
        self.log.close()
        os.unlink(self.log.name)
