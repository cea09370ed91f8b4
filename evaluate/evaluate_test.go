package evaluate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/report"
)

var seedFlag = flag.Uint64("seed", 0, "seed of the test player's mistakes (0: a fixed default)")

func testSeed(t *testing.T) uint64 {
	s := *seedFlag
	if s == 0 {
		s = 11
	}
	t.Logf("player seed %d (replay with -seed %d)", s, s)
	return s
}

// mistakePlayer answers each instance with its optimal plan, or, with
// probability rate (drawn from the seed of the Play call), with that plan
// cut short of the goal. It counts its calls.
type mistakePlayer struct {
	rate  float64
	mu    sync.Mutex
	calls [][]string
}

func (p *mistakePlayer) Name() string { return "mistakes" }

func (p *mistakePlayer) Play(ins []*env.Instance, groupSize int, _ float64, seed uint64) (*learner.Rollout, error) {
	p.mu.Lock()
	ids := make([]string, len(ins))
	for i, in := range ins {
		ids[i] = in.ID
	}
	p.calls = append(p.calls, ids)
	p.mu.Unlock()
	rng := rand.New(rand.NewPCG(seed, 1))
	ro := &learner.Rollout{}
	for _, in := range ins {
		sol, err := env.Solve(in, env.SolveOptions{})
		if err != nil {
			return nil, err
		}
		for range groupSize {
			plan := env.Plan{Paths: slices.Clone(sol.Plan.Paths)}
			if rng.Float64() < p.rate {
				plan.Paths[0] = plan.Paths[0][:1]
				if len(sol.Plan.Paths[0]) == 1 { // already on its goal: leave the grid instead
					plan.Paths[0] = append(plan.Paths[0], env.Pos{R: -1, C: plan.Paths[0][0].C})
				}
			}
			ep := learner.Episode{Instance: in, Plan: plan}
			env.Verify(in, &ep.Plan, &ep.Report)
			ro.Episodes = append(ro.Episodes, ep)
		}
	}
	return ro, nil
}

func quickSuite(t *testing.T, perSize int) *Suite {
	t.Helper()
	spec, err := env.SuiteSized(env.SuiteQuick, 2026, perSize)
	if err != nil {
		t.Fatal(err)
	}
	s, err := GenerateSuite(&spec, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func readCacheLines(t *testing.T, path string) []CacheLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []CacheLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l CacheLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("cache line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// errKilled simulates a kill after an acknowledged chunk.
var errKilled = errors.New("killed")

// TestEvalKillResume stops an evaluation after its first acknowledged
// chunk, tears the cache's last line, resumes, and checks that only the
// missing instances are played and the tables equal an uninterrupted run.
func TestEvalKillResume(t *testing.T) {
	seed := testSeed(t)
	suite := quickSuite(t, 4)
	opts := func(dir string, hooks Hooks) Options {
		return Options{Player: &mistakePlayer{rate: 0.3}, PolicyID: fmt.Sprintf("mistakes(seed=%d)", seed), Suite: suite, Dir: dir,
			Play: PlayOptions{Seed: seed, PerInstance: true}, Workers: 1, Hooks: hooks}
	}
	want, err := Run(context.Background(), opts(t.TempDir(), Hooks{}))
	if err != nil {
		t.Fatalf("uninterrupted run: %v", err)
	}
	if want.Total.Valid == 0 || want.Total.Valid == want.Total.Episodes {
		t.Fatalf("%d valid of %d: the comparison would not discriminate", want.Total.Valid, want.Total.Episodes)
	}

	dir := t.TempDir()
	_, err = Run(context.Background(), opts(dir, Hooks{Acked: func(done int) error {
		if done >= 16 {
			return errKilled
		}
		return nil
	}}))
	if !errors.Is(err, errKilled) {
		t.Fatalf("interrupted run returned %v", err)
	}
	cachePath := filepath.Join(dir, CacheFile)
	lines := readCacheLines(t, cachePath)
	if len(lines) != 16 {
		t.Fatalf("%d acknowledged answers, want 16", len(lines))
	}
	// Tear the last line in half, as a kill during the write would.
	data, _ := os.ReadFile(cachePath)
	last := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
	if err := os.WriteFile(cachePath, data[:last+(len(data)-last)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	for _, l := range lines[:15] {
		kept[l.InstanceID] = true
	}
	var played []string
	var cached int
	got, err := Run(context.Background(), opts(dir, Hooks{
		Started: func(_, c, _ int) { cached = c },
		Played:  func(ids []string) { played = append(played, ids...) },
	}))
	if err != nil {
		t.Fatalf("resumed run: %v", err)
	}
	if cached != 15 {
		t.Fatalf("resume found %d cached answers, want 15", cached)
	}
	for _, id := range played {
		if kept[id] {
			t.Fatalf("instance %s was cached but played again", id)
		}
	}
	if !slices.Contains(played, lines[15].InstanceID) {
		t.Fatalf("the torn answer %s was not played again", lines[15].InstanceID)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("resumed tables differ from the uninterrupted run:\n%+v\n%+v", got, want)
	}
	js, _ := os.ReadFile(filepath.Join(dir, "eval.json"))
	if e, err := report.ParseEvalJSON(js); err != nil || !reflect.DeepEqual(e, want) {
		t.Fatalf("eval.json: %v\n%+v", err, e)
	}
	if n := len(readCacheLines(t, cachePath)); n != 15+len(played) {
		t.Fatalf("cache holds %d answers, want %d", n, 15+len(played))
	}
	// A third run finds everything cached.
	played = nil
	if _, err := Run(context.Background(), opts(dir, Hooks{Played: func(ids []string) { played = append(played, ids...) }})); err != nil || len(played) != 0 {
		t.Fatalf("complete cache: played %d, err %v", len(played), err)
	}
	// Another policy id shares the file but none of its answers.
	o := opts(dir, Hooks{Started: func(_, c, _ int) { cached = c }})
	o.PolicyID = "other"
	if _, err := Run(context.Background(), o); err != nil || cached != 0 {
		t.Fatalf("another policy: %d cached answers, err %v", cached, err)
	}
}

// TestReadCacheRepairsTornLine: a last line without its newline is
// dropped and cut off the file; the complete lines are kept.
func TestReadCacheRepairsTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), CacheFile)
	full := `{"policy":"p","instance_id":"a","agents":2,"size":3,"valid":true,"optimal":true}` + "\n" +
		`{"policy":"q","instance_id":"b","agents":2,"size":3,"valid":false,"optimal":false,"failed":["goal"]}` + "\n" +
		"\n" +
		`{"policy":"p","instance_id":"c","agents":2,"size":4,"valid":false,"optimal":false,"failed":["hole"]}` + "\n"
	torn := `{"policy":"p","instance_id":"d","ag`
	if err := os.WriteFile(path, []byte(full+torn), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCache(path, "p")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]report.Outcome{
		"a": {InstanceID: "a", Agents: 2, Size: 3, Valid: true, Optimal: true},
		"c": {InstanceID: "c", Agents: 2, Size: 4, Failed: []string{"hole"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("answers %+v, want %+v", got, want)
	}
	if data, _ := os.ReadFile(path); string(data) != full {
		t.Fatalf("file after repair:\n%s", data)
	}
	if got, err := ReadCache(filepath.Join(t.TempDir(), CacheFile), "p"); err != nil || len(got) != 0 {
		t.Fatalf("missing cache: %v, %v", got, err)
	}
}

// TestReadCacheBadLine: a complete line that is not an answer is an
// *InputError naming the file and the line.
func TestReadCacheBadLine(t *testing.T) {
	for _, tc := range []struct{ data, reason string }{
		{"{\"policy\":\"x\",\"instance_id\":\"a\"}\nnot json\n", "not JSON (starts with 'not json')"},
		{"{\"policy\":\"x\",\"instance_id\":\"a\"}\n{\"policy\":\"x\"}\n", "missing instance_id"},
		{"{\"policy\":\"x\",\"instance_id\":\"a\"}\n{\"policy\":\"x\",\"instance_id\":\"b\",\"agents\":\"two\"}\n", `agents": want int, got string`},
	} {
		path := filepath.Join(t.TempDir(), CacheFile)
		os.WriteFile(path, []byte(tc.data), 0o644)
		_, err := ReadCache(path, "x")
		var ie *fielderr.Error
		if !errors.As(err, &ie) || ie.Line != 2 || !strings.HasPrefix(err.Error(), path+":2: ") || !strings.Contains(ie.Reason, tc.reason) {
			t.Errorf("%q: %v", tc.data, err)
		}
	}
}

// countingPlayer records its calls and answers with empty plans.
type countingPlayer struct {
	calls []int // agent counts of each call's first instance
	seeds []uint64
	extra bool // play one episode too many
}

func (p *countingPlayer) Name() string { return "counting" }

func (p *countingPlayer) Play(ins []*env.Instance, _ int, _ float64, seed uint64) (*learner.Rollout, error) {
	p.calls = append(p.calls, len(ins[0].Agents))
	p.seeds = append(p.seeds, seed)
	ro := &learner.Rollout{}
	for _, in := range ins {
		if len(in.Agents) != len(ins[0].Agents) {
			return nil, fmt.Errorf("mixed batch")
		}
		ep := learner.Episode{Instance: in}
		env.Verify(in, &env.Plan{}, &ep.Report)
		ro.Episodes = append(ro.Episodes, ep)
	}
	if p.extra {
		ro.Episodes = append(ro.Episodes, ro.Episodes[0])
	}
	return ro, nil
}

// TestPlayOutcomes: instances are played in one batch per agent count,
// outcomes come back in the order of the instances, an invalid answer
// lists its failure categories once each, and a player that returns the
// wrong number of episodes is an error.
func TestPlayOutcomes(t *testing.T) {
	s := quickSuite(t, 1)
	ins := []*env.Instance{s.Instances[8], s.Instances[0], s.Instances[5], s.Instances[1]} // 5, 3, 4, 3 agents
	p := &countingPlayer{}
	outs, err := Play(p, ins, PlayOptions{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.calls, []int{5, 3, 4}) || !reflect.DeepEqual(p.seeds, []uint64{7, 7, 7}) {
		t.Fatalf("calls by agents %v, seeds %v", p.calls, p.seeds)
	}
	for i, o := range outs {
		in := ins[i]
		if o.InstanceID != in.ID || o.Agents != len(in.Agents) || o.Size != in.Width || o.Valid || o.Optimal {
			t.Fatalf("outcome %d: %+v", i, o)
		}
		// An empty plan misses every agent.
		if !reflect.DeepEqual(o.Failed, []string{env.CategoryAgentCount.String()}) {
			t.Fatalf("outcome %d failed %v", i, o.Failed)
		}
	}
	p = &countingPlayer{}
	if _, err := Play(p, ins[:2], PlayOptions{Seed: 7, PerInstance: true}); err != nil {
		t.Fatal(err)
	}
	if want := []uint64{InstanceSeed(7, ins[0].ID), InstanceSeed(7, ins[1].ID)}; !reflect.DeepEqual(p.seeds, want) {
		t.Fatalf("per-instance seeds %v, want %v", p.seeds, want)
	}
	for _, perInstance := range []bool{false, true} {
		if _, err := Play(&countingPlayer{extra: true}, ins, PlayOptions{PerInstance: perInstance}); err == nil || !strings.Contains(err.Error(), "policy counting played") {
			t.Errorf("per instance %v: an extra episode gave %v", perInstance, err)
		}
	}
}

// TestOutcomeOf: a valid answer has no failures; an invalid one lists its
// categories in env.Category order, and is never optimal.
func TestOutcomeOf(t *testing.T) {
	s := quickSuite(t, 1)
	in := s.Instances[0]
	sol, err := env.Solve(in, env.SolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rep env.Report
	env.Verify(in, &sol.Plan, &rep)
	if o := OutcomeOf(in, &rep); !o.Valid || !o.Optimal || o.Failed != nil {
		t.Fatalf("optimal plan: %+v", o)
	}
	env.VerifyAnswer(in, "no plan here", &rep)
	if o := OutcomeOf(in, &rep); o.Valid || o.Optimal || !reflect.DeepEqual(o.Failed, []string{"parse"}) {
		t.Fatalf("unparsable answer: %+v", o)
	}
}

// TestInstanceSeed pins the derivation: changing it would change every
// scripted evaluation and orphan every answer cache.
func TestInstanceSeed(t *testing.T) {
	for _, tc := range []struct {
		seed uint64
		id   string
		want uint64
	}{{1, "a", 17750275526127346094}, {11, "q-3-3-0", 7947920410149323986}} {
		if got := InstanceSeed(tc.seed, tc.id); got != tc.want {
			t.Errorf("InstanceSeed(%d, %q) = %d, want %d", tc.seed, tc.id, got, tc.want)
		}
	}
}

// TestFileSuiteManifest: the manifest beside a suite file gives the
// subsets and must describe the file; without one the subsets are 0.
func TestFileSuiteManifest(t *testing.T) {
	spec := env.PaperEvalSpec(2026, 1)
	ins, err := env.GenerateSuite(&spec, 0, spec.Len())
	if err != nil {
		t.Fatal(err)
	}
	data, man, err := env.EncodeSuite(spec, ins)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "eval.jsonl")
	mb, _ := json.Marshal(man)
	os.WriteFile(path, data, 0o644)
	os.WriteFile(manifestPath(path), mb, 0o644)
	s, err := FileSuite(path, env.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "eval.jsonl" || !reflect.DeepEqual(s.Subsets, specSubsets(&spec)) || len(s.Instances) != spec.Len() {
		t.Fatalf("suite %q, subsets %v", s.Name, s.Subsets)
	}
	// A file that no longer matches its manifest is refused.
	os.WriteFile(path, data[:bytes.IndexByte(data, '\n')+1], 0o644)
	_, err = FileSuite(path, env.ReadOptions{})
	var ie *fielderr.Error
	if !errors.As(err, &ie) || ie.File != manifestPath(path) || !strings.Contains(err.Error(), "does not describe "+path) {
		t.Fatalf("tampered suite: %v", err)
	}
	os.WriteFile(manifestPath(path), []byte("{"), 0o644)
	if _, err := FileSuite(path, env.ReadOptions{}); !errors.As(err, &ie) {
		t.Fatalf("bad manifest: %v", err)
	}
	os.Remove(manifestPath(path))
	s, err = FileSuite(path, env.ReadOptions{})
	if err != nil || !reflect.DeepEqual(s.Subsets, []float64{0}) {
		t.Fatalf("no manifest: %v, %v", s, err)
	}
}

// TestRunOptions: Run refuses options it cannot start with.
func TestRunOptions(t *testing.T) {
	if _, err := Run(context.Background(), Options{}); !errors.Is(err, ErrOptions) {
		t.Fatalf("empty options: %v", err)
	}
}

// TestFileSuiteKeysAnswersByContentHash: a user's ids in a suite file may
// repeat (two instances named "x") or rename content (one instance as "x"
// and "y"); answers are keyed, played and seeded by content hash, so each
// distinct instance is played once and none borrows another's answer.
// Errors name file lines, blank lines counted.
func TestFileSuiteKeysAnswersByContentHash(t *testing.T) {
	a := `{"id":"x","width":3,"height":3,"grid":["...","...","..."],"agents":[{"start":[0,0],"goal":[2,2]}]}`
	b := `{"id":"x","width":4,"height":4,"grid":["....","....","....","...."],"agents":[{"start":[0,0],"goal":[3,3]}]}`
	aAgain := strings.Replace(a, `"id":"x"`, `"id":"y"`, 1)
	dir := t.TempDir()
	path := filepath.Join(dir, "named.jsonl")
	os.WriteFile(path, []byte(a+"\n\n"+b+"\n"+aAgain+"\n"), 0o644)
	s, err := FileSuite(path, env.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Instances) != 3 || s.Instances[1].ID != "x" || s.Instances[2].ID != "y" {
		t.Fatalf("suite instances %+v", s.Instances)
	}
	p := &mistakePlayer{}
	var played []string
	e, err := Run(context.Background(), Options{Player: p, PolicyID: "p", Suite: s, Dir: t.TempDir(), Workers: 1,
		Play: PlayOptions{PerInstance: true}, Hooks: Hooks{Played: func(ids []string) { played = append(played, ids...) }}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{s.Instances[0].ComputeID(), s.Instances[1].ComputeID()}
	if !slices.Equal(played, want) || e.Total.Episodes != 3 || e.Total.Valid != 3 {
		t.Fatalf("played %v (want %v), %d valid of %d episodes (want 3 of 3)", played, want, e.Total.Valid, e.Total.Episodes)
	}
	walled := `{"id":"w","width":3,"height":3,"grid":[".H.","..H","..."],"agents":[{"start":[0,0],"goal":[0,2]}]}`
	for _, tc := range []struct{ file, want string }{
		{a + "\n\n" + `{"width":"x"}` + "\n", `named.jsonl:3: field "width"`},
		{"\n" + a + "\n\n" + walled + "\n", "named.jsonl:4: instance w: "},
	} {
		os.WriteFile(path, []byte(tc.file), 0o644)
		if _, err := FileSuite(path, env.ReadOptions{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("FileSuite: %v, want %q", err, tc.want)
		}
	}
}

// TestCacheLineNotJSON: an answer-cache line that is not JSON is named with
// its first characters, and a wrongly typed field by its name.
func TestCacheLineNotJSON(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{"\noops\n", "answers.jsonl:2: not JSON (starts with 'oops')"},
		{`{"instance_id": 7}` + "\n", `answers.jsonl:1: field "Outcome.instance_id": want string, got number`},
	} {
		_, err := parseCache("answers.jsonl", []byte(tc.data), "p")
		if err == nil || err.Error() != tc.want {
			t.Errorf("cache %q: %v, want %q", tc.data, err, tc.want)
		}
	}
}

// TestCacheKeepsPlans: the answer cache holds each parsed answer's plan, and verifying the
// instance with that plan gives the cached outcome again; an answer without a plan has none in
// its line.
func TestCacheKeepsPlans(t *testing.T) {
	seed := testSeed(t)
	suite := quickSuite(t, 2)
	dir := t.TempDir()
	id := fmt.Sprintf("mistakes(seed=%d)", seed)
	if _, err := Run(context.Background(), Options{Player: &mistakePlayer{rate: 0.4}, PolicyID: id, Suite: suite, Dir: dir,
		Play: PlayOptions{Seed: seed, PerInstance: true}, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	cache, err := ReadCache(filepath.Join(dir, CacheFile), id)
	if err != nil {
		t.Fatal(err)
	}
	valid := 0
	for _, in := range suite.Instances {
		o, ok := cache[in.ComputeID()]
		if !ok || len(o.Plan) != len(in.Agents) {
			t.Fatalf("%s: cached %v with plan %v", in.ID, ok, o.Plan)
		}
		var rep env.Report
		env.Verify(in, &env.Plan{Paths: o.Plan}, &rep)
		if again := OutcomeOf(in, &rep); again.Valid != o.Valid || again.Optimal != o.Optimal || !slices.Equal(again.Failed, o.Failed) {
			t.Fatalf("%s: the cached plan verifies to %+v, the cache says %+v", in.ID, again, o)
		}
		if o.Valid {
			valid++
		}
	}
	if valid == 0 || valid == len(suite.Instances) {
		t.Fatalf("%d valid of %d: the check would not discriminate", valid, len(suite.Instances))
	}
	empty := t.TempDir()
	if _, err := Run(context.Background(), Options{Player: &countingPlayer{}, PolicyID: "counting", Suite: suite, Dir: empty, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(empty, CacheFile))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte(`"plan"`)) {
		t.Errorf("answers without a plan have a plan in the cache:\n%s", data)
	}
}
