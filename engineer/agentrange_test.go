package engineer

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/env"
)

// engRangeHistory is the hand history with every stage on a 2..5 agent
// range (env.Config.AgentsMax).
func engRangeHistory() *History {
	h := engHandHistory()
	h.RunID = "run-range"
	for i := range h.Stages {
		h.Stages[i].Config.AgentsMax = 5
		h.Stages[i].TrainByAgents = []AgentStats{{Agents: 2, Episodes: 1600, Valid: 1040, Optimal: 700}, {Agents: 3, Episodes: 1200, Valid: 300, Optimal: 100},
			{Agents: 4, Episodes: 700, Valid: 70, Optimal: 7}, {Agents: 5, Episodes: 500, Valid: 0}}
	}
	return h
}

// The prompts show a range where there is one, and read as before where
// there is none.
func TestAgentRangePrompts(t *testing.T) {
	mods := Modules{F: true, G: true, H: true, T: true}
	full, err := BuildPrompt(engRangeHistory(), mods, 0)
	if err != nil {
		t.Fatal(err)
	}
	compact := BuildCompactPrompt(engRangeHistory(), mods)
	for _, want := range []string{
		"): agents 2..5, instances 4000",
		`], "agents": 2, "agents_max": 5, "instances": 4000}`,
		`"agents": <integer>, "agents_max": <integer>, "instances": <integer>`,
		"- agents_max is the most agents per instance, from agents to 10",
		"(currently 5; leave it out to keep it)",
		"training by agent count (the config's agent range):\n| agents | episodes | valid% | optimal% |\n|---|---|---|---|\n| 2 | 1600 | 65.00 | 43.75 |\n",
		"| 5 | 500 | 0.00 | 0.00 |\n",
		"This run trains a range of agent counts (agents to agents_max), and F shows its results per agent count",
	} {
		if !strings.Contains(full.User, want) {
			t.Errorf("full prompt lacks %q", want)
		}
	}
	for _, want := range []string{"; agents 2..5; instances 4000", `"agents": k, "agents_max": m, "instances": n`} {
		if !strings.Contains(compact.User, want) {
			t.Errorf("compact prompt lacks %q:\n%s", want, compact.User)
		}
	}
	plain, err := BuildPrompt(engHandHistory(), mods, 0)
	if err != nil {
		t.Fatal(err)
	}
	plainCompact := BuildCompactPrompt(engHandHistory(), mods)
	if strings.Contains(plain.User, "agents_max") || strings.Contains(plainCompact.User, "agents_max") || strings.Contains(plain.User, "by agent count") {
		t.Error("a prompt without an agent range mentions agents_max or per-agent statistics")
	}
	if strings.Contains(full.User, "goes beyond training") || !strings.Contains(plain.User, "goes beyond training") {
		t.Error("the G module's evaluation line: want the range's in a range prompt only")
	}
	if strings.Contains(compact.User, "by agent count") {
		t.Error("the compact prompt shows per-agent statistics")
	}
}

// agents_max is optional in an answer; when given it is an integer under
// its exact name.
func TestParseAnswerAgentsMax(t *testing.T) {
	const sizes = `"sizes": [{"size": 3, "data_ratio": 1, "hole_ratio": 0, "wait_ratio": 0}]`
	a, err := ParseAnswer(`{"rationale": "r", "config": {` + sizes + `, "agents": 2, "agents_max": 4, "instances": 1}}`)
	if err != nil || !a.HasAgentsMax || a.Config.AgentsMax != 4 {
		t.Fatalf("with agents_max: %+v, %v", a, err)
	}
	a, err = ParseAnswer(`{"rationale": "r", "config": {` + sizes + `, "agents": 2, "instances": 1}}`)
	if err != nil || a.HasAgentsMax || a.Config.AgentsMax != 0 {
		t.Fatalf("without agents_max: %+v, %v", a, err)
	}
	for name, in := range map[string]string{
		"config.Agents_max": `{"rationale": "r", "config": {` + sizes + `, "agents": 2, "Agents_max": 4, "instances": 1}}`,
		"config.agents_max": `{"rationale": "r", "config": {` + sizes + `, "agents": 2, "agents_max": 4.5, "instances": 1}}`,
	} {
		_, err := ParseAnswer(in)
		var fe *env.FieldError
		if !errors.Is(err, ErrSchema) || !errors.As(err, &fe) || fe.Field != name {
			t.Errorf("%s: err %v, want ErrSchema on field %s", in, err, name)
		}
	}
}

// The llm strategy on a range: an answer without agents_max keeps the
// range, one with it sets it, one below agents is projected.
func TestLLMAgentRange(t *testing.T) {
	good := engGoodConfig() // no agents_max: the field is left out of the answer
	narrow := good.Clone()
	narrow.AgentsMax = 3
	low := good.Clone()
	low.AgentsMax = 1
	for _, tc := range []struct {
		name    string
		answer  env.Config
		want    int
		project bool
	}{{"omitted", good, 5, false}, {"narrowed", narrow, 3, false}, {"below agents", low, 0, true}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newEngServer(t, engReply(engAnswerText("ok", tc.answer)))
			l := engLLM(t, s, func(o *Options) { o.Feasible = env.CheckFeasible })
			p := engPropose(t, l, engRangeHistory())
			if p.Fallback || p.Config.AgentsMax != tc.want || p.Config.Agents != 2 {
				t.Fatalf("proposal %+v (attempts %+v): want agents 2, agents_max %d", p.Config, p.Attempts, tc.want)
			}
			if got := strings.HasPrefix(p.Attempts[0].Reason, "accepted after projection"); got != tc.project {
				t.Errorf("reason %q: projected %v, want %v", p.Attempts[0].Reason, got, tc.project)
			}
		})
	}
}

// Teacher turns on a range history write agents_max, and pass the
// guardrails at distance 0.
func TestTurnsOnAgentRange(t *testing.T) {
	h := engRangeHistory()
	mods, _ := ParseModules("F,G,H0,T")
	for _, style := range []string{PromptFull, PromptCompact} {
		turns, err := Turns(context.Background(), []*History{h}, TurnOptions{Teacher: NameLearnability, Modules: mods, Prompt: style, Feasible: env.CheckFeasible})
		if err != nil {
			t.Fatal(err)
		}
		if len(turns) < 2 {
			t.Fatalf("%s: %d turns from a 3-stage history", style, len(turns))
		}
		chat := &replayChat{answers: map[string]string{}}
		for _, tu := range turns {
			if !strings.Contains(tu.Answer, `"agents": 2, "agents_max": 5, "instances"`) {
				t.Fatalf("teacher answer without the range: %s", tu.Answer)
			}
			chat.answers[tu.User] = tu.Answer
		}
		sc, _, err := ScoreTurns(context.Background(), turns, ScoreOptions{Chat: chat, Feasible: env.CheckFeasible})
		if err != nil {
			t.Fatal(err)
		}
		if sc.Turns != len(turns) || sc.Accepted != sc.Turns || sc.Distance > 1e-9 {
			t.Fatalf("%s: %+v: want every teacher answer accepted at distance 0", style, sc)
		}
	}
	// A range that differs is an agent difference to ConfigDistance.
	a, b := env.DefaultConfig(), env.DefaultConfig()
	b.AgentsMax = 5
	if d := ConfigDistance(a, b); math.Abs(d-1) > 1e-12 {
		t.Errorf("range 2..5 vs 2: distance %v, want 1", d)
	}
	b.AgentsMax = 2
	if d := ConfigDistance(a, b); d != 0 {
		t.Errorf("agents_max 2 vs none: distance %v, want 0", d)
	}
}

// No hidden range: an answer that spells out agents_max == agents is no
// range (written as 0), and a previous config without a range lends none
// to an answer that leaves the field out.
func TestLLMNoHiddenRange(t *testing.T) {
	spelled := engGoodConfig()
	spelled.AgentsMax = spelled.Agents
	s := newEngServer(t, engReply(engAnswerText("ok", spelled)))
	p := engPropose(t, engLLM(t, s, nil), engRangeHistory())
	if p.Config.AgentsMax != 0 || p.Attempts[0].Reason != "accepted" || strings.Contains(p.Attempts[0].Projected, "agents_max") {
		t.Fatalf("agents_max == agents: proposal agents_max %d, attempt %+v", p.Config.AgentsMax, p.Attempts[0])
	}
	// A range the answer's agents reach past does not carry over: 2..3 and
	// an answer of 4 agents (size 3 left without data) is 4 agents, as
	// written, not a projection that blames agents_max.
	four := engGoodConfig()
	four.Sizes[1].DataRatio += four.Sizes[0].DataRatio
	four.Sizes[0].DataRatio = 0
	four.Agents = 4
	upTo3 := engHandHistory()
	for i := range upTo3.Stages {
		upTo3.Stages[i].Config.AgentsMax = 3
	}
	s = newEngServer(t, engReply(engAnswerText("ok", four)))
	if p := engPropose(t, engLLM(t, s, nil), upTo3); p.Config.Agents != 4 || p.Config.AgentsMax != 0 || p.Attempts[0].Reason != "accepted" {
		t.Fatalf("2..3, then an answer of 4 agents: %d..%d, %q", p.Config.Agents, p.Config.AgentsMax, p.Attempts[0].Reason)
	}
	h := engHandHistory() // a hidden bound in the history: agents 2, agents_max 2
	for i := range h.Stages {
		h.Stages[i].Config.AgentsMax = 2
	}
	three := engGoodConfig()
	three.Agents = 3
	s = newEngServer(t, engReply(engAnswerText("ok", three)))
	if p := engPropose(t, engLLM(t, s, nil), h); p.Config.AgentsMax != 0 || p.Config.Agents != 3 {
		t.Fatalf("after agents_max == agents, an answer of 3 agents became %d..%d", p.Config.Agents, p.Config.AgentsMax)
	}
}

// A teacher that drops the previous range says so in its answer (leaving
// the field out would keep the range).
func TestTeacherAnswerDropsRange(t *testing.T) {
	prev := env.DefaultConfig()
	prev.AgentsMax = 5
	ans, cfg := TeacherAnswer(NameRules, prev, env.DefaultConfig())
	if !strings.Contains(ans, `"agents": 2, "agents_max": 2, "instances"`) {
		t.Fatalf("answer %s: want agents_max 2", ans)
	}
	a, err := ParseAnswer(ans)
	if err != nil || !a.HasAgentsMax {
		t.Fatalf("%+v, %v", a, err)
	}
	if a.Config.HasAgentRange() || cfg.HasAgentRange() {
		t.Errorf("the answer keeps a range: %+v", a.Config)
	}
	if plain, _ := TeacherAnswer(NameRules, env.DefaultConfig(), env.DefaultConfig()); strings.Contains(plain, "agents_max") {
		t.Errorf("no range before or after, yet %s", plain)
	}
}

// The rules strategy moves a range by one count from the training valid
// rate of its most agents: wider when they are mastered, narrower when they
// are near zero (down to two counts), never beyond the largest size; a
// config without a range, or a top count with too few episodes, keeps it.
// An infeasible wider range is not taken at the partial steps.
func TestRulesMoveRange(t *testing.T) {
	withTop := func(agentsMax int, valid, episodes int64) *History {
		h := engRangeHistory()
		last := &h.Stages[len(h.Stages)-1]
		last.Config.AgentsMax = agentsMax
		last.TrainByAgents = []AgentStats{{Agents: 2, Episodes: 1600, Valid: 1040}, {Agents: agentsMax, Episodes: episodes, Valid: valid}}
		return h
	}
	sizesTo := func(h *History, largest int) *History {
		last := &h.Stages[len(h.Stages)-1]
		last.Config.Sizes = slices.DeleteFunc(last.Config.Sizes, func(s env.SizeConfig) bool { return s.Size > largest })
		return h
	}
	for _, tc := range []struct {
		name    string
		h       *History
		want    int
		wantWhy string
	}{
		{"mastered", withTop(5, 450, 500), 6, "agents 5: train valid 0.90, range 2..5 → 2..6"},
		{"near zero", withTop(5, 0, 500), 4, "agents 5: train valid 0.00, range 2..5 → 2..4"},
		{"in between", withTop(5, 200, 500), 5, "agents 5: train valid 0.40, range 2..5 kept"},
		{"two counts stay", withTop(3, 0, 500), 3, "agents 3: train valid 0.00, range 2..3 kept"},
		{"most agents", withTop(10, 500, 500), 10, "agents 10: train valid 1.00, range 2..10 kept"},
		{"largest size", sizesTo(withTop(6, 500, 500), 6), 6, "agents 6: train valid 1.00, range 2..6 kept"},
		{"too few episodes", withTop(5, 10, 10), 5, ""},
		{"no range", engHandHistory(), 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRules(Options{})
			if err != nil {
				t.Fatal(err)
			}
			p, err := r.Propose(context.Background(), tc.h)
			if err != nil {
				t.Fatal(err)
			}
			if p.Fallback || p.Config.AgentsMax != tc.want {
				t.Errorf("agents_max %d (fallback %v), want %d: %s", p.Config.AgentsMax, p.Fallback, tc.want, p.Rationale)
			}
			if tc.wantWhy != "" && !strings.Contains(p.Rationale, tc.wantWhy) {
				t.Errorf("rationale %q lacks %q", p.Rationale, tc.wantWhy)
			}
			if tc.wantWhy == "" && strings.Contains(p.Rationale, "range") {
				t.Errorf("rationale %q speaks of a range", p.Rationale)
			}
		})
	}

	// Wider is infeasible: the half step keeps 2..5 and still moves the data.
	noSix := func(c env.Config) error {
		if c.AgentsMax > 5 {
			return errors.New("6 agents do not fit")
		}
		return nil
	}
	r, err := NewRules(Options{Feasible: noSix})
	if err != nil {
		t.Fatal(err)
	}
	h := withTop(5, 450, 500)
	p, err := r.Propose(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if p.Fallback || p.Config.AgentsMax != 5 || len(p.Attempts) != 2 || p.Attempts[0].Accepted || !p.Attempts[1].Accepted {
		t.Fatalf("infeasible widening: agents_max %d, fallback %v, attempts %+v", p.Config.AgentsMax, p.Fallback, p.Attempts)
	}
	if p.Config.Hash() == h.Last().Config.Hash() {
		t.Error("the half step changed nothing: want the data and difficulty moves at half")
	}
}
