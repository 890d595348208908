#!/usr/bin/env bash
# Session 36, call 2: issue 12's dq_out part on an H200; on any other GPU, device_exp.sh (the
# sg_lanes experiment) instead. Carries .gl .whl .spv.
OTHER_GPU='bash device_exp.sh' benchmarks/h200_targets.sh dq_out
