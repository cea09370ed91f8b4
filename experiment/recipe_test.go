package experiment

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/learner/torch"
	"github.com/t2t-lab/t2t/train"
)

// paperRecipe is the paper's setting, as the repository ships it.
const paperRecipe = "../configs/paper/qwen3-4b.json"

// commandOptions parses args as t2t experiment does and returns its
// options, and what it wrote to stdout.
func commandOptions(t *testing.T, args ...string) (Options, string, error) {
	t.Helper()
	fs := flag.NewFlagSet("t2t experiment", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f Flags
	f.Register(fs)
	if err := fs.Parse(args); err != nil {
		return Options{}, "", err
	}
	var out bytes.Buffer
	o, err := f.Options(fs, args, &out, io.Discard)
	return o, out.String(), err
}

// writeFile writes text to a new file in a test folder and returns its path.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRecipeStrictAndPrecedence: a recipe sets the flags the command line
// did not give; the command line wins; a recipe that is not a flat object
// of known flags with values they take fails naming the key and the file.
func TestRecipeStrictAndPrecedence(t *testing.T) {
	good := writeFile(t, "r.json", `{"strategies": "fixed", "stages": 2, "epochs": 2, "instances": 64, "v": false, "lr": 3e-4, "out": "from-recipe"}`)
	o, _, err := commandOptions(t, "--recipe", good, "--stages", "5", "--out", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if o.Stages != 5 || o.Epochs != 2 || o.Config.Instances != 64 || o.LR != 3e-4 || o.Dir == "from-recipe" || len(o.Arms) != 1 || o.GroupSize != 8 {
		t.Fatalf("options %+v: want stages 5 (flag), epochs 2, 64 instances, lr 3e-4 (recipe), the flag's --out, group 8 (default)", o)
	}
	for _, bad := range []struct{ text, want string }{
		{`{"stagse": 3}`, `"stagse": not a setting of t2t experiment`},
		{`{"stages": 3, "stages": 4}`, `"stages" given twice`},
		{`{"stages": "three"}`, `"stages": value "three": `},
		{`{"stages": true}`, `"stages": value "true": `},
		{`{"stages": [3]}`, `"stages": want a string, a number or a boolean, not an array`},
		{`{"config": {"agents": 2}}`, `"config": want a string, a number or a boolean, not an object`},
		{`{"model": null}`, `"model": want a string, a number or a boolean, not null`},
		{`{"recipe": "other.json"}`, `"recipe": a command-line choice`},
		{`{"scale": 0.5}`, `"scale": a command-line choice`},
		{`[1, 2]`, `want one JSON object of settings`},
		{`{"stages": 3} {}`, `data after the settings object`},
		{`{"stages": 3`, `recipe "`},
	} {
		p := writeFile(t, "bad.json", bad.text)
		_, _, err := commandOptions(t, "--recipe", p, "--out", t.TempDir())
		var oe *fielderr.Error
		if !errors.As(err, &oe) || oe.Flag != "recipe" || !strings.Contains(oe.Usage(), p) || !strings.Contains(oe.Usage(), bad.want) {
			t.Errorf("recipe %s: %v, want a *fielderr.Error on recipe naming the file and %q", bad.text, err, bad.want)
		}
	}
	if _, _, err := commandOptions(t, "--recipe", filepath.Join(t.TempDir(), "none.json"), "--out", t.TempDir()); err == nil || !strings.Contains(err.Error(), "none.json") {
		t.Errorf("missing recipe: %v", err)
	}
	// A value the flag takes but the run cannot: train's range check, before any run.
	p := writeFile(t, "range.json", `{"strategies": "fixed", "epochs": -1}`)
	var te *fielderr.Error
	if _, _, err := commandOptions(t, "--recipe", p, "--out", t.TempDir()); !errors.As(err, &te) || te.Flag != "epochs" {
		t.Errorf("epochs -1: %v, want train's *fielderr.Error on epochs", err)
	}
}

// TestScale: --scale F multiplies the counts, rounded and at least 1 (token
// budgets at least minScaledTokens, never raised), caps the learner batch
// and the unit at the instances, keeps the structure, and says what it
// changed; F outside (0,1] is a flag error.
func TestScale(t *testing.T) {
	o, out, err := commandOptions(t, "--recipe", paperRecipe, "--model", "/nonexistent", "--scale", "0.01", "--out", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if o.Config.Instances != 40 || o.ValPerSize != 1 || o.EvalPerSize != 1 || o.MaxNewTokens != 41 || o.EngineerMaxTokens != 20 ||
		o.LearnerBatch != 32 || o.InstancesPerUnit != 16 || o.Stages != 3 || o.Epochs != 2 || o.GroupSize != 8 || len(o.Seeds) != 1 {
		t.Fatalf("scaled options %+v", o)
	}
	want := "scale 0.01: instances 4000 → 40, val-per-size 20 → 1, eval-per-size 50 → 1, max-new-tokens 4096 → 41, engineer-max-tokens 2048 → 20; stages 3, epochs 2, group 8 unchanged\n"
	if out != want {
		t.Fatalf("scale line %q, want %q", out, want)
	}
	o, out, err = commandOptions(t, "--recipe", paperRecipe, "--model", "/nonexistent", "--scale", "0.0005", "--max-new-tokens", "8", "--out", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if o.Config.Instances != 2 || o.LearnerBatch != 2 || o.InstancesPerUnit != 2 || o.MaxNewTokens != 8 || o.EngineerMaxTokens != minScaledTokens {
		t.Fatalf("scale 0.0005: %+v", o)
	}
	if !strings.Contains(out, "learner-batch 32 → 2, instances-per-unit 16 → 2") || strings.Contains(out, "max-new-tokens") {
		t.Fatalf("scale 0.0005 line %q", out)
	}
	if _, out, err := commandOptions(t, "--recipe", paperRecipe, "--model", "/nonexistent", "--out", t.TempDir()); err != nil || out != "" {
		t.Fatalf("no --scale: %q, %v", out, err)
	}
	for _, bad := range []string{"0", "-0.5", "1.5", "NaN", "x"} {
		if _, _, err := commandOptions(t, "--scale", bad); err == nil || !strings.Contains(err.Error(), "0 < F <= 1") {
			t.Errorf("--scale %s: %v", bad, err)
		}
	}
}

// TestConfigsValidate reads every JSON file under configs/: those directly
// in it are stage-0 generator configs (--config), those one folder down
// are recipes (--recipe), each of which must give options a run starts
// with. Anything else there is an error.
func TestConfigsValidate(t *testing.T) {
	var recipes, configs int
	err := filepath.WalkDir("../configs", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".json" {
			return err
		}
		rel, _ := filepath.Rel("../configs", path)
		switch strings.Count(rel, string(filepath.Separator)) {
		case 0:
			configs++
			cfg, err := train.ReadConfig(path)
			if err == nil {
				err = env.CheckFeasible(cfg)
			}
			if err != nil {
				t.Errorf("generator config %s: %v", path, err)
			}
		case 1:
			recipes++
			o, _, err := commandOptions(t, "--recipe", path, "--model", "/path/of/the/checkpoint")
			if err != nil {
				t.Errorf("recipe %s: %v", path, err)
			} else if len(o.Arms) == 0 || len(o.Seeds) == 0 || o.Dir == "" {
				t.Errorf("recipe %s: arms %v, seeds %v, out %q", path, o.Arms, o.Seeds, o.Dir)
			}
		default:
			t.Errorf("%s: configs/ holds generator configs at its top and recipes one folder down, nothing deeper", path)
		}
		return nil
	})
	if err != nil || recipes == 0 || configs == 0 {
		t.Fatalf("walk: %v; %d recipes, %d generator configs", err, recipes, configs)
	}
	t.Logf("%d recipes, %d generator configs", recipes, configs)
}

// TestPaperRecipeOnCPU runs the paper's recipe file as it is, on a random
// tiny checkpoint on the CPU (--device cpu --threads 1), scaled down (--scale 0.0005: 2 instances per
// round, one per benchmark cell, 16-token answers): the three arms run 3
// rounds of 2 epochs each, the checkpoint arms ask their engineer (a random
// model: every answer is rejected and the config falls back, as the audit
// shows), and the report has the paper's tables for every arm.
func TestPaperRecipeOnCPU(t *testing.T) {
	if _, err := torch.FindPython(t.Context(), ""); err != nil {
		if os.Getenv("T2T_REQUIRE_TORCH") == "1" {
			t.Fatalf("T2T_REQUIRE_TORCH=1: %v", err)
		}
		t.Skipf("the recipe's engine is torch and no Python imports torch (apt-get install python3-torch): %v", err)
	}
	model := filepath.Join(t.TempDir(), "tiny")
	tok, err := textpolicy.TinyTokenizerJSON(textpolicy.DefaultTinyVocab)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hfmodel.Init(model, hfmodel.InitOptions{Preset: hfmodel.PresetTiny, Seed: 1, Tokenizer: tok,
		TokenizerConfig: []byte(hfmodel.TokenizerConfigJSON), ExactVocab: true}, nil); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// Where it computes: the CPU, one torch thread (more spin against
	// each other on 2 shared cores: about 4× the CPU time).
	o, scaled, err := commandOptions(t, "--recipe", paperRecipe, "--model", model, "--device", "cpu", "--threads", "1", "--scale", "0.0005", "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	o.Out = &out
	exp, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Logf("%s%s", scaled, out.String())
	if exp.Budget.Policy != "qwen3" || exp.Budget.Stages != 3 || exp.Budget.Epochs != 2 || exp.Budget.Instances != 2 || exp.Baseline != "fixed" {
		t.Fatalf("budget %+v, baseline %q", exp.Budget, exp.Baseline)
	}
	var labels []string
	for _, r := range exp.Runs {
		labels = append(labels, r.Strategy)
		if len(r.Stages) != 3 || r.Initial.Stage != -1 {
			t.Fatalf("%s: %d rounds, initial stage %d", r.Strategy, len(r.Stages), r.Initial.Stage)
		}
		for _, s := range r.Stages {
			if s.Updates == 0 || s.Val.Episodes != 8 || len(s.Eval) != 3 || s.Eval[5].Episodes != 18 {
				t.Fatalf("%s round %d: %d updates, val %d episodes, benchmark %v", r.Strategy, s.Stage, s.Updates, s.Val.Episodes, s.Eval)
			}
			if s.Stage == 0 || r.Strategy == "fixed" {
				continue
			}
			// Every attempt rejected (4 with 3 retries), the previous config kept.
			if len(s.Audit) != 4 || s.Audit[3].Accepted || !strings.Contains(s.Rationale, "no acceptable proposal") {
				t.Errorf("%s round %d: audit %+v, rationale %q", r.Strategy, s.Stage, s.Audit, s.Rationale)
			}
		}
	}
	if got := strings.Join(labels, " "); got != "self[F,G,H0,T] base[F,G,H0,T] fixed" {
		t.Fatalf("arms %s", got)
	}
	md, err := os.ReadFile(filepath.Join(dir, "experiment.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Final results", "| self[F,G,H0,T] | 1 |", "| base[F,G,H0,T] | 1 |", "| fixed | 1 |",
		"## Paired difference to fixed", "3 agents valid", "5 agents optimal", "× 2 epochs"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("experiment.md lacks %q", want)
		}
	}
}
