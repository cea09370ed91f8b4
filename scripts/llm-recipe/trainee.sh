#!/bin/sh
# The trainee as trainer, step 1 (issue #28): supervised fine-tuning of a 5 M-parameter model on
# 2..5-agent MAPF answers over sizes 3..10 with the engineer turns mixed in (every 4th step: the
# turns of configs/engineer-histories.jsonl, engineer-histories-range.jsonl and
# engineer-histories-llm.jsonl, about 20 % held out by hash; the model's tokenizer learned the
# training ones, t2t model init --tokenizer-turns),
# torch engine on one CPU thread, in chunks that each write a checkpoint, so that the run survives
# being stopped and spreads over several sessions: rerun the same command and it goes on from the
# last save (every 50 steps). The chunks are one run of CHUNKS × CHUNK steps (t2t sft --resume: each
# goes on with the last one's AdamW state, instances and engineer turns). Each evaluates greedily on
# the same 64 held-out instances (--eval-seed 99), its lines kept in OUT/chunk-N.log; then its checkpoint
# answers the held-out engineer contexts (t2t engineer score: OUT/chunk-N.score, per context in
# OUT/chunk-N.score.json).
#   OUT=DIR      the run's folder: M (the initial model), turns.jsonl, chunk-1, chunk-2, ...
#   START=DIR    start from this checkpoint's weights and tokenizer (at step 0, a fresh AdamW; copied to
#                OUT/M) instead of a fresh `t2t model init` (optional)
#   CHUNK=N      steps per chunk (default 250); CHUNKS=N chunks in all (default 24: 6,000 steps)
#   EVAL=N       held-out instances evaluated after each chunk (default 64)
#   INIT="..."   t2t model init's shape flags (default the 5.1 M model: 6 layers, hidden 256)
#   PROMPT=S     the policy's prompt style, compact (default), cells (its tokenizer learns the style,
#                answers get 384 tokens; README "Does a prompt that spells the cells help?"), steps
#                (cells answered one line per time step; 768 tokens; README "Why no 5-agent plan is
#                valid") or grid (the map one token per cell; its tokenizer learns the style)
#   TARGET=T     the plan the answers teach, optimal (default) or prioritized (each agent against the
#                agents before it only: README "Targets in the order an answer is written")
#   WAIT_RATIO=W the share of instances drawn to need a wait (default 0.3; the benchmark's 0.25..0.75)
# A chunk stopped midway goes on from its last save (or the previous chunk's checkpoint).
set -eu
: "${OUT:?set OUT to the run folder}"
T2T=${T2T:-t2t}
CHUNK=${CHUNK:-250}
CHUNKS=${CHUNKS:-24}
EVAL=${EVAL:-64}
INIT=${INIT:---layers 6 --hidden 256 --heads 8 --kv-heads 4 --intermediate 768 --rope-theta 10000}
PROMPT=${PROMPT:-compact}
TARGET=${TARGET:-optimal}
WAIT_RATIO=${WAIT_RATIO:-0.3}
MAXTOK=256 TOKPROMPT=
[ "$PROMPT" = cells ] && MAXTOK=384 TOKPROMPT="--tokenizer-prompt cells"
[ "$PROMPT" = steps ] && MAXTOK=768 TOKPROMPT="--tokenizer-prompt steps"
[ "$PROMPT" = grid ] && TOKPROMPT="--tokenizer-prompt grid"
ROOT=$(dirname "$0")/../..
mkdir -p "$OUT"
if [ ! -f "$OUT/turns.jsonl" ]; then
	cat "$ROOT/configs/engineer-histories.jsonl" "$ROOT/configs/engineer-histories-range.jsonl" \
		"$ROOT/configs/engineer-histories-llm.jsonl" > "$OUT/histories.jsonl"
	$T2T engineer turns --histories "$OUT/histories.jsonl" --out "$OUT/turns.jsonl" \
		--teacher learnability --prompt compact --modules F,G,H0,T
fi
ntrain=$(grep -sc '"held_out":false' "$OUT/turns.jsonl" || true) # empty only under the flag check's stand-in
prev=$OUT/M
if [ -n "${START:-}" ] && [ ! -f "$OUT/M/config.json" ]; then
	# START's weights and tokenizer, without its run state (manifest, AdamW): step 0 of this run
	mkdir -p "$OUT/M.tmp"
	for f in "$START"/*; do
		case ${f##*/} in manifest.json | optimizer.safetensors) ;; *) cp -r "$f" "$OUT/M.tmp/" ;; esac
	done
	rm -rf "$OUT/M" && mv "$OUT/M.tmp" "$OUT/M"
elif [ ! -f "$OUT/M/config.json" ]; then
	# shellcheck disable=SC2086 # INIT and TOKPROMPT are lists of flags
	$T2T model init $INIT $TOKPROMPT --tokenizer-turns "$OUT/turns.jsonl" --out "$OUT/M"
fi
i=1
before=true # evaluate before the first chunk only: each later one starts where the last one's evaluation was
while [ "$i" -le "$CHUNKS" ]; do
	ck="$OUT/chunk-$i"
	if [ ! -f "$ck.done" ]; then
		from=$prev
		if [ -f "$ck/manifest.json" ]; then # a chunk stopped after a save goes on from it
			from=$ck
			before=false
		fi
		$T2T sft --engine torch --threads 1 --autocast bf16 --model "$from" --out "$ck" --resume --prompt "$PROMPT" \
			--target "$TARGET" --wait-ratio "$WAIT_RATIO" --agents 2,3,4,5 --sizes 3-10 --steps $((i * CHUNK)) --batch 16 --lr 1e-3 --seed 1001 \
			--engineer-turns "${ntrain:-0}" --engineer-data "$OUT/turns.jsonl" --engineer-every 4 \
			--eval "$EVAL" --eval-seed 99 --eval-before="$before" --max-tokens "$MAXTOK" --map-probe --report-every 25 --save-every 50 >>"$ck.log" 2>&1
		touch "$ck.done"
	fi
	if [ ! -f "$ck.score" ]; then
		# the chunk's checkpoint as the engineer on the held-out contexts (about 30 s): valid JSON %, accepted %
		$T2T engineer score --engine torch --threads 1 --model "$ck" --contexts "$OUT/turns.jsonl" --max-tokens 512 \
			--json "$ck.score.json" >"$ck.score.tmp" 2>&1 && mv "$ck.score.tmp" "$ck.score"
	fi
	echo "chunk $i ($((i * CHUNK)) steps): $(grep '^after:' "$ck.log" || echo 'no evaluation line')"
	echo "  engineer: $(grep '^valid JSON' "$ck.score" 2>/dev/null || echo 'not scored')"
	prev=$ck
	before=false
	i=$((i + 1))
done
