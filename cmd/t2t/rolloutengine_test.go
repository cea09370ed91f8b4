package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/train"
)

// logRecord is one line of a slog text log: its key=value attributes, quotes removed.
type logRecord map[string]string

var logAttr = regexp.MustCompile(`([A-Za-z_]+)=("(?:[^"\\]|\\.)*"|\S*)`)

// logRecords returns the records of log whose msg is msg.
func logRecords(log, msg string) []logRecord {
	var out []logRecord
	for _, line := range strings.Split(log, "\n") {
		r := logRecord{}
		for _, m := range logAttr.FindAllStringSubmatch(line, -1) {
			v := m[2]
			if u, err := strconv.Unquote(v); err == nil {
				v = u
			}
			r[m[1]] = v
		}
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

func (r logRecord) int(t *testing.T, key string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(r[key], 10, 64)
	if err != nil {
		t.Fatalf("%s=%q in %v", key, r[key], r)
	}
	return v
}

// TestTrainPushesToServe is the two-process proof of the policy push
// (issue #16): a `t2t serve` process stands in for vLLM, and a `t2t train`
// process trains LoRA adapters on the same checkpoint, pushing every
// version to it (--rollout-engine t2t), with a real redis-server. The
// learner makes and the engine loads several versions through the
// adapter endpoints, old adapters are unloaded again, every sample the
// learner labels version N came from adapter t2t-vN at the serve process
// (the learner's counts per version equal the engine's per adapter), and
// the samples Redis records carry those labels.
//
// The checkpoint is the tiny random model after 30 steps of SFT: it ends
// its answers at varying lengths, so with --reward-l1 4 the length reward
// differs within a group and the learner has a signal to update on (no
// answer of a model this small is valid).
func TestTrainPushesToServe(t *testing.T) {
	redisURL := nodeRedis(t)
	dir := t.TempDir()
	model := pushModel(t, dir)
	srv, url := startEngine(t, model)
	pushDir := filepath.Join(dir, "push")
	tr := startNode(t, "train", append([]string{"train", "--rollouts", "2", "--redis", redisURL, "--run-id", "push", "-v",
		"--rollout-engine", "t2t", "--rollout-url", url, "--rollout-dir", pushDir}, pushRunFlags(model)...)...)
	if code := tr.wait(10 * time.Minute); code != 0 {
		t.Fatalf("train exited with %d", code)
	}
	tr.line(fmt.Sprintf("rollout engine t2t at %s: policy version 0 loaded as \"t2t-v0\"", url), time.Second)
	learnerLog, engineLog := tr.stderr.String(), srv.stderr.String()
	loaded := checkEngineVersions(t, learnerLog, engineLog, url, pushDir)

	// Every sample the learner labels N came from adapter t2t-vN: per
	// adapter, the learner's sampled instances equal the engine's requests.
	sampled := map[string]int64{}
	unitVersion := map[string][]int64{}
	for _, r := range logRecords(learnerLog, "rollout engine: sampled") {
		v := r.int(t, "version")
		if r["model"] != "t2t-v"+strconv.FormatInt(v, 10) {
			t.Fatalf("version %d sampled as model %q", v, r["model"])
		}
		sampled[r["model"]] += r.int(t, "instances")
		unitVersion[r["unit"]] = append(unitVersion[r["unit"]], v)
	}
	if served := servedPerModel(engineLog); len(sampled) < 2 || fmt.Sprint(sampled) != fmt.Sprint(served) {
		t.Fatalf("instances the learner sampled per version %v, requests the engine served per adapter %v (versions loaded %v)", sampled, served, loaded)
	}

	// The samples Redis records carry the version of the adapter.
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: redisURL, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	trainVersions := map[int64]bool{}
	for stage := range 2 {
		for _, split := range []string{store.SplitTrain, store.SplitVal, store.SplitEvalPaper} {
			ex, err := st.Examples(ctx, "push", stage, split, 1000)
			if err != nil || len(ex) == 0 {
				t.Fatalf("stage %d %s: examples %d, %v", stage, split, len(ex), err)
			}
			for _, e := range ex {
				if !slices.Contains(unitVersion[e.UnitID], e.PolicyVersion) {
					t.Fatalf("Redis records unit %s at version %d; the learner sampled it at %v", e.UnitID, e.PolicyVersion, unitVersion[e.UnitID])
				}
				if split == store.SplitTrain {
					trainVersions[e.PolicyVersion] = true
				}
			}
		}
	}
	if len(trainVersions) < 2 {
		t.Fatalf("training samples recorded at versions %v only", trainVersions)
	}
}

// TestNodePushesToServe is the push on a cluster, four processes and a
// real redis-server: a coordinator node trains LoRA adapters and pushes
// every version to a `t2t serve` process (--rollout-engine t2t), and a
// rollout node samples through it. Rollout nodes learn of a version from
// Redis only once the engine serves it, sample it by its adapter's name
// and label their units with it: per adapter, the engine served exactly
// the instances the units logged at that version (and the coordinator's
// evaluation before the first stage), and Redis ends at the engine's
// newest version.
func TestNodePushesToServe(t *testing.T) {
	redisURL := nodeRedis(t)
	dir := t.TempDir()
	model := pushModel(t, dir)
	srv, url := startEngine(t, model)
	pushDir, unitLog := filepath.Join(dir, "push"), filepath.Join(dir, "units.jsonl")
	common := []string{"--gossip", "127.0.0.1:0", "--gossip-profile", "local", "--listen", "127.0.0.1:0", "--redis", redisURL}
	a := startNode(t, "A", slices.Concat([]string{"node", "--roles", "coordinator,learner,engineer", "--run-id", "pushnode", "-v",
		"--rollout-engine", "t2t", "--rollout-url", url, "--rollout-dir", pushDir}, pushRunFlags(model), common)...)
	gossipA := nodeField(t, a.line("t2t node: joined ", 2*time.Minute), "gossip")
	b := startNode(t, "B", append([]string{"node", "--roles", "rollout", "--join", gossipA, "--unit-log", unitLog}, common...)...)
	if code := a.wait(10 * time.Minute); code != 0 {
		t.Fatalf("A exited with %d", code)
	}
	// B, without --keep, leaves by itself once the run it served is done.
	b.wait(60 * time.Second)
	learnerLog, engineLog := a.stderr.String(), srv.stderr.String()
	loaded := checkEngineVersions(t, learnerLog, engineLog, url, pushDir)

	sampled := map[string]int64{}
	for _, r := range logRecords(learnerLog, "rollout engine: sampled") { // the coordinator's own evaluation
		if r["unit"] != "" {
			t.Fatalf("the coordinator sampled a unit: %v", r)
		}
		sampled[r["model"]] += r.int(t, "instances")
	}
	units := readUnitLog(t, unitLog)
	trainVersions := map[int64]bool{}
	for _, u := range units {
		if !slices.Contains(loaded, u.PolicyVersion) || u.Lag != u.LearnerVersion-u.PolicyVersion || u.Lag < 0 {
			t.Fatalf("unit %s played version %d (learner %d, lag %d); the engine loaded %v", u.Unit, u.PolicyVersion, u.LearnerVersion, u.Lag, loaded)
		}
		var episodes int64
		for _, bk := range u.Buckets {
			episodes += bk.Episodes
		}
		if u.Split == store.SplitTrain {
			episodes /= 4 // the group: one request per instance
			trainVersions[u.PolicyVersion] = true
		}
		sampled["t2t-v"+strconv.FormatInt(u.PolicyVersion, 10)] += episodes
	}
	if served := servedPerModel(engineLog); len(trainVersions) < 2 || fmt.Sprint(sampled) != fmt.Sprint(served) {
		t.Fatalf("instances sampled per version %v (training at %v), requests the engine served per adapter %v", sampled, trainVersions, served)
	}
	ctx := context.Background()
	ps, err := train.OpenPolicyStore(ctx, redisURL, "")
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	if v, err := ps.Latest(ctx, "pushnode"); err != nil || v != loaded[len(loaded)-1] {
		t.Fatalf("Redis publishes version %d (%v), the engine's newest is %d", v, err, loaded[len(loaded)-1])
	}
}

// TestTrainPushesFullWeights is the SGLang path with real processes: `t2t
// serve` answers SGLang's /update_weights_from_disk, and `t2t train
// --rollout-engine sglang` trains all weights and pushes every version as a
// full checkpoint. Each version the learner loaded is one weight update at
// the engine, from its directory, in order; every rollout samples the base
// model's name; per version, the learner's samples fit the engine's requests
// between two updates; only the newest directory is left.
func TestTrainPushesFullWeights(t *testing.T) {
	redisURL := nodeRedis(t)
	dir := t.TempDir()
	model := pushModel(t, dir)
	srv, url := startEngine(t, model)
	pushDir := filepath.Join(dir, "push")
	tr := startNode(t, "train", append([]string{"train", "--rollouts", "2", "--redis", redisURL, "--run-id", "full", "-v",
		"--rollout-engine", "sglang", "--rollout-url", strings.TrimSuffix(url, "/v1"), "--rollout-model", "base", "--rollout-dir", pushDir},
		fullRunFlags(model)...)...)
	if code := tr.wait(10 * time.Minute); code != 0 {
		t.Fatalf("train exited with %d", code)
	}
	learnerLog, engineLog := tr.stderr.String(), srv.stderr.String()
	var loaded []int64
	for _, r := range logRecords(learnerLog, "rollout engine: version loaded") {
		loaded = append(loaded, r.int(t, "version"))
	}
	if len(loaded) < 3 || loaded[0] != 0 || !slices.IsSorted(loaded) {
		t.Fatalf("the learner loaded versions %v, want 0 and at least 2 more, in order", loaded)
	}
	// The engine's log, in order: weight updates and the requests between them.
	var updates []int64
	served := map[int64]int64{} // requests per version the engine held
	for _, line := range strings.Split(engineLog, "\n") {
		rs := logRecords(line, "weights updated from disk")
		if len(rs) == 1 {
			v, err := strconv.ParseInt(strings.TrimPrefix(filepath.Base(rs[0]["model_path"]), "v"), 10, 64)
			if err != nil || rs[0]["model_path"] != filepath.Join(pushDir, filepath.Base(rs[0]["model_path"])) || rs[0]["model"] != "base" {
				t.Fatalf("weights updated from %v", rs[0])
			}
			updates = append(updates, v)
			continue
		}
		if rs := logRecords(line, "chat completion"); len(rs) == 1 {
			if rs[0]["model"] != "base" || len(updates) == 0 {
				t.Fatalf("a request for %q after updates %v", rs[0]["model"], updates)
			}
			served[updates[len(updates)-1]]++
		}
	}
	if !slices.Equal(updates, loaded) {
		t.Fatalf("the engine updated its weights to %v, the learner loaded %v", updates, loaded)
	}
	// A sample labelled N was sent after the engine had N: its requests
	// are among those the engine served holding N or a later version.
	sampled := map[int64]int64{}
	for _, r := range logRecords(learnerLog, "rollout engine: sampled") {
		if r["model"] != "base" {
			t.Fatalf("sampled as %q", r["model"])
		}
		sampled[r.int(t, "version")] += r.int(t, "instances")
	}
	var total, later int64
	for i := len(loaded) - 1; i >= 0; i-- {
		v := loaded[i]
		total += sampled[v]
		later += served[v]
		if total > later {
			t.Fatalf("%d requests labelled %d or later, the engine served %d holding them (sampled %v, served %v)", total, v, later, sampled, served)
		}
	}
	if total != later {
		t.Fatalf("the learner sampled %d instances, the engine served %d requests", total, later)
	}
	es, err := os.ReadDir(pushDir)
	if err != nil || len(es) != 1 || es[0].Name() != "v"+strconv.FormatInt(loaded[len(loaded)-1], 10) {
		t.Fatalf("left in %s: %v (%v)", pushDir, es, err)
	}
}

// pushModel writes the checkpoint of the push tests into dir: the tiny
// random model after 30 steps of SFT, which ends its answers at varying
// lengths.
func pushModel(t *testing.T, dir string) string {
	t.Helper()
	base, model := filepath.Join(dir, "tiny"), filepath.Join(dir, "sft")
	if code, _, e := t2t(t, "model", "init", "--out", base); code != 0 {
		t.Fatalf("model init: %s", e)
	}
	if code, _, e := t2t(t, "sft", "--model", base, "--out", model, "--steps", "30", "--batch", "8", "--lr", "3e-3", "--prompt", "compact",
		"--eval", "1", "--max-tokens", "4", "--report-every", "30"); code != 0 {
		t.Fatalf("sft: %s", e)
	}
	return model
}

// startEngine starts `t2t serve` over model as the rollout engine, named
// "base", and returns it and its API root.
func startEngine(t *testing.T, model string) (*nodeProc, string) {
	t.Helper()
	srv := startNode(t, "serve", "serve", "--model", model, "--name", "base", "--addr", "127.0.0.1:0", "-v")
	line := srv.line("serving base ", time.Minute)
	url := regexp.MustCompile(`at (http://\S+/v1)`).FindStringSubmatch(line)
	if url == nil {
		t.Fatalf("no URL in %q", line)
	}
	return srv, url[1]
}

// pushRunFlags are the run flags of the push tests: 2 stages of 4 units of
// 2 instances, a learner update per unit, LoRA rank 4, and a length reward
// from the 5th token on, which differs within a group.
func pushRunFlags(model string) []string {
	return append(fullRunFlags(model), "--lora-rank", "4")
}

// fullRunFlags are pushRunFlags without LoRA: all weights train.
func fullRunFlags(model string) []string {
	return []string{"--policy", "qwen3", "--model", model, "--prompt", "compact", "--max-new-tokens", "24",
		"--stages", "2", "--instances", "8", "--instances-per-unit", "2", "--group", "4", "--learner-batch", "2",
		"--val-per-size", "1", "--eval-per-size", "1", "--strategy", "fixed", "--lr", "1e-3",
		"--reward-l1", "4", "--reward-l2", "64"}
}

// servedPerModel counts the chat completions in a t2t serve log per model.
func servedPerModel(engineLog string) map[string]int64 {
	served := map[string]int64{}
	for _, r := range logRecords(engineLog, "chat completion") {
		served[r["model"]]++
	}
	return served
}

// checkEngineVersions checks the versions a learner pushed against the
// engine: each loaded once, in order, from its directory under pushDir;
// the newest 3 still served, every other one unloaded once. It returns the
// versions loaded.
func checkEngineVersions(t *testing.T, learnerLog, engineLog, url, pushDir string) []int64 {
	t.Helper()
	var loaded []int64
	for _, r := range logRecords(learnerLog, "rollout engine: version loaded") {
		loaded = append(loaded, r.int(t, "version"))
	}
	if len(loaded) < 4 || loaded[0] != 0 || !slices.IsSorted(loaded) {
		t.Fatalf("the learner loaded versions %v, want 0 and at least 3 more, in order", loaded)
	}
	var engineLoaded, engineUnloaded []int64
	for _, r := range logRecords(engineLog, "adapter loaded") {
		v, _ := strings.CutPrefix(r["lora_name"], "t2t-v")
		n, _ := strconv.ParseInt(v, 10, 64)
		engineLoaded = append(engineLoaded, n)
		if r["lora_path"] != filepath.Join(pushDir, "v"+v) {
			t.Fatalf("adapter %s loaded from %s", r["lora_name"], r["lora_path"])
		}
	}
	if !slices.Equal(engineLoaded, loaded) {
		t.Fatalf("the engine loaded adapters %v, the learner pushed %v", engineLoaded, loaded)
	}
	for _, r := range logRecords(engineLog, "adapter unloaded") {
		v, _ := strings.CutPrefix(r["lora_name"], "t2t-v")
		n, _ := strconv.ParseInt(v, 10, 64)
		engineUnloaded = append(engineUnloaded, n)
	}
	// What the engine still serves: the newest versions, the others unloaded.
	resp, err := http.Get(url + "/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(models.Data) == 0 || models.Data[0].ID != "base" {
		t.Fatalf("/v1/models: %+v", models.Data)
	}
	var listed []int64
	for _, m := range models.Data[1:] {
		n, err := strconv.ParseInt(strings.TrimPrefix(m.ID, "t2t-v"), 10, 64)
		if err != nil {
			t.Fatalf("/v1/models lists %q", m.ID)
		}
		listed = append(listed, n)
	}
	slices.Sort(listed)
	keep := loaded[len(loaded)-3:]
	if len(engineUnloaded) == 0 || len(listed) > len(keep)+2 || !slices.Equal(sortedUnion(listed, keep), listed) ||
		!slices.Equal(sortedUnion(listed, engineUnloaded), loaded) || len(listed)+len(engineUnloaded) != len(loaded) {
		t.Fatalf("the engine lists adapters %v and unloaded %v of %v: want the newest 3 kept (and at most one more held per rollout), the others unloaded once", listed, engineUnloaded, loaded)
	}
	return loaded
}

// sortedUnion is the sorted union of a and b.
func sortedUnion(a, b []int64) []int64 {
	u := slices.Concat(a, b)
	slices.Sort(u)
	return slices.Compact(u)
}
