#!/usr/bin/env bash
# The README's test command: set up everything the tests need on a fresh machine with only
# Python 3.11 and the package registries, then run pytest (arguments go to pytest).
#   - Debian packages (apt): wordnet-base (meteor reads WordNet 3.0 from it) and chromium
#     (the HTML report test drives it with playwright; no browser download). Installed when
#     missing, as root or through sudo; non-interactive, so CI (root, no stdin) needs nothing.
#   - a virtual environment in .venv with the package and its test extras (PyPI).
#   - llama.cpp's llama-server, a real judge for tests/judge/test_real_server.py: built once
#     per machine (~4 min on 2 cores; g++ and cmake from apt when missing) from the sdist of
#     llama-cpp-python, with its two models, into ~/.cache/checkllm-batch (tests/fixtures/realserver/).
# CHECKLLM_REQUIRE_BROWSER=1 makes the browser test fail, not skip, if chromium is missing;
# CHECKLLM_REQUIRE_JUDGE_SERVER=1 the same for the real-server tests and llama-server.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
if [ ! -f /usr/share/wordnet/index.noun ] && [ -z "${WORDNET_DIR:-}${WNHOME:-}" ]; then
    missing+=(wordnet-base)
fi
command -v chromium >/dev/null || missing+=(chromium)
command -v c++ >/dev/null || missing+=(g++)
command -v cmake >/dev/null || missing+=(cmake)
if [ ${#missing[@]} -gt 0 ]; then
    echo "tests/run.sh: installing ${missing[*]} with apt-get" >&2
    sudo=()
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null || {
            echo "tests/run.sh: need root or sudo to apt-get install ${missing[*]}" >&2; exit 2; }
        sudo=(sudo)
    fi
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
export CHECKLLM_REQUIRE_BROWSER=1 CHECKLLM_REQUIRE_JUDGE_SERVER=1

# llama-server builds (CPU, minutes, once per machine) while pip installs (network)
python3 tests/fixtures/realserver/prepare.py --stdlib >/dev/null &
building=$!
trap 'kill "$building" 2>/dev/null || true' EXIT
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'
wait "$building"
trap - EXIT
.venv/bin/python tests/fixtures/realserver/prepare.py >/dev/null
# one pytest-xdist worker per core (tests of one Ray cluster or one llama-server share a
# worker: their modules' xdist_group); `tests/run.sh -n 0` runs them in this process
exec .venv/bin/python -m pytest -n auto --dist loadgroup "$@"
