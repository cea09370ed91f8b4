#!/bin/sh
# GRPO of an SFT checkpoint on 2-agent 3x3..5x5 instances, torch engine, as measured in the
# README ("An LLM that learns here"): 12 stages at lr 1e-4 (seed 5), then 12 more from the last
# checkpoint (seed 6), then 12 more (seed 7), then the held-out evaluation of the start and ends.
# Resumable: rerun with RESUME=--resume after an interruption (a phase with its stage-011 is done).
#   MODEL=DIR  the SFT checkpoint (t2t sft --prompt compact ...)
#   OUT=DIR    checkpoints go to OUT/ck1, OUT/ck2 and OUT/ck3
#   REDIS=URL  a real Redis that outlives the process (for --resume), e.g. redis://127.0.0.1:6399/0
#   LR=X       the learning rate of every phase (default 1e-4)
set -eu
: "${MODEL:?set MODEL to the SFT checkpoint}" "${OUT:?set OUT}" "${REDIS:?set REDIS}"
T2T=${T2T:-t2t}
LR=${LR:-1e-4}
CFG=$(dirname "$0")/../../configs/two-agents-3to5.json
run() { # $1 model, $2 seed, $3 checkpoint dir, $4 run id
	if [ -d "$3/stage-011" ]; then return; fi # finished
	$T2T train --engine torch --threads 1 --autocast bf16 --policy qwen3 --model "$1" --prompt compact \
		--max-new-tokens 48 --config "$CFG" --stages 12 --group 8 --instances-per-unit 8 --learner-batch 8 \
		--val-per-size 8 --eval-per-size 1 --lr "$LR" --strategy fixed --checkpoint-dir "$3" --rollouts 1 \
		--redis "$REDIS" --run-id "$4" --seed "$2" ${RESUME:-}
}
run "$MODEL" 5 "$OUT/ck1" grpo1
run "$OUT/ck1/stage-011" 6 "$OUT/ck2" grpo2
run "$OUT/ck2/stage-011" 7 "$OUT/ck3" grpo3
# Held-out evaluation (192 instances, greedy), before and after:
for m in "$MODEL" "$OUT/ck1/stage-011" "$OUT/ck2/stage-011" "$OUT/ck3/stage-011"; do
	$T2T sft --model "$m" --out "$OUT/eval-tmp" --steps 0 --eval 192 --eval-seed 99 --prompt compact --engine torch --threads 1 --autocast bf16 | sed -n 2p
done
