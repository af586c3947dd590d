#!/usr/bin/env bash
# Builds the wheel and installs it, with no extra and then with [ladybug], into a fresh venv of each Python given
# (default: every python3.10-3.13 on PATH), then runs scripts/wheel_smoke.py in it. Needs the package index; not
# part of `make test`.  Usage: scripts/check_wheel.sh [python3.13 ...]
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
.venv/bin/python -m pip wheel -q --no-deps . -w "$work/dist"
wheel=$(ls "$work"/dist/*.whl)
pythons=("$@")
if [ ${#pythons[@]} -eq 0 ]; then
    for v in 3.10 3.11 3.12 3.13; do "python$v" -c "" 2>/dev/null && pythons+=("python$v"); done
fi
for py in "${pythons[@]}"; do
    for extra in "" "[ladybug]"; do
        echo "== $py, llama-index-kgplus$extra"
        rm -rf "$work/venv" && "$py" -m venv "$work/venv"
        "$work/venv/bin/pip" install -q "$wheel$extra"
        (cd "$work" && "$work/venv/bin/python" "$OLDPWD/scripts/wheel_smoke.py")
    done
done
