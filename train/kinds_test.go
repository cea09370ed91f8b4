package train

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/textpolicy"
)

// TestPolicyKinds: the kind table answers what the flags and the run ask of a kind (the
// default learning rate, whether it is an LLM, which --policy values are taken), the help
// names every kind --policy takes, and an unknown or node-only kind is refused naming the
// choices.
func TestPolicyKinds(t *testing.T) {
	for _, c := range []struct {
		kind       string
		lr         float64
		llm, takes bool
	}{
		{PolicyGridNet, learner.DefaultLR, false, true},
		{PolicyQwen3, textpolicy.DefaultLR, true, true},
		{PolicyScripted, learner.DefaultLR, false, true},
		{EndpointPolicyName, learner.DefaultLR, true, false},
		{"gpt", learner.DefaultLR, false, false},
	} {
		if got := DefaultLR(c.kind); got != c.lr {
			t.Errorf("DefaultLR(%q) = %g, want %g", c.kind, got, c.lr)
		}
		if got := IsLLM(c.kind); got != c.llm {
			t.Errorf("IsLLM(%q) = %v", c.kind, got)
		}
		err := CheckPolicyKind(c.kind)
		var fe *fielderr.Error
		switch {
		case c.takes && err != nil:
			t.Errorf("CheckPolicyKind(%q): %v", c.kind, err)
		case !c.takes && (!errors.As(err, &fe) || fe.Flag != "policy" || !strings.Contains(fe.Reason, "gridnet, qwen3, scripted")):
			t.Errorf("CheckPolicyKind(%q) = %v, want an error about --policy listing the kinds", c.kind, err)
		}
		if c.takes && !strings.Contains(PolicyHelp(), c.kind+" (") {
			t.Errorf("--policy help %q does not describe %s", PolicyHelp(), c.kind)
		}
	}
	if textpolicy.DefaultLR != 1e-6 || learner.DefaultLR != 1e-3 || learner.DefaultGRPOConfig().LR != learner.DefaultLR {
		t.Errorf("defaults: textpolicy %g, learner %g (config %g)", textpolicy.DefaultLR, learner.DefaultLR, learner.DefaultGRPOConfig().LR)
	}
}

// TestPolicyCapabilities: what the run asks a policy through its interfaces, per kind — a
// gridnet and a scripted policy describe themselves to rollout nodes and follow published
// versions (the gridnet through its weights), only a scripted policy evaluates instance by
// instance — and a rollout node refuses a spec of a kind that does not run on nodes.
func TestPolicyCapabilities(t *testing.T) {
	ctx := context.Background()
	grid, _, err := NewPolicy(ctx, PolicySpec{Kind: PolicyGridNet, Hidden: []int{8}, GroupSize: 2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	scripted, _, err := NewPolicy(ctx, PolicySpec{Kind: PolicyScripted, MistakeRate: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	opt := Options{RunID: "kinds", Seed: 3, GroupSize: 2}
	gs, err := SpecOf(opt, grid)
	if err != nil || gs.GridNet == nil || gs.Rollout == nil || gs.GridNet.Hidden[0] != 8 {
		t.Fatalf("gridnet spec %+v, %v", gs, err)
	}
	ss, err := SpecOf(opt, scripted)
	if err != nil || ss.MistakeRate != 0.25 || ss.GridNet != nil {
		t.Fatalf("scripted spec %+v, %v", ss, err)
	}
	if evalOptions(scripted, 1).PerInstance != true || evalOptions(grid, 1).PerInstance != false {
		t.Error("only the scripted policy evaluates per instance")
	}

	// A node's copy of the gridnet follows a version through its published weights.
	copyPol, err := gs.NewPolicy("cpu", "")
	if err != nil {
		t.Fatal(err)
	}
	w, err := grid.(weightsPublisher).encodeWeights()
	if err != nil {
		t.Fatal(err)
	}
	if err := copyPol.(follower).follow(5, func() ([]byte, error) { return w, nil }); err != nil || copyPol.Version() != 5 {
		t.Fatalf("gridnet follow: version %d, %v", copyPol.Version(), err)
	}
	if got, want := copyPol.(*GridPolicy).Net.Config(), grid.(*GridPolicy).Net.Config(); got.Seed != want.Seed || len(got.Hidden) != len(want.Hidden) {
		t.Fatalf("copy config %+v, want %+v", got, want)
	}
	gone := errors.New("pruned")
	if err := copyPol.(follower).follow(6, func() ([]byte, error) { return nil, gone }); !errors.Is(err, gone) || copyPol.Version() != 5 {
		t.Fatalf("gridnet follow without weights: version %d, %v", copyPol.Version(), err)
	}
	if err := scripted.(follower).follow(9, nil); err != nil || scripted.Version() != 9 {
		t.Fatalf("scripted follow: version %d, %v", scripted.Version(), err)
	}

	// A node's endpoint policy samples each version under the spec's model prefix.
	es := RunSpec{RunID: "r", Policy: EndpointPolicyName, GroupSize: 2, Endpoint: "http://127.0.0.1:1/v1", Model: "t2t", ModelPrefix: "t2t-v"}
	ep, err := es.NewPolicy("cpu", "")
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := ep.(*EndpointPolicy); !ok || e.ModelPrefix != "t2t-v" {
		t.Fatalf("endpoint spec built %#v, want an EndpointPolicy with the model prefix", ep)
	}
	if err := ep.(follower).follow(4, nil); err != nil || ep.Version() != 4 {
		t.Fatalf("endpoint follow: version %d, %v", ep.Version(), err)
	}
	for _, s := range []RunSpec{{RunID: "r", Policy: PolicyQwen3}, {RunID: "r", Policy: "gpt"}, {RunID: "r", Policy: PolicyGridNet}} {
		if _, err := s.NewPolicy("cpu", ""); !errors.Is(err, ErrOptions) {
			t.Errorf("spec %+v on a node: %v, want ErrOptions", s, err)
		}
	}
}
