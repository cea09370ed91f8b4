#!/usr/bin/env bash
# Issue 28 on a GPU: the trainee as trainer, from nothing to its figures in one device run, since on
# the 2-core CPU machines the SFT alone is ~17 hours of one core and their disks do not outlive a
# session. Not one of run.sh's default parts (it needs its own run's budget):
#   OUT=DIR ./scripts/gpu-check/trainee.sh ./t2t
# Steps, each bounded by what is left of BUDGET_S (default 660 s: a 15-minute device session less
# the machine's start) and none stopping the others:
#   1. the engineer turns (t2t engineer turns on configs/engineer-histories.jsonl,
#      configs/engineer-histories-range.jsonl, the runs on the 2..5-agent range, and
#      configs/engineer-histories-llm.jsonl, LLM-policy runs on it: about 20 % of the contexts held
#      out, by hash) and a fresh model (INIT, default the 5.1 M shape of
#      scripts/llm-recipe/trainee.sh) whose tokenizer learned the training turns too
#      (--tokenizer-turns: an engineer turn in a third of the tokens);
#   2. SFT on 2..5 agents over sizes 3..10 with the engineer turns mixed in (STEPS, default 6000,
#      batch BATCH, default 32; what is left of the budget less 360 s), evaluated greedily on EVAL
#      (default 192) held-out instances: valid % per agent count;
#   then at once, on the one GPU:
#   3. the SFT checkpoint as the engineer on the held-out contexts (engineer score: valid JSON %,
#      accepted %), the "base" figures;
#   4. GRPO from it (GRPO_STAGES, default 4, on CURRICULUM, default configs/two-to-five-agents.json:
#      2..5 agents on sizes 3..6, a stage-0 config the engineer may change) with itself as the
#      engineer (--strategy llm --engineer self --engineer-prompt compact, greedy: --engineer-temperature 0,
#      as the score is; its retries ask the same prompt again sampled at 0.6, --engineer-retry resample:
#      told its answer was rejected, the small model never mends it): the 3/4/5-agent
#      benchmark before (the run's init row) and after (its last stage), the stage proposals the
#      guardrails accepted, then the last checkpoint as the engineer ("self": does RL keep the
#      engineer skill?);
#   5. the comparison: t2t experiment, arms fixed, learnability, self, base, 3 seeds, GRPO_STAGES
#      stages of EXP_INSTANCES (default 64) instances from CURRICULUM, each (arm, seed) its own process, then the
#      report from the 12 saved runs: per arm the final 3/4/5-agent valid % and self's accepted %.
# Writes $OUT/summary.json (every figure with its target; summary.py), $OUT/trainee.log, sft.log,
# grpo.txt, score_base.json, score_self.json, experiment.tar.gz (the report) and
# sft-checkpoint.tar.gz (the SFT checkpoint): 8 files, summary first.
# PROMPT is the policy's prompt style: cells (default: its tokenizer learns the style, answers get
# 384 tokens), steps (the cells prompt answered one line per time step, every agent's cell at t:
# README "Why no 5-agent plan is valid"; its tokenizer learns the style, answers get 768 tokens),
# compact, or grid (the map one token per cell). Cells is the style whose 5 M model
# reads the holes and, trained on at a lower rate, met the 3- and 4-agent targets on the CPU
# (README "Does the model read the map?" and "The cells model, trained on"); hence also the SFT's
# cosine rate (1e-3 down to 1e-4) and GRPO_LR=1e-5 (at 1e-4 GRPO took that model down). The SFT
# evaluation runs with --map-probe: sft.log's "map probe" line says whether the model reads the holes.
# TARGET=prioritized teaches each agent's path planned against the agents before it only (README
# "Targets in the order an answer is written"; default optimal); WAIT_RATIO=W draws that share of
# the SFT's instances to need a wait (default 0.3, as before; the benchmark's subsets: 0.25..0.75).
# REWARD_PARTIAL=W gives GRPO's invalid plans partial credit (--reward-partial W: W × the share of
# agents whose path breaks no rule; README "Partial credit gives GRPO a signal"); default 0, the paper's.
# Tried on the CPU at toy scale: DEVICE=cpu STEPS=4 BATCH=2 EVAL=4 GRPO_STAGES=2 TINY=1.
set -uo pipefail
T2T=${1:-./t2t}
BUDGET_S=${BUDGET_S:-660}
DEVICE=${DEVICE:-cuda}
STEPS=${STEPS:-6000}
BATCH=${BATCH:-32}
EVAL=${EVAL:-192}
GRPO_STAGES=${GRPO_STAGES:-4}
EXP_INSTANCES=${EXP_INSTANCES:-64}
INIT=${INIT:---layers 6 --hidden 256 --heads 8 --kv-heads 4 --intermediate 768 --rope-theta 10000}
PROMPT=${PROMPT:-cells}
TARGET=${TARGET:-optimal}
WAIT_RATIO=${WAIT_RATIO:-0.3}
GRPO_LR=${GRPO_LR:-1e-5}
REWARD_PARTIAL=${REWARD_PARTIAL:-0}
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
CURRICULUM=${CURRICULUM:-$root/configs/two-to-five-agents.json}
out=${OUT:-$PWD/trainee-out}
mkdir -p "$out"
scratch=$(mktemp -d)
w=$scratch/work
mkdir -p "$w"
exec > >(tee "$out/trainee.log") 2>&1
. "$here/sched.sh" # figure, jget
trap 'python3 "$here/summary.py" "$scratch/figures.jsonl" "$out/summary.json" > /dev/null; rm -rf "$scratch"' EXIT

engine=(--engine torch --device "$DEVICE")
[ "$DEVICE" = cpu ] && engine+=(--threads 1) || engine+=(--autocast bf16)
maxnew=256 scoretokens=512 group=8 unit=8 batch=8 valper=8 evalper=2 tokprompt=()
[ "$PROMPT" = cells ] && maxnew=384 tokprompt=(--tokenizer-prompt cells)
[ "$PROMPT" = steps ] && maxnew=768 tokprompt=(--tokenizer-prompt steps)
[ "$PROMPT" = grid ] && tokprompt=(--tokenizer-prompt grid)
if [ "${TINY:-0}" = 1 ]; then # the toy scale of the CPU try: every step runs, nothing is measured
	INIT="--preset tiny" maxnew=16 scoretokens=16 group=2 unit=4 batch=2 valper=1 evalper=1 EXP_INSTANCES=8
fi

# left: seconds left of the budget, less $1 kept for the steps after this one.
left() { echo $((BUDGET_S - SECONDS - ${1:-0})); }

# agents_valid LOG N: the valid % of N-agent instances in the last evaluation line of LOG (t2t sft's
# "after:", or "before:" of a --steps 0 evaluation; "", when absent).
agents_valid() {
	python3 - "$1" "$2" <<'PY'
import re, sys
line = ""
for l in open(sys.argv[1]):
    if re.match(r"(after|before): .*valid by agents", l):
        line = l
m = re.search(r"\b%s agents (\d+)/(\d+)" % sys.argv[2], line)
print(100 * int(m.group(1)) / int(m.group(2)) if m and int(m.group(2)) else "")
PY
}

# stage_valid TABLE ROW N: the N-agent valid % of the table row ROW (init, or a stage number) of a
# t2t train output ("", when absent).
stage_valid() {
	python3 - "$1" "$2" "$3" <<'PY'
import sys
path, row, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
val = ""
for l in open(path):
    cols = [c.strip() for c in l.split("|")]
    if len(cols) > 5 and cols[0] == row:
        val = cols[n].split("/")[0].strip()  # columns: stage, train, val, 3, 4, 5 agents
print(val)
PY
}

echo "== trainee: engineer turns and a fresh model =="
cat "$root/configs/engineer-histories.jsonl" "$root/configs/engineer-histories-range.jsonl" \
	"$root/configs/engineer-histories-llm.jsonl" > "$w/histories.jsonl"
"$T2T" engineer turns --histories "$w/histories.jsonl" --out "$w/turns.jsonl" \
	--teacher learnability --prompt compact --modules F,G,H0,T || exit 1
ntrain=$(grep -sc '"held_out":false' "$w/turns.jsonl")
nheld=$(grep -sc '"held_out":true' "$w/turns.jsonl")
# shellcheck disable=SC2086 # INIT is a list of flags
"$T2T" model init $INIT "${tokprompt[@]}" --tokenizer-turns "$w/turns.jsonl" --out "$w/M" || exit 1

echo "== trainee: SFT, $STEPS steps of $BATCH on 2..5 agents, sizes 3..10 (${DEVICE}) =="
t0=$SECONDS
timeout "$(left 360)" "$T2T" sft "${engine[@]}" --model "$w/M" --out "$w/S" --prompt "$PROMPT" --agents 2,3,4,5 \
	--target "$TARGET" --wait-ratio "$WAIT_RATIO" --sizes 3-10 --steps "$STEPS" --batch "$BATCH" --lr 1e-3 --lr-schedule cosine --seed 1001 --engineer-turns "${ntrain:-0}" \
	--engineer-data "$w/turns.jsonl" --engineer-every 4 --eval "$EVAL" --eval-seed 99 --eval-before=false --map-probe \
	--max-tokens "$maxnew" --report-every 250 --save-every 500 > "$out/sft.log" 2>&1
echo "sft: exit $? after $((SECONDS - t0))s"
tail -3 "$out/sft.log"
if ! grep -q '^after:' "$out/sft.log" && [ -f "$w/S/config.json" ]; then
	echo "-- the run stopped before its evaluation: the last save, evaluated"
	timeout "$(left 300)" "$T2T" sft "${engine[@]}" --model "$w/S" --out "$w/eval-tmp" --steps 0 --eval "$EVAL" \
		--eval-seed 99 --prompt "$PROMPT" --agents 2,3,4,5 --sizes 3-10 --max-tokens "$maxnew" --map-probe >> "$out/sft.log" 2>&1
fi
sftnote="t2t sft --engine torch --device $DEVICE --prompt $PROMPT --agents 2,3,4,5 --sizes 3-10 --steps $STEPS --batch $BATCH --lr 1e-3 --lr-schedule cosine --engineer-every 4, greedy on $EVAL held-out instances (--eval-seed 99)"
figure sft_agents3_valid_pct "$(agents_valid "$out/sft.log" 3)" 15 ge % "3-agent valid after SFT: $sftnote"
figure sft_agents4_valid_pct "$(agents_valid "$out/sft.log" 4)" 5 ge % "4-agent valid after SFT"
figure sft_agents5_valid_pct "$(agents_valid "$out/sft.log" 5)" 0 gt % "5-agent valid after SFT"
[ -f "$w/S/config.json" ] && tar -czf "$out/sft-checkpoint.tar.gz" -C "$w" S

score() { # score NAME MODEL: the engineer figures of MODEL on the held-out contexts
	timeout "$(left 60)" "$T2T" engineer score "${engine[@]}" --model "$2" --contexts "$w/turns.jsonl" \
		--max-tokens "$scoretokens" --json "$out/score_$1.json" > "$scratch/score_$1.txt" 2>&1
	echo "engineer score ($1): exit $?; $(tail -1 "$scratch/score_$1.txt")"
	figure "engineer_$1_json_pct" "$(jget "$out/score_$1.json" '100 * d["json_rate"]')" 80 ge % \
		"valid JSON on the ${nheld:-0} held-out engineer contexts: t2t engineer score --model ($1) --contexts turns.jsonl"
	figure "engineer_$1_accepted_pct" "$(jget "$out/score_$1.json" '100 * d["accepted_rate"]')" 80 ge % \
		"accepted by the guardrails on the same contexts ($1)"
}
# grpo_run: GRPO from the SFT checkpoint with the policy as its own engineer, then the last
# checkpoint as the engineer (self).
grpo_run() {
	local t0=$SECONDS
	timeout "$(left 30)" "$T2T" train "${engine[@]}" --policy qwen3 --model "$w/S" --prompt "$PROMPT" \
		--max-new-tokens "$maxnew" --config "$CURRICULUM" --stages "$GRPO_STAGES" --group "$group" \
		--instances-per-unit "$unit" --learner-batch "$batch" --val-per-size "$valper" --eval-per-size "$evalper" --lr "$GRPO_LR" \
		--strategy llm --engineer self --engineer-prompt compact --engineer-modules F,G,H0,T --engineer-max-tokens "$scoretokens" --engineer-temperature 0 \
		--engineer-retry resample --reward-partial "$REWARD_PARTIAL" --checkpoint-dir "$w/grpo" --rollouts 2 --gen-slots 64 --seed 5 > "$out/grpo.txt" 2> "$scratch/grpo.err"
	echo "t2t train (GRPO, self engineer): exit $? after $((SECONDS - t0))s"
	tail -3 "$scratch/grpo.err"
	local ck
	ck=$(ls -d "$w"/grpo/stage-* 2> /dev/null | tail -1)
	[ "${FLAGCHECK:-0}" = 1 ] && ck=${ck:-$w/grpo/stage-000}
	if [ -n "$ck" ]; then
		echo "-- the last GRPO checkpoint as the engineer (self: $(basename "$ck"))"
		score self "$ck"
	fi
}

# experiment_runs: the comparison of issue 28 (arms fixed, learnability, self, base; 3 seeds;
# GRPO_STAGES stages), every (arm, seed) its own t2t experiment process on the one GPU at once (the
# runs are launch-bound, so they overlap), then one more invocation that reuses the 12 saved runs
# and writes the report.
experiment_runs() {
	local common=(--policy qwen3 --model "$w/S" "${engine[@]}" --prompt "$PROMPT" --max-new-tokens "$maxnew"
		--config "$CURRICULUM" --instances "$EXP_INSTANCES" --stages "$GRPO_STAGES" --group "$group"
		--instances-per-unit "$unit" --learner-batch "$batch" --lr "$GRPO_LR" --rollouts 1 --val-per-size "$valper"
		--eval-per-size "$evalper" --engineer-max-tokens "$scoretokens" --engineer-temperature 0 --engineer-retry resample
		--engineer-prompt compact --modules F,G,H0,T
		--baseline fixed --out "$w/exp")
	local t0=$SECONDS pids=() arm seed
	for arm in fixed learnability self base; do
		for seed in 1 2 3; do
			timeout "$(left 40)" "$T2T" experiment "${common[@]}" --strategies "$arm" --seeds 1 --seed0 "$seed" \
				> "$scratch/exp_${arm}_$seed.txt" 2>&1 &
			pids+=($!)
		done
	done
	for p in "${pids[@]}"; do wait "$p"; done
	echo "experiment: 12 runs after $((SECONDS - t0))s: $(ls "$w/exp/runs" 2> /dev/null | wc -l) saved"
	timeout "$(left 10)" "$T2T" experiment "${common[@]}" --strategies fixed,learnability,self,base --seeds 3 \
		> "$scratch/exp_report.txt" 2>&1
	echo "experiment report: exit $?"
	tail -20 "$scratch/exp_report.txt"
	[ -d "$w/exp" ] && tar -czf "$out/experiment.tar.gz" -C "$w/exp" --exclude runs . 2> /dev/null
}

# (FLAGCHECK=1: flagcheck.sh stands in for t2t and writes no checkpoint; go on to check the calls.)
if [ -f "$w/S/config.json" ] || [ "${FLAGCHECK:-0}" = 1 ]; then
	echo "== trainee: in parallel, the SFT checkpoint as the engineer (base), GRPO with itself as the engineer, and the 12 experiment runs =="
	score base "$w/S" > "$scratch/base.log" 2>&1 &
	b=$!
	grpo_run > "$scratch/grpo.log" 2>&1 &
	g=$!
	experiment_runs > "$scratch/exp.log" 2>&1 &
	e=$!
	wait $b $g $e
	cat "$scratch/base.log" "$scratch/grpo.log" "$scratch/exp.log"
	last=$((GRPO_STAGES - 1))
	figure grpo_init_agents3_valid_pct "$(stage_valid "$out/grpo.txt" init 3)" 15 ge % \
		"3-agent benchmark valid of the SFT checkpoint, before GRPO (the GRPO run's init row)"
	figure grpo_init_agents4_valid_pct "$(stage_valid "$out/grpo.txt" init 4)" 5 ge % "4-agent benchmark valid before GRPO"
	figure grpo_init_agents5_valid_pct "$(stage_valid "$out/grpo.txt" init 5)" 0 gt % "5-agent benchmark valid before GRPO"
	figure grpo_agents3_valid_pct "$(stage_valid "$out/grpo.txt" "$last" 3)" 15 ge % \
		"3-agent benchmark valid after GRPO (the run's last stage): t2t train --policy qwen3 --strategy llm --engineer self --stages $GRPO_STAGES"
	figure grpo_agents4_valid_pct "$(stage_valid "$out/grpo.txt" "$last" 4)" 5 ge % "4-agent benchmark valid after GRPO"
	figure grpo_agents5_valid_pct "$(stage_valid "$out/grpo.txt" "$last" 5)" 0 gt % "5-agent benchmark valid after GRPO"
	proposals=$(grep -c 'engineer (llm) → stage' "$out/grpo.txt")
	fell=$(grep -c 'engineer (llm) → stage.*fell back' "$out/grpo.txt")
	acc=""
	[ "$proposals" -gt 0 ] && acc=$(python3 -c "print(100 * ($proposals - $fell) / $proposals)")
	figure self_proposals_accepted_pct "$acc" 80 ge % "stage proposals of the self engineer the guardrails took in the GRPO run ($((proposals - fell)) of $proposals)"
	# The experiment's figures, from its runs.csv: per arm the mean over seeds of the final
	# 3/4/5-agent benchmark valid %, and the self arm's accepted share of its stage proposals.
	if [ -s "$w/exp/runs.csv" ]; then
		for arm in fixed learnability self base; do
			for n in 3 4 5; do
				v=$(python3 - "$w/exp/runs.csv" "$arm" "a${n}_valid_pct" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]))  # an llm arm's label names its modules: self[F,G,H0,T]
        if r["strategy"].split("[")[0] == sys.argv[2] and r.get(sys.argv[3], "") != ""]
print(sum(float(r[sys.argv[3]]) for r in rows) / len(rows) if rows else "")
PY
)
				case $n in 3) t=15 c=ge ;; 4) t=5 c=ge ;; *) t=0 c=gt ;; esac
				figure "exp_${arm}_agents${n}_valid_pct" "$v" "$t" "$c" % "experiment arm $arm: final $n-agent benchmark valid, mean of 3 seeds (runs.csv)"
			done
		done
		v=$(python3 - "$w/exp/runs.csv" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["strategy"].split("[")[0] == "self"]
p = sum(int(r["proposals"]) for r in rows)
print(100 * sum(int(r["accepted"]) for r in rows) / p if p else "")
PY
)
		figure exp_self_accepted_pct "$v" 80 ge % "experiment arm self: stage proposals the guardrails accepted, 3 seeds (runs.csv)"
	fi
fi
echo "done in ${SECONDS}s"
