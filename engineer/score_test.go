package engineer

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestScoredTurnsAndStats(t *testing.T) {
	turns := []Turn{
		{Context: "a", HeldOut: true, System: strings.Repeat("s", 40), User: strings.Repeat("u", 80)},
		{Context: "b", System: "sys", User: "user"},
	}
	if got := ScoredTurns(turns, false); len(got) != 1 || got[0].Context != "a" {
		t.Fatalf("held-out turns: %+v", got)
	}
	if got := ScoredTurns(turns, true); len(got) != 2 {
		t.Fatalf("all turns: %d", len(got))
	}
	held, mean := TurnStats(turns)
	// (10+20) + (1+1) tokens over 2 turns.
	if held != 1 || mean != 16 {
		t.Fatalf("TurnStats = %d held, %d mean tokens; want 1, 16", held, mean)
	}
	if held, mean := TurnStats(nil); held != 0 || mean != 0 {
		t.Fatalf("TurnStats(nil) = %d, %d", held, mean)
	}
}

func TestScoreReportJSON(t *testing.T) {
	rep := ScoreReport{Model: "ckpt", Contexts: "turns.jsonl", Scored: "held-out",
		Scores: Scores{Turns: 4, JSON: 3, Accepted: 2, Distance: math.NaN(), Keep: 0.25},
		PerTurn: []TurnScore{
			{RunID: "r", Stage: 2, Context: "c1", JSON: true, Accepted: true, Distance: 0.5, Keep: 0.25, Reason: "ok", Raw: "{}"},
			{RunID: "r", Stage: 3, Context: "c2", Distance: math.NaN(), Reason: "not JSON"},
		}}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Turns, JSON, Accepted int
		JSONRate              float64  `json:"json_rate"`
		AcceptedRate          float64  `json:"accepted_rate"`
		Distance              *float64 `json:"distance"`
		PerTurn               []struct {
			Stage    int      `json:"stage"`
			Distance *float64 `json:"distance"`
		} `json:"per_turn"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	if doc.Turns != 4 || doc.JSON != 3 || doc.Accepted != 2 || doc.JSONRate != 0.75 || doc.AcceptedRate != 0.5 {
		t.Fatalf("summary: %s", b)
	}
	if doc.Distance != nil || len(doc.PerTurn) != 2 || doc.PerTurn[0].Distance == nil || *doc.PerTurn[0].Distance != 0.5 || doc.PerTurn[1].Distance != nil {
		t.Fatalf("a NaN distance is null, a number stays: %s", b)
	}
	if s := rep.Scores.Summary(); !strings.Contains(s, "valid JSON 75.0% (3/4)") || !strings.Contains(s, "config n/a") {
		t.Fatalf("Summary() = %q", s)
	}
	if v := rep.PerTurn[0].Verdict(); v != "accepted, distance 0.500" {
		t.Fatalf("Verdict() = %q", v)
	}
}
