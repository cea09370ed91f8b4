package evaluate

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner"
)

// MapUse says whether a policy reads the holes of its map: its greedy plans are played again on
// copies of the instances whose holes stand on other cells (WithHolesMoved: a map like those it
// was trained on, only a different one), and compared. A policy blind to the holes plans the
// same on both; one that reads them must plan otherwise wherever the plan it makes on the copy
// would step on a hole of the real map.
type MapUse struct {
	// Instances is the number played.
	Instances int
	// Changed counts the instances whose plan differs on the copy.
	Changed int
	// Crossing counts the instances whose plan on the copy steps on a hole of the real map:
	// where reading the map matters to this policy. Avoided counts those among them whose plan
	// on the real map differs (it reacted to the holes; it may still fail elsewhere).
	Crossing, Avoided int
	// Through counts the instances whose plan on the real map steps on one of its holes. Set
	// beside Crossing it is what reading the map bought: a blind policy has Through = Crossing,
	// one that avoids every hole it would have crossed has Through = 0.
	Through int
}

// String is the line the CLI prints: "plans change with the holes moved on 3 of 64; of the 41
// whose plan there crosses a real hole, 2 change; 40 plans on the real map cross one".
func (m MapUse) String() string {
	return fmt.Sprintf("plans change with the holes moved on %d of %d; of the %d whose plan there crosses a real hole, %d change; %d plans on the real map cross one",
		m.Changed, m.Instances, m.Crossing, m.Avoided, m.Through)
}

// WithHolesMoved returns a copy of in with as many holes, on cells that are neither holes of in
// nor an agent's start or goal (all such cells when there are fewer), drawn with a seed taken
// from in's content hash, and its id recomputed. The agents, costs and known plan stay as they
// are (they describe in, not the copy: the copy is a probe's prompt, not a task).
func WithHolesMoved(in *env.Instance) *env.Instance {
	out := in.Clone()
	clear(out.Holes)
	taken := slices.Clone(in.Holes)
	n := in.NumHoles()
	for _, a := range in.Agents {
		taken[a.Start.R*in.Width+a.Start.C] = true
		taken[a.Goal.R*in.Width+a.Goal.C] = true
	}
	var free []int
	for i, t := range taken {
		if !t {
			free = append(free, i)
		}
	}
	h := sha256.Sum256([]byte(in.ComputeID()))
	rng := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(h[:8]), 0x4d4150))
	rng.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	for _, c := range free[:min(n, len(free))] {
		out.Holes[c] = true
	}
	out.ID = out.ComputeID()
	return out
}

// ProbeMapUse plays the copies of ins with their holes moved (WithHolesMoved) with opt and
// compares each plan with the one in eps, the episodes PlayEpisodes(p, ins, opt) returned. An
// answer that does not parse is an empty plan.
func ProbeMapUse(p Player, ins []*env.Instance, eps []learner.Episode, opt PlayOptions) (MapUse, error) {
	if len(eps) != len(ins) {
		return MapUse{}, fmt.Errorf("evaluate: map probe: %d episodes for %d instances", len(eps), len(ins))
	}
	moved := make([]*env.Instance, len(ins))
	for i, in := range ins {
		moved[i] = WithHolesMoved(in)
	}
	other, err := PlayEpisodes(p, moved, opt)
	if err != nil {
		return MapUse{}, err
	}
	m := MapUse{Instances: len(ins)}
	var rep env.Report
	for i, in := range ins {
		if eps[i].Report.Counts[env.CheckHoleFree] > 0 { // the player verified it on in
			m.Through++
		}
		changed := !samePlan(&eps[i].Plan, &other[i].Plan)
		if changed {
			m.Changed++
		}
		env.Verify(in, &other[i].Plan, &rep)
		if len(other[i].Plan.Paths) > 0 && rep.Counts[env.CheckHoleFree] > 0 {
			m.Crossing++
			if changed {
				m.Avoided++
			}
		}
	}
	return m, nil
}

func samePlan(a, b *env.Plan) bool {
	return slices.EqualFunc(a.Paths, b.Paths, func(x, y []env.Pos) bool { return slices.Equal(x, y) })
}
