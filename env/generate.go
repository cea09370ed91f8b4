package env

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
)

// The generator's limits. They are part of the determinism contract: the
// same (config, seed, index) gives the same instance only under the same
// limits (and the same solver, whose budgets decide which candidates are
// kept).
const (
	// genMaxCandidates bounds the candidates per instance that reach the
	// solver.
	genMaxCandidates = 3000
	// genMaxPlacements bounds the hole layouts and agent placements drawn
	// per instance.
	genMaxPlacements = 200_000
	// genMaxNodes and genMaxExpansions are the solver budgets per search; a
	// candidate that needs more is discarded.
	genMaxNodes      = 2_000
	genMaxExpansions = 2_000_000
	// genMaxWork bounds the total low-level expansions per instance.
	genMaxWork = 40_000_000
	// genProbeDraws is the number of seeded layout-and-placement draws
	// CheckFeasible makes to see whether a hole ratio leaves room for the
	// agents: a ratio under which fewer than genProbeNeed of them connect
	// every agent's start to its goal is rejected (its success rate is then
	// very likely below 1 in 1000, where the generator would crawl). The
	// probe stops at the genProbeNeed-th success.
	genProbeDraws = 4096
	genProbeNeed  = 4
)

// PCG streams of the generator's random sources.
const (
	genStreamPerm     = 0x7065726d75746174 // the stage's slot permutation
	genStreamInstance = 0x696e7374616e6365 // one instance
	genStreamProbe    = 0x70726f6265726f6f // CheckFeasible's probe
)

// GenError reports a generator request that cannot be met: a size whose
// settings are infeasible (Index -1, from CheckFeasible) or an instance for
// which no candidate was found within the generator's limits. It wraps
// ErrInfeasible.
type GenError struct {
	Size   int
	Index  int
	Reason string
}

func (e *GenError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("env: infeasible request: size %d: %s", e.Size, e.Reason)
	}
	return fmt.Sprintf("env: infeasible request: size %d, instance %d: %s", e.Size, e.Index, e.Reason)
}

// Unwrap returns ErrInfeasible.
func (e *GenError) Unwrap() error { return ErrInfeasible }

// InstanceSeed is the seed of instance index of the stage with the given
// seed: a fixed mix of both. GenerateOne stores it in Instance.Seed and
// draws everything about the instance from
// rand.NewPCG(InstanceSeed(seed, index), genStreamInstance).
func InstanceSeed(seed uint64, index int) uint64 {
	z := seed ^ (uint64(index)*0x9e3779b97f4a7c15 + 0xd1b54a32d192ed03)
	for range 2 {
		z ^= z >> 30
		z *= 0xbf58476d1ce4e5b9
		z ^= z >> 27
		z *= 0x94d049bb133111eb
		z ^= z >> 31
	}
	return z
}

// GenerateOne returns instance index (0 <= index < cfg.Instances) of the
// stage generated from cfg with seed. The instance depends only on (cfg,
// seed, index), so a stage can be generated in any split over machines.
//
// The stage's instances are stratified: size i gets a share of
// cfg.Instances by largest remainder of DataRatio (normalised to sum 1;
// ties go to the earlier size), and round(WaitRatio*count) of its slots
// target NeedsWait=true, the rest NeedsWait=false. With an agent range
// (Config.AgentsMax), the counts a size holds (AgentCounts) take turns over
// the stage's wait slots and, separately, over its no-wait slots, in size
// order (genPlan.agents): each kind of slot of a size splits over the
// counts within one instance, and a wait slot never gets a single agent. A
// permutation of the slots drawn from (seed, a fixed stream) maps indices
// to slots.
//
// The instance itself is drawn by rejection sampling: exactly
// round(HoleRatio*N*N) holes uniformly at random, then the slot's k agents
// on 2k distinct free cells (no start on any goal, no start equal to
// its own goal), until every agent's goal is reachable from its start, the
// solver annotates the candidate within its budget (genMaxNodes CT nodes
// and genMaxExpansions expansions per search) and NeedsWait equals the
// slot's target. It returns a *GenError (ErrInfeasible) when the limits run
// out first, and CheckFeasible's error when the configuration fails one of
// its field or count checks (GenerateOne does not run CheckFeasible's
// sampling probe, which costs up to milliseconds; call CheckFeasible once
// per stage). Instance.Seed is InstanceSeed(seed, index); GenerateSeeded
// regenerates the instance from it.
func GenerateOne(cfg Config, seed uint64, index int) (*Instance, error) {
	p, err := genNewPlan(cfg, seed)
	if err != nil {
		return nil, err
	}
	if index < 0 || index >= cfg.Instances {
		return nil, &FieldError{Field: "index", Value: index, Reason: fmt.Sprintf("must be in [0,%d)", cfg.Instances)}
	}
	var g genScratch
	return p.instance(&g, NewSolver(), index)
}

// Generate returns instances [lo,hi) of the stage generated from cfg with
// seed; Generate(cfg, seed, 0, n) equals the concatenation of Generate over
// any split of [0,n).
func Generate(cfg Config, seed uint64, lo, hi int) ([]*Instance, error) {
	p, err := genNewPlan(cfg, seed)
	if err != nil {
		return nil, err
	}
	if lo < 0 || hi < lo || hi > cfg.Instances {
		return nil, &FieldError{Field: "range", Value: [2]int{lo, hi}, Reason: fmt.Sprintf("must lie in [0,%d]", cfg.Instances)}
	}
	var g genScratch
	s := NewSolver()
	out := make([]*Instance, 0, hi-lo)
	for i := lo; i < hi; i++ {
		in, err := p.instance(&g, s, i)
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, nil
}

// GenerateSeeded draws one instance of side size with the given number of
// holes and agents and NeedsWait target from an instance seed (see
// InstanceSeed). It is what GenerateOne runs once it knows the slot, so
// GenerateSeeded(in.Width, in.NumHoles(), len(in.Agents), in.NeedsWait,
// in.Seed) regenerates a generated instance in.
func GenerateSeeded(size, holes, agents int, needsWait bool, instSeed uint64) (*Instance, error) {
	if size < MinSize || size > MaxSize {
		return nil, &FieldError{Field: "size", Value: size, Reason: fmt.Sprintf("must be in [%d,%d]", MinSize, MaxSize)}
	}
	if agents < 1 || agents > min(size, MaxAgents) {
		return nil, &GenError{Size: size, Index: -1, Reason: fmt.Sprintf("%d agents do not fit (at most %d)", agents, min(size, MaxAgents))}
	}
	if holes < 0 || size*size-holes < 2*agents {
		return nil, &GenError{Size: size, Index: -1, Reason: fmt.Sprintf("%d holes leave too few free cells for %d agents", holes, agents)}
	}
	var g genScratch
	return genDraw(&g, NewSolver(), size, holes, agents, needsWait, instSeed, -1)
}

// CheckFeasible is a fast dry check of cfg: field bounds (sizes in
// [MinSize,MaxSize] and listed once, ratios in [0,1], Agents in
// [1,MaxAgents], AgentsMax 0 or in [Agents,MaxAgents], Instances >= 0, data
// ratios not all zero) and, for every size that gets instances, that the
// fewest agents fit (at most min(N,10)), that the holes leave 2k free cells
// for the most agents k of that size (AgentCounts), that a size with
// NeedsWait targets holds two agents or more, and that at least 4 of 4096
// random hole layouts and placements of k agents (drawn as the generator
// draws them, from a fixed seed) connect every agent's start to its goal.
// The field and count checks take microseconds; the probe stops at its
// fourth success, so it takes tens of microseconds on common
// configurations and a few milliseconds on sparse ones (5 agents, 50% holes
// on 10x10) or when it rejects. Every error wraps
// ErrInfeasible; field errors also wrap ErrInvalidConfig and a *FieldError,
// size errors are *GenError with Index -1.
func CheckFeasible(cfg Config) error {
	if err := genCheck(cfg); err != nil {
		return err
	}
	counts, _ := genAlloc(cfg)
	for i, sc := range cfg.Sizes {
		if counts[i] == 0 {
			continue
		}
		n := sc.Size
		ks := cfg.AgentCounts(n)
		k := ks[len(ks)-1]
		nh := genHoleCount(sc.HoleRatio, n)
		if !genProbeRoom(n, nh, k) {
			return &GenError{Size: n, Index: -1, Reason: fmt.Sprintf("hole ratio %g leaves no room for %d agents: fewer than %d of %d random layouts of %d holes and placements connect all %d start-goal pairs", sc.HoleRatio, k, genProbeNeed, genProbeDraws, nh, k)}
		}
	}
	return nil
}

// genCheck is CheckFeasible without the probe: the checks that cost
// nothing, which GenerateOne and Generate run on every call.
func genCheck(cfg Config) error {
	invalid := func(field string, v any, reason string) error {
		return fmt.Errorf("%w: %w: %w", ErrInfeasible, ErrInvalidConfig, &FieldError{Field: field, Value: v, Reason: reason})
	}
	if err := genCheckCounts(cfg); err != nil {
		return invalid(err.Field, err.Value, err.Reason)
	}
	if len(cfg.Sizes) == 0 {
		return invalid("sizes", 0, "need at least one size")
	}
	sum := 0.0
	for i, sc := range cfg.Sizes {
		f := func(name string) string { return fmt.Sprintf("sizes[%d].%s", i, name) }
		if sc.Size < MinSize || sc.Size > MaxSize {
			return invalid(f("size"), sc.Size, fmt.Sprintf("must be in [%d,%d]", MinSize, MaxSize))
		}
		for j := 0; j < i; j++ {
			if cfg.Sizes[j].Size == sc.Size {
				return invalid(f("size"), sc.Size, fmt.Sprintf("same as sizes[%d].size", j))
			}
		}
		for _, r := range []struct {
			name string
			v    float64
		}{{"data_ratio", sc.DataRatio}, {"hole_ratio", sc.HoleRatio}, {"wait_ratio", sc.WaitRatio}} {
			if !(r.v >= 0 && r.v <= 1) {
				return invalid(f(r.name), r.v, "must be in [0,1]")
			}
		}
		sum += sc.DataRatio
	}
	if cfg.Instances > 0 && sum <= 0 {
		return invalid("sizes", sum, "data ratios sum to 0")
	}
	counts, waits := genAlloc(cfg)
	k := cfg.Agents
	for i, sc := range cfg.Sizes {
		if counts[i] == 0 {
			continue
		}
		n := sc.Size
		if k > min(n, MaxAgents) {
			return &GenError{Size: n, Index: -1, Reason: fmt.Sprintf("%d agents do not fit a %dx%d grid (at most %d)", k, n, n, min(n, MaxAgents))}
		}
		nh := genHoleCount(sc.HoleRatio, n)
		ks := cfg.AgentCounts(n)
		most := ks[len(ks)-1]
		if n*n-nh < 2*most {
			return &GenError{Size: n, Index: -1, Reason: fmt.Sprintf("hole ratio %g leaves %d free cells; %d agents need %d distinct start and goal cells", sc.HoleRatio, n*n-nh, most, 2*most)}
		}
		if waits[i] > 0 && most == 1 {
			return &GenError{Size: n, Index: -1, Reason: fmt.Sprintf("wait ratio %g asks for %d instances that need a wait, but a single agent never needs one", sc.WaitRatio, waits[i])}
		}
	}
	return nil
}

// genCheckCounts checks agents, agents_max and instances.
func genCheckCounts(cfg Config) *FieldError {
	if cfg.Agents < 1 || cfg.Agents > MaxAgents {
		return &FieldError{Field: "agents", Value: cfg.Agents, Reason: fmt.Sprintf("must be in [1,%d]", MaxAgents)}
	}
	if fe := cfg.agentsMaxError(); fe != nil {
		return fe
	}
	if cfg.Instances < 0 {
		return &FieldError{Field: "instances", Value: cfg.Instances, Reason: "must be >= 0"}
	}
	return nil
}

// genHoleCount is round(ratio*n*n), halves away from zero.
func genHoleCount(ratio float64, n int) int {
	return int(math.Round(ratio * float64(n*n)))
}

// genAlloc returns the number of instances per size (largest remainder of
// the normalised data ratios; ties go to the earlier size) and, per size,
// the number that target NeedsWait=true (round(WaitRatio*count)).
func genAlloc(cfg Config) (counts, waits []int) {
	m := len(cfg.Sizes)
	counts = make([]int, m)
	waits = make([]int, m)
	sum := 0.0
	for _, sc := range cfg.Sizes {
		sum += sc.DataRatio
	}
	if cfg.Instances <= 0 || sum <= 0 {
		return counts, waits
	}
	rem := make([]float64, m)
	given := 0
	for i, sc := range cfg.Sizes {
		q := sc.DataRatio / sum * float64(cfg.Instances)
		fl := math.Floor(q)
		counts[i] = int(fl)
		rem[i] = q - fl
		given += counts[i]
	}
	for given < cfg.Instances {
		best := -1
		for i := range rem {
			if rem[i] >= 0 && (best < 0 || rem[i] > rem[best]) {
				best = i
			}
		}
		counts[best]++
		rem[best] = -1
		given++
	}
	for i, sc := range cfg.Sizes {
		waits[i] = int(math.Round(sc.WaitRatio * float64(counts[i])))
	}
	return counts, waits
}

// genIntN returns a uniform integer in [0,n) from r's 64-bit output
// (Lemire's multiply-and-reject), so the generator's draws depend on the PCG
// stream alone.
func genIntN(r *rand.Rand, n int) int {
	hi, lo := bits.Mul64(r.Uint64(), uint64(n))
	if lo < uint64(n) {
		thresh := -uint64(n) % uint64(n)
		for lo < thresh {
			hi, lo = bits.Mul64(r.Uint64(), uint64(n))
		}
	}
	return int(hi)
}

// genShuffle moves a uniform random m-subset of a, in random order, to its
// front (a partial Fisher-Yates shuffle).
func genShuffle(r *rand.Rand, a []int32, m int) {
	for i := 0; i < m; i++ {
		j := i + genIntN(r, len(a)-i)
		a[i], a[j] = a[j], a[i]
	}
}

// genPlan is a stage's slot layout.
type genPlan struct {
	cfg    Config
	seed   uint64
	counts []int
	waits  []int
	first  []int   // first slot of each size's stratum
	perm   []int32 // index -> slot
	// waitsBefore and restBefore count the wait and no-wait slots of the
	// sizes before each one: the agent counts rotate over each kind of slot
	// across sizes (genPlan.agents).
	waitsBefore, restBefore []int
}

func genNewPlan(cfg Config, seed uint64) (*genPlan, error) {
	if err := genCheck(cfg); err != nil {
		return nil, err
	}
	p := &genPlan{cfg: cfg, seed: seed}
	p.counts, p.waits = genAlloc(cfg)
	p.first = make([]int, len(p.counts))
	p.waitsBefore, p.restBefore = make([]int, len(p.counts)), make([]int, len(p.counts))
	off, waits, rest := 0, 0, 0
	for i, c := range p.counts {
		p.first[i], p.waitsBefore[i], p.restBefore[i] = off, waits, rest
		off, waits, rest = off+c, waits+p.waits[i], rest+c-p.waits[i]
	}
	p.perm = make([]int32, cfg.Instances)
	for i := range p.perm {
		p.perm[i] = int32(i)
	}
	r := rand.New(rand.NewPCG(seed, genStreamPerm))
	genShuffle(r, p.perm, len(p.perm))
	return p, nil
}

// slot returns the size entry, the NeedsWait target and the agent count of
// instance index.
func (p *genPlan) slot(index int) (si int, wait bool, agents int) {
	sl := int(p.perm[index])
	for i := len(p.first) - 1; i >= 0; i-- {
		if p.counts[i] > 0 && sl >= p.first[i] {
			j := sl - p.first[i]
			wait := j < p.waits[i]
			return i, wait, p.agents(i, j, wait)
		}
	}
	panic("env: generator slot outside every stratum")
}

// agents returns the agent count of slot j of size entry i. Without a range
// it is Config.Agents. With one, the counts the size holds (AgentCounts)
// take turns over the stage's wait slots, and separately over its no-wait
// slots, in size order, continuing from one size to the next: so within a
// size each kind of slot splits over the counts within one, and a stage
// smaller than the number of counts still reaches the larger ones. A wait
// slot never gets a single agent (one agent never needs a wait).
func (p *genPlan) agents(i, j int, wait bool) int {
	ks := p.cfg.AgentCounts(p.cfg.Sizes[i].Size)
	turn := p.restBefore[i] + j - p.waits[i]
	if wait {
		turn = p.waitsBefore[i] + j
		if ks[0] == 1 && len(ks) > 1 {
			ks = ks[1:]
		}
	}
	return ks[turn%len(ks)]
}

func (p *genPlan) instance(g *genScratch, s *Solver, index int) (*Instance, error) {
	si, wait, k := p.slot(index)
	sc := p.cfg.Sizes[si]
	return genDraw(g, s, sc.Size, genHoleCount(sc.HoleRatio, sc.Size), k, wait, InstanceSeed(p.seed, index), index)
}

// genScratch holds the generator's reusable buffers.
type genScratch struct {
	cells []int32
	free  []int32
	comp  []int32
	queue []int32
	cap   []int32
}

// genComponents labels the free cells of an n×n grid by connected
// component (g.comp, -1 for holes) and returns the component sizes in
// g.cap.
func (g *genScratch) components(n int, holes []bool) {
	g.comp = solvGrow(g.comp, n*n)
	for i := range g.comp {
		g.comp[i] = -1
	}
	g.cap = g.cap[:0]
	for c := range g.comp {
		if holes[c] || g.comp[c] >= 0 {
			continue
		}
		id := int32(len(g.cap))
		q := append(g.queue[:0], int32(c))
		g.comp[c] = id
		for h := 0; h < len(q); h++ {
			u := int(q[h])
			r, col := u/n, u%n
			for _, v := range [4]int{u - n, u + n, u - 1, u + 1} {
				switch {
				case v == u-n && r == 0, v == u+n && r == n-1, v == u-1 && col == 0, v == u+1 && col == n-1:
					continue
				}
				if !holes[v] && g.comp[v] < 0 {
					g.comp[v] = id
					q = append(q, int32(v))
				}
			}
		}
		g.cap = append(g.cap, int32(len(q)))
		g.queue = q
	}
}

// genLayout draws exactly nh holes uniformly at random into holes.
func (g *genScratch) layout(r *rand.Rand, n, nh int, holes []bool) {
	g.cells = solvGrow(g.cells, n*n)
	for i := range g.cells {
		g.cells[i] = int32(i)
	}
	genShuffle(r, g.cells, nh)
	clear(holes)
	for _, c := range g.cells[:nh] {
		holes[c] = true
	}
}

// place draws a hole layout and a placement of k agents on 2k distinct
// free cells into in (which must have an n×n grid and k agents) and
// reports whether every agent's goal is reachable from its start.
func (g *genScratch) place(r *rand.Rand, in *Instance, nh int) bool {
	n, k := in.Width, len(in.Agents)
	g.layout(r, n, nh, in.Holes)
	g.free = g.free[:0]
	for c, h := range in.Holes {
		if !h {
			g.free = append(g.free, int32(c))
		}
	}
	if len(g.free) < 2*k {
		return false
	}
	genShuffle(r, g.free, 2*k)
	g.components(n, in.Holes)
	for i := 0; i < k; i++ {
		st, gl := g.free[i], g.free[k+i]
		if g.comp[st] != g.comp[gl] {
			return false
		}
		in.Agents[i] = Agent{Start: in.PosOf(int(st)), Goal: in.PosOf(int(gl))}
	}
	return true
}

// genProbeRoom reports whether at least genProbeNeed of genProbeDraws seeded
// draws of a layout of nh holes and a placement of k agents on an n×n grid
// connect every agent's start to its goal (the generator's own draws).
func genProbeRoom(n, nh, k int) bool {
	if nh == 0 {
		return n*n >= 2*k
	}
	var g genScratch
	in := &Instance{Width: n, Height: n, Holes: make([]bool, n*n), Agents: make([]Agent, k)}
	r := rand.New(rand.NewPCG(uint64(n)<<32|uint64(nh), genStreamProbe))
	ok := 0
	for range genProbeDraws {
		if g.place(r, in, nh) {
			if ok++; ok == genProbeNeed {
				return true
			}
		}
	}
	return false
}

// genDraw runs the rejection sampler of one instance (see GenerateOne).
// index is only used in errors (-1 when unknown).
func genDraw(g *genScratch, s *Solver, n, nh, k int, wantWait bool, instSeed uint64, index int) (*Instance, error) {
	return genDrawStats(g, s, n, nh, k, wantWait, instSeed, index, nil)
}

// genStats counts what the rejection sampler did (for measurements).
type genStats struct {
	placements, candidates         int
	budget, unsolvable, mismatched int
	work                           int
}

func genDrawStats(g *genScratch, s *Solver, n, nh, k int, wantWait bool, instSeed uint64, index int, st *genStats) (*Instance, error) {
	if st == nil {
		st = &genStats{}
	}
	r := rand.New(rand.NewPCG(instSeed, genStreamInstance))
	in := &Instance{Width: n, Height: n, Holes: make([]bool, n*n), Agents: make([]Agent, k), Seed: instSeed}
	opt := SolveOptions{MaxNodes: genMaxNodes, MaxExpansions: genMaxExpansions}
	candidates, work := 0, 0
	var placements int
	for placements = 0; placements < genMaxPlacements; placements++ {
		st.placements++
		if !g.place(r, in, nh) {
			continue
		}
		candidates++
		res, err := s.annotate(in, opt, &wantWait)
		work += res.exp
		st.work += res.exp
		st.candidates++
		switch {
		case errors.Is(err, errSolvMismatch):
			st.mismatched++
		case errors.Is(err, ErrBudget):
			st.budget++
		case errors.Is(err, ErrUnsolvable):
			st.unsolvable++
		}
		if err == nil {
			in.SOC, in.Makespan, in.NeedsWait = res.soc, res.mk, res.needsWait
			in.ID = in.ComputeID()
			return in, nil
		}
		if !errors.Is(err, errSolvMismatch) && !errors.Is(err, ErrBudget) && !errors.Is(err, ErrUnsolvable) {
			return nil, err
		}
		if candidates >= genMaxCandidates || work >= genMaxWork {
			break
		}
	}
	return nil, &GenError{Size: n, Index: index, Reason: fmt.Sprintf(
		"no instance with %d holes, %d agents and needs_wait=%v found (%d placements, %d solved candidates, %d expansions)",
		nh, k, wantWait, placements, candidates, work)}
}
