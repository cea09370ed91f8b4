package actors

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Cluster tests: a coordinator node and rollout nodes, each its own process
// on 127.0.0.1, driven by the parent test over the children's stdin. A
// rollout node is killed mid-stage; its units come back by lease expiry
// (the coordinator's ManualClock is advanced by command) or by NodeLeft.

// clusterResult is what the coordinator child prints after Run.
type clusterResult struct {
	Report RunReport
	Err    string
}

func TestClusterRolloutNodeDiesLeaseExpires(t *testing.T) {
	clusterNodeDies(t, "ADVANCE 2m")
}

func TestClusterRolloutNodeDiesNodeLeft(t *testing.T) {
	clusterNodeDies(t, "NODELEFT b1")
}

func clusterNodeDies(t *testing.T, recover string) {
	coord := remStart(t, "cluster-coord")
	addr := coord.expect("COORD-ADDRESS ")
	b1 := remStart(t, "cluster-rollout", "T2T_COORD="+addr, "T2T_NODE=b1", "T2T_BLOCK=1")
	b1.expect("ROLLOUT-READY")
	coord.send("RUN 2")
	lost := b1.expect("STARTED ") // b1 holds units and never finishes them
	b2 := remStart(t, "cluster-rollout", "T2T_COORD="+addr, "T2T_NODE=b2")
	b2.expect("ROLLOUT-READY")
	b1.kill()
	coord.send(recover)
	var res clusterResult
	if err := json.Unmarshal([]byte(coord.expect("REPORT ")), &res); err != nil {
		t.Fatal(err)
	}
	if res.Err != "" {
		t.Fatalf("run: %s", res.Err)
	}
	rep := res.Report
	if len(rep.Stages) != 2 || rep.Stages[0].Completed != 12 || rep.Stages[1].Completed != 12 || rep.Stages[0].Reissued < 1 {
		t.Fatalf("stages %+v (lost unit %s)", rep.Stages, lost)
	}
	// Every unit counted once, every unit's groups learned from once.
	if rep.Coordinator.Completed != 24 || rep.Learner.Groups != 48 || rep.Learner.Used != 48 {
		t.Fatalf("coordinator %+v learner %+v", rep.Coordinator, rep.Learner)
	}
	if rep.Node.Wire.Decoded == 0 || rep.Node.Wire.Unknown+rep.Node.Wire.Corrupt+rep.Node.Wire.Version != 0 {
		t.Fatalf("coordinator node wire %+v", rep.Node.Wire)
	}
	b2.finish()
	coord.finish()
}

// clusterCoordChild runs the coordinator, learner and engineer (no local
// rollouts) behind a remote listener, with a ManualClock. Commands on stdin:
// RUN <stages>, ADVANCE <duration> (then a Tick), NODELEFT <node>.
func clusterCoordChild(t *testing.T) {
	clk := NewManualClock(coordT0)
	cfg := sysConfig(clk)
	cfg.Listen, cfg.Rollouts, cfg.Node = "127.0.0.1:0", 0, "coord"
	cfg.UnitsPerStage, cfg.LearnerBatch, cfg.StalenessK = 12, 4, 1<<40
	s, err := NewLocal(cfg, &sysRunner{}, &sysUpdater{}, &sysProposer{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	os.Stdout.WriteString("COORD-ADDRESS " + s.Host().Address() + "\n")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		switch cmd {
		case "RUN":
			stages, err := strconv.Atoi(arg)
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				rep, err := s.Run(ctx, stages)
				res := clusterResult{Report: rep}
				if err != nil {
					res.Err = err.Error()
				}
				b, _ := json.Marshal(res)
				os.Stdout.Write(append([]byte("REPORT "), append(b, '\n')...))
			}()
		case "ADVANCE":
			d, err := time.ParseDuration(arg)
			if err != nil {
				t.Fatal(err)
			}
			clk.Advance(d)
			s.Tick()
		case "NODELEFT":
			s.NodeLeft(arg)
		default:
			t.Fatalf("unknown command %q", in.Text())
		}
	}
}

// clusterBlockingRunner announces each unit and holds it until cancelled.
type clusterBlockingRunner struct{}

func (clusterBlockingRunner) RunUnit(ctx context.Context, u WorkUnit) (UnitDone, error) {
	os.Stdout.WriteString("STARTED " + u.UnitID + "\n")
	<-ctx.Done()
	return UnitDone{}, ctx.Err()
}

// clusterRolloutChild runs one rollout node (name T2T_NODE) against the
// coordinator node at T2T_COORD until stdin closes. With T2T_BLOCK=1 its
// runner never finishes a unit.
func clusterRolloutChild(t *testing.T) {
	coord, node := os.Getenv("T2T_COORD"), os.Getenv("T2T_NODE")
	n := NewHost(node, wireRegistry(t), testLogger(t))
	defer n.Close()
	if err := n.StartRemote("127.0.0.1", 0); err != nil {
		t.Fatal(err)
	}
	var runner Runner = &sysRunner{groupsPU: 2}
	if os.Getenv("T2T_BLOCK") == "1" {
		runner = clusterBlockingRunner{}
	}
	h, err := n.SpawnRollout(RolloutConfig{Name: "rollout-0", Coordinator: actor.NewPID(coord, CoordinatorName),
		Learner: actor.NewPID(coord, LearnerName), MaxInFlight: 2}, runner)
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("ROLLOUT-READY\n")
	io.Copy(io.Discard, os.Stdin)
	if err := n.System().Root.StopFuture(h.PID).Wait(); err != nil {
		t.Fatal(err)
	}
	t.Logf("rollout %s: %+v", node, h.Stats())
}
