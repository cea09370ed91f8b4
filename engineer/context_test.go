package engineer

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/internal/testutil"
)

func TestParseModules(t *testing.T) {
	cases := []struct {
		in   string
		want Modules
		str  string
	}{
		{"", Modules{}, "none"},
		{"none", Modules{}, "none"},
		{"F", Modules{F: true}, "F"},
		{"F,G,H,T", Modules{F: true, G: true, H: true, T: true}, "F,G,H,T"},
		{"F+G+H+T", Modules{F: true, G: true, H: true, T: true}, "F,G,H,T"},
		{" f , g ,h0, t ", Modules{F: true, G: true, H: true, HistoryNoRound0: true, T: true}, "F,G,H0,T"},
		{"F+G+H-+T", Modules{F: true, G: true, H: true, HistoryNoRound0: true, T: true}, "F,G,H0,T"},
		{"S,T,F,G,H", Modules{F: true, G: true, H: true, S: true, T: true}, "F,G,H,S,T"},
	}
	for _, c := range cases {
		got, err := ParseModules(c.in)
		if err != nil {
			t.Errorf("ParseModules(%q): %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("ParseModules(%q) = %+v, want %+v", c.in, got, c.want)
		}
		if got.String() != c.str {
			t.Errorf("ParseModules(%q).String() = %q, want %q", c.in, got.String(), c.str)
		}
		back, err := ParseModules(got.String())
		if err != nil || back != got {
			t.Errorf("round trip of %q: %+v, %v", c.str, back, err)
		}
	}
	for _, bad := range []string{"X", "F,X", "FG", "H1", "F,,G,F", "H,H0", "H0,H-", ",", "F;G"} {
		_, err := ParseModules(bad)
		var me *ModuleError
		if !errors.Is(err, ErrUnknownModule) || !errors.As(err, &me) {
			t.Errorf("ParseModules(%q) = %v, want a *ModuleError wrapping ErrUnknownModule", bad, err)
		}
	}
}

func engPaperModules(t *testing.T) Modules {
	m, err := ParseModules("F,G,H,T")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPromptGoldenFGHT(t *testing.T) {
	p, err := BuildPrompt(engHandHistory(), engPaperModules(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, filepath.Join("testdata", "prompt_FGHT.golden"), []byte("=== system\n"+p.System+"\n=== user\n"+p.User))
	if p.Hash != PromptHash(p.System, p.User) || len(p.Hash) != 64 {
		t.Errorf("hash %q", p.Hash)
	}
	if p.Tokens != ApproxTokens(p.System)+ApproxTokens(p.User) {
		t.Errorf("tokens %d", p.Tokens)
	}
	if !strings.HasSuffix(p.User, "- no other fields; field names are case-sensitive.\n") {
		t.Errorf("the user message does not end with the schema:\n%s", p.User[max(0, len(p.User)-300):])
	}
}

func TestPromptDeterministic(t *testing.T) {
	rng, _ := engTestRNG(t, 11)
	for i := range 40 {
		seed := rng.Uint64()
		mods := Modules{F: rng.IntN(2) == 0, G: rng.IntN(2) == 0, H: rng.IntN(2) == 0, S: rng.IntN(2) == 0, T: rng.IntN(2) == 0, HistoryNoRound0: rng.IntN(2) == 0}
		build := func() Prompt {
			// Equal histories built independently, from the same seed.
			h := engRandHistory(engRandFrom(seed))
			p, err := BuildPrompt(h, mods, 0)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		a, b := build(), build()
		if a.System != b.System || a.User != b.User || a.Hash != b.Hash {
			t.Fatalf("case %d (history seed %d, modules %s): prompts differ", i, seed, mods)
		}
	}
	// A change in the history changes the hash.
	h := engHandHistory()
	p1, _ := BuildPrompt(h, engPaperModules(t), 0)
	h.Stages[2].Val[3].Valid++
	p2, _ := BuildPrompt(h, engPaperModules(t), 0)
	if p1.Hash == p2.Hash {
		t.Error("changing a validation count did not change the prompt hash")
	}
}

func TestPromptModulesSwitch(t *testing.T) {
	heads := map[string]string{"F": "## F. Failure breakdown", "G": "## G. Design guidelines", "H": "## H. History", "S": "## S. Your previous rationale", "T": "## T. Training bookkeeping"}
	h := engHandHistory()
	for _, spec := range []string{"", "F", "G", "H", "S", "T", "F,G", "F,G,H0,T", "F,G,H,S,T"} {
		m, err := ParseModules(spec)
		if err != nil {
			t.Fatal(err)
		}
		p, err := BuildPrompt(h, m, 0)
		if err != nil {
			t.Fatal(err)
		}
		for letter, head := range heads {
			if want := strings.Contains(spec, letter); strings.Contains(p.User, head) != want {
				t.Errorf("modules %q: section %q present = %v, want %v", spec, head, !want, want)
			}
		}
		// The current config and the schema are always there.
		for _, must := range []string{"## Current configuration (used by stage 2)", "## Output", `{"size": 10, "data_ratio": <number>`} {
			if !strings.Contains(p.User, must) {
				t.Errorf("modules %q: missing %q", spec, must)
			}
		}
	}
}

func TestPromptHistoryNoRound0(t *testing.T) {
	h := engHandHistory()
	with, _ := BuildPrompt(h, Modules{H: true}, 0)
	without, _ := BuildPrompt(h, Modules{H: true, HistoryNoRound0: true}, 0)
	if !strings.Contains(with.User, "### Stage 0 (config "+h.Stages[0].Config.Hash()+", round 0)") {
		t.Errorf("H: round 0 missing:\n%s", with.User)
	}
	if strings.Contains(without.User, "### Stage 0") || !strings.Contains(without.User, "### Stage 1 (config c1-version)") {
		t.Errorf("H0: wrong stages:\n%s", without.User)
	}
	if !strings.Contains(without.User, "round-0 configuration is left out") {
		t.Error("H0 does not say round 0 is left out")
	}
	// With only stage 0, H0 shows nothing yet.
	h.Stages = h.Stages[:1]
	only, _ := BuildPrompt(h, Modules{H: true, HistoryNoRound0: true}, 0)
	if strings.Contains(only.User, "### Stage") || !strings.Contains(only.User, "No stage to show yet") {
		t.Errorf("H0 with one stage:\n%s", only.User)
	}
}

func TestPromptModuleContents(t *testing.T) {
	h := engHandHistory()
	p, err := BuildPrompt(h, Modules{F: true, S: true, T: true}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		// F: rates and categories of stage 2 (size 3: p clipped to 1).
		"## F. Failure breakdown of stage 2",
		"| size | episodes | valid% | optimal% | reward | parse | illegal_move | conflict | hole | out_of_bounds | goal | start | agent_count |",
		"| 10 | 100 | 14.00 | 8.00 |",
		// examples: at most MaxPromptExamples, one per category first: inst-9b (second conflict) drops.
		"instance inst-8a, failed: conflict", "instance inst-10c, failed: parse", "instance inst-7d, failed: hole", "instance inst-6e, failed: goal",
		// S: the rationale of the current config.
		"Raise holes at size 5 where the policy is strong.\nKeep the rest.",
		// T: bookkeeping.
		"- stage to configure: 3 (stages are numbered from 0); finished stages: 3 of 5; stages left including this one: 2",
		"epochs so far: 6; optimizer updates so far: 48; policy version: 48",
	} {
		if !strings.Contains(p.User, want) {
			t.Errorf("missing %q in:\n%s", want, p.User)
		}
	}
	if strings.Contains(p.User, "inst-9b") {
		t.Error("a fifth example was shown")
	}
	// No stages: every module still renders.
	empty, err := BuildPrompt(&History{}, Modules{F: true, G: true, H: true, S: true, T: true}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"No stage has finished yet", "No stage to show.", "(none: the current configuration was not written by you)", "the default; no stage has run yet", "finished stages: 0"} {
		if !strings.Contains(empty.User, want) {
			t.Errorf("empty history: missing %q", want)
		}
	}
	nilp, err := BuildPrompt(nil, Modules{F: true}, 0)
	if err != nil || nilp.Hash == "" {
		t.Errorf("nil history: %v", err)
	}
}

func TestPromptTokenBudget(t *testing.T) {
	h := engHandHistory()
	m := engPaperModules(t)
	full, err := BuildPrompt(h, m, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := BuildPrompt(h, m, full.Tokens); p.Hash != full.Hash || p.OmittedExamples+p.OmittedStages != 0 {
		t.Error("a budget equal to the full size trimmed something")
	}
	prevEx, prevSt := 0, 0
	sawStages := false
	for budget := full.Tokens - 1; budget > 0; budget -= 25 {
		p, err := BuildPrompt(h, m, budget)
		if errors.Is(err, ErrTokenBudget) {
			if !sawStages {
				t.Fatalf("budget %d: gave up before dropping history", budget)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if p.Tokens > budget {
			t.Fatalf("budget %d: prompt has %d tokens", budget, p.Tokens)
		}
		// Examples go first, then the oldest stages, monotonically.
		if p.OmittedStages > 0 && p.OmittedExamples != MaxPromptExamples {
			t.Fatalf("budget %d: %d stages dropped while %d examples remain", budget, p.OmittedStages, MaxPromptExamples-p.OmittedExamples)
		}
		if p.OmittedExamples < prevEx || p.OmittedStages < prevSt {
			t.Fatalf("budget %d: trimming went backwards", budget)
		}
		prevEx, prevSt = p.OmittedExamples, p.OmittedStages
		if p.OmittedExamples+p.OmittedStages == 0 || !strings.Contains(p.User, "(Omitted to fit the context budget:") {
			t.Fatalf("budget %d: trimmed prompt does not say so", budget)
		}
		if p.OmittedStages > 0 {
			sawStages = true
			if strings.Contains(p.User, "### Stage 0 ") {
				t.Fatalf("budget %d: the oldest stage survived", budget)
			}
			if p.OmittedStages < 3 && !strings.Contains(p.User, "### Stage 2 ") {
				t.Fatalf("budget %d: the newest stage went before the oldest", budget)
			}
		}
	}
	if !sawStages {
		t.Error("history was never trimmed")
	}
}
