package experiment

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/train"
)

// Arm is one strategy of an experiment: an engineer strategy and, for
// llm, its context modules and who answers (Engineer: "" for the endpoint
// of Options.LLMURL, train.EngineerSelf for the policy being trained,
// train.EngineerBase for a frozen copy of its starting checkpoint). Label
// names it in the report.
type Arm struct {
	Label    string
	Strategy string
	Modules  engineer.Modules
	Engineer string
}

// Arm names besides engineer.StrategyNames: the llm strategy answered by
// the policy being trained (the paper's method) or by a frozen copy of the
// starting checkpoint (the paper's comparison).
const (
	ArmSelf = train.EngineerSelf
	ArmBase = train.EngineerBase
)

// ParseArms expands a comma-separated strategy list into arms; llm, self
// and base become one arm per module variant of modules (variants
// separated by ';', each like "F,G,H0,T"), labelled "llm[F,G,H0,T]",
// "self[F,G,H0,T]", "base[…]". An unknown strategy, a
// strategy or variant given twice, a bad variant or an empty list is an
// *fielderr.Error on "strategies" or "modules".
func ParseArms(strategies, modules string) ([]Arm, error) {
	var arms []Arm
	seen := map[string]bool{}
	for _, name := range strings.Split(strategies, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" {
			continue
		}
		if !slices.Contains(ArmNames(), name) {
			return nil, &fielderr.Error{Flag: "strategies", Reason: fmt.Sprintf("unknown strategy %q (want %s)", name, strings.Join(ArmNames(), ", "))}
		}
		if name != engineer.NameLLM && name != ArmSelf && name != ArmBase {
			if seen[name] {
				return nil, &fielderr.Error{Flag: "strategies", Reason: fmt.Sprintf("%q given twice", name)}
			}
			seen[name] = true
			arms = append(arms, Arm{Label: name, Strategy: name})
			continue
		}
		for _, v := range strings.Split(modules, ";") {
			m, err := engineer.ParseModules(v)
			if err != nil {
				return nil, &fielderr.Error{Flag: "modules", Value: strconv.Quote(v), Reason: err.Error()}
			}
			label := name + "[" + m.String() + "]"
			if seen[label] {
				return nil, &fielderr.Error{Flag: "modules", Reason: fmt.Sprintf("variant %s given twice", m)}
			}
			seen[label] = true
			arm := Arm{Label: label, Strategy: engineer.NameLLM, Modules: m}
			if name != engineer.NameLLM {
				arm.Engineer = name
			}
			arms = append(arms, arm)
		}
	}
	if len(arms) == 0 {
		return nil, &fielderr.Error{Flag: "strategies", Reason: "no strategy given"}
	}
	return arms, nil
}

// RunID makes a store-safe run id from an arm label and a seed:
// "exp-LABEL-sSEED" with every character but letters, digits, '.', '-'
// and '_' replaced by '-'.
func RunID(label string, seed uint64) string {
	var b strings.Builder
	for _, c := range label {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == '_':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	return fmt.Sprintf("exp-%s-s%d", strings.Trim(b.String(), "-"), seed)
}

// CommandLine renders a command with its arguments for the report,
// quoting in single quotes those that a shell would split or expand.
func CommandLine(name string, args []string) string {
	parts := []string{name}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t;'\"$&|<>*?()[]{}") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// ArmNames are the arm names ParseArms takes: the engineer strategies, self
// and base.
func ArmNames() []string { return append(engineer.StrategyNames(), ArmSelf, ArmBase) }

// LLMEngineer reports whether some arm's llm strategy is answered by a
// checkpoint (self or base), and some by the endpoint.
func LLMEngineer(arms []Arm) (checkpoint, endpoint bool) {
	for _, a := range arms {
		if a.Strategy == engineer.NameLLM {
			checkpoint = checkpoint || a.Engineer != ""
			endpoint = endpoint || a.Engineer == ""
		}
	}
	return checkpoint, endpoint
}
