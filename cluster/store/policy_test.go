package store

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"testing"
)

// storeTestPolicies: a spec, a flow and a nodes record read back as written (last writer
// wins); versions publish with their weights; only the newest KeepPolicies weights stay; a
// version without weights moves latest only; absent records and bad input are typed errors.
func storeTestPolicies(t *testing.T, open storeOpener) {
	s := open(t, Options{})
	ctx := context.Background()
	if _, err := s.Spec(ctx, "r1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Spec of a run without one: %v, want ErrNotFound", err)
	}
	if _, err := s.LatestPolicy(ctx, "r1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LatestPolicy before any: %v, want ErrNotFound", err)
	}
	for _, spec := range []string{`{"a":1}`, `{"a":2}`} {
		if err := s.PutSpec(ctx, "r1", []byte(spec)); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Spec(ctx, "r1"); err != nil || string(got) != spec {
			t.Fatalf("Spec = %q, %v; want %q", got, err, spec)
		}
	}
	weights := func(v int64) []byte { return []byte("w" + strconv.FormatInt(v, 10)) }
	last := int64(KeepPolicies + 2)
	for v := int64(0); v <= last; v++ {
		if err := s.PublishPolicy(ctx, "r1", v, weights(v)); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := s.LatestPolicy(ctx, "r1"); err != nil || v != last {
		t.Fatalf("LatestPolicy = %d, %v; want %d", v, err, last)
	}
	for v := int64(0); v <= last; v++ {
		got, err := s.PolicyWeights(ctx, "r1", v)
		kept := v > last-KeepPolicies
		switch {
		case kept && (err != nil || !bytes.Equal(got, weights(v))):
			t.Errorf("PolicyWeights(%d) = %q, %v; want %q", v, got, err, weights(v))
		case !kept && !errors.Is(err, ErrNotFound):
			t.Errorf("PolicyWeights(%d) of a dropped version: %q, %v; want ErrNotFound", v, got, err)
		}
	}
	if err := s.PublishPolicy(ctx, "r1", last+1, nil); err != nil {
		t.Fatal(err)
	}
	if v, err := s.LatestPolicy(ctx, "r1"); err != nil || v != last+1 {
		t.Fatalf("LatestPolicy after a weightless version = %d, %v", v, err)
	}
	if _, err := s.PolicyWeights(ctx, "r1", last+1); !errors.Is(err, ErrNotFound) {
		t.Errorf("weights of a weightless version: %v, want ErrNotFound", err)
	}
	if _, err := s.Flow(ctx, "r1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Flow before any: %v, want ErrNotFound", err)
	}
	if err := s.PutFlow(ctx, "r1", []byte(`{"f":1}`)); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Flow(ctx, "r1"); err != nil || string(got) != `{"f":1}` {
		t.Errorf("Flow = %q, %v", got, err)
	}
	if _, err := s.Nodes(ctx, "r1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Nodes before any: %v, want ErrNotFound", err)
	}
	for _, rec := range []string{`{"n":1}`, `{"n":2}`} { // last writer wins
		if err := s.PutNodes(ctx, "r1", []byte(rec)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.Nodes(ctx, "r1"); err != nil || string(got) != `{"n":2}` {
		t.Errorf("Nodes = %q, %v", got, err)
	}
	if err := s.PutNodes(ctx, "bad run id!", nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("PutNodes with a bad run id: %v, want ErrInvalid", err)
	}
	if err := s.PutSpec(ctx, "bad run id!", nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("PutSpec with a bad run id: %v, want ErrInvalid", err)
	}
	if err := s.PublishPolicy(ctx, "r1", -1, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("PublishPolicy(-1): %v, want ErrInvalid", err)
	}
}
