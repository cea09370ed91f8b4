package actors

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// benchRunner does the trivial work of a unit (benchGroups groups of two
// samples, hashed from the seed).
type benchRunner struct{}

const benchGroups = 2

func (benchRunner) RunUnit(ctx context.Context, u WorkUnit) (UnitDone, error) {
	return sysTrivialUnit(u, benchGroups), nil
}

type benchUpdater struct{ v int64 }

func (u *benchUpdater) Update(ctx context.Context, groups []Group) (int64, error) {
	u.v++
	return u.v, nil
}

// BenchmarkPipeline runs b.N units through the local actor pipeline
// (coordinator, 2 rollouts with 8 credits each, learner with B=8) and,
// untimed, the same trivial work in a plain Go loop. Metrics: ns/unit of
// each and their ratio.
func BenchmarkPipeline(b *testing.B) {
	cfg := DefaultSystemConfig()
	cfg.Rollouts, cfg.MaxInFlight, cfg.UnitsPerStage, cfg.InstancesPerUnit = 2, 8, b.N, 4
	cfg.LearnerBatch, cfg.StalenessK, cfg.TickInterval = 8, 1<<40, 0
	s, err := NewLocal(cfg, benchRunner{}, &benchUpdater{}, &sysProposer{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ReportAllocs()
	b.ResetTimer()
	rep, err := s.Run(context.Background(), 1)
	b.StopTimer()
	if err != nil || rep.Stages[0].Completed != b.N || rep.Learner.Groups != uint64(b.N*benchGroups) {
		b.Fatalf("%v %+v", err, rep)
	}
	pipeline := float64(b.Elapsed().Nanoseconds()) / float64(b.N)

	// The same work, no actors: generate each unit, run it, batch its
	// groups for the updater.
	start := time.Now()
	up, pending := &benchUpdater{}, make([]Group, 0, 16)
	for i := range b.N {
		u := WorkUnit{UnitID: "u", Seed: UnitSeed(1, 0, i), Lo: 4 * i, Hi: 4*i + 4, ConfigVersion: "stage-0"}
		d, _ := benchRunner{}.RunUnit(context.Background(), u)
		pending = append(pending, d.Groups...)
		for len(pending) >= 8 {
			up.Update(context.Background(), pending[:8])
			pending = append(pending[:0], pending[8:]...)
		}
	}
	plain := float64(time.Since(start).Nanoseconds()) / float64(b.N)
	b.ReportMetric(pipeline, "ns/unit")
	b.ReportMetric(plain, "plain-ns/unit")
	b.ReportMetric(pipeline/plain, "x-plain")
}

// BenchmarkSendLocal is the cost of one message from outside into an actor
// of the node (bounded mailbox, monitor, wire middleware on a local target).
func BenchmarkSendLocal(b *testing.B) {
	n := NewHost("bench", NewRegistry(), nil)
	defer n.Close()
	done := make(chan struct{})
	count, want := 0, b.N
	pid, err := n.Root().SpawnNamed(n.Props("sink", 1024, func() actor.Actor {
		return actorFunc(func(c actor.Context) {
			if _, ok := c.Message().(*PolicyVersion); ok {
				count++
				if count == want {
					close(done)
				}
			}
		})
	}), "sink")
	if err != nil {
		b.Fatal(err)
	}
	msg := &PolicyVersion{Version: 1}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		n.Root().Send(pid, msg)
	}
	<-done
}

// BenchmarkRequestReplyLocal is one request and its answer through a future.
func BenchmarkRequestReplyLocal(b *testing.B) {
	n := NewHost("bench", NewRegistry(), nil)
	defer n.Close()
	pid, err := n.Root().SpawnNamed(n.Props("echo", 64, func() actor.Actor {
		return actorFunc(func(c actor.Context) {
			if m, ok := c.Message().(*PolicyVersion); ok {
				c.Respond(m)
			}
		})
	}), "echo")
	if err != nil {
		b.Fatal(err)
	}
	msg := &PolicyVersion{Version: 1}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := n.Root().RequestFuture(pid, msg, 10*time.Second).Result(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWire is the msgpack encode+decode of a small control message and
// of a UnitDone carrying 8 groups × 4 samples × 64 tokens.
func BenchmarkWire(b *testing.B) {
	s := NewSerializer(wireRegistry(b))
	big := &UnitDone{UnitID: "run/s0/u1", Node: "n", Result: make([]byte, 64)}
	for g := range 8 {
		grp := Group{InstanceID: "inst", Seed: uint64(g), PolicyVersion: 3, ConfigVersion: "v"}
		for range 4 {
			smp := Sample{Tokens: make([]int32, 64), LogProbs: make([]float32, 64), Reward: 1, Valid: true}
			for i := range smp.Tokens {
				smp.Tokens[i], smp.LogProbs[i] = int32(i*37%500), -float32(i)/64
			}
			grp.Samples = append(grp.Samples, smp)
		}
		big.Groups = append(big.Groups, grp)
	}
	for _, c := range []struct {
		name string
		msg  any
	}{{"RequestWork", &RequestWork{Node: "node-1", Credits: 1}}, {"UnitDone-8x4x64", big}} {
		b.Run(c.name, func(b *testing.B) {
			name, _ := s.GetTypeName(c.msg)
			enc, _ := s.Serialize(c.msg)
			b.SetBytes(int64(len(enc)))
			b.ReportAllocs()
			for range b.N {
				p, err := s.Serialize(c.msg)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Deserialize(name, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
