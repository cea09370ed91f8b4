package actors_test

import (
	"context"
	"fmt"

	"github.com/t2t-lab/t2t/actors"
)

// exRunner "solves" every instance of a unit: one group per instance.
type exRunner struct{}

func (exRunner) RunUnit(ctx context.Context, u actors.WorkUnit) (actors.UnitDone, error) {
	var d actors.UnitDone
	for i := u.Lo; i < u.Hi; i++ {
		d.Groups = append(d.Groups, actors.Group{InstanceID: fmt.Sprint(i), Seed: u.Seed, ConfigVersion: u.ConfigVersion,
			Samples: []actors.Sample{{Tokens: []int32{1}, LogProbs: []float32{-0.1}, Reward: 1, Valid: true}}})
	}
	d.Stats.Instances = u.Hi - u.Lo
	return d, nil
}

type exUpdater struct{ v int64 }

func (u *exUpdater) Update(ctx context.Context, groups []actors.Group) (int64, error) {
	u.v++
	return u.v, nil
}

type exProposer struct{}

func (exProposer) Propose(ctx context.Context, runID string, stage int) (string, []byte, error) {
	return fmt.Sprintf("cfg-%d", stage), []byte(`{}`), nil
}

func ExampleNewLocal() {
	cfg := actors.DefaultSystemConfig()
	cfg.UnitsPerStage, cfg.InstancesPerUnit, cfg.LearnerBatch = 4, 2, 4
	cfg.StalenessK = 100 // exRunner does not tag policy versions
	sys, err := actors.NewLocal(cfg, exRunner{}, &exUpdater{}, exProposer{}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sys.Close()
	rep, err := sys.Run(context.Background(), 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, st := range rep.Stages {
		fmt.Printf("stage %d config %s: %d/%d units done\n", st.Stage, st.ConfigVersion, st.Completed, st.Units)
	}
	fmt.Println("groups learned from:", rep.Learner.Used, "updates:", rep.Learner.Updates)
	// Output:
	// stage 0 config stage-0: 4/4 units done
	// stage 1 config cfg-1: 4/4 units done
	// groups learned from: 16 updates: 4
}
