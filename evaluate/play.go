package evaluate

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/report"
)

// Player plays episodes. train.Policy, textpolicy.Policy and
// textpolicy.Client satisfy it.
type Player interface {
	// Name names the policy in error messages.
	Name() string
	// Play plays groupSize episodes per instance, instance-major;
	// temperature 0 is greedy. The same seed, weights and instances give
	// the same rollout.
	Play(ins []*env.Instance, groupSize int, temperature float64, seed uint64) (*learner.Rollout, error)
}

// PlayOptions say how Play seeds a player.
type PlayOptions struct {
	// Seed is the seed of every Play call, or with PerInstance the seed
	// each instance's seed is derived from (InstanceSeed).
	Seed uint64
	// PerInstance plays each instance alone with InstanceSeed(Seed, its
	// content hash), so that its answer does not depend on what else is played with
	// it (the scripted policy draws its mistakes from that seed). Otherwise
	// the instances are played in one batch per agent count with Seed
	// (greedy gridnet and text policies need no randomness).
	PerInstance bool
}

// Play plays ins greedily, one episode each, and returns one outcome per
// instance, in the order of ins, with the answer's plan when it parsed.
func Play(p Player, ins []*env.Instance, opt PlayOptions) ([]report.Outcome, error) {
	eps, err := PlayEpisodes(p, ins, opt)
	if err != nil {
		return nil, err
	}
	outs := make([]report.Outcome, len(eps))
	for i := range eps {
		outs[i] = OutcomeOf(ins[i], &eps[i].Report)
		if paths := eps[i].Plan.Paths; len(paths) > 0 {
			outs[i].Plan = make([][]env.Pos, len(paths)) // a policy may reuse its buffers
			for a, path := range paths {
				outs[i].Plan[a] = slices.Clone(path)
			}
		}
	}
	return outs, nil
}

// PlayEpisodes plays ins as Play does and returns the episodes themselves
// (answer, verifier report, reward), one per instance in the order of ins:
// what a training run's evaluation units record.
func PlayEpisodes(p Player, ins []*env.Instance, opt PlayOptions) ([]learner.Episode, error) {
	eps := make([]learner.Episode, len(ins))
	if opt.PerInstance {
		for i, in := range ins {
			ro, err := p.Play([]*env.Instance{in}, 1, 0, InstanceSeed(opt.Seed, in.ComputeID()))
			if err != nil {
				return nil, err
			}
			if len(ro.Episodes) != 1 {
				return nil, fmt.Errorf("policy %s played %d episodes for 1 instance", p.Name(), len(ro.Episodes))
			}
			eps[i] = ro.Episodes[0]
		}
	} else if err := playByAgents(p, ins, opt.Seed, eps); err != nil {
		return nil, err
	}
	return eps, nil
}

// playByAgents plays ins in one batch per agent count and writes each
// instance's episode into eps. learner.PlayGridNet fails on a sequential
// round in which no live episode has that agent, which mixed batches can
// reach once their larger instances finish.
func playByAgents(p Player, ins []*env.Instance, seed uint64, eps []learner.Episode) error {
	byAgents := map[int][]int{}
	var counts []int
	for i, in := range ins {
		k := len(in.Agents)
		if _, ok := byAgents[k]; !ok {
			counts = append(counts, k)
		}
		byAgents[k] = append(byAgents[k], i)
	}
	for _, k := range counts {
		idx := byAgents[k]
		part := make([]*env.Instance, len(idx))
		for j, i := range idx {
			part[j] = ins[i]
		}
		ro, err := p.Play(part, 1, 0, seed)
		if err != nil {
			return err
		}
		if len(ro.Episodes) != len(part) {
			return fmt.Errorf("policy %s played %d episodes for %d instances", p.Name(), len(ro.Episodes), len(part))
		}
		for j, i := range idx {
			eps[i] = ro.Episodes[j]
		}
	}
	return nil
}

// OutcomeOf is the outcome of the verifier's report rep on in, under its
// content hash (ComputeID, its id for generated instances): valid,
// optimal (only when valid) and, for an invalid answer, each failure
// category once, in env.Category order.
func OutcomeOf(in *env.Instance, rep *env.Report) report.Outcome {
	o := report.Outcome{InstanceID: in.ComputeID(), Agents: len(in.Agents), Size: in.Width, Valid: rep.Valid, Optimal: rep.Valid && rep.Optimal}
	if !rep.Valid {
		for c, n := range rep.Categories() {
			if n > 0 {
				o.Failed = append(o.Failed, env.Category(c).String())
			}
		}
	}
	return o
}

// InstanceSeed derives an instance's seed from a run seed and the
// instance's id: the first 8 bytes (little endian) of the SHA-256 of the
// seed (8 bytes, little endian) followed by the id.
func InstanceSeed(seed uint64, id string) uint64 {
	h := sha256.New()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(id))
	return binary.LittleEndian.Uint64(h.Sum(nil)[:8])
}
