package serve_test

import (
	"context"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/t2t-lab/t2t/serve"
)

// rssBytes is this process's resident set size (Linux /proc/self/statm), or 0 where unknown.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// heapBytes is the live Go heap after two collections.
func heapBytes() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestAdapterSwapsKeepMemoryFlat: 2,000 completions alternating between two loaded adapters
// keep the Go heap and the process's RSS (the gomlx engine runs in this process) within a
// bound. Each swap used to recompile and leave ~28 KiB of graph nodes behind on the tiny
// model (56 MiB over 2,000 swaps; ~120 KB per swap on a 0.6B checkpoint).
func TestAdapterSwapsKeepMemoryFlat(t *testing.T) {
	seed := srvTestSeed(t)
	lm := srvCheckpoint(t, seed)
	dirs := map[string]string{"a": srvAdapter(t, lm.Dir, seed+1), "b": srvAdapter(t, lm.Dir, seed+2)}
	_, hs, c := srvStart(t, lm, serve.Options{})
	for n, d := range dirs {
		if code, body := srvPostKey(t, hs.URL+"/v1/load_lora_adapter", "", loraBody(n, d)); code != http.StatusOK {
			t.Fatalf("load %s: %d %s", n, code, body)
		}
	}
	p := openai.ChatCompletionNewParams{Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}, MaxTokens: openai.Int(1)}
	swap := func(i int) {
		p.Model = []string{"a", "b"}[i%2]
		if _, err := c.Chat.Completions.New(context.Background(), p); err != nil {
			t.Fatalf("swap %d: %v", i, err)
		}
	}
	for i := range 100 { // warm up: both adapters attached once, graphs compiled, pools filled
		swap(i)
	}
	heap0, rss0 := heapBytes(), rssBytes()
	const swaps = 2000
	for i := range swaps {
		swap(i)
	}
	heap1, rss1 := heapBytes(), rssBytes()
	t.Logf("%d swaps: Go heap %d → %d KiB, RSS %d → %d KiB", swaps, heap0>>10, heap1>>10, rss0>>10, rss1>>10)
	if grew := heap1 - heap0; grew > 4<<20 {
		t.Errorf("the Go heap grew %d KiB over %d swaps, want under 4 MiB", grew>>10, swaps)
	}
	if grew := rss1 - rss0; rss0 > 0 && grew > 32<<20 {
		t.Errorf("RSS grew %d KiB over %d swaps, want under 32 MiB", grew>>10, swaps)
	}
}
