// Package gomlxnet is gridnet's network on GoMLX (trained through learner/gomlxtrain): Net
// implements gridnet.Model. Importing the package registers it with gridnet.New.
//
// Net.Act samples a batch of decisions in Go from the logits (executables are cached per
// power-of-two batch size); Net.Update runs a GRPO step where every decision is one position
// (T=1); Net.BCUpdate clones moves of optimal plans. Net's methods serialise on a mutex.
package gomlxnet
