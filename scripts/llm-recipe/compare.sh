#!/bin/sh
# Issue #13, target 3: with the LLM policy, `learnability` and `self` each against `fixed`,
# 3 seeds, GRPO from the SFT checkpoint on 2-agent 3x3..5x5 stages, evaluated after every stage on
# the validation set (2 agents, sizes 3..10) and the 3/4/5-agent benchmark suites.
# Resumable across sessions: rerun the same command; finished runs (one per arm and seed) are
# reused from OUT/runs, so each invocation only adds the runs still missing.
#   MODEL=DIR  the SFT checkpoint (t2t sft --prompt compact ...; README "An LLM that learns here")
#   OUT=DIR    the report and run files
set -eu
: "${MODEL:?set MODEL to the SFT checkpoint}" "${OUT:?set OUT}"
T2T=${T2T:-t2t}
CFG=$(dirname "$0")/../../configs/two-agents-3to5.json
exec $T2T experiment --policy qwen3 --model "$MODEL" --engine torch --threads 1 --prompt compact \
	--max-new-tokens 48 --config "$CFG" --strategies fixed,learnability,self --baseline fixed \
	--seeds 3 --stages 4 --group 8 --instances-per-unit 8 --learner-batch 8 --lr 1e-4 --rollouts 1 \
	--val-per-size 8 --eval-per-size 2 --engineer-max-tokens 512 --out "$OUT"
