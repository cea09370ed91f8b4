#!/usr/bin/env bash
# A t2t cluster on this machine: a real redis-server and N t2t node
# processes on 127.0.0.1 -- node 1 the coordinator+learner+engineer,
# nodes 2..N rollout nodes -- each writing its spans to DIR/node-<i>.jsonl.
# When the run ends (node 1 exits), the rollout nodes are stopped and
# 't2t traces' analyses every node's spans.
#
#   deploy/local-cluster.sh N [--stages S] [--policy scripted|gridnet] [--out DIR]
#                             [--instances I] [--seed X] [-- more t2t node flags for node 1]
#
# e.g. -- --max-lag -1 to turn off dispatch paced by the learner, or
# -- --keep-late 4 to drop every group more than K = 4 versions old.
#
# Environment: T2T_BIN (a built t2t binary; default: go build into DIR),
# REDIS_SERVER (default: redis-server on PATH), T2T_CAPACITY (rollout
# actors per rollout node, default 2).
# Exit status: node 1's. Every process this script started is stopped when
# it exits, however it exits.
set -euo pipefail

usage() {
	sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

[[ $# -ge 1 ]] || usage
N=$1
shift
[[ $N =~ ^[0-9]+$ && $N -ge 1 && $N -le 64 ]] || { echo "local-cluster: N must be 1..64, not '$N'" >&2; exit 2; }
STAGES=3 POLICY=scripted OUT="" INSTANCES="" SEED=1
EXTRA=()
while [[ $# -gt 0 ]]; do
	case $1 in
	--stages) STAGES=${2:?--stages needs a value}; shift 2 ;;
	--policy) POLICY=${2:?--policy needs a value}; shift 2 ;;
	--out) OUT=${2:?--out needs a value}; shift 2 ;;
	--instances) INSTANCES=${2:?--instances needs a value}; shift 2 ;;
	--seed) SEED=${2:?--seed needs a value}; shift 2 ;;
	--) shift; EXTRA=("$@"); break ;;
	-h | --help) usage ;;
	*) echo "local-cluster: unknown argument '$1'" >&2; usage ;;
	esac
done
case $POLICY in scripted | gridnet) ;; *) echo "local-cluster: --policy scripted or gridnet, not '$POLICY'" >&2; exit 2 ;; esac
[[ $STAGES =~ ^[0-9]+$ && $STAGES -ge 1 ]] || { echo "local-cluster: --stages must be >= 1" >&2; exit 2; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z $OUT ]]; then
	OUT=$(mktemp -d "${TMPDIR:-/tmp}/t2t-cluster.XXXXXX")
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
REDIS_SERVER=${REDIS_SERVER:-redis-server}
command -v "$REDIS_SERVER" >/dev/null || { echo "local-cluster: $REDIS_SERVER not found (apt-get install redis-server)" >&2; exit 2; }

PIDS=() # every process started here and not yet reaped; stopped on exit
# forget PID: PID was reaped (its number may be reused by another process).
forget() {
	local keep=() p
	for p in "${PIDS[@]}"; do
		[[ $p == "$1" ]] || keep+=("$p")
	done
	PIDS=("${keep[@]}")
}
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# wait_for FILE PATTERN SECONDS PID: wait until FILE has a line matching
# PATTERN, failing if PID exits first or the time runs out.
wait_for() {
	local file=$1 pattern=$2 secs=$3 pid=$4 i
	for ((i = 0; i < secs * 20; i++)); do
		if grep -q -- "$pattern" "$file" 2>/dev/null; then
			return 0
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "local-cluster: process $pid exited before '$pattern' appeared in $file:" >&2
			tail -n 20 "$file" "${file%.log}.err" >&2 2>/dev/null || true
			return 1
		fi
		sleep 0.05
	done
	echo "local-cluster: no '$pattern' in $file after ${secs}s" >&2
	return 1
}

# field KEY LINE: the value of KEY=... in a "k=v k=v" line.
field() {
	local kv
	for kv in $2; do
		if [[ $kv == "$1="* ]]; then
			echo "${kv#*=}"
			return 0
		fi
	done
	return 1
}

if [[ -n ${T2T_BIN:-} ]]; then
	BIN=$T2T_BIN
else
	BIN=$OUT/t2t
	echo "local-cluster: building t2t into $BIN"
	(cd "$ROOT" && go build -o "$BIN" ./cmd/t2t)
fi

# Redis on a unix socket in DIR: nothing to collide with on a busy host.
SOCK=$OUT/redis.sock
rm -f "$SOCK"
"$REDIS_SERVER" --port 0 --unixsocket "$SOCK" --unixsocketperm 700 --save "" --appendonly no \
	--dir "$OUT" --logfile "$OUT/redis.log" &
PIDS+=($!)
REDIS_PID=$!
for ((i = 0; i < 200; i++)); do
	[[ -S $SOCK ]] && break
	kill -0 "$REDIS_PID" 2>/dev/null || { echo "local-cluster: redis-server exited:" >&2; cat "$OUT/redis.log" >&2; exit 1; }
	sleep 0.05
done
[[ -S $SOCK ]] || { echo "local-cluster: redis-server did not create $SOCK" >&2; exit 1; }
REDIS_URL="unix://$SOCK?db=0"
RUN_ID="local-$SEED-$$"

COMMON=(--gossip 127.0.0.1:0 --gossip-profile local --listen 127.0.0.1:0 --http 127.0.0.1:0 --redis "$REDIS_URL")
ROLES=coordinator,learner,engineer
[[ $N -eq 1 ]] && ROLES=coordinator,learner,engineer,rollout
RUN_FLAGS=(--policy "$POLICY" --stages "$STAGES" --seed "$SEED" --run-id "$RUN_ID")
[[ -n $INSTANCES ]] && RUN_FLAGS+=(--instances "$INSTANCES")
# gridnet is evaluated on t2t train's default validation set and benchmark
# suite, so that a cluster's rates compare with a one-process run's.
if [[ $POLICY != gridnet ]]; then
	RUN_FLAGS+=(--val-per-size 2 --eval-per-size 1)
fi

"$BIN" node --roles "$ROLES" --name node-1 "${COMMON[@]}" "${RUN_FLAGS[@]}" \
	--trace-file "$OUT/node-1.jsonl" --summary "$OUT/node-1.summary.json" "${EXTRA[@]}" \
	>"$OUT/node-1.log" 2>"$OUT/node-1.err" &
PIDS+=($!)
COORD=$!
wait_for "$OUT/node-1.log" "^t2t node: joined " 300 "$COORD"
GOSSIP=$(field gossip "$(grep -m1 '^t2t node: joined ' "$OUT/node-1.log")")
echo "local-cluster: node-1 ($ROLES) pid $COORD gossip $GOSSIP; run $RUN_ID; Redis $REDIS_URL"

ROLLOUTS=()
for ((i = 2; i <= N; i++)); do
	"$BIN" node --roles rollout --name "node-$i" --join "$GOSSIP" --capacity "${T2T_CAPACITY:-2}" "${COMMON[@]}" \
		--trace-file "$OUT/node-$i.jsonl" --summary "$OUT/node-$i.summary.json" \
		>"$OUT/node-$i.log" 2>"$OUT/node-$i.err" &
	PIDS+=($!)
	ROLLOUTS+=($!)
	echo "local-cluster: node-$i (rollout) pid $!"
done

set +e
wait "$COORD"
CODE=$?
set -e
forget "$COORD"
echo "local-cluster: node-1 exited with status $CODE"
# The progress table with each stage's learner flow, and the run's last
# lines (groups used and discarded, time dispatch waited for the learner).
grep -E '^(stage \|| +init \||[ 0-9]+ \||      flow: |flow: |WARNING: |t2t node: run )' "$OUT/node-1.log" || tail -n "$((STAGES + 4))" "$OUT/node-1.log"

# Stop the rollout nodes (SIGTERM: they leave the cluster and flush their
# spans), then Redis.
for pid in "${ROLLOUTS[@]}"; do
	kill -TERM "$pid" 2>/dev/null || true
done
for pid in "${ROLLOUTS[@]}"; do
	wait "$pid" 2>/dev/null || true
	forget "$pid"
done
kill -TERM "$REDIS_PID" 2>/dev/null || true
wait "$REDIS_PID" 2>/dev/null || true
forget "$REDIS_PID"

echo
echo "local-cluster: t2t traces $OUT/node-*.jsonl"
"$BIN" traces --svg "$OUT/timeline.svg" "$OUT"/node-*.jsonl
echo "local-cluster: logs, summaries and spans in $OUT"
exit "$CODE"
