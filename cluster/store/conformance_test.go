package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// storeOpener opens a fresh, empty Store on one implementation; opt carries
// the test's settings and the opener fills in URL and Prefix.
type storeOpener func(t *testing.T, opt Options) *Store

// runConformance is the one suite every implementation (embedded
// miniredis, real redis-server) must pass.
func runConformance(t *testing.T, open storeOpener) {
	t.Run("AggregatesExact", func(t *testing.T) { storeTestAggregates(t, open) })
	t.Run("ConcurrentDuplicates", func(t *testing.T) { storeTestConcurrent(t, open) })
	t.Run("AmbiguousFailure", func(t *testing.T) { storeTestAmbiguous(t, open) })
	t.Run("ExamplesBounded", func(t *testing.T) { storeTestExamples(t, open) })
	t.Run("Configs", func(t *testing.T) { storeTestConfigs(t, open) })
	t.Run("Audit", func(t *testing.T) { storeTestAudit(t, open) })
	t.Run("Checkpoints", func(t *testing.T) { storeTestCheckpoints(t, open) })
	t.Run("RunState", func(t *testing.T) { storeTestRunState(t, open) })
	t.Run("SpecAndPolicies", func(t *testing.T) { storeTestPolicies(t, open) })
	t.Run("InvalidInput", func(t *testing.T) { storeTestInvalid(t, open) })
}

func storeCheckAgg(t *testing.T, s *Store, run string, stage int, split string, want map[Key]Counts, wantUnits int64) {
	t.Helper()
	ctx := context.Background()
	got, err := s.Aggregates(ctx, run, stage, split)
	if err != nil {
		t.Fatalf("Aggregates(%s, %d, %s): %v", run, stage, split, err)
	}
	if !reflect.DeepEqual(got, want) {
		for k := range want {
			if !reflect.DeepEqual(got[k], want[k]) {
				t.Errorf("bucket %+v: got %+v, want %+v", k, got[k], want[k])
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("unexpected bucket %+v: %+v", k, got[k])
			}
		}
		t.FailNow()
	}
	n, err := s.UnitsApplied(ctx, run, stage, split)
	if err != nil || n != wantUnits {
		t.Fatalf("UnitsApplied(%s, %d, %s) = %d, %v; want %d", run, stage, split, n, err, wantUnits)
	}
}

func storeTestAggregates(t *testing.T, open storeOpener) {
	s := open(t, Options{})
	ctx := context.Background()
	rng, _ := storeRNG(t)
	type cell struct {
		stage int
		split string
	}
	cells := []cell{{0, "train"}, {0, "val"}, {1, "train"}, {0, "eval:a3"}}
	sums := map[cell]map[Key]*storeSum{}
	units := map[cell]int64{}
	seen := map[string]bool{}
	var ids []string
	for i := range 120 {
		c := cells[rng.IntN(len(cells))]
		id := fmt.Sprintf("u%03d", i)
		if len(ids) > 0 && rng.IntN(4) == 0 {
			// A redelivery of an earlier unit, with different content:
			// the first delivery wins.
			id = ids[rng.IntN(len(ids))]
		}
		key := fmt.Sprintf("%d/%s/%s", c.stage, c.split, id)
		u := storeRandUnit(rng, "run-agg", c.stage, c.split, id)
		applied, err := s.RecordUnit(ctx, u)
		if err != nil {
			t.Fatalf("RecordUnit %s: %v", key, err)
		}
		if applied == seen[key] {
			t.Fatalf("RecordUnit %s: applied = %v, already seen = %v", key, applied, seen[key])
		}
		if applied {
			seen[key] = true
			ids = append(ids, id)
			if sums[c] == nil {
				sums[c] = map[Key]*storeSum{}
			}
			storeAdd(sums[c], u)
			units[c]++
		}
	}
	for _, c := range cells {
		storeCheckAgg(t, s, "run-agg", c.stage, c.split, storeExpected(sums[c]), units[c])
	}
	// Other runs, stages and splits are untouched.
	storeCheckAgg(t, s, "run-other", 0, "train", map[Key]Counts{}, 0)
	storeCheckAgg(t, s, "run-agg", 7, "eval:b", map[Key]Counts{}, 0)
}

func storeTestConcurrent(t *testing.T, open storeOpener) {
	s := open(t, Options{})
	ctx := context.Background()
	rng, seed := storeRNG(t)
	const workers, nUnits = 8, 48
	units := make([]UnitResult, nUnits)
	sum := map[Key]*storeSum{}
	for i := range units {
		units[i] = storeRandUnit(rng, "run-conc", 2, "train", fmt.Sprintf("unit-%d", i))
		storeAdd(sum, units[i])
	}
	// Every worker delivers an overlapping share of the units (each unit
	// reaches 2..8 workers), in its own order.
	var applied sync.Map
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)+1))
			for _, i := range r.Perm(nUnits) {
				if w >= 2 && r.IntN(2) == 0 {
					continue
				}
				ok, err := s.RecordUnit(ctx, units[i])
				if err != nil {
					errs <- err
					return
				}
				if ok {
					if _, dup := applied.LoadOrStore(i, w); dup {
						errs <- fmt.Errorf("unit %d applied twice", i)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range nUnits {
		if _, ok := applied.Load(i); !ok {
			t.Fatalf("unit %d never applied", i)
		}
	}
	storeCheckAgg(t, s, "run-conc", 2, "train", storeExpected(sum), nUnits)
}

func storeTestExamples(t *testing.T, open storeOpener) {
	const max = 10
	s := open(t, Options{MaxExamples: max})
	ctx := context.Background()
	long := strings.Repeat("é", 1500) // 3000 bytes, two per rune
	var all []Example
	for i := range 7 {
		u := UnitResult{RunID: "run-ex", Stage: 0, Split: "train", UnitID: fmt.Sprintf("u%d", i), PolicyVersion: int64(i), ConfigVersion: "c0"}
		for j := range 3 {
			e := Example{InstanceID: fmt.Sprintf("i%d-%d", i, j), Size: 4, Agents: 2, Category: CatConflict,
				Detail: "vertex conflict", Answer: fmt.Sprintf("answer %d %d ", i, j) + long,
				UnitID: "ignored", PolicyVersion: 99}
			u.Examples = append(u.Examples, e)
			e.UnitID, e.PolicyVersion, e.ConfigVersion = u.UnitID, u.PolicyVersion, u.ConfigVersion
			all = append(all, e)
		}
		if ok, err := s.RecordUnit(ctx, u); !ok || err != nil {
			t.Fatalf("RecordUnit %d: %v %v", i, ok, err)
		}
		// A duplicate adds no examples.
		if ok, err := s.RecordUnit(ctx, u); ok || err != nil {
			t.Fatalf("duplicate RecordUnit %d: %v %v", i, ok, err)
		}
	}
	key := s.stageKey("run-ex", 0, "train", "examples")
	if n, err := s.rdb.XLen(ctx, key).Result(); err != nil || n != max {
		t.Fatalf("XLEN %s = %d, %v; want %d", key, n, err, max)
	}
	got, err := s.Examples(ctx, "run-ex", 0, "train", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := all[len(all)-max:]
	if len(got) != len(want) {
		t.Fatalf("Examples: %d, want %d", len(got), len(want))
	}
	for i := range want {
		w := want[i]
		if len(got[i].Answer) > MaxExampleText || !utf8.ValidString(got[i].Answer) || !strings.HasPrefix(w.Answer, got[i].Answer) || len(got[i].Answer) < MaxExampleText-1 {
			t.Fatalf("example %d answer not truncated on a rune boundary to %d bytes: %d bytes", i, MaxExampleText, len(got[i].Answer))
		}
		w.Answer = got[i].Answer
		if got[i] != w {
			t.Fatalf("example %d = %+v, want %+v", i, got[i], w)
		}
	}
	last, err := s.Examples(ctx, "run-ex", 0, "train", 4)
	if err != nil || !slices.Equal(last, got[len(got)-4:]) {
		t.Fatalf("Examples(n=4) = %v, %v; want the 4 newest", last, err)
	}
	if none, err := s.Examples(ctx, "run-ex", 1, "train", 5); err != nil || len(none) != 0 {
		t.Fatalf("Examples of an empty stage = %v, %v", none, err)
	}
}

func storeTestConfigs(t *testing.T, open storeOpener) {
	s := open(t, Options{})
	ctx := context.Background()
	run := "run-cfg"
	if got, err := s.Configs(ctx, run); err != nil || len(got) != 0 {
		t.Fatalf("Configs of a new run = %v, %v", got, err)
	}
	if _, err := s.Config(ctx, run, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Config of a missing stage: %v, want ErrNotFound", err)
	}
	recs := map[int]ConfigRecord{}
	for _, st := range []int{2, 0, 3, 1} {
		rec := ConfigRecord{Stage: st, Version: fmt.Sprintf("v%d", st),
			JSON:     []byte(fmt.Sprintf(`{"sizes":[{"size":%d,"data_ratio":0.5,"note":"<&>"}],"agents":2}`, 3+st)),
			Proposer: "rules", Rationale: fmt.Sprintf("stage %d: more holes", st)}
		if err := s.PutConfig(ctx, run, rec); err != nil {
			t.Fatalf("PutConfig %d: %v", st, err)
		}
		recs[st] = rec
	}
	// Same version again (other rationale): a no-op, the first is kept.
	again := recs[1]
	again.Rationale = "retry"
	if err := s.PutConfig(ctx, run, again); err != nil {
		t.Fatalf("PutConfig same version: %v", err)
	}
	other := recs[1]
	other.Version = "v1-other"
	if err := s.PutConfig(ctx, run, other); !errors.Is(err, ErrConflict) {
		t.Fatalf("PutConfig other version: %v, want ErrConflict", err)
	}
	got, err := s.Configs(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	want := []ConfigRecord{recs[0], recs[1], recs[2], recs[3]}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Configs =\n%+v\nwant\n%+v", got, want)
	}
	if one, err := s.Config(ctx, run, 2); err != nil || !reflect.DeepEqual(one, recs[2]) {
		t.Fatalf("Config(2) = %+v, %v", one, err)
	}
	// Whitespace is compacted, content kept.
	spaced := ConfigRecord{Stage: 4, Version: "v4", JSON: []byte("{ \"a\" : [1, 2] }\n")}
	if err := s.PutConfig(ctx, run, spaced); err != nil {
		t.Fatal(err)
	}
	if one, err := s.Config(ctx, run, 4); err != nil || string(one.JSON) != `{"a":[1,2]}` {
		t.Fatalf("Config(4).JSON = %s, %v", one.JSON, err)
	}
}

func storeTestAudit(t *testing.T, open storeOpener) {
	s := open(t, Options{})
	ctx := context.Background()
	run := "run-audit"
	var want []AuditRecord
	for _, k := range [][2]int{{1, 0}, {0, 1}, {0, 0}, {1, 2}, {1, 1}} {
		a := AuditRecord{Stage: k[0], Attempt: k[1], PromptHash: fmt.Sprintf("h%d", k[0]),
			RawAnswer: `{"sizes": [...]} <think>hmm</think>`, Parsed: "{}", Projected: "{}",
			Accepted: k[1] == 2, Reason: "infeasible wait ratio"}
		if err := s.AppendAudit(ctx, run, a); err != nil {
			t.Fatal(err)
		}
		want = append(want, a)
	}
	if err := s.AppendAudit(ctx, run, want[0]); err != nil {
		t.Fatalf("identical AppendAudit again: %v", err)
	}
	changed := want[0]
	changed.Accepted = !changed.Accepted
	if err := s.AppendAudit(ctx, run, changed); !errors.Is(err, ErrConflict) {
		t.Fatalf("different AppendAudit for the same attempt: %v, want ErrConflict", err)
	}
	slices.SortFunc(want, func(a, b AuditRecord) int {
		if a.Stage != b.Stage {
			return a.Stage - b.Stage
		}
		return a.Attempt - b.Attempt
	})
	got, err := s.Audit(ctx, run)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Audit = %+v, %v\nwant %+v", got, err, want)
	}
}

func storeTestCheckpoints(t *testing.T, open storeOpener) {
	s := open(t, Options{})
	ctx := context.Background()
	run := "run-ckpt"
	if _, ok, err := s.LatestCheckpoint(ctx, run); ok || err != nil {
		t.Fatalf("LatestCheckpoint of a new run: %v %v", ok, err)
	}
	var want []CheckpointRecord
	for _, v := range []int64{3, 1, 10, 2} {
		c := CheckpointRecord{Version: v, Step: 100 * v, Path: fmt.Sprintf("/ckpt/v%d", v),
			SHA256: fmt.Sprintf("%064x", v*7919), ConfigVersion: "c1"}
		if err := s.PutCheckpoint(ctx, run, c); err != nil {
			t.Fatal(err)
		}
		want = append(want, c)
	}
	if err := s.PutCheckpoint(ctx, run, want[0]); err != nil {
		t.Fatalf("identical PutCheckpoint again: %v", err)
	}
	bad := want[0]
	bad.SHA256 = strings.Repeat("f", 64)
	if err := s.PutCheckpoint(ctx, run, bad); !errors.Is(err, ErrConflict) {
		t.Fatalf("different checkpoint for the same version: %v, want ErrConflict", err)
	}
	slices.SortFunc(want, func(a, b CheckpointRecord) int { return int(a.Version - b.Version) })
	got, err := s.Checkpoints(ctx, run)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Checkpoints = %+v, %v", got, err)
	}
	latest, ok, err := s.LatestCheckpoint(ctx, run)
	if err != nil || !ok || latest != want[len(want)-1] {
		t.Fatalf("LatestCheckpoint = %+v %v %v", latest, ok, err)
	}
}

func storeTestRunState(t *testing.T, open storeOpener) {
	s := open(t, Options{})
	ctx := context.Background()
	if runs, err := s.Runs(ctx); err != nil || len(runs) != 0 {
		t.Fatalf("Runs of an empty store = %v, %v", runs, err)
	}
	if _, ok, err := s.RunState(ctx, "run-b"); ok || err != nil {
		t.Fatalf("RunState of a missing run: %v %v", ok, err)
	}
	b := RunState{RunID: "run-b", Stage: 1, Phase: "rollout", PolicyVersion: 3, ConfigVersion: "c1", UpdatedUnixMs: 1700000000000}
	if err := s.PutRunState(ctx, b); err != nil {
		t.Fatal(err)
	}
	a := RunState{RunID: "run-a", Stage: 0, Phase: "engineer"}
	if err := s.PutRunState(ctx, a); err != nil {
		t.Fatal(err)
	}
	b.Stage, b.Phase, b.UpdatedUnixMs = 2, "learn", 1700000000500
	if err := s.PutRunState(ctx, b); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s.RunState(ctx, "run-b"); err != nil || !ok || got != b {
		t.Fatalf("RunState(run-b) = %+v %v %v; want %+v", got, ok, err, b)
	}
	got, ok, err := s.RunState(ctx, "run-a")
	if err != nil || !ok || got.UpdatedUnixMs <= 0 || got.Phase != "engineer" {
		t.Fatalf("RunState(run-a) = %+v %v %v; want UpdatedUnixMs filled in", got, ok, err)
	}
	if runs, err := s.Runs(ctx); err != nil || !slices.Equal(runs, []string{"run-a", "run-b"}) {
		t.Fatalf("Runs = %v, %v", runs, err)
	}
}

// storeTestInvalid checks that every kind of bad input fails with
// ErrInvalid and writes nothing.
func storeTestInvalid(t *testing.T, open storeOpener) {
	s := open(t, Options{})
	ctx := context.Background()
	good := func() UnitResult {
		return UnitResult{RunID: "run-x", Stage: 0, Split: "train", UnitID: "u1",
			Buckets: map[Key]Counts{
				{4, 2}: {Episodes: 5, Valid: 3, Optimal: 2, Categories: map[string]int64{CatHole: 2}, RewardSum: 1.5},
				{5, 2}: {Episodes: 5, Valid: 3, Optimal: 2, RewardSum: 1},
			},
			Examples: []Example{{InstanceID: "i", Size: 4, Agents: 2, Category: CatHole}}}
	}
	unit := func(f func(u *UnitResult)) func() error {
		return func() error { u := good(); f(&u); _, err := s.RecordUnit(ctx, u); return err }
	}
	bucket := func(f func(c *Counts)) func() error {
		return unit(func(u *UnitResult) { c := u.Buckets[Key{5, 2}]; f(&c); u.Buckets[Key{5, 2}] = c })
	}
	sha := strings.Repeat("a", 64)
	cases := map[string]func() error{
		"empty run":          unit(func(u *UnitResult) { u.RunID = "" }),
		"run with colon":     unit(func(u *UnitResult) { u.RunID = "a:b" }),
		"run with brace":     unit(func(u *UnitResult) { u.RunID = "a{b}" }),
		"long run":           unit(func(u *UnitResult) { u.RunID = strings.Repeat("r", MaxIDLen+1) }),
		"negative stage":     unit(func(u *UnitResult) { u.Stage = -1 }),
		"bad split":          unit(func(u *UnitResult) { u.Split = "test" }),
		"empty eval suite":   unit(func(u *UnitResult) { u.Split = "eval:" }),
		"bad eval suite":     unit(func(u *UnitResult) { u.Split = "eval:a:b" }),
		"empty unit":         unit(func(u *UnitResult) { u.UnitID = "" }),
		"negative policy":    unit(func(u *UnitResult) { u.PolicyVersion = -1 }),
		"bad key":            unit(func(u *UnitResult) { u.Buckets[Key{0, 2}] = Counts{} }),
		"unknown category":   bucket(func(c *Counts) { c.Categories = map[string]int64{"slip": 1} }),
		"category too big":   bucket(func(c *Counts) { c.Categories = map[string]int64{CatGoal: 3} }),
		"negative category":  bucket(func(c *Counts) { c.Categories = map[string]int64{CatGoal: -1} }),
		"negative episodes":  bucket(func(c *Counts) { c.Episodes = -1 }),
		"valid > episodes":   bucket(func(c *Counts) { c.Valid = 6 }),
		"optimal > valid":    bucket(func(c *Counts) { c.Optimal = 4 }),
		"NaN reward":         bucket(func(c *Counts) { c.RewardSum = math.NaN() }),
		"infinite reward":    bucket(func(c *Counts) { c.RewardSum = math.Inf(1) }),
		"example category":   unit(func(u *UnitResult) { u.Examples[0].Category = "" }),
		"example instance":   unit(func(u *UnitResult) { u.Examples[0].InstanceID = "" }),
		"example size":       unit(func(u *UnitResult) { u.Examples[0].Size = 0 }),
		"aggregates bad run": func() error { _, err := s.Aggregates(ctx, "", 0, "train"); return err },
		"units bad split":    func() error { _, err := s.UnitsApplied(ctx, "r", 0, "eval"); return err },
		"examples bad stage": func() error { _, err := s.Examples(ctx, "r", -2, "val", 1); return err },
		"config bad run":     func() error { return s.PutConfig(ctx, "a b", ConfigRecord{Version: "v", JSON: []byte("{}")}) },
		"config bad stage":   func() error { return s.PutConfig(ctx, "r", ConfigRecord{Stage: -1, Version: "v", JSON: []byte("{}")}) },
		"config no version":  func() error { return s.PutConfig(ctx, "r", ConfigRecord{JSON: []byte("{}")}) },
		"config bad json":    func() error { return s.PutConfig(ctx, "r", ConfigRecord{Version: "v", JSON: []byte("{")}) },
		"config empty json":  func() error { return s.PutConfig(ctx, "r", ConfigRecord{Version: "v"}) },
		"config get stage":   func() error { _, err := s.Config(ctx, "r", -1); return err },
		"configs bad run":    func() error { _, err := s.Configs(ctx, ""); return err },
		"audit bad attempt":  func() error { return s.AppendAudit(ctx, "r", AuditRecord{Attempt: -1}) },
		"audit bad stage":    func() error { return s.AppendAudit(ctx, "r", AuditRecord{Stage: -1}) },
		"audit bad utf8":     func() error { return s.AppendAudit(ctx, "r", AuditRecord{RawAnswer: "\xff"}) },
		"audit read bad run": func() error { _, err := s.Audit(ctx, "x/y"); return err },
		"ckpt bad sha":       func() error { return s.PutCheckpoint(ctx, "r", CheckpointRecord{Path: "p", SHA256: "abc"}) },
		"ckpt upper sha": func() error {
			return s.PutCheckpoint(ctx, "r", CheckpointRecord{Path: "p", SHA256: strings.ToUpper(sha)})
		},
		"ckpt no path":        func() error { return s.PutCheckpoint(ctx, "r", CheckpointRecord{SHA256: sha}) },
		"ckpt neg version":    func() error { return s.PutCheckpoint(ctx, "r", CheckpointRecord{Version: -1, Path: "p", SHA256: sha}) },
		"ckpt neg step":       func() error { return s.PutCheckpoint(ctx, "r", CheckpointRecord{Step: -1, Path: "p", SHA256: sha}) },
		"ckpt read bad run":   func() error { _, _, err := s.LatestCheckpoint(ctx, ""); return err },
		"state bad run":       func() error { return s.PutRunState(ctx, RunState{Phase: "p"}) },
		"state no phase":      func() error { return s.PutRunState(ctx, RunState{RunID: "r"}) },
		"state neg stage":     func() error { return s.PutRunState(ctx, RunState{RunID: "r", Phase: "p", Stage: -1}) },
		"state neg policy":    func() error { return s.PutRunState(ctx, RunState{RunID: "r", Phase: "p", PolicyVersion: -1}) },
		"state neg time":      func() error { return s.PutRunState(ctx, RunState{RunID: "r", Phase: "p", UpdatedUnixMs: -5}) },
		"state read bad run":  func() error { _, _, err := s.RunState(ctx, "r r"); return err },
		"unit bad config ver": unit(func(u *UnitResult) { u.ConfigVersion = strings.Repeat("c", MaxIDLen+1) }),
	}
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := cases[n](); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", n, err)
		}
	}
	if keys := storeKeys(t, s); len(keys) != 0 {
		t.Fatalf("invalid input wrote keys: %v", keys)
	}
	// The good unit itself is accepted, so the cases above failed for the
	// reason they name.
	if ok, err := s.RecordUnit(ctx, good()); !ok || err != nil {
		t.Fatalf("good unit: %v %v", ok, err)
	}
}
