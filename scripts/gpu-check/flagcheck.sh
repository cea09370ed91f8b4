#!/usr/bin/env bash
# flagcheck.sh ARGS...: stands in for t2t in the GPU and recipe scripts (T2T=.../flagcheck.sh), so
# that a flag a script passes and t2t no longer has is found on the CPU, before a device session
# is spent on it. It runs nothing: it finds the subcommand ARGS name ("bench grpo", "train", ...),
# reads its flags from `$REAL_T2T SUBCOMMAND -h`, and appends one line per unknown subcommand or
# flag to $FLAGCHECK_LOG, and one "ok" line per call whose flags all exist. Exits 0 either way, so
# the script under test goes on to its next call.
#   REAL_T2T=./t2t FLAGCHECK_LOG=calls.log T2T=scripts/gpu-check/flagcheck.sh scripts/gpu-check/run.sh "$T2T"
set -u
real=${REAL_T2T:?set REAL_T2T to a t2t binary}
log=${FLAGCHECK_LOG:?set FLAGCHECK_LOG}
sub=("${1:-}")
help=$("$real" "$1" -h 2>&1)
if [ $# -ge 2 ] && [[ $2 != -* ]]; then # a two-word subcommand (model init, bench grpo, ...)?
	if h2=$("$real" "$1" "$2" -h 2>&1) && grep -q '^Usage: t2t '"$1 $2" <<< "$h2"; then
		sub=("$1" "$2")
		help=$h2
	fi
fi
if ! grep -q '^Usage: t2t '"${sub[*]}" <<< "$help"; then
	echo "unknown subcommand: t2t ${sub[*]}" >> "$log"
	exit 0
fi
flags=$(grep -oE '^\s+-[a-z0-9][a-z0-9-]*' <<< "$help" | sed -E 's/^\s+-//' | sort -u)
bad=0
for a in "$@"; do
	[[ $a =~ ^--?([a-z0-9][a-z0-9-]*)(=.*)?$ ]] || continue
	name=${BASH_REMATCH[1]}
	[ "$name" = h ] || [ "$name" = help ] && continue
	if ! grep -qxF -- "$name" <<< "$flags"; then
		echo "t2t ${sub[*]}: no flag --$name" >> "$log"
		bad=1
	fi
done
[ $bad = 0 ] && echo "ok: t2t ${sub[*]}" >> "$log"
exit 0
