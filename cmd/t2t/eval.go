package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/report"
	"github.com/t2t-lab/t2t/train"
)

// evalHooks let tests watch and interrupt an evaluation.
type evalHooks struct {
	// played sees the instance ids of every chunk the policy plays.
	played func(ids []string)
	// acked is called after each chunk's outcomes are written and synced,
	// with the number of instances played so far; an error stops the run
	// (as a kill would, after the acknowledged chunks).
	acked func(done int) error
}

func runEval(args []string, stdout, stderr io.Writer) error {
	return evalMain(args, stdout, stderr, evalHooks{})
}

// evalCacheFile is the answer cache inside --out.
const evalCacheFile = "answers.jsonl"

// evalLine is one line of the answer cache: a policy's outcome on an
// instance.
type evalLine struct {
	Policy string `json:"policy"`
	report.Outcome
}

// evalSuite is a loaded suite: its instances and, per line, the wait-ratio
// subset (0 when unknown).
type evalSuite struct {
	name    string
	ins     []*env.Instance
	subsets []float64
}

func evalMain(args []string, stdout, stderr io.Writer, hooks evalHooks) error {
	fs := newFlags("t2t eval", "t2t eval --policy gridnet --checkpoint DIR | --policy scripted [--suite eval|val|quick|FILE.jsonl] [--per-size N] --out DIR", stderr)
	policy := fs.String("policy", "gridnet", "policy: gridnet (needs --checkpoint), endpoint (an OpenAI-compatible server as a direct solver: --policy-url, --policy-model) or scripted (optimal plans with injected mistakes)")
	policyURL := fs.String("policy-url", "", "--policy endpoint: base URL, e.g. http://127.0.0.1:8000/v1 (vLLM, SGLang, Ollama, t2t serve, a hosted API); API key from $OPENAI_API_KEY")
	policyModel := fs.String("policy-model", "", "--policy endpoint: model name")
	maxTokens := fs.Int("max-tokens", 4096, "--policy endpoint: most tokens per answer")
	ckpt := fs.String("checkpoint", "", "gridnet checkpoint folder (as written by t2t train --checkpoint-dir)")
	mistake := fs.Float64("mistake-rate", 0.05, "scripted policy: chance per agent and step of a random move")
	seed := fs.Uint64("seed", 1, "scripted policy: seed of the injected mistakes (each instance draws from seed and its id)")
	suite := fs.String("suite", env.SuiteEval, "suite: eval, val, quick, or a JSONL file (its NAME.manifest.json, when present, gives the wait-ratio subsets)")
	perSize := fs.Int("per-size", 0, "instances per size per subset of a named suite (0: the suite's default)")
	suiteSeed := fs.Uint64("suite-seed", 2026, "seed of a named suite")
	out := fs.String("out", "", "output folder: answers.jsonl (resumable cache), eval.md/.csv/.json/.html, size.svg, failures.svg")
	workers := fs.Int("workers", 0, "goroutines playing instances (0: one per CPU)")
	device := fs.String("device", "cpu", "gridnet compute device: cpu, or xla:/abs/path/pjrt_plugin.so (cgo builds)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return badInput("--out is required")
	}
	if *perSize < 0 || *perSize > 10000 {
		return badInput("--per-size %d out of range [0,10000]", *perSize)
	}
	var (
		pol      train.Policy
		policyID string
		perInst  bool // play each instance alone with its own seed
	)
	switch *policy {
	case "gridnet":
		if *ckpt == "" {
			return badInput("--policy gridnet needs --checkpoint DIR")
		}
		gp, id, err := loadGridPolicy(*ckpt, *device)
		if err != nil {
			return err
		}
		pol, policyID = gp, id
	case "scripted":
		if *mistake < 0 || *mistake > 1 {
			return badInput("--mistake-rate %v out of range [0,1]", *mistake)
		}
		pol = &train.ScriptedPolicy{MistakeRate: *mistake}
		policyID = fmt.Sprintf("scripted(mistake=%g,seed=%d)", *mistake, *seed)
		perInst = true
	case "endpoint":
		if *policyURL == "" || *policyModel == "" {
			return badInput("--policy endpoint needs --policy-url and --policy-model")
		}
		c, err := textpolicy.NewClient(textpolicy.ClientOptions{BaseURL: *policyURL, Model: *policyModel, MaxTokens: *maxTokens})
		if err != nil {
			return badInput("%v", err)
		}
		pol, policyID = c, fmt.Sprintf("endpoint(%s,%s)", *policyURL, *policyModel)
	default:
		return badInput("--policy %q: want gridnet, endpoint or scripted", *policy)
	}
	s, err := loadEvalSuite(*suite, *suiteSeed, *perSize, *workers, stderr)
	if err != nil {
		return err
	}
	cachePath := filepath.Join(*out, evalCacheFile)
	cache, err := readEvalCache(cachePath, policyID)
	if err != nil {
		return err
	}
	// Distinct instances not yet answered, in suite order.
	var todo []*env.Instance
	queued := map[string]bool{}
	for _, in := range s.ins {
		if _, ok := cache[in.ID]; ok || queued[in.ID] {
			continue
		}
		queued[in.ID] = true
		todo = append(todo, in)
	}
	fmt.Fprintf(stderr, "eval %s on %s: %d instances, %d cached answers, %d to play\n", policyID, s.name, len(s.ins), len(cache), len(todo))
	if len(todo) > 0 {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(cachePath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		var mu sync.Mutex
		done := 0
		err = parallelRange(len(todo), *workers, "eval", stderr, func(lo, hi int) error {
			chunk := todo[lo:hi]
			if hooks.played != nil {
				ids := make([]string, len(chunk))
				for i, in := range chunk {
					ids[i] = in.ID
				}
				hooks.played(ids)
			}
			outs, err := evalPlay(pol, chunk, perInst, *seed)
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			for _, o := range outs {
				if err := enc.Encode(evalLine{Policy: policyID, Outcome: o}); err != nil {
					return err
				}
			}
			mu.Lock()
			defer mu.Unlock()
			// One write per chunk, then fsync: an acknowledged chunk
			// survives a kill; a torn write leaves at most one partial
			// last line, which the next run drops.
			if _, err := f.Write(buf.Bytes()); err != nil {
				return fmt.Errorf("%s: %w", cachePath, err)
			}
			if err := f.Sync(); err != nil {
				return fmt.Errorf("%s: %w", cachePath, err)
			}
			for _, o := range outs {
				cache[o.InstanceID] = o
			}
			done += len(chunk)
			if hooks.acked != nil {
				return hooks.acked(done)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	outs := make([]report.Outcome, len(s.ins))
	for i, in := range s.ins {
		o := cache[in.ID]
		// The suite line decides where the answer counts (an instance may
		// appear on several lines).
		o.Agents, o.Size, o.Subset = len(in.Agents), in.Width, s.subsets[i]
		outs[i] = o
	}
	e := report.Tally(policyID, s.name, outs)
	return writeEvalReport(*out, e, stdout)
}

// writeEvalReport writes the eval's files into dir and prints the Markdown.
func writeEvalReport(dir string, e *report.Eval, stdout io.Writer) error {
	js, err := report.EvalJSON(e)
	if err != nil {
		return err
	}
	md := report.EvalMarkdown(e)
	for name, data := range map[string][]byte{
		"eval.md": []byte(md), "eval.csv": []byte(report.EvalCSV(e)), "eval.json": js, "eval.html": []byte(report.EvalHTML(e)),
		"size.svg": []byte(report.EvalSizeSVG(e)), "failures.svg": []byte(report.EvalFailureSVG(e)),
	} {
		if err := writeFileAtomic(filepath.Join(dir, name), data); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(stdout, "%s\nwrote %s/{eval.md,eval.csv,eval.json,eval.html,size.svg,failures.svg}\n", md, dir)
	return err
}

// evalPlay plays ins greedily and returns one outcome per instance. With
// perInstance each instance is played alone with a seed derived from seed
// and its id, so its answer does not depend on what else is played with
// it (the scripted policy draws its mistakes from that seed); otherwise
// the chunk is played in batches of one agent count (greedy gridnet needs
// no randomness).
func evalPlay(pol train.Policy, ins []*env.Instance, perInstance bool, seed uint64) ([]report.Outcome, error) {
	var eps []learner.Episode
	if perInstance {
		for _, in := range ins {
			ro, err := pol.Play([]*env.Instance{in}, 1, 0, evalInstanceSeed(seed, in.ID))
			if err != nil {
				return nil, err
			}
			eps = append(eps, ro.Episodes...)
		}
	} else {
		// One batch per agent count: learner.PlayGridNet fails on a
		// sequential round in which no live episode has that agent, which
		// mixed batches can reach once their larger instances finish.
		eps = make([]learner.Episode, len(ins))
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
			ro, err := pol.Play(part, 1, 0, seed)
			if err != nil {
				return nil, err
			}
			if len(ro.Episodes) != len(part) {
				return nil, fmt.Errorf("policy %s played %d episodes for %d instances", pol.Name(), len(ro.Episodes), len(part))
			}
			for j, i := range idx {
				eps[i] = ro.Episodes[j]
			}
		}
	}
	if len(eps) != len(ins) {
		return nil, fmt.Errorf("policy %s played %d episodes for %d instances", pol.Name(), len(eps), len(ins))
	}
	outs := make([]report.Outcome, len(eps))
	for i := range eps {
		ep := &eps[i]
		o := report.Outcome{InstanceID: ins[i].ID, Agents: len(ins[i].Agents), Size: ins[i].Width, Valid: ep.Report.Valid, Optimal: ep.Report.Valid && ep.Report.Optimal}
		if !ep.Report.Valid {
			for c, n := range ep.Report.Categories() {
				if n > 0 {
					o.Failed = append(o.Failed, env.Category(c).String())
				}
			}
		}
		outs[i] = o
	}
	return outs, nil
}

// evalInstanceSeed derives an instance's seed from the run seed and its id.
func evalInstanceSeed(seed uint64, id string) uint64 {
	h := sha256.New()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	h.Write([]byte(id))
	return binary.LittleEndian.Uint64(h.Sum(nil)[:8])
}

// readEvalCache reads the answer cache and returns the answers of policyID
// by instance id. A last line without its newline (a write torn by a kill)
// is dropped and cut off the file; any other bad line is an error.
func readEvalCache(path, policyID string) (map[string]report.Outcome, error) {
	out := map[string]report.Outcome{}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	if n := bytes.LastIndexByte(data, '\n') + 1; n < len(data) {
		if err := os.Truncate(path, int64(n)); err != nil {
			return nil, err
		}
		data = data[:n]
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var l evalLine
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, badInput("%s:%d: %v", path, line, jsonReason(err))
		}
		if l.InstanceID == "" {
			return nil, badInput("%s:%d: missing instance_id", path, line)
		}
		if l.Policy == policyID {
			out[l.InstanceID] = l.Outcome
		}
	}
	return out, sc.Err()
}

// loadEvalSuite generates a named suite or reads a JSONL file.
func loadEvalSuite(name string, seed uint64, perSize, workers int, stderr io.Writer) (*evalSuite, error) {
	if strings.HasSuffix(name, ".jsonl") {
		return readSuiteFile(name)
	}
	spec, err := suiteSpec(name, seed, perSize)
	if err != nil {
		return nil, badInput("--suite: %v", err)
	}
	s := &evalSuite{name: fmt.Sprintf("%s (seed %d, %d instances)", name, seed, spec.Len()), ins: make([]*env.Instance, spec.Len())}
	err = parallelRange(spec.Len(), workers, "suite "+name, stderr, func(lo, hi int) error {
		part, err := env.GenerateSuite(&spec, lo, hi)
		copy(s.ins[lo:hi], part)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.subsets = specSubsets(&spec)
	return s, nil
}

// specSubsets returns each suite line's wait-ratio subset.
func specSubsets(spec *env.SuiteSpec) []float64 {
	out := make([]float64, spec.Len())
	for _, g := range spec.Groups {
		for i := g.Lo; i < g.Lo+g.Count; i++ {
			out[i] = g.Subset
		}
	}
	return out
}

// readSuiteFile reads a suite JSONL file; its manifest (NAME.manifest.json
// beside it, as t2t env suite writes) gives the subsets when present and
// must then match the file's hash.
func readSuiteFile(path string) (*evalSuite, error) {
	ins, err := readInstances(path)
	if err != nil {
		return nil, err
	}
	for i, in := range ins {
		if !in.Solved() {
			if err := env.Annotate(in, env.SolveOptions{}); err != nil {
				return nil, fmt.Errorf("%s: instance %d (id %s): %w", path, i+1, in.ID, err)
			}
		}
	}
	s := &evalSuite{name: filepath.Base(path), ins: ins, subsets: make([]float64, len(ins))}
	manPath := strings.TrimSuffix(path, ".jsonl") + ".manifest.json"
	mb, err := os.ReadFile(manPath)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	var man env.SuiteManifest
	if err := json.Unmarshal(mb, &man); err != nil {
		return nil, badInput("%s: %v", manPath, jsonReason(err))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != man.SHA256 || man.Spec.Len() != len(ins) {
		return nil, badInput("%s: does not describe %s (sha256 or instance count differs)", manPath, path)
	}
	s.subsets = specSubsets(&man.Spec)
	return s, nil
}

// loadGridPolicy loads a gridnet checkpoint; the policy id names the
// weights by their hash.
func loadGridPolicy(dir, device string) (*train.GridPolicy, string, error) {
	ck, err := learner.ReadCheckpoint(dir)
	if err != nil {
		return nil, "", badInput("--checkpoint: %v", err)
	}
	if ck.Manifest.Model != learner.GridNetKind {
		return nil, "", badInput("--checkpoint %s holds a %q model, not gridnet", dir, ck.Manifest.Model)
	}
	var gc learner.GridNetConfig
	if err := json.Unmarshal(ck.Manifest.ModelConfig, &gc); err != nil {
		return nil, "", badInput("--checkpoint %s: model_config: %v", dir, err)
	}
	be, err := learner.NewBackend(device)
	if err != nil {
		return nil, "", badInput("--device: %v", err)
	}
	net, err := learner.NewGridNet(be, gc, learner.DefaultGRPOConfig())
	if err != nil {
		return nil, "", err
	}
	if err := net.Load(dir); err != nil {
		return nil, "", fmt.Errorf("--checkpoint %s: %w", dir, err)
	}
	sum := ck.Manifest.Files[learner.CheckpointWeightsFile]
	if len(sum) > 16 {
		sum = sum[:16]
	}
	return &train.GridPolicy{Net: net, Rollout: learner.DefaultRolloutConfig()}, "gridnet@" + sum, nil
}
