#!/bin/sh
# Records the stage aggregates (engineer.History) of short real gridnet runs, the contexts that
# `t2t sft --engineer-turns` and `t2t engineer score` turn into engineer turns (issue #28).
# Four strategies (so that the configs the histories show vary) × SEEDS seeds × the stage-0
# configs of CONFIGS (default: the embedded one, sizes 3..10, as "default";
# configs/two-agents-3to5.json, the LLM recipe's, as "small"; configs/two-to-five-agents.json,
# a 2..5-agent range on sizes 3..6, as "range"), warm-started by behaviour cloning on even seeds
# (so that the valid rates vary too); each run's history is one line of OUT (JSON Lines,
# `t2t engineer propose --dump-history`'s format).
# configs/engineer-histories.jsonl was written by this script with CONFIGS="default small" (16
# runs, 80 contexts; about 2 minutes a run on a loaded 2-core machine), and
# configs/engineer-histories-range.jsonl with CONFIGS=range (8 runs, 40 contexts).
# POLICY=qwen3 MODEL=DIR records runs of an LLM policy instead (torch engine, one CPU thread,
# compact prompt, group 4; run ids hist-llm-*): the contexts a trainee's own run shows its self
# engineer, whose valid rates and bookkeeping differ from a gridnet run's.
#   REDIS=URL  a Redis database without runs of these ids (run ids hist-*), e.g. redis://127.0.0.1:6391/0
#   OUT=FILE   the JSON Lines file to write (replaced)
#   SEEDS="1 2" STAGES=5 INSTANCES=128 CONFIGS="default small range" POLICY=gridnet   the defaults
set -eu
: "${REDIS:?set REDIS}" "${OUT:?set OUT}"
T2T=${T2T:-t2t}
POLICY=${POLICY:-gridnet}
case $POLICY in
gridnet) prefix=hist ;;
qwen3) : "${MODEL:?POLICY=qwen3 needs MODEL, a checkpoint}"; prefix=hist-llm ;;
*) echo "record.sh: POLICY $POLICY: want gridnet or qwen3" >&2; exit 2 ;;
esac
SEEDS=${SEEDS:-1 2}
STAGES=${STAGES:-5}
INSTANCES=${INSTANCES:-128}
CONFIGS=${CONFIGS:-default small range}
for cfg in $CONFIGS; do
	case $cfg in
	default | small | range) ;;
	*) echo "record.sh: unknown config $cfg in CONFIGS (want default, small or range)" >&2; exit 2 ;;
	esac
done
SMALL=$(dirname "$0")/../../configs/two-agents-3to5.json
RANGE=$(dirname "$0")/../../configs/two-to-five-agents.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$OUT.part"
for cfg in $CONFIGS; do
	for strategy in random learnability rules fixed; do
		for seed in $SEEDS; do
			run="$prefix-$cfg-$strategy-$seed"
			set -- # the --config flag, quoted, in "$@"
			case $cfg in
			small) set -- --config "$SMALL" ;;
			range) set -- --config "$RANGE" ;;
			esac
			if [ "$POLICY" = qwen3 ]; then
				$T2T train --policy qwen3 --model "$MODEL" --engine torch --threads 1 --prompt compact --max-new-tokens 256 \
					--group 4 --instances-per-unit 8 --learner-batch 8 --lr 1e-4 --stages "$STAGES" --instances "$INSTANCES" \
					--val-per-size 2 --eval-per-size 1 --strategy "$strategy" --seed "$seed" "$@" \
					--redis "$REDIS" --run-id "$run" >"$tmp/train.log" 2>&1 || { cat "$tmp/train.log" >&2; exit 1; }
			else
				warm=none
				if [ $((seed % 2)) -eq 0 ]; then warm=bc; fi
				$T2T train --policy gridnet --stages "$STAGES" --instances "$INSTANCES" --val-per-size 8 --eval-per-size 1 \
					--strategy "$strategy" --warmstart "$warm" --bc-steps 20 --seed "$seed" "$@" \
					--redis "$REDIS" --run-id "$run" >"$tmp/train.log" 2>&1 || { cat "$tmp/train.log" >&2; exit 1; }
			fi
			$T2T engineer propose --run "$run" --redis "$REDIS" --total-stages "$STAGES" --strategy fixed \
				--dump-history "$tmp/h.json" >/dev/null
			jq -c . "$tmp/h.json" >>"$OUT.part"
			echo "$run: $(jq '.Stages | length' "$tmp/h.json") stages" >&2
		done
	done
done
mv "$OUT.part" "$OUT"
