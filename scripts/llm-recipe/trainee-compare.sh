#!/bin/sh
# Issue #28, the comparison at CPU scale: the arms fixed, learnability, self and base, 3 seeds, 4
# stages of GRPO on the 2..5-agent curriculum (configs/two-to-five-agents.json: 128 instances a
# stage, here group 4), from a checkpoint of the trainee SFT (scripts/llm-recipe/trainee.sh or a
# cells checkpoint taught the engineer turns), on THREADS CPU threads (default 1). The self and base engineers answer greedily (--engineer-temperature 0): the 5 M model
# writes the taught answers by rote, and sampled at the default 0.6 its answers drift into MAPF
# plans (README, "The trainee as trainer"); a rejected answer is followed by the same prompt
# sampled at 0.6 (--engineer-retry resample), not by the paper's conversation, whose "your answer
# was rejected" the model was never taught to mend. Resumable: rerun the same command, and the finished
# runs (one per arm and seed) are reused from OUT/runs.
#   MODEL=DIR  the SFT checkpoint
#   OUT=DIR    the report (experiment.md, .csv, .html, .json) and the run files
#   PROMPT     the policy's prompt style, the checkpoint's (default cells; compact for
#              scripts/llm-recipe/trainee.sh's checkpoints); TOKENS its answer cap (default 384 for
#              cells, which spells every cell, 768 for steps, every agent's cell per step, else 256)
#   LR         GRPO's learning rate (default 1e-5: at 1e-4 GRPO took the cells model's benchmark
#              down, README "The cells model, trained on")
set -eu
: "${MODEL:?set MODEL to the SFT checkpoint}" "${OUT:?set OUT}"
T2T=${T2T:-t2t}
PROMPT=${PROMPT:-cells}
case $PROMPT in
cells) TOKENS=${TOKENS:-384} ;;
steps) TOKENS=${TOKENS:-768} ;;
*) TOKENS=${TOKENS:-256} ;;
esac
CFG=$(dirname "$0")/../../configs/two-to-five-agents.json
exec $T2T experiment --policy qwen3 --model "$MODEL" --engine torch --threads "${THREADS:-1}" --prompt "$PROMPT" \
	--max-new-tokens "$TOKENS" --config "$CFG" --strategies fixed,learnability,self,base --baseline fixed \
	--seeds 3 --stages 4 --group 4 --instances-per-unit 8 --learner-batch 8 --lr "${LR:-1e-5}" --rollouts 1 \
	--val-per-size 2 --eval-per-size 2 --engineer-prompt compact --modules F,G,H0,T \
	--engineer-max-tokens 512 --engineer-temperature 0 --engineer-retry resample --engineer-retry-temperature 0.6 --out "$OUT"
