package engineer_test

import (
	"context"
	"fmt"

	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
)

func ExampleParseModules() {
	m, err := engineer.ParseModules("F+G+H0+T")
	fmt.Println(m.F, m.G, m.H, m.HistoryNoRound0, m.S, m.T, err)
	fmt.Println(m)
	_, err = engineer.ParseModules("F,X")
	fmt.Println(err)
	// Output:
	// true true true true false true <nil>
	// F,G,H0,T
	// engineer: context module "X": want F, G, H, H0 (or H-), S or T
}

func ExampleParseAnswer() {
	a, err := engineer.ParseAnswer("<think>size 4 is in the band</think>\n```json\n" +
		`{"rationale": "focus on 4", "config": {"sizes": [` +
		`{"size": 3, "data_ratio": 0.25, "hole_ratio": 0.1, "wait_ratio": 0.2},` +
		`{"size": 4, "data_ratio": 0.75, "hole_ratio": 0.2, "wait_ratio": 0.3}], "agents": 2, "instances": 100}}` + "\n```")
	fmt.Println(a.Rationale, a.Config.Sizes[1].DataRatio, a.Config.Validate(), err)
	// Output:
	// focus on 4 0.75 <nil> <nil>
}

// The learnability strategy moves data toward the size whose success rate
// is near 0.5 and makes the easy size harder.
func ExampleLearnability() {
	cfg := env.Config{Agents: 2, Instances: 1000, Sizes: []env.SizeConfig{
		{Size: 3, DataRatio: 1.0 / 3, HoleRatio: 0.2, WaitRatio: 0.3},
		{Size: 6, DataRatio: 1.0 / 3, HoleRatio: 0.2, WaitRatio: 0.3},
		{Size: 9, DataRatio: 1.0 / 3, HoleRatio: 0.2, WaitRatio: 0.3},
	}}
	val := []engineer.SizeStats{
		{Size: 3, Episodes: 200, Valid: 196, Optimal: 180},
		{Size: 6, Episodes: 200, Valid: 100, Optimal: 60},
		{Size: 9, Episodes: 200, Valid: 4, Optimal: 2},
	}
	h := &engineer.History{Stages: []engineer.StageResult{{Config: cfg, Val: val}}}
	s, _ := engineer.ParseStrategy("learnability", engineer.Options{})
	p, _ := s.Propose(context.Background(), h)
	for _, sc := range p.Config.Sizes {
		fmt.Printf("size %d: data %.3f hole %.2f wait %.2f\n", sc.Size, sc.DataRatio, sc.HoleRatio, sc.WaitRatio)
	}
	// Output:
	// size 3: data 0.220 hole 0.30 wait 0.40
	// size 6: data 0.662 hole 0.20 wait 0.30
	// size 9: data 0.119 hole 0.10 wait 0.20
}
