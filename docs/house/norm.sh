#!/bin/sh
# usage: sh norm.sh FILE
# Strips what a --deterministic run may change between runs (timings, the embedded Redis port).
sed -E 's/ +[0-9.]+k? decisions\/s//; s/\| *[0-9.]+(ms|s|m[0-9.]+s)$/|/; s/done in [^;]*;/done in T;/; s/Redis redis:[^;]*;/Redis R;/; s/dispatch waited [^ ;]+/dispatch waited W/' "$1"
