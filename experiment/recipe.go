package experiment

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/internal/limits"
)

// Recipe is a file of t2t experiment settings (Path) and the factor its
// counts are scaled by for a smaller run (Factor; 1: as written, see
// Scale).
//
// A recipe file is one JSON object whose keys are t2t experiment's flag
// names without the dashes ("stages", "instances", "strategies") and whose
// values are what the flag takes, as a JSON string, number or boolean. It
// is read strictly (ReadRecipe): a key that is not a flag, a key given
// twice, a value of another JSON type or a value the flag refuses is an
// error naming the key. Flags given on the command line win over the
// recipe; the recipe wins over the flags' defaults.
type Recipe struct {
	Path   string
	Factor float64
}

// minScaledTokens is the fewest tokens Scale leaves an answer: fewer
// could not hold the shortest plan or proposal opening.
const minScaledTokens = 16

// Register binds --recipe and --scale (Factor) to fs; Factor starts at 1.
func (r *Recipe) Register(fs *flag.FlagSet) {
	r.Factor = 1
	fs.StringVar(&r.Path, "recipe", "", "JSON file of settings (keys: this command's flag names, e.g. configs/paper/qwen3-4b.json);\n"+
		"flags given on the command line override it")
	fs.Func("scale", "factor F in (0,1] for the counts (instances per stage, val-per-size, eval-per-size, token budgets),\n"+
		"e.g. 0.001 for a CPU run of a GPU recipe; stages, epochs and seeds stay (default 1)", func(s string) error {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || !(f > 0 && f <= 1) {
			return fmt.Errorf("want a number F with 0 < F <= 1")
		}
		r.Factor = f
		return nil
	})
}

// Setting is one key of a recipe file: a flag's name and its value as a
// command line gives it.
type Setting struct {
	Name, Value string
}

// ReadRecipe reads the settings of a recipe file in file order. A file
// that is not one JSON object of string, number and boolean values with
// distinct keys is a *fielderr.Error on "recipe" naming the key.
func ReadRecipe(path string) ([]Setting, error) {
	b, err := limits.ReadFile(path, limits.Config)
	if err != nil {
		return nil, &fielderr.Error{Flag: "recipe", Value: strconv.Quote(path), Reason: err.Error()}
	}
	settings, err := parseRecipe(b)
	if err != nil {
		return nil, &fielderr.Error{Flag: "recipe", Value: strconv.Quote(path), Reason: err.Error()}
	}
	return settings, nil
}

// parseRecipe decodes a recipe's JSON object.
func parseRecipe(b []byte) ([]Setting, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("want one JSON object of settings")
	}
	var settings []Setting
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name := tok.(string) // inside an object More means a key
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%q: %w", name, err)
		}
		if seen[name] {
			return nil, fmt.Errorf("%q given twice", name)
		}
		seen[name] = true
		s := Setting{Name: name}
		switch v := v.(type) {
		case string:
			s.Value = v
		case json.Number:
			s.Value = v.String()
		case bool:
			s.Value = strconv.FormatBool(v)
		default:
			return nil, fmt.Errorf("%q: want a string, a number or a boolean, not %s", name, jsonKind(v))
		}
		settings = append(settings, s)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the settings object")
	}
	return settings, nil
}

// jsonKind names the JSON type of a decoded value that is not a setting.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	}
	return "an object"
}

// Apply sets every flag of fs that the recipe names, unless the command
// line set it (fs must be parsed). A key that names no flag of fs, names
// recipe or scale (choices of a command line), or has a value its flag
// refuses is a *fielderr.Error on "recipe". Without a Path it does nothing.
func (r *Recipe) Apply(fs *flag.FlagSet) error {
	if r.Path == "" {
		return nil
	}
	settings, err := ReadRecipe(r.Path)
	if err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	bad := func(s Setting, reason string) error {
		return &fielderr.Error{Flag: "recipe", Value: strconv.Quote(r.Path), Reason: fmt.Sprintf("%q: %s", s.Name, reason)}
	}
	for _, s := range settings {
		f := fs.Lookup(s.Name)
		switch {
		case f == nil:
			return bad(s, "not a setting of "+fs.Name()+" (the keys are its flag names)")
		case s.Name == "recipe" || s.Name == "scale":
			return bad(s, "a command-line choice, not a recipe setting")
		case given[s.Name]:
			continue
		}
		if err := f.Value.Set(s.Value); err != nil {
			return bad(s, fmt.Sprintf("value %q: %v", s.Value, err))
		}
	}
	return nil
}

// Scale multiplies the counts of o by r.Factor, each rounded and at least
// 1: the training instances per stage, the validation set's and the
// benchmark suite's instances per size, and the answer and engineer token
// budgets (at least minScaledTokens, never raised). The learner batch and
// the instances per unit are then capped at the instances per stage, so
// that every stage still updates the policy. Stages, epochs, seeds and
// the group size stay. It writes one line to w saying what it changed;
// at scale 1 it does nothing.
func (r *Recipe) Scale(o *Options, w io.Writer) {
	if r.Factor == 1 || r.Factor == 0 {
		return
	}
	var changed []string
	set := func(name string, v *int, to int) {
		if *v != to {
			changed = append(changed, fmt.Sprintf("%s %d → %d", name, *v, to))
			*v = to
		}
	}
	scaled := func(n, least int) int { return min(n, max(least, int(math.Round(float64(n)*r.Factor)))) }
	set("instances", &o.Config.Instances, scaled(o.Config.Instances, 1))
	set("val-per-size", &o.ValPerSize, scaled(o.ValPerSize, 1))
	set("eval-per-size", &o.EvalPerSize, scaled(o.EvalPerSize, 1))
	set("max-new-tokens", &o.MaxNewTokens, scaled(o.MaxNewTokens, minScaledTokens))
	set("engineer-max-tokens", &o.EngineerMaxTokens, scaled(o.EngineerMaxTokens, minScaledTokens))
	set("learner-batch", &o.LearnerBatch, min(o.LearnerBatch, o.Config.Instances))
	set("instances-per-unit", &o.InstancesPerUnit, min(o.InstancesPerUnit, o.Config.Instances))
	if len(changed) == 0 {
		changed = []string{"no count changed"}
	}
	fmt.Fprintf(w, "scale %g: %s; stages %d, epochs %d, group %d unchanged\n",
		r.Factor, strings.Join(changed, ", "), o.Stages, max(o.Epochs, 1), o.GroupSize)
}
