package engineer

import (
	"bytes"
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/testutil"
)

// replayChat answers each prompt with the answer recorded for its user message.
type replayChat struct {
	answers map[string]string
	asked   []string
}

func (r *replayChat) Chat(_ context.Context, msgs []ChatMessage, _ float64, _ int) (ChatAnswer, error) {
	u := msgs[len(msgs)-1].Content
	r.asked = append(r.asked, msgs[0].Content+"\x00"+u)
	return ChatAnswer{Content: r.answers[u], Engineer: "replay"}, nil
}

func TestCompactPromptGolden(t *testing.T) {
	mods, err := ParseModules("F,G,H0,T")
	if err != nil {
		t.Fatal(err)
	}
	h := engHandHistory()
	p := BuildCompactPrompt(h, mods)
	if again := BuildCompactPrompt(engHandHistory(), mods); again.Hash != p.Hash || p.Hash != PromptHash(p.System, p.User) {
		t.Fatalf("not deterministic: %s, %s", p.Hash, again.Hash)
	}
	full, err := BuildPrompt(h, mods, 0)
	if err != nil {
		t.Fatal(err)
	}
	if p.Tokens*3 > full.Tokens {
		t.Errorf("compact prompt ~%d tokens, the full one ~%d: want at most a third", p.Tokens, full.Tokens)
	}
	t.Logf("compact ~%d tokens, full ~%d", p.Tokens, full.Tokens)
	testutil.Golden(t, filepath.Join("testdata", "prompt_compact_FGHT.golden"), []byte("=== system\n"+p.System+"\n=== user\n"+p.User))
}

func TestCompactPromptModules(t *testing.T) {
	h := engHandHistory()
	none := BuildCompactPrompt(h, Modules{})
	for _, absent := range []string{"G:", "H:", "F:", "val%", "S:", " of 5"} {
		if strings.Contains(none.User, absent) {
			t.Errorf("no module, yet %q in\n%s", absent, none.User)
		}
	}
	all := BuildCompactPrompt(h, Modules{F: true, G: true, H: true, S: true, T: true})
	for _, want := range []string{"stage 3 of 5;", "G: ", "H: val valid% s0 ", "F: stage 2 val valid", "S: Raise holes at size 5 where the policy is strong. Keep the rest.", "answer: {\"rationale\""} {
		if !strings.Contains(all.User, want) {
			t.Errorf("all modules: no %q in\n%s", want, all.User)
		}
	}
	if h0 := BuildCompactPrompt(h, Modules{H: true, HistoryNoRound0: true}); strings.Contains(h0.User, "s0 ") || !strings.Contains(h0.User, "s1 ") {
		t.Errorf("H0 shows round 0 or hides stage 1:\n%s", h0.User)
	}
	if p := BuildCompactPrompt(nil, Modules{F: true, T: true}); !strings.Contains(p.User, "stage 0;") || strings.Contains(p.User, "F:") {
		t.Errorf("empty history:\n%s", p.User)
	}
}

// TestLLMCompactPrompt: the llm strategy with Prompt compact sends the compact prompt.
func TestLLMCompactPrompt(t *testing.T) {
	mods, _ := ParseModules("F,G,H0,T")
	h := engHandHistory()
	want := BuildCompactPrompt(h, mods)
	rec := &replayChat{answers: map[string]string{}}
	strat, err := NewLLM(Options{LLM: LLMOptions{Chat: rec, Modules: mods, Prompt: "Compact", MaxRetries: -1}})
	if err != nil {
		t.Fatal(err)
	}
	prop, err := strat.Propose(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.asked) != 1 || rec.asked[0] != want.System+"\x00"+want.User || prop.Attempts[0].PromptHash != want.Hash {
		t.Fatalf("asked %q, attempts %+v", rec.asked, prop.Attempts)
	}
	if _, err := NewLLM(Options{LLM: LLMOptions{Chat: rec, Prompt: "tiny"}}); !errors.Is(err, ErrOptions) {
		t.Fatalf("prompt tiny: %v", err)
	}
}

func TestRound3(t *testing.T) {
	rng, _ := engTestRNG(t, 7)
	r, _ := NewRandom(Options{})
	cfg := env.DefaultConfig()
	for range 200 {
		cfg = r.Draw(rng, cfg)
		got := Round3(cfg)
		if err := got.Validate(); err != nil {
			t.Fatalf("Round3(%+v) = %+v: %v", cfg, got, err)
		}
		for i, s := range got.Sizes {
			for _, v := range []float64{s.DataRatio, s.HoleRatio, s.WaitRatio} {
				if math.Abs(v*1000-math.Round(v*1000)) > 1e-9 {
					t.Fatalf("size %d: %v has more than three decimals", s.Size, v)
				}
			}
			if d := math.Abs(s.DataRatio - cfg.Sizes[i].DataRatio); d > 0.001 {
				t.Fatalf("size %d: data %v → %v", s.Size, cfg.Sizes[i].DataRatio, s.DataRatio)
			}
		}
	}
}

// engTurnHistories are random histories with at least one stage, every config feasible (as
// in a real run, whose stages ran on them).
func engTurnHistories(t *testing.T, n int) []*History {
	rng, _ := engTestRNG(t, 11)
	var out []*History
	feasible := func(h *History) bool {
		for _, s := range h.Stages {
			if env.CheckFeasible(s.Config) != nil {
				return false
			}
		}
		return len(h.Stages) > 0
	}
	for len(out) < n {
		h := engRandHistory(rng)
		if feasible(h) {
			h.RunID = "run-" + string(rune('a'+len(out)%26))
			out = append(out, h)
		}
	}
	return out
}

// TestTurnsTeacherAnswersPassTheGuardrails: every taught answer, replayed through the llm
// strategy's guardrails by ScoreTurns, is valid JSON, accepted, and at distance 0 from the
// teacher's config, in both prompt styles and for both teachers.
func TestTurnsTeacherAnswersPassTheGuardrails(t *testing.T) {
	hists := append(engTurnHistories(t, 12), engHandHistory())
	for _, style := range []string{PromptFull, PromptCompact} {
		for _, teacher := range []string{NameLearnability, NameRules} {
			mods, _ := ParseModules("F,G,H0,T")
			turns, err := Turns(context.Background(), hists, TurnOptions{Teacher: teacher, Modules: mods, Prompt: style, HeldOutPercent: 20, Feasible: env.CheckFeasible})
			if err != nil {
				t.Fatal(err)
			}
			if len(turns) < 13 {
				t.Fatalf("%d turns", len(turns))
			}
			chat := &replayChat{answers: map[string]string{}}
			for _, tu := range turns {
				if strings.Contains(tu.Answer, "\n") || !strings.HasPrefix(tu.Answer, `{"rationale": "`+teacher+": most data on size ") {
					t.Fatalf("answer %q: want one line starting with the teacher's rationale", tu.Answer)
				}
				if tu.Stage != len(tu.History.Stages) || tu.Context != ContextHash(tu.History) {
					t.Fatalf("turn stage %d, %d stages, context %s", tu.Stage, len(tu.History.Stages), tu.Context)
				}
				chat.answers[tu.User] = tu.Answer
			}
			// Through a file, as t2t engineer turns writes it and t2t engineer score reads it.
			var buf bytes.Buffer
			if err := WriteTurns(&buf, turns); err != nil {
				t.Fatal(err)
			}
			back, err := ReadTurns(&buf)
			if err != nil || len(back) != len(turns) {
				t.Fatalf("read back %d of %d turns: %v", len(back), len(turns), err)
			}
			sc, per, err := ScoreTurns(context.Background(), back, ScoreOptions{Chat: chat, Feasible: env.CheckFeasible})
			if err != nil {
				t.Fatal(err)
			}
			if sc.Turns != len(turns) || sc.JSON != sc.Turns || sc.Accepted != sc.Turns || sc.Distance > 1e-9 {
				for _, p := range per {
					if !p.Accepted {
						t.Logf("rejected: %s: %s", p.Reason, p.Raw)
					}
				}
				t.Fatalf("%s/%s: %+v: want every teacher answer valid, accepted, at distance 0", style, teacher, sc)
			}
			if sc.Keep <= 0 {
				t.Errorf("%s/%s: keeping the previous config is at distance %v from the teacher: the teachers never change anything?", style, teacher, sc.Keep)
			}
		}
	}
}

// TestHeldOutSplit: the training turns hold no held-out context, whatever the prompt style;
// the held-out share is near the percent asked; held-out sets nest as the percent grows; a
// context whose hash does not match its history is refused.
func TestHeldOutSplit(t *testing.T) {
	hists := engTurnHistories(t, 60)
	mods, _ := ParseModules("F,G,H0,T")
	turns, err := Turns(context.Background(), hists, TurnOptions{Teacher: NameLearnability, Modules: mods, Prompt: PromptCompact, HeldOutPercent: 20})
	if err != nil {
		t.Fatal(err)
	}
	train, err := TrainingTurns(turns, 20)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, tu := range turns {
		if tu.HeldOut != IsHeldOut(tu.Context, 20) {
			t.Fatalf("turn %s: HeldOut %v", tu.Context, tu.HeldOut)
		}
		if tu.HeldOut {
			held[tu.Context] = true
		}
	}
	for _, tu := range train {
		if held[tu.Context] || IsHeldOut(ContextHash(tu.History), 20) {
			t.Fatalf("held-out context %s in the training turns", tu.Context)
		}
	}
	if len(held)+len(train) != len(turns) || len(held) == 0 || len(train) == 0 {
		t.Fatalf("%d turns: %d held out, %d for training", len(turns), len(held), len(train))
	}
	frac := float64(len(held)) / float64(len(turns))
	t.Logf("%d turns, %d held out (%.0f%%)", len(turns), len(held), 100*frac)
	if frac < 0.05 || frac > 0.4 {
		t.Errorf("held-out share %.2f, want near 0.2", frac)
	}
	for _, tu := range turns {
		if IsHeldOut(tu.Context, 20) && !IsHeldOut(tu.Context, 30) {
			t.Fatalf("held out at 20%% but not at 30%%: %s", tu.Context)
		}
	}
	if !IsHeldOut("not hex", 1) || IsHeldOut(turns[0].Context, 0) {
		t.Error("a broken key must be held out, and percent 0 holds nothing out")
	}
	// A hand-edited file: a held-out turn relabelled for training, its key changed.
	bad := append([]Turn(nil), turns...)
	for i := range bad {
		if bad[i].HeldOut {
			bad[i].HeldOut = false
			bad[i].Context = strings.Repeat("0", 64)
			break
		}
	}
	if _, err := TrainingTurns(bad, 20); !errors.Is(err, ErrSchema) {
		t.Fatalf("tampered context: %v", err)
	}
	if _, err := Turns(context.Background(), hists, TurnOptions{Teacher: NameRandom}); !errors.Is(err, ErrOptions) {
		t.Fatalf("teacher random: %v", err)
	}
}

// TestScoreTurnsCountsBadAnswers: garbage, valid JSON of the wrong shape and an accepted but
// different config each count as they should.
func TestScoreTurnsCountsBadAnswers(t *testing.T) {
	h := engHandHistory()
	mods, _ := ParseModules("F,T")
	turns, err := Turns(context.Background(), []*History{h}, TurnOptions{Teacher: NameRules, Modules: mods, Prompt: PromptCompact})
	if err != nil || len(turns) != 3 {
		t.Fatalf("%d turns: %v", len(turns), err)
	}
	prev := turns[2].Previous
	other, _ := TeacherAnswer("x", prev, prev)
	chat := &replayChat{answers: map[string]string{
		turns[0].User: "no idea",
		turns[1].User: `{"rationale": "r", "config": {"sizes": [], "agents": 2, "instances": 4}}`,
		turns[2].User: other,
	}}
	sc, per, err := ScoreTurns(context.Background(), turns, ScoreOptions{Chat: chat})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Turns != 3 || sc.JSON != 2 || sc.Accepted != 1 || per[0].JSON || per[1].Accepted || !per[2].Accepted {
		t.Fatalf("%+v %+v", sc, per)
	}
	if want := ConfigDistance(prev, turns[2].Config); math.Abs(sc.Distance-want) > 1e-9 || math.Abs(per[2].Distance-per[2].Keep) > 1e-9 {
		t.Fatalf("distance %v, want %v (the previous config's)", sc.Distance, want)
	}
	// A turn whose prompt no longer renders the same.
	turns[0].User += " "
	if _, _, err := ScoreTurns(context.Background(), turns, ScoreOptions{Chat: chat}); !errors.Is(err, ErrSchema) {
		t.Fatalf("stale prompt: %v", err)
	}
}

func TestConfigDistance(t *testing.T) {
	a := env.DefaultConfig()
	if d := ConfigDistance(a, a); d != 0 {
		t.Fatalf("self distance %v", d)
	}
	b := a.Clone()
	b.Sizes[0].HoleRatio += 0.4
	b.Sizes[1].WaitRatio -= 0.2
	if d := ConfigDistance(a, b); math.Abs(d-0.6/8) > 1e-12 {
		t.Fatalf("distance %v, want 0.075", d)
	}
	b.Agents = 3
	if d := ConfigDistance(a, b); math.Abs(d-1.075) > 1e-12 {
		t.Fatalf("agents differ: %v", d)
	}
}

// tempChat answers garbage at temperature 0 and the turn's answer when sampled.
type tempChat struct{ answers map[string]string }

func (c tempChat) Chat(_ context.Context, msgs []ChatMessage, temp float64, _ int) (ChatAnswer, error) {
	if temp == 0 {
		return ChatAnswer{Content: "Agent 0: DOWN"}, nil
	}
	return ChatAnswer{Content: c.answers[msgs[len(msgs)-1].Content]}, nil
}

// With Retries and RetryResample, ScoreTurns scores what a run's engineer would end with: a
// greedy first answer that fails, then a sampled retry of the same prompt that passes, counts
// as accepted on a retry; the JSON rate stays the first answers'. Without retries none passes.
func TestScoreTurnsWithRetries(t *testing.T) {
	mods, _ := ParseModules("F,T")
	turns, err := Turns(context.Background(), []*History{engHandHistory()}, TurnOptions{Teacher: NameRules, Modules: mods, Prompt: PromptCompact})
	if err != nil || len(turns) != 3 {
		t.Fatalf("%d turns: %v", len(turns), err)
	}
	chat := tempChat{answers: map[string]string{}}
	for _, tu := range turns {
		chat.answers[tu.User] = tu.Answer
	}
	sc, per, err := ScoreTurns(context.Background(), turns, ScoreOptions{Chat: chat, Retries: 2, Retry: RetryResample, RetryTemperature: 0.6})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Turns != 3 || sc.JSON != 0 || sc.Accepted != 3 || sc.OnRetry != 3 || per[0].Attempts != 2 || sc.Distance != 0 {
		t.Fatalf("%+v %+v", sc, per)
	}
	if !strings.Contains(sc.Summary(), "(3/3, 3 of them on a retry)") {
		t.Errorf("summary %q", sc.Summary())
	}
	if sc, _, err := ScoreTurns(context.Background(), turns, ScoreOptions{Chat: chat}); err != nil || sc.Accepted != 0 || sc.OnRetry != 0 {
		t.Fatalf("no retries: %+v, %v", sc, err)
	}
}
