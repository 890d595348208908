#!/usr/bin/env bash
# `wgslgen tune` of one kernel on this machine's GPU, then `wgslgen tune --ray` (a local Ray
# instance on the same machine) into a separate database: the wall time per variant of both,
# and whether they pick the same winner per shape (or winners tied within the noise, the
# rule of tune/bench.pick_winner). For the H200 machine (issue 13); docs/fleet.md.
#   benchmarks/ray_vs_local.sh OUTDIR [extra `wgslgen tune` options...]
# Environment: PYTHON (python3), KERNEL (attention_bwd_dq_split), ADAPTER (gpu),
# WHEELHOUSE (a folder with the Ray wheel and its dependencies, installed with --no-index
# when Ray is missing: the GPU machine has no network), STEPS ("local ray compare").
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: ray_vs_local.sh OUTDIR [tune options...]}; shift
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
PY=${PYTHON:-python3}
KERNEL=${KERNEL:-attention_bwd_dq_split}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}

if ! $PY -c "import ray" 2>/dev/null; then
    if [ -n "${WHEELHOUSE:-}" ]; then
        $PY -m pip install --quiet --no-index --find-links "$WHEELHOUSE" ray \
            || { echo "cannot install Ray from $WHEELHOUSE"; exit 2; }
    else
        echo "Ray is not installed; set WHEELHOUSE to a folder with its wheel and dependencies"
        exit 2
    fi
fi
$PY -c "import ray, wgpu; print('ray', ray.__version__, ' wgpu', wgpu.__version__)"

run() {  # NAME [--ray]: one tune into its own database, JSON and wall clock kept
    local name=$1; shift
    local t0 t1
    t0=$(date +%s.%N)
    $PY -m wgslgen tune --kernel "$KERNEL" --adapter "${ADAPTER:-gpu}" "$@" --json \
        --db "$OUT/$name.jsonl" --selection "$OUT/${name}_selection.json" \
        > "$OUT/$name.json" 2> "$OUT/$name.log"
    local rc=$?
    t1=$(date +%s.%N)
    echo "$t0 $t1" > "$OUT/$name.wall"
    echo "$name: exit $rc, $($PY -c "print(round($t1 - $t0, 1))") s"
    [ $rc -le 1 ] || tail -5 "$OUT/$name.log"
}

for step in ${STEPS:-local ray compare}; do
    case $step in
    local) run local "$@";;
    ray) run ray --ray "$@";;
    compare) $PY - "$OUT" <<'EOF'
import json, sys
from pathlib import Path

out = Path(sys.argv[1])
docs = {}
for name in ("local", "ray"):
    doc = json.loads((out / f"{name}.json").read_text())
    t0, t1 = map(float, (out / f"{name}.wall").read_text().split())
    n = doc["totals"]["measured"]
    docs[name] = doc
    print(f"{name:5}: {n} variant(s) measured, wall {t1 - t0:.1f} s (command), "
          f"{doc['totals']['wall_s']:.1f} s (tune), "
          f"{(t1 - t0) / max(n, 1):.2f} s per variant")

def tied(shape, a, b):
    rows = {r["variant"]: r for r in shape["leaderboard"] if r["median_ns"]}
    if a not in rows or b not in rows:
        return False
    ma, mb = rows[a]["median_ns"], rows[b]["median_ns"]
    return abs(ma - mb) <= max(rows[a]["iqr_ns"], rows[b]["iqr_ns"], 0.02 * min(ma, mb))

local = {s["shape"]: s for s in docs["local"]["shapes"]}
ok = True
for shape in docs["ray"]["shapes"]:
    here = local[shape["shape"]]
    a, b = shape["winner"], here["winner"]
    same = a == b
    verdict = "same winner" if same else (
        "tied within the noise" if tied(shape, a, b) or tied(here, a, b) else "DIFFERENT")
    ok &= verdict != "DIFFERENT"
    print(f"{shape['shape']}: local {b}, ray {a}: {verdict}")
keys = lambda name: sorted((r["variant"], s["shape"], r["status"])
                           for s in docs[name]["shapes"] for r in s["leaderboard"])
print("same variants and statuses:", keys("local") == keys("ray"))
sys.exit(0 if ok and keys("local") == keys("ray") else 1)
EOF
    ;;
    esac
done
