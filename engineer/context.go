package engineer

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/t2t-lab/t2t/env"
)

// Modules switches the context modules of the language-model engineer's
// prompt. The zero value shows none: the prompt then holds only the current
// configuration and the output schema.
type Modules struct {
	// F: failure breakdown of the last stage (valid and optimal rates, per
	// size failure counts by category, a few concrete failure examples).
	F bool
	// G: general design guidelines.
	G bool
	// H: history of past configs with their validation results.
	H bool
	// S: the engineer's own rationale for the current config.
	S bool
	// T: training bookkeeping (stage index, epochs, budget left).
	T bool
	// HistoryNoRound0 drops the round-0 config (stage 0) from H; the paper
	// found H better without it. Ignored when H is off.
	HistoryNoRound0 bool
}

// ParseModules reads a module list such as "F,G,H0,T" or the paper's
// "F+G+H+T". Tokens are separated by commas or plus signs, surrounding
// spaces are ignored, and letters are case-insensitive. The tokens are F, G,
// H, S, T and H0 (or its synonym H-): H without the round-0 config. An empty
// string (or "none") selects no module. Unknown and repeated tokens (H and
// H0 count as the same module) are rejected with a *ModuleError that wraps
// ErrUnknownModule.
func ParseModules(s string) (Modules, error) {
	var m Modules
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "none") {
		return m, nil
	}
	seen := map[string]bool{}
	for _, tok := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '+' }) {
		t := strings.ToUpper(strings.TrimSpace(tok))
		key := t
		switch t {
		case "F":
			m.F = true
		case "G":
			m.G = true
		case "H":
			m.H = true
		case "H0", "H-":
			m.H, m.HistoryNoRound0 = true, true
			key = "H"
		case "S":
			m.S = true
		case "T":
			m.T = true
		default:
			return Modules{}, &ModuleError{Token: tok, Reason: "want F, G, H, H0 (or H-), S or T"}
		}
		if seen[key] {
			return Modules{}, &ModuleError{Token: tok, Reason: "module given twice"}
		}
		seen[key] = true
	}
	if len(seen) == 0 {
		return Modules{}, &ModuleError{Token: s, Reason: "no module named"}
	}
	return m, nil
}

// String returns the canonical list ("F,G,H0,T"); "none" for no module.
// ParseModules(m.String()) gives m back (HistoryNoRound0 only with H).
func (m Modules) String() string {
	var parts []string
	for _, p := range []struct {
		on   bool
		name string
	}{{m.F, "F"}, {m.G, "G"}, {m.H && !m.HistoryNoRound0, "H"}, {m.H && m.HistoryNoRound0, "H0"}, {m.S, "S"}, {m.T, "T"}} {
		if p.on {
			parts = append(parts, p.name)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// Prompt is a rendered engineer prompt.
type Prompt struct {
	System, User string
	// Hash is the hex SHA-256 of the 8-byte little-endian length of System,
	// then System, then User.
	Hash string
	// Tokens is ApproxTokens(System) + ApproxTokens(User).
	Tokens int
	// OmittedExamples and OmittedStages count the failure examples and the
	// history stages dropped to fit the token budget.
	OmittedExamples, OmittedStages int
}

// Rendering limits of BuildPrompt.
const (
	// MaxPromptExamples is the most failure examples F shows.
	MaxPromptExamples = 4
	// Truncation of the example fields and of the S rationale, in bytes.
	promptDetailBytes    = 240
	promptAnswerBytes    = 400
	promptRationaleBytes = 2000
)

// ApproxTokens approximates the token count of s as ceil(len(s)/4), len in
// bytes: about right for English and JSON with BPE tokenizers, an
// overestimate for long numbers, and never zero for a non-empty string.
func ApproxTokens(s string) int { return (len(s) + 3) / 4 }

// BuildPrompt renders the engineer's prompt for the next stage of h with
// the modules m. The rendering is deterministic (no maps, floats in fixed
// notation): the same history and modules give a byte-identical prompt.
// The user message ends with the strict JSON output schema.
//
// With tokenBudget > 0 the prompt (System and User, counted with
// ApproxTokens) is trimmed to fit, in a fixed order: failure examples from
// the last shown back, then history stages from the oldest; the prompt says
// what was omitted. When it still does not fit, the error wraps
// ErrTokenBudget. tokenBudget <= 0 means no limit. Without stages the
// current configuration is env.DefaultConfig().
func BuildPrompt(h *History, m Modules, tokenBudget int) (Prompt, error) {
	return engBuildPrompt(h, m, tokenBudget, env.DefaultConfig())
}

func engBuildPrompt(h *History, m Modules, tokenBudget int, base env.Config) (Prompt, error) {
	if h == nil {
		h = &History{}
	}
	r := promptRenderer{h: h, m: m, cur: engPrevious(h, base)}
	r.examples = promptPickExamples(h)
	r.stages = r.historyStages()
	nEx, nSt := 0, 0
	if !m.F {
		r.examples = nil
	}
	if !m.H {
		r.stages = nil
	}
	for {
		p := r.render(nEx, nSt)
		if tokenBudget <= 0 || p.Tokens <= tokenBudget {
			return p, nil
		}
		switch {
		case nEx < len(r.examples):
			nEx++
		case nSt < len(r.stages):
			nSt++
		default:
			return Prompt{}, fmt.Errorf("%w: %d approximate tokens after trimming, budget %d", ErrTokenBudget, p.Tokens, tokenBudget)
		}
	}
}

type promptRenderer struct {
	h        *History
	m        Modules
	cur      env.Config
	examples []Example // F's examples, in display order
	stages   []int     // H's stage indices, oldest first
}

// historyStages lists the stages H shows.
func (r *promptRenderer) historyStages() []int {
	var out []int
	for i := range r.h.Stages {
		if i == 0 && r.m.HistoryNoRound0 {
			continue
		}
		out = append(out, i)
	}
	return out
}

// promptPickExamples chooses up to MaxPromptExamples examples of the last
// stage: first one per category in the given order, then the rest in
// order; shown in their original order.
func promptPickExamples(h *History) []Example {
	last := h.Last()
	if last == nil {
		return nil
	}
	var idx []int
	seen := map[string]bool{}
	for i, e := range last.Examples {
		if len(idx) < MaxPromptExamples && !seen[e.Category] {
			seen[e.Category] = true
			idx = append(idx, i)
		}
	}
	for i := range last.Examples {
		if len(idx) < MaxPromptExamples && !slices.Contains(idx, i) {
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	out := make([]Example, len(idx))
	for k, i := range idx {
		out[k] = last.Examples[i]
	}
	return out
}

func (r *promptRenderer) render(dropExamples, dropStages int) Prompt {
	var b strings.Builder
	next := r.h.NextStage()
	fmt.Fprintf(&b, "# Design the training environment of stage %d\n", next)
	if r.m.G {
		b.WriteString("\n## G. Design guidelines\n")
		b.WriteString(promptGuidelines)
		if r.cur.HasAgentRange() {
			b.WriteString(promptGuidelinesEvalRange)
		} else {
			b.WriteString(promptGuidelinesEval)
		}
	}
	if r.m.T {
		r.renderT(&b)
	}
	if r.m.H {
		r.renderH(&b, r.stages[dropStages:])
	}
	if r.m.F {
		r.renderF(&b, r.examples[:len(r.examples)-dropExamples])
	}
	if r.m.S {
		r.renderS(&b)
	}
	if dropExamples > 0 || dropStages > 0 {
		fmt.Fprintf(&b, "\n(Omitted to fit the context budget: %d failure example(s) and the %d oldest history stage(s).)\n", dropExamples, dropStages)
	}
	r.renderCurrent(&b)
	r.renderSchema(&b)

	p := Prompt{System: promptSystem, User: b.String(), OmittedExamples: dropExamples, OmittedStages: dropStages}
	p.Tokens = ApproxTokens(p.System) + ApproxTokens(p.User)
	p.Hash = PromptHash(p.System, p.User)
	return p
}

// PromptHash is the hash BuildPrompt stores in Prompt.Hash.
func PromptHash(system, user string) string {
	h := sha256.New()
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(system)))
	h.Write(n[:])
	h.Write([]byte(system))
	h.Write([]byte(user))
	return hex.EncodeToString(h.Sum(nil))
}

func (r *promptRenderer) renderT(b *strings.Builder) {
	b.WriteString("\n## T. Training bookkeeping\n")
	next := r.h.NextStage()
	bud := r.h.Budget
	fmt.Fprintf(b, "- stage to configure: %d (stages are numbered from 0); finished stages: %d", next, next)
	if bud.TotalStages > 0 {
		left := max(bud.TotalStages-next, 0)
		fmt.Fprintf(b, " of %d; stages left including this one: %d", bud.TotalStages, left)
		if left == 1 {
			b.WriteString(" (this is the last stage)")
		}
	} else {
		b.WriteString(" (total number of stages not fixed)")
	}
	b.WriteString("\n")
	epochs, updates := 0, 0
	var version int64
	for _, s := range r.h.Stages {
		epochs += s.Epochs
		updates += s.Updates
		version = s.PolicyVersion
	}
	if bud.EpochsPerStage > 0 {
		fmt.Fprintf(b, "- epochs per stage: %d; ", bud.EpochsPerStage)
	} else {
		b.WriteString("- ")
	}
	fmt.Fprintf(b, "epochs so far: %d; optimizer updates so far: %d; policy version: %d\n", epochs, updates, version)
}

func (r *promptRenderer) renderH(b *strings.Builder, stages []int) {
	b.WriteString("\n## H. History of past stages\n")
	if len(stages) == 0 {
		if len(r.h.Stages) > 0 && r.m.HistoryNoRound0 {
			b.WriteString("No stage to show yet (the random round-0 configuration is left out).\n")
		} else {
			b.WriteString("No stage to show.\n")
		}
		return
	}
	if r.m.HistoryNoRound0 {
		b.WriteString("The random round-0 configuration is left out.\n")
	}
	for _, i := range stages {
		s := &r.h.Stages[i]
		version := s.ConfigVersion
		if version == "" {
			version = s.Config.Hash()
		}
		fmt.Fprintf(b, "\n### Stage %d (config %s", i, version)
		if i == 0 {
			b.WriteString(", round 0")
		}
		fmt.Fprintf(b, "): agents %s, instances %d\n", s.Config.AgentsText(), s.Config.Instances)
		t := engTotal(s.Val)
		fmt.Fprintf(b, "validation: valid %s%%, optimal %s%% over %d episodes\n", promptPct(t.Valid, t.Episodes), promptPct(t.Optimal, t.Episodes), t.Episodes)
		b.WriteString("| size | data_ratio | hole_ratio | wait_ratio | val valid% | val optimal% |\n")
		b.WriteString("|---|---|---|---|---|---|\n")
		for _, sc := range s.Config.Sizes {
			v, ok := engStats(s.Val, sc.Size)
			vv, vo := "n/a", "n/a"
			if ok && v.Episodes > 0 {
				vv, vo = promptPct(v.Valid, v.Episodes), promptPct(v.Optimal, v.Episodes)
			}
			fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %s |\n", sc.Size, promptF3(sc.DataRatio), promptF3(sc.HoleRatio), promptF3(sc.WaitRatio), vv, vo)
		}
	}
}

func (r *promptRenderer) renderF(b *strings.Builder, examples []Example) {
	last := r.h.Last()
	if last == nil {
		b.WriteString("\n## F. Failure breakdown\nNo stage has finished yet: no failure data.\n")
		return
	}
	fmt.Fprintf(b, "\n## F. Failure breakdown of stage %d\n", len(r.h.Stages)-1)
	for _, split := range []struct {
		name  string
		stats []SizeStats
	}{{"validation (fixed validation set)", last.Val}, {"training (this stage's generated instances)", last.Train}} {
		t := engTotal(split.stats)
		fmt.Fprintf(b, "\n%s: valid %s%%, optimal %s%% over %d episodes, mean reward %s\n",
			split.name, promptPct(t.Valid, t.Episodes), promptPct(t.Optimal, t.Episodes), t.Episodes, promptF3(t.MeanReward))
		if len(split.stats) == 0 {
			continue
		}
		b.WriteString("| size | episodes | valid% | optimal% | reward |")
		for c := range env.NumCategories {
			b.WriteString(" " + c.String() + " |")
		}
		b.WriteString("\n|---|---|---|---|---|")
		b.WriteString(strings.Repeat("---|", int(env.NumCategories)))
		b.WriteString("\n")
		sorted := slices.Clone(split.stats)
		slices.SortStableFunc(sorted, func(a, b SizeStats) int { return a.Size - b.Size })
		for _, s := range sorted {
			fmt.Fprintf(b, "| %d | %d | %s | %s | %s |", s.Size, s.Episodes, promptPct(s.Valid, s.Episodes), promptPct(s.Optimal, s.Episodes), promptF3(s.MeanReward))
			for _, n := range s.Categories {
				b.WriteString(" " + strconv.FormatInt(n, 10) + " |")
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("(failure counts: answers failing each check; one answer may fail several)\n")
	if len(last.TrainByAgents) > 0 {
		b.WriteString("\ntraining by agent count (the config's agent range):\n| agents | episodes | valid% | optimal% |\n|---|---|---|---|\n")
		for _, a := range last.TrainByAgents {
			fmt.Fprintf(b, "| %d | %d | %s | %s |\n", a.Agents, a.Episodes, promptPct(a.Valid, a.Episodes), promptPct(a.Optimal, a.Episodes))
		}
	}
	if len(examples) == 0 {
		return
	}
	b.WriteString("\nFailure examples:\n")
	for i, e := range examples {
		fmt.Fprintf(b, "%d. size %d, instance %s, failed: %s\n", i+1, e.Size, promptOneLine(engTruncate(e.InstanceID, 64)), promptOneLine(engTruncate(e.Category, 32)))
		if e.Detail != "" {
			fmt.Fprintf(b, "   detail: %s\n", promptOneLine(engTruncate(e.Detail, promptDetailBytes)))
		}
		if e.Answer != "" {
			b.WriteString("   answer:\n")
			b.WriteString(promptIndent(engTruncate(e.Answer, promptAnswerBytes), "      "))
		}
	}
}

func (r *promptRenderer) renderS(b *strings.Builder) {
	b.WriteString("\n## S. Your previous rationale\n")
	last := r.h.Last()
	if last == nil || strings.TrimSpace(last.Rationale) == "" {
		b.WriteString("(none: the current configuration was not written by you)\n")
		return
	}
	b.WriteString(promptIndent(engTruncate(strings.TrimSpace(last.Rationale), promptRationaleBytes), ""))
}

func (r *promptRenderer) renderCurrent(b *strings.Builder) {
	if last := r.h.Last(); last != nil {
		fmt.Fprintf(b, "\n## Current configuration (used by stage %d)\n", len(r.h.Stages)-1)
	} else {
		b.WriteString("\n## Current configuration (the default; no stage has run yet)\n")
	}
	b.WriteString(promptConfigJSON(r.cur))
}

// promptConfigJSON renders c in the output format, one size per line,
// ratios with three decimals.
func promptConfigJSON(c env.Config) string {
	var b strings.Builder
	b.WriteString("{\"sizes\": [\n")
	for i, s := range c.Sizes {
		fmt.Fprintf(&b, "  {\"size\": %d, \"data_ratio\": %s, \"hole_ratio\": %s, \"wait_ratio\": %s}", s.Size, promptF3(s.DataRatio), promptF3(s.HoleRatio), promptF3(s.WaitRatio))
		if i+1 < len(c.Sizes) {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "], \"agents\": %d, %s\"instances\": %d}\n", c.Agents, agentsMaxField(c, c), c.Instances)
	return b.String()
}

// agentsMaxField is c's JSON field `"agents_max": k, ` when c or prev has
// an agent range, else nothing, so a prompt or answer without a range reads
// as it did before the field. k is agents when c drops prev's range (an
// answer that left the field out would keep the range).
func agentsMaxField(prev, c env.Config) string {
	if !c.HasAgentRange() && !prev.HasAgentRange() {
		return ""
	}
	_, hi := c.AgentRange()
	return fmt.Sprintf("\"agents_max\": %d, ", hi)
}

func (r *promptRenderer) renderSchema(b *strings.Builder) {
	c := r.cur
	b.WriteString("\n## Output\n")
	b.WriteString("Think as long as you need, then reply with exactly one JSON object of this form (text around it is ignored; no comments, no trailing commas, no other JSON object):\n")
	b.WriteString("{\"rationale\": \"<why this configuration, in a few sentences>\",\n \"config\": {\"sizes\": [\n")
	for i, s := range c.Sizes {
		fmt.Fprintf(b, "  {\"size\": %d, \"data_ratio\": <number>, \"hole_ratio\": <number>, \"wait_ratio\": <number>}", s.Size)
		if i+1 < len(c.Sizes) {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	agentsMax := ""
	if c.HasAgentRange() {
		agentsMax = "\"agents_max\": <integer>, "
	}
	b.WriteString(" ], \"agents\": <integer>, " + agentsMax + "\"instances\": <integer>}}\n")
	b.WriteString("Rules:\n")
	fmt.Fprintf(b, "- list each of the sizes %s exactly once and no other size;\n", promptSizeList(c))
	b.WriteString("- data_ratio is the share of the stage's instances at that size, in [0,1], summing to 1 over the sizes (other sums are renormalised);\n")
	b.WriteString("- hole_ratio and wait_ratio are in [0,1] (values outside are clipped);\n")
	if c.HasAgentRange() {
		fmt.Fprintf(b, "- agents is the fewest agents per instance, at least 1 and at most the smallest size with a positive data_ratio (currently %d);\n", c.Agents)
		fmt.Fprintf(b, "- agents_max is the most agents per instance, from agents to %d: each size's instances are spread over agents..min(agents_max, size) (currently %d; leave it out to keep it);\n", env.MaxAgents, c.AgentsMax)
	} else {
		fmt.Fprintf(b, "- agents is the number of agents per instance, at least 1 and at most the smallest size with a positive data_ratio (currently %d);\n", c.Agents)
	}
	fmt.Fprintf(b, "- instances is the number of training instances of the stage (currently %d);\n", c.Instances)
	b.WriteString("- no other fields; field names are case-sensitive.\n")
}

func promptSizeList(c env.Config) string {
	parts := make([]string, len(c.Sizes))
	for i, s := range c.Sizes {
		parts[i] = strconv.Itoa(s.Size)
	}
	return strings.Join(parts, ", ")
}

// promptF3 formats v with three decimals.
func promptF3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// promptPct formats 100·k/n with two decimals ("n/a" without episodes).
func promptPct(k, n int64) string {
	if n <= 0 {
		return "n/a"
	}
	return strconv.FormatFloat(100*float64(k)/float64(n), 'f', 2, 64)
}

// engTruncate cuts s to at most n bytes on a rune boundary, marking a cut
// with "…" (which may add up to 3 bytes).
func engTruncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func promptOneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// promptIndent prefixes every line of s with ind and ends it with a newline.
func promptIndent(s, ind string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	var b strings.Builder
	for line := range strings.SplitSeq(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(ind)
		b.WriteString(strings.TrimRight(line, " \t"))
		b.WriteString("\n")
	}
	return b.String()
}
