#!/usr/bin/env bash
# One-step, idempotent set-up of wgslgen on Debian: system packages (lavapipe, spirv-tools,
# Node), the Python environment in .venv and the pinned npm packages. Quick when done.
set -euo pipefail
cd "$(dirname "$0")/.."

# libegl-mesa0: the OpenGL adapter wgpu falls back to without Vulkan (a test hides Vulkan).
# chromium: headless WebGPU on SwiftShader for the vendoring tests (its SwiftShader Vulkan ICD
# also serves npm `webgpu`, Dawn for Node).
apt_packages=(mesa-vulkan-drivers libegl-mesa0 spirv-tools chromium)
command -v node >/dev/null && command -v npm >/dev/null || apt_packages+=(nodejs npm)
missing=()
for pkg in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
python3 -c 'import ensurepip' 2>/dev/null || missing+=(python3-venv)
if ((${#missing[@]})); then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "setup: installing Debian packages: ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

stamp_of() { cat "$@" | sha256sum | cut -c1-16; }

py_stamp=$(stamp_of pyproject.toml setup.py scripts/setup.sh)
if [ ! -x .venv/bin/python ] || [ "$(cat .venv/.setup-stamp 2>/dev/null)" != "$py_stamp" ]; then
    echo "setup: creating the Python environment in .venv"
    python3 -m venv .venv
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e ".[dev,dawn,tune,ray]"
    echo "$py_stamp" > .venv/.setup-stamp
fi

npm_stamp=$(stamp_of package.json package-lock.json)
if [ "$(cat node_modules/.setup-stamp 2>/dev/null)" != "$npm_stamp" ]; then
    echo "setup: installing pinned npm packages (naga-wasm, webgpu, playwright-core, typescript)"
    npm ci --no-audit --no-fund --loglevel=error >/dev/null
    echo "$npm_stamp" > node_modules/.setup-stamp
fi
