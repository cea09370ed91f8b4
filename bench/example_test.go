package bench_test

import (
	"context"
	"fmt"
	"os"

	"github.com/t2t-lab/t2t/bench"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/hfmodel"
)

// Time batched decoding of the tiny preset with random weights on the CPU and print the table
// t2t bench decode prints (timings vary, so there is no fixed output).
func ExampleRunDecode() {
	s := bench.Setup{Source: bench.Source{Preset: hfmodel.PresetTiny, Seed: 1}, Engine: engine.Spec{Device: "cpu"}}
	o := bench.DefaultDecodeOptions()
	o.Batch, o.PromptLen, o.NewTokens = 2, 8, 8
	rep, err := bench.RunDecode(context.Background(), s, o)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = rep.WriteText(os.Stdout, "t2t bench decode")
}
