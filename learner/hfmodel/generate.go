package hfmodel

import (
	"github.com/t2t-lab/t2t/learner"
)

// GenerateShape returns the padded shapes a Generate (or GenerateStream) call of n prompts, the
// longest promptLen tokens, with maxNewTokens new tokens runs on: the batch b is n rounded up to
// a power of two, prompts are left-padded to p = learner.PadLen(promptLen) tokens (8, 16, 32,
// then a multiple of 32 up to 512, then less than 12.5 % padding), and the KV cache holds
// s = learner.PadLen(p + maxNewTokens) positions. Each (b, p, s) compiles one prefill graph and
// each (b, s) one decode graph.
func GenerateShape(n, promptLen, maxNewTokens int) (b, p, s int) {
	p = learner.PadLen(promptLen)
	return learner.PadRows(n), p, learner.PadLen(p + maxNewTokens)
}
