package serve_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/t2t-lab/t2t/internal/sysmem"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/serve"
)

// BenchmarkChatCompletion: one request (n = 2, 16 tokens) over HTTP to the tiny model.
func BenchmarkChatCompletion(b *testing.B) {
	lm := srvCheckpoint(b, 1)
	_, _, c := srvStart(b, lm, serve.Options{})
	p := srvChatParams("tiny", 1)
	p.MaxTokens = openai.Int(16)
	ctx := context.Background()
	for b.Loop() {
		if _, err := c.Chat.Completions.New(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}

var genMem = flag.String("genmem", "16,8000", "BenchmarkGenerateMemoryEstimate: rows,max_tokens")

// BenchmarkGenerateMemoryEstimate compares qwen3.Config.GenerateMemory with the growth of this
// process's peak RSS over one generation on the tiny model (rows of a 5-token prompt, -genmem
// rows,max_tokens; every row ends after 4 tokens: the buffers are allocated at the start).
// Run it alone, once, in a fresh process (-benchtime 1x): the peak is the process's.
func BenchmarkGenerateMemoryEstimate(b *testing.B) {
	var n, m int
	if _, err := fmt.Sscanf(*genMem, "%d,%d", &n, &m); err != nil || n < 1 || m < 1 {
		b.Fatalf("-genmem %q: want rows,max_tokens", *genMem)
	}
	lm := srvCheckpoint(b, 1)
	prompts := make([][]int32, n)
	for i := range prompts {
		prompts[i] = []int32{5, 6, 7, 8, 9}
	}
	before := sysmem.PeakRSS()
	for b.Loop() {
		_, err := lm.GenerateStream(prompts, engine.SampleConfig{MaxNewTokens: m, Temperature: 1}, 0, rand.New(rand.NewPCG(1, 2)),
			func(ev engine.TokenEvent) bool { return ev.Step >= 3 })
		if err != nil {
			b.Fatal(err)
		}
	}
	grew := float64(sysmem.PeakRSS() - before)
	est := float64(lm.Model.Config().GenerateMemory(n, 5, m))
	b.ReportMetric(grew/1e6, "peak-MB")
	b.ReportMetric(est/1e6, "estimate-MB")
	b.ReportMetric(grew/est, "peak/estimate")
}
