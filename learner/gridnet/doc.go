// Package gridnet is the step-wise CPU policy: an MLP shared by all agents, from one agent's
// egocentric observation vector to the 5 moves WAIT/UP/DOWN/LEFT/RIGHT (ids 0..4), with a
// legal-move mask, trained on GoMLX through learner/gomlxtrain.
//
// Net.Act samples a batch of decisions in Go from the logits (executables are cached per
// power-of-two batch size); Net.Update runs a GRPO step where every decision is one position
// (T=1); Net.BCUpdate clones moves of optimal plans. Play plays instances into a Rollout;
// BatchFromRollouts and BatchFromGroups (which replays episodes from their action ids alone)
// build the GRPO batch. Net's methods serialise on a mutex.
package gridnet
