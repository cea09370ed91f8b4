package env

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

func TestParallelRangeCoversOnceAndReportsProgress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ n, workers int }{{0, 3}, {1, 1}, {37, 2}, {100, 0}, {16, 8}} {
		hits := make([]atomic.Int32, tc.n)
		var last int
		err := ParallelRange(tc.n, tc.workers, func(done int) {
			if done <= last || done > tc.n {
				t.Errorf("n=%d: progress %d after %d", tc.n, done, last)
			}
			last = done
		}, func(lo, hi int) error {
			for i := lo; i < hi; i++ {
				hits[i].Add(1)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := range hits {
			if hits[i].Load() != 1 {
				t.Fatalf("n=%d: item %d ran %d times", tc.n, i, hits[i].Load())
			}
		}
		if tc.n > 0 && last != tc.n {
			t.Fatalf("n=%d: final progress %d", tc.n, last)
		}
	}
}

func TestParallelRangeStopsOnError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	var chunks atomic.Int32
	err := ParallelRange(1000, 1, nil, func(lo, hi int) error {
		chunks.Add(1)
		if lo >= 32 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || chunks.Load() != 3 {
		t.Fatalf("err %v after %d chunks, want boom after 3", err, chunks.Load())
	}
}

func TestGenerateAllMatchesGenerate(t *testing.T) {
	t.Parallel()
	cfg := DefaultLocalConfig()
	cfg.Instances = 40
	want, err := Generate(cfg, 7, 0, cfg.Instances)
	if err != nil {
		t.Fatal(err)
	}
	got, err := GenerateAll(cfg, 7, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got, want, func(a, b *Instance) bool { return a.ID == b.ID }) {
		t.Fatal("parallel generation differs from Generate")
	}
}

func TestReadInstancesNamesTheLine(t *testing.T) {
	t.Parallel()
	cfg := DefaultLocalConfig()
	cfg.Instances = 3
	ins, err := GenerateAll(cfg, 1, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := EncodeJSONL(ins)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadInstances(strings.NewReader("\n" + string(b)))
	if err != nil || len(got) != 3 || got[2].ID != ins[2].ID {
		t.Fatalf("read back %d instances, %v", len(got), err)
	}
	_, err = ReadInstances(strings.NewReader(string(b) + `{"width":"x"}` + "\n"))
	var le *LineError
	if !errors.As(err, &le) || le.Line != 4 || !strings.Contains(err.Error(), `field "width"`) {
		t.Fatalf("error %v, want line 4 naming field width", err)
	}
}

func TestDrawFormats(t *testing.T) {
	t.Parallel()
	cfg := DefaultLocalConfig()
	cfg.Instances = 1
	ins, err := GenerateAll(cfg, 5, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{FormatASCII, "SVG", FormatPNG} {
		b, err := Draw(ins[0], nil, f, 16)
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: %d bytes, %v", f, len(b), err)
		}
	}
	var fe *FieldError
	if _, err := Draw(ins[0], nil, "gif", 16); !errors.As(err, &fe) || fe.Field != "format" {
		t.Fatalf("gif: %v, want a format FieldError", err)
	}
}

func TestInstanceJSONNamesTheFieldAtFault(t *testing.T) {
	t.Parallel()
	cfg := DefaultLocalConfig()
	cfg.Instances = 1
	ins, err := GenerateAll(cfg, 11, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := SolveRecords([]Record{{Line: 1, Instance: ins[0]}}, SolveOptions{}, 1, nil); err != nil {
		t.Fatal(err)
	}
	good, err := json.Marshal(ins[0])
	if err != nil {
		t.Fatal(err)
	}
	var back Instance
	if err := json.Unmarshal(good, &back); err != nil {
		t.Fatalf("a solved instance with its optimal paths: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(good, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "id")
	paths := m["paths"].([]any)
	p0 := paths[0].([]any)
	paths[0] = append([]any{p0[0]}, append([]any{[]any{99, 99}}, p0[1:]...)...) // a jump out of the grid
	for _, tc := range []struct {
		name, field string
		mutate      func(map[string]any)
	}{
		{"paths", "paths", func(m map[string]any) { m["paths"] = paths }},
		{"height", "height", func(m map[string]any) { m["height"] = 100000 }},
		{"position", "position", func(m map[string]any) {
			m["agents"] = []any{map[string]any{"start": []any{0.5, 0}, "goal": []any{0, 0}}}
		}},
	} {
		c := map[string]any{}
		for k, v := range m {
			c[k] = v
		}
		tc.mutate(c)
		b, _ := json.Marshal(c)
		var in Instance
		err := json.Unmarshal(b, &in)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: %v, want a FieldError on %q", tc.name, err, tc.field)
		}
	}
}
