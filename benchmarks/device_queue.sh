#!/usr/bin/env bash
# The GPU measurements waiting for a device call, as one queue, so that whichever GPU comes
# does all the queued work it can in one call, and a session adds a job instead of writing a
# whole call script.
#
#   benchmarks/device_queue.sh list       # here: the jobs, in order, with what they need
#   benchmarks/device_queue.sh prepare    # here: each job's `prepare:` line (e.g. run.sh prepare)
#   bash benchmarks/device_queue.sh run   # there, from a device call carrying .gl .whl .spv
#   benchmarks/device_queue.sh collect FILES_AT DEST   # here, after the call (below)
#
# A job is benchmarks/queue/NAME.sh (run in name order), a bash script run from the repository
# root with JOB_OUT (its own empty folder for results) and GPU_NAME set, after
# `source benchmarks/gpu_env.sh install`. Its header says:
#   # seconds: N          the most it may take (required): it runs under `timeout N`, and only
#                         when N fits in what is left of the call
#   # needs: WORD         optional: runs only where the GPU's name contains WORD (H200, say)
#   # prepare: COMMAND    optional: what `prepare` runs here first (the SPIR-V it times, say)
#
# run: installs the GPU environment once; skips a job that needs another GPU, that does not
# fit in CALL_SECONDS (570: a device command is cut at 600 s), or that a previous call on the
# same (warm) machine finished (.queue_done/NAME, not tracked); runs the rest one by one. After
# each job it rewrites $OUT/queue.txt (job, status, seconds) and $OUT/queue.tgz (every job's
# JOB_OUT, under queue/NAME/), so a call cut short still brings back what finished.
# collect, here after each call (FILES_AT: where the call's queue.txt and queue.tgz landed;
# DEST: a new folder for this call's records, benchmarks/results/<gpu>_sNN/callN say): DEST gets
# queue.txt and, for every job that ran, NAME/ with its results; a finished job ("ok") also
# leaves the queue (its file becomes DEST/NAME/job.sh), so that the next call, which carries the
# working tree and may get a fresh machine without .queue_done/, does not run it again. A job
# that failed or timed out stays queued. A DEST that holds any of these already is refused
# before anything moves.
set -uo pipefail
CALLER=$PWD  # collect's paths are the caller's
cd "$(dirname "$0")/.."
QUEUE=${QUEUE_DIR:-benchmarks/queue}
DONE=${QUEUE_DONE:-.queue_done}

header() {  # FIELD FILE: the value of the job's `# FIELD:` line, empty if none
    sed -n "s/^# $1: *//p" "$2" | head -n 1
}

jobs() {  # the job files, in run order; fails where a job has no valid `seconds`
    local job seconds
    for job in "$QUEUE"/*.sh; do
        [ -e "$job" ] || continue
        seconds=$(header seconds "$job")
        [[ $seconds =~ ^[1-9][0-9]*$ ]] ||
            { echo "device_queue: $job: no '# seconds: N' line (N > 0)" >&2; return 2; }
        echo "$job"
    done
}

list() {
    local all job total=0
    all=$(jobs) || return 2
    [ -n "$all" ] || { echo "device_queue: $QUEUE holds no job"; return 0; }
    printf '%-32s %8s  %-8s %s\n' job seconds needs prepare
    while read -r job; do
        printf '%-32s %8s  %-8s %s\n' "$(basename "$job" .sh)" "$(header seconds "$job")" \
            "$(header needs "$job")" "$(header prepare "$job")"
        total=$((total + $(header seconds "$job")))
    done <<< "$all"
    echo "total: $total s of GPU time (one call runs at most ${CALL_SECONDS:-570} s of it)"
}

prepare() {
    local all job command rc=0
    all=$(jobs) || return 2
    while read -r job; do
        command=$(header prepare "$job")
        [ -n "$command" ] || continue
        echo "device_queue: $(basename "$job" .sh): $command"
        bash -c "$command" || { echo "device_queue: $job: prepare failed" >&2; rc=1; }
    done <<< "$all"
    return $rc
}

pack() {  # JOBS_ROOT: queue.txt and queue.tgz into $OUT, each replaced whole
    cp "$1/queue.txt" "$OUT/.queue.txt.tmp" && mv "$OUT/.queue.txt.tmp" "$OUT/queue.txt"
    tar czf "$OUT/.queue.tgz.tmp" -C "$1" queue && mv "$OUT/.queue.tgz.tmp" "$OUT/queue.tgz"
}

run() {
    local all job name seconds needs left root start status rc
    : "${OUT:?device_queue: OUT (where results go back) is not set}"
    all=$(jobs) || return 2
    start=$SECONDS
    if [ "${QUEUE_SETUP:-1}" = 1 ]; then
        # shellcheck disable=SC1091
        source benchmarks/gpu_env.sh install > /dev/null || return 1
    fi
    GPU_NAME=${GPU_NAME:-$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader |
        head -n 1)}
    export GPU_NAME
    root=$(mktemp -d) && mkdir -p "$root/queue" "$DONE" || return 1
    echo "gpu: $GPU_NAME" | tee "$root/queue.txt"
    pack "$root" || return 1
    while read -r job; do
        [ -n "$job" ] || continue
        name=$(basename "$job" .sh) seconds=$(header seconds "$job") needs=$(header needs "$job")
        left=$((${CALL_SECONDS:-570} - (SECONDS - start)))
        if [ -n "$needs" ] && [[ $GPU_NAME != *"$needs"* ]]; then
            status="skipped: needs $needs"
        elif [ -f "$DONE/$name" ]; then
            status="skipped: finished in an earlier call on this machine"
        elif [ "$seconds" -gt "$left" ]; then
            status="skipped: needs $seconds s, $left s left"
        else
            mkdir -p "$root/queue/$name"
            local began=$SECONDS
            JOB_OUT=$root/queue/$name timeout "$seconds" bash "$job" \
                > "$root/queue/$name/job.log" 2>&1
            rc=$?
            case $rc in
            0) status="ok"; touch "$DONE/$name" ;;
            124) status="timed out after $seconds s" ;;
            *) status="failed (exit $rc)" ;;
            esac
            status="$status in $((SECONDS - began)) s"
            tail -n "${QUEUE_TAIL:-15}" "$root/queue/$name/job.log"  # for the call's output
        fi
        echo "$name: $status" | tee -a "$root/queue.txt"
        pack "$root" || return 1
    done <<< "$all"
    rm -rf "$root"
}

collect() {  # FILES_AT DEST
    local from=${1:?usage: device_queue.sh collect FILES_AT DEST} dest=${2:?no DEST} tmp name status
    [[ $from = /* ]] || from=$CALLER/$from
    [[ $dest = /* ]] || dest=$CALLER/$dest
    [ -f "$from/queue.txt" ] && [ -f "$from/queue.tgz" ] ||
        { echo "device_queue: $from has no queue.txt and queue.tgz" >&2; return 2; }
    tmp=$(mktemp -d) && tar xzf "$from/queue.tgz" -C "$tmp" ||
        { echo "device_queue: $from/queue.tgz cannot be unpacked" >&2; rm -rf "$tmp"; return 1; }
    for name in queue.txt $(ls "$tmp/queue"); do
        if [ -e "$dest/$name" ]; then
            echo "device_queue: not replacing $dest/$name (a new DEST for each call)" >&2
            rm -rf "$tmp"; return 1
        fi
    done
    mkdir -p "$dest" && cp "$from/queue.txt" "$dest/queue.txt" || { rm -rf "$tmp"; return 1; }
    while IFS= read -r line; do
        name=${line%%: *} status=${line#*: }
        [ -d "$tmp/queue/$name" ] || continue  # the gpu line, and the jobs skipped
        mv "$tmp/queue/$name" "$dest/$name" || { rm -rf "$tmp"; return 1; }
        if [[ $status == ok* ]] && [ -f "$QUEUE/$name.sh" ]; then
            if git ls-files --error-unmatch "$QUEUE/$name.sh" > /dev/null 2>&1; then
                git mv "$QUEUE/$name.sh" "$dest/$name/job.sh"
            else
                mv "$QUEUE/$name.sh" "$dest/$name/job.sh"
            fi || return 1
        fi
        echo "$name ($status): $dest/$name"
    done < "$from/queue.txt"
    rm -rf "$tmp"
}

case ${1:-} in
list) list ;;
prepare) prepare ;;
run) run ;;
collect) collect "${2:-}" "${3:-}" ;;
*) echo "usage: $0 list | prepare | run | collect FILES_AT DEST (run: on the device, with OUT set)" >&2
   exit 2 ;;
esac
