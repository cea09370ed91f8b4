package train

import (
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/engineer"
)

func TestFallbackLineNamesRejectionsAndLastReason(t *testing.T) {
	prop := engineer.Proposal{Rationale: "kept the previous config: no feasible proposal", Fallback: true, Attempts: []engineer.Attempt{
		{Reason: "size 9 not allowed"}, {Reason: "hole ratio 0.9 over\nthe cap"}, {Reason: "dry run: 0 solvable"}, {Reason: "answer is not JSON"},
	}}
	got := fallbackLine("llm", 3, "abc123", prop)
	want := "  engineer (llm) → stage 3 keeps config abc123: fell back after 4 rejected attempt(s); last: answer is not JSON"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	prop.Attempts = nil
	if got := fallbackLine("llm", 2, "h", prop); !strings.HasSuffix(got, "after 0 rejected attempt(s); last: kept the previous config: no feasible proposal") || strings.Contains(got, "\n") {
		t.Fatalf("no attempts: %q", got)
	}
}
