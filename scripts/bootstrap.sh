#!/usr/bin/env bash
# Creates or updates the project's virtual environment (.venv) and prepares the offline models.
# Idempotent: a second run with unchanged pyproject.toml / constraints.txt only re-checks the models.
# The first run compiles llama.cpp (llama-cpp-python is source-only on PyPI): about 8 minutes on 2 cores;
# later runs on the same machine install from uv's cache in seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null || PYTHON=python3

if [ ! -x "$VENV/bin/python" ]; then
    echo "[bootstrap] creating $VENV with $($PYTHON --version)"
    "$PYTHON" -m venv "$VENV"
fi

# uv installs the ~280 packages from its cache in seconds (pip takes over two minutes). It never builds
# llama-cpp-python (source-only on PyPI): that wheel is built once by pip into $wheels. Without uv on the registry
# the same install runs through pip. Files are hard-linked from uv's cache (uv's default; copying them takes 15 s
# more), except llama-index-core's: it ships NLTK's data, and NLTK refuses to read a file with more than one link.
llama_cpp=$(grep -o -m1 'llama-cpp-python==[0-9.]*' pyproject.toml)
# llama.cpp builds for the machine's CPU (-march=native), which on a CPU with AMX (Intel Sapphire Rapids and later)
# compiles its AMX kernels, and those crash the first generation with a segmentation fault
# (ggml-org/llama.cpp#20824, seen here): on such a CPU, name the same instruction sets but AMX.
llama_cpp_cmake_args() {
    local flags
    flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null) "
    [[ "$flags" == *" amx_int8 "* ]] || return 0
    printf '%s' "-DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
    local feature option
    for feature in avx_vnni:AVX_VNNI avx512f:AVX512 avx512vbmi:AVX512_VBMI avx512_vnni:AVX512_VNNI avx512_bf16:AVX512_BF16; do
        option=${feature#*:}
        [[ "$flags" == *" ${feature%%:*} "* ]] && printf ' %s' "-DGGML_$option=ON"
    done
    printf ' %s' "-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
}
export CMAKE_ARGS="${CMAKE_ARGS:-$(llama_cpp_cmake_args)}"
# one folder per build configuration, so that a wheel built with other flags is never taken
wheels="${XDG_CACHE_HOME:-$HOME/.cache}/llama-index-kgplus/wheels/$(printf '%s' "$CMAKE_ARGS" | sha256sum | cut -c1-12)"
build_llama_cpp_wheel() {
    ls "$wheels"/llama_cpp_python-*.whl >/dev/null 2>&1 && return 0
    # --no-cache-dir: pip's own wheel cache does not know the build flags
    "$VENV/bin/python" -m pip wheel -q --no-cache-dir --no-deps -c constraints.txt -w "$wheels" "$llama_cpp"
}
install_with_uv() {
    "$VENV/bin/python" -m pip install -q uv || return 1
    build_llama_cpp_wheel || return 1
    mapfile -t pip_options < <("$VENV/bin/python" scripts/uv_args_from_pip.py)
    "$VENV/bin/uv" pip install -q --python "$VENV/bin/python" "${pip_options[@]}" --find-links "$wheels" \
        --index-strategy unsafe-best-match --link-mode hardlink --only-binary llama-cpp-python \
        --reinstall-package llama-cpp-python -c constraints.txt "$@" || return 1
    local core
    core=$("$VENV/bin/uv" pip show --python "$VENV/bin/python" llama-index-core | sed -n 's/^Version: //p')
    "$VENV/bin/uv" pip install -q --python "$VENV/bin/python" "${pip_options[@]}" --link-mode copy --no-deps \
        --reinstall-package llama-index-core "llama-index-core==$core"
}
install_with_pip() {
    "$VENV/bin/python" -m pip install -q --upgrade pip wheel
    "$VENV/bin/python" -m pip install -q -c constraints.txt torch==2.13.0
    build_llama_cpp_wheel
    "$VENV/bin/python" -m pip install -q --find-links "$wheels" -c constraints.txt "$@"
    "$VENV/bin/python" -m pip install -q --force-reinstall --no-deps "$wheels"/llama_cpp_python-*.whl
}

stamp="$VENV/.kgplus-installed"
want=$( (cat pyproject.toml constraints.txt; echo "$CMAKE_ARGS") | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    # dev = every extra: both local LLMs (local, local-small) and the sentence-transformers path (sbert), whose torch
    # must be the CPU build pinned in constraints.txt (PyPI's plain torch is the multi-GB CUDA build)
    echo "[bootstrap] installing llama-index-kgplus[dev]; the first run on a machine compiles llama.cpp (~8 min)"
    install_with_uv torch==2.13.0 -e ".[dev]" || install_with_pip -e ".[dev]"
    echo "$want" > "$stamp"
fi

# The workbench's browser test drives Debian's Chromium with its chromedriver: install them when missing and this
# is a root shell with apt-get (otherwise that test is skipped with the reason).
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "[bootstrap] installing chromium and chromium-driver (Debian) for the browser test"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null \
            || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null; } \
            || echo "[bootstrap] could not install chromium: the browser test will be skipped"
    else
        echo "[bootstrap] no /usr/bin/chromium (needs root and apt-get to install): the browser test will be skipped"
    fi
fi

# Join the GGUF chunks of both local LLMs once into $KGPLUS_HOME/models; every run re-checks their published sha256.
"$VENV/bin/kgplus" models prepare --all
