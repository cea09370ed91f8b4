package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/gridnet"
	"github.com/t2t-lab/t2t/learner/hfmodel"
)

// TestOpenRegistry: this test binary links no engine package, so Open says which engine is
// missing; a bad Spec is refused before the lookup; a registered Opener gets the Spec and the
// directory as given; Register refuses unknown kinds, incomplete Openers and a second
// registration.
func TestOpenRegistry(t *testing.T) {
	ctx := context.Background()
	if _, err := Open(ctx, Spec{}, "/nowhere"); !errors.Is(err, ErrEngineNotLinked) || !strings.Contains(err.Error(), GoMLX) {
		t.Fatalf("Open with no engine linked: %v, want ErrEngineNotLinked naming gomlx", err)
	}
	if _, err := NewRandom(ctx, Spec{Kind: Torch}, hfmodel.Config{}, 1); !errors.Is(err, ErrEngineNotLinked) {
		t.Fatalf("NewRandom with no engine linked: %v, want ErrEngineNotLinked", err)
	}
	var fe *fielderr.Error
	if _, err := Open(ctx, Spec{Kind: Torch, Device: "tpu"}, "/nowhere"); !errors.As(err, &fe) || fe.Field != "device" {
		t.Fatalf("Open with a bad device: %v, want a *fielderr.Error on device", err)
	}
	if _, err := Open(ctx, Spec{Kind: "jax"}, "/nowhere"); !errors.Is(err, ErrUnknownEngine) {
		t.Fatalf("Open of an unknown engine: %v, want ErrUnknownEngine", err)
	}

	var opened, drawn []string
	Register(Torch, Opener{
		Open: func(_ context.Context, s Spec, dir string) (Model, error) {
			opened = append(opened, s.Device+" "+dir)
			return nil, nil
		},
		Random: func(_ context.Context, s Spec, cfg hfmodel.Config, seed uint64) (Model, error) {
			drawn = append(drawn, s.Device)
			return nil, nil
		},
	})
	if _, err := Open(ctx, Spec{Kind: Torch, Device: "cuda:1"}, "/ck"); err != nil || len(opened) != 1 || opened[0] != "cuda:1 /ck" {
		t.Fatalf("Open through the registered torch Opener: err %v, calls %q", err, opened)
	}
	if _, err := NewRandom(ctx, Spec{Kind: Torch}, hfmodel.Config{}, 7); err != nil || len(drawn) != 1 {
		t.Fatalf("NewRandom through the registered torch Opener: err %v, calls %q", err, drawn)
	}
	if _, err := Open(ctx, Spec{}, "/ck"); !errors.Is(err, ErrEngineNotLinked) {
		t.Fatalf("gomlx is still not linked: %v", err)
	}

	full := Opener{Open: func(context.Context, Spec, string) (Model, error) { return nil, nil },
		Random: func(context.Context, Spec, hfmodel.Config, uint64) (Model, error) { return nil, nil }}
	for name, reg := range map[string]func(){
		"unknown kind":    func() { Register("jax", full) },
		"no Random":       func() { Register(GoMLX, Opener{Open: full.Open}) },
		"twice (torch)":   func() { Register(Torch, full) },
		"no Open (gomlx)": func() { Register(GoMLX, Opener{Random: full.Random}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register %s did not panic", name)
				}
			}()
			reg()
		}()
	}
}

// TestGridnetNewWithoutBackend: gridnet's registry answers the same way. This test binary
// links no gridnet backend (learner/gridnet/gomlxnet), so gridnet.New says so with a typed
// error, after checking the config.
func TestGridnetNewWithoutBackend(t *testing.T) {
	cfg := gridnet.Config{ObsSize: 10, Hidden: []int{4}, Seed: 1}
	if _, err := gridnet.New("cpu", cfg, learner.DefaultGRPOConfig()); !errors.Is(err, gridnet.ErrNoBackend) || !strings.Contains(err.Error(), `"cpu"`) {
		t.Fatalf("gridnet.New with no backend linked: %v, want ErrNoBackend naming the device", err)
	}
	var fe *fielderr.Error
	if _, err := gridnet.New("cpu", gridnet.Config{}, learner.DefaultGRPOConfig()); !errors.As(err, &fe) || fe.Field != "Config.ObsSize" {
		t.Fatalf("gridnet.New with a bad config: %v, want the config's *fielderr.Error first", err)
	}
}
