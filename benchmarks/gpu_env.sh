#!/usr/bin/env bash
# What a bare GPU machine (NVIDIA driver, Python, numpy and PyTorch, no network) lacks to run
# the benchmarks here through Vulkan: the Vulkan loader and wgpu-py with the pure-Python pieces
# wgslgen imports. Fetched here, carried there as two folders, installed there.
#
#   benchmarks/gpu_env.sh fetch             # here, with a network: fills .gl/ and .whl/
#   source benchmarks/gpu_env.sh install    # there, from the repository root
#
# fetch: the Debian packages of the Vulkan loader (libvulkan1; libglvnd and friends, which
#   wgpu-native's library links) into .gl/, and wheels for the GPU machine's Python into .whl/,
#   at the versions this checkout's .venv runs (so what was tested here is what runs there;
#   the rest at their latest).
#   GPU_PYTHON (3.12) is that Python's version.
# install: unpacks .gl/ into GPU_ENV_ROOT (/: then ldconfig; another folder: LD_LIBRARY_PATH
#   points there, no root needed), installs .whl/ into GPU_ENV_SITE (/tmp/site), and exports
#   PYTHONPATH (the site and this checkout) and VK_DRIVER_FILES (the NVIDIA ICD where the
#   driver put it, unless already set). Sourced, so that the exports stay.

WHEELS=(wgpu cffi pycparser rendercanvas sniffio pydantic pydantic_core annotated_types
        typing_inspection typing_extensions argcomplete vulkan)
DEBS=(libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
ICDS=(/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json
      /etc/vulkan/icd.d/nvidia_icd.json)

_gpu_env_fetch() {
    local venv=.venv/bin/python tmp pins=() name version
    [ -x "$venv" ] || { echo "gpu_env: no $venv here: run ./scripts/setup.sh first" >&2; return 1; }
    for name in "${WHEELS[@]}"; do
        # Pinned to the version here; one this Python does not need (sniffio) at its latest.
        if version=$("$venv" -c "import importlib.metadata as m; print(m.version('$name'))" \
                2> /dev/null); then
            pins+=("$name==$version")
        else
            pins+=("$name")
        fi
    done
    tmp=$(mktemp -d) || return 1
    local apt=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$tmp")
    mkdir -p .gl .whl &&
        apt-get "${apt[@]}" update -qq &&
        (cd .gl && apt-get "${apt[@]}" download "${DEBS[@]}") &&
        "$venv" -m pip download -q --no-deps --only-binary=:all: --dest .whl \
            --python-version "${GPU_PYTHON:-3.12}" --implementation cp \
            --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 "${pins[@]}"
    local rc=$?
    rm -rf "$tmp"
    [ $rc -eq 0 ] && echo "gpu_env: .gl/ $(ls .gl | wc -l) packages, .whl/ $(ls .whl | wc -l) wheels"
    return $rc
}

_gpu_env_install() {
    local root=${GPU_ENV_ROOT:-/} site=${GPU_ENV_SITE:-/tmp/site} deb icd
    ls .gl/*.deb .whl/*.whl > /dev/null 2>&1 ||
        { echo "gpu_env: .gl/*.deb or .whl/*.whl missing: run 'gpu_env.sh fetch' and carry both" >&2
          return 1; }
    mkdir -p "$root" && for deb in .gl/*.deb; do dpkg -x "$deb" "$root" || return 1; done
    if [ "$root" = / ]; then
        ldconfig
    else
        export LD_LIBRARY_PATH=$root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    fi
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$site" .whl/*.whl || return 1
    export PYTHONPATH=$site:$PWD${PYTHONPATH:+:$PYTHONPATH}
    if [ -z "${VK_DRIVER_FILES:-}" ]; then
        for icd in "${ICDS[@]}"; do [ -f "$icd" ] && { export VK_DRIVER_FILES=$icd; break; }; done
    fi
    echo "gpu_env: PYTHONPATH=$PYTHONPATH VK_DRIVER_FILES=${VK_DRIVER_FILES:-(none found)}"
}

case ${1:-} in
fetch) _gpu_env_fetch ;;
install)
    if [ "${BASH_SOURCE[0]}" = "$0" ]; then
        echo "gpu_env: install exports variables: source it (source $0 install)" >&2; false
    else _gpu_env_install; fi ;;
*) echo "usage: benchmarks/gpu_env.sh fetch | source benchmarks/gpu_env.sh install" >&2; false ;;
esac
