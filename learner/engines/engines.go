// Package engines links every compute engine into a binary. Importing it for its side effect
// registers the LLM engines with engine.Open (gomlx: learner/qwen3; torch: learner/torch) and
// gridnet's network with gridnet.New (learner/gridnet/gomlxnet). Packages that reach models
// only through those two functions (textpolicy, train, experiment) import no engine, so they
// stay free of GoMLX; the program (cmd/t2t) and the tests that build models import this
// package. WriteUsable reports which engines and devices this binary can use here.
package engines

import (
	_ "github.com/t2t-lab/t2t/learner/gridnet/gomlxnet" // gridnet's network on GoMLX
	_ "github.com/t2t-lab/t2t/learner/qwen3"            // the gomlx LLM engine
	_ "github.com/t2t-lab/t2t/learner/torch"            // the torch LLM engine
)
