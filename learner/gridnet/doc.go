// Package gridnet is the step-wise CPU policy's model-independent half: an MLP shared by all
// agents maps one agent's egocentric observation vector to the 5 moves WAIT/UP/DOWN/LEFT/RIGHT
// (ids 0..4) under a legal-move mask. This package holds what needs no tensor library: the
// configuration, the GRPO batch, Play (instances into a Rollout through any StepPolicy),
// BatchFromRollouts and BatchFromGroups (which replays episodes from their action ids alone),
// and behaviour cloning from optimal plans.
//
// The network itself is a Model built by New on the compute backend the binary links:
// learner/gridnet/gomlxnet (GoMLX) registers itself when imported, as cmd/t2t does. So the run
// loop (train) and the experiment runner use gridnet without importing GoMLX.
package gridnet
