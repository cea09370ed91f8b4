package gomlxnet

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/gomlxtrain"
	"github.com/t2t-lab/t2t/learner/gridnet"
)

// illegalLogit is added to the logits of illegal moves: exp of it underflows to exactly 0.
const illegalLogit = -1e9

// gridActMaxBatch is the largest batch one inference call runs; larger calls are chunked.
const gridActMaxBatch = 1024

// Net is the step-wise CPU policy. Methods are safe for concurrent use (they serialise on
// one mutex).
type Net struct {
	mu      sync.Mutex
	backend backends.Backend
	cfg     gridnet.Config
	ctx     *context.Context
	ws, bs  []*context.Variable
	trainer *gomlxtrain.Trainer
	act     *context.Exec
	version int64
	state   gridnet.TrainState
	logits  []float32 // scratch for Act
}

var _ gridnet.Model = (*Net)(nil)

// init registers the GoMLX gridnet: gridnet.New builds Nets in every binary that links this
// package.
func init() {
	gridnet.Register(func(device string, cfg gridnet.Config, train learner.GRPOConfig) (gridnet.Model, error) {
		be, err := gomlxtrain.NewBackend(device)
		if err != nil {
			return nil, err
		}
		n, err := New(be, cfg, train)
		if err != nil {
			return nil, err // not a nil *Net in a non-nil Model
		}
		return n, nil
	})
}

// New builds a gridnet with weights drawn from cfg.Seed (He-uniform hidden layers, a
// near-zero output layer so the initial policy is close to uniform) and a trainer with train.
func New(backend backends.Backend, cfg gridnet.Config, train learner.GRPOConfig) (*Net, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := train.Validate(); err != nil {
		return nil, err
	}
	cfg.Hidden = slices.Clone(cfg.Hidden)
	g := &Net{backend: backend, cfg: cfg, ctx: context.New()}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6772696e6574))
	in := cfg.ObsSize
	widths := append(slices.Clone(cfg.Hidden), gridnet.NumMoves)
	err := gomlxtrain.Catch(func() {
		for i, out := range widths {
			limit := math.Sqrt(6 / float64(in))
			if i == len(widths)-1 {
				limit *= 0.01
			}
			w := make([]float32, out*in)
			for j := range w {
				w[j] = float32((2*rng.Float64() - 1) * limit)
			}
			scope := g.ctx.In(gridnet.Kind).In(fmt.Sprintf("layer%d", i))
			// [out, in] as a PyTorch Linear: both DotGeneral operands contract their last axis,
			// the layout the pure-Go backend multiplies without repacking.
			g.ws = append(g.ws, scope.VariableWithValue("w", tensors.FromFlatDataAndDimensions(w, out, in)))
			g.bs = append(g.bs, scope.VariableWithValue("b", tensors.FromShape(shapes.Make(dtypes.Float32, out))))
			in = out
		}
	})
	if err != nil {
		return nil, err
	}
	g.trainer, err = gomlxtrain.NewTrainer(backend, g.ctx, train, gomlxtrain.ModelSpec{NumInputs: 2, Vocab: gridnet.NumMoves, Logits: g.trainLogits})
	if err != nil {
		return nil, err
	}
	g.act, err = context.NewExec(backend, g.ctx, func(ctx *context.Context, obs *graph.Node) *graph.Node {
		return g.forward(obs)
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", learner.ErrCompute, err)
	}
	return g, nil
}

// forward maps observations [..., ObsSize] to logits [..., gridnet.NumMoves].
func (g *Net) forward(obs *graph.Node) *graph.Node {
	dims := obs.Shape().Dimensions
	lead := dims[:len(dims)-1]
	x := graph.Reshape(obs, -1, g.cfg.ObsSize)
	gr := obs.Graph()
	for i := range g.ws {
		w, b := g.ws[i].ValueGraph(gr), g.bs[i].ValueGraph(gr)
		x = graph.DotGeneral(x, []int{1}, nil, w, []int{1}, nil)
		x = graph.Add(x, graph.InsertAxes(b, 0))
		if i < len(g.ws)-1 {
			x = graph.Max(x, graph.ZerosLike(x))
		}
	}
	return graph.Reshape(x, append(slices.Clone(lead), gridnet.NumMoves)...)
}

// trainLogits is the trainer's LogitsFunc: inputs are obs [B,T,ObsSize] and the legal-move bias
// [B,T,gridnet.NumMoves] (0 legal, illegalLogit illegal).
func (g *Net) trainLogits(_ *context.Context, in []*graph.Node) *graph.Node {
	return graph.Add(g.forward(in[0]), in[1])
}

// Config returns the model configuration.
func (g *Net) Config() gridnet.Config {
	c := g.cfg
	c.Hidden = slices.Clone(c.Hidden)
	return c
}

// ObsSize is the observation length the net takes.
func (g *Net) ObsSize() int { return g.cfg.ObsSize }

// Version is the policy version: the number of optimizer steps behind the current weights
// (restored by Load).
func (g *Net) Version() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.version
}

// SetTrainState records the caller's state to be saved with the next checkpoint.
func (g *Net) SetTrainState(s gridnet.TrainState) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s.RNGState = slices.Clone(s.RNGState)
	g.state = s
}

// TrainState returns the caller's state (as restored by Load).
func (g *Net) TrainState() gridnet.TrainState {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.state
	s.RNGState = slices.Clone(s.RNGState)
	return s
}

// computeLogits runs the network on n observations, writing n·NumMoves logits into g.logits.
func (g *Net) computeLogits(obs []float32, n int) error {
	if n < 1 || len(obs) != n*g.cfg.ObsSize {
		return fmt.Errorf("%w: %d observation values for n=%d × ObsSize=%d", learner.ErrBadBatch, len(obs), n, g.cfg.ObsSize)
	}
	g.logits = slices.Grow(g.logits[:0], n*gridnet.NumMoves)[:n*gridnet.NumMoves]
	for c0 := 0; c0 < n; c0 += gridActMaxBatch {
		c1 := min(n, c0+gridActMaxBatch)
		bp := learner.PadRows(c1 - c0)
		x := tensors.FromShape(shapes.Make(dtypes.Float32, bp, g.cfg.ObsSize))
		tensors.MustMutableFlatData(x, func(flat []float32) {
			copy(flat, obs[c0*g.cfg.ObsSize:c1*g.cfg.ObsSize])
		})
		err := gomlxtrain.Catch(func() {
			outs, err := g.act.Exec(x)
			if err != nil {
				panic(err)
			}
			tensors.MustConstFlatData(outs[0], func(flat []float32) {
				copy(g.logits[c0*gridnet.NumMoves:c1*gridnet.NumMoves], flat)
			})
			gomlxtrain.Finalize(outs)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Act picks a move for each of n observations (obs is n·ObsSize values, row-major) and writes
// it to actions[i] with its log-probability to logprobs[i] (both need length ≥ n).
//
// legal, if not nil, holds n·gridnet.NumMoves flags (true = legal); illegal moves get probability 0,
// and a row with no legal move is an error. temperature > 0 samples from softmax(logits/τ) with
// rng, and logprobs are those of that tempered distribution (what GRPO's ratio needs: train
// with τ = 1 to stay on-policy). temperature = 0 is greedy (ties → lowest id; rng unused) and
// logprobs are at τ = 1.
func (g *Net) Act(obs []float32, n int, legal []bool, temperature float64, rng *rand.Rand, actions []int32, logprobs []float32) error {
	if temperature < 0 || math.IsNaN(temperature) || (temperature > 0 && rng == nil) {
		return fmt.Errorf("%w: temperature %v needs ≥ 0 (and an rng when > 0)", learner.ErrBadBatch, temperature)
	}
	if len(actions) < n || len(logprobs) < n || (legal != nil && len(legal) != n*gridnet.NumMoves) {
		return fmt.Errorf("%w: Act n=%d: actions %d, logprobs %d, legal %d", learner.ErrBadBatch, n, len(actions), len(logprobs), len(legal))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.computeLogits(obs, n); err != nil {
		return err
	}
	var z [gridnet.NumMoves]float64
	for i := range n {
		row := g.logits[i*gridnet.NumMoves : (i+1)*gridnet.NumMoves]
		best, anyLegal := -1, false
		for a := range gridnet.NumMoves {
			if legal != nil && !legal[i*gridnet.NumMoves+a] {
				z[a] = math.Inf(-1)
				continue
			}
			anyLegal = true
			z[a] = float64(row[a])
			if best < 0 || z[a] > z[best] {
				best = a
			}
		}
		if !anyLegal {
			return fmt.Errorf("%w: row %d has no legal move", learner.ErrBadBatch, i)
		}
		if temperature > 0 {
			for a := range gridnet.NumMoves {
				z[a] /= temperature
			}
		}
		m := z[best]
		var sum float64
		for a := range gridnet.NumMoves {
			sum += math.Exp(z[a] - m)
		}
		lse := m + math.Log(sum)
		choice := best
		if temperature > 0 {
			u := rng.Float64() * sum
			choice = -1
			for a := range gridnet.NumMoves {
				if math.IsInf(z[a], -1) {
					continue
				}
				choice = a
				u -= math.Exp(z[a] - m)
				if u < 0 {
					break
				}
			}
		}
		actions[i] = int32(choice)
		logprobs[i] = float32(z[choice] - lse)
	}
	return nil
}

// LogProbs writes log π(actions[i] | obs i) at temperature 1 (legal mask applied) into dst.
func (g *Net) LogProbs(obs []float32, n int, legal []bool, actions []int32, dst []float32) error {
	if len(actions) != n || len(dst) < n || (legal != nil && len(legal) != n*gridnet.NumMoves) {
		return fmt.Errorf("%w: LogProbs n=%d: actions %d, dst %d, legal %d", learner.ErrBadBatch, n, len(actions), len(dst), len(legal))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.computeLogits(obs, n); err != nil {
		return err
	}
	for i := range n {
		a := actions[i]
		if a < 0 || a >= gridnet.NumMoves || (legal != nil && !legal[i*gridnet.NumMoves+int(a)]) {
			return fmt.Errorf("%w: row %d: action %d is not a legal move", learner.ErrBadBatch, i, a)
		}
		m := math.Inf(-1)
		for k := range gridnet.NumMoves {
			if legal == nil || legal[i*gridnet.NumMoves+k] {
				m = math.Max(m, float64(g.logits[i*gridnet.NumMoves+k]))
			}
		}
		var sum float64
		for k := range gridnet.NumMoves {
			if legal == nil || legal[i*gridnet.NumMoves+k] {
				sum += math.Exp(float64(g.logits[i*gridnet.NumMoves+k]) - m)
			}
		}
		dst[i] = float32(float64(g.logits[i*gridnet.NumMoves+int(a)]) - m - math.Log(sum))
	}
	return nil
}

// seqBatch converts decisions into the trainer's layout (T = 1).
func (g *Net) seqBatch(n int, obs []float32, legal []bool, actions []int32) (*learner.SeqBatch, error) {
	if n < 1 || len(obs) != n*g.cfg.ObsSize || len(actions) != n || (legal != nil && len(legal) != n*gridnet.NumMoves) {
		return nil, fmt.Errorf("%w: n=%d: obs %d (want %d), actions %d, legal %d", learner.ErrBadBatch, n, len(obs), n*g.cfg.ObsSize, len(actions), len(legal))
	}
	bias := make([]float32, n*gridnet.NumMoves)
	for i, ok := range legal {
		if !ok {
			bias[i] = illegalLogit
		}
	}
	for i, a := range actions {
		if a >= 0 && a < gridnet.NumMoves && legal != nil && !legal[i*gridnet.NumMoves+int(a)] {
			return nil, fmt.Errorf("%w: decision %d took illegal move %d", learner.ErrBadBatch, i, a)
		}
	}
	return &learner.SeqBatch{
		Rows: n, T: 1,
		Inputs: []learner.ModelInput{
			{F32: obs, Inner: []int{g.cfg.ObsSize}},
			{F32: bias, Inner: []int{gridnet.NumMoves}},
		},
		Actions: actions,
	}, nil
}

// Update runs one GRPO optimizer step on b and bumps the policy version.
func (g *Net) Update(b *gridnet.Batch) (learner.UpdateStats, error) {
	if b == nil {
		return learner.UpdateStats{}, fmt.Errorf("%w: nil batch", learner.ErrBadBatch)
	}
	sb, err := g.seqBatch(b.N, b.Obs, b.Legal, b.Actions)
	if err != nil {
		return learner.UpdateStats{}, err
	}
	if len(b.LogProbs) != b.N || len(b.Advantages) != b.N || (b.RefLogProbs != nil && len(b.RefLogProbs) != b.N) {
		return learner.UpdateStats{}, fmt.Errorf("%w: n=%d: logprobs %d, advantages %d, ref %d", learner.ErrBadBatch, b.N, len(b.LogProbs), len(b.Advantages), len(b.RefLogProbs))
	}
	sb.BehaviourLogProbs, sb.Advantages, sb.RefLogProbs = b.LogProbs, b.Advantages, b.RefLogProbs
	g.mu.Lock()
	defer g.mu.Unlock()
	st, err := g.trainer.GRPOStep(sb)
	if err == nil {
		g.version++
	}
	return st, err
}

// BCUpdate runs one behaviour-cloning step (mean cross-entropy of actions, e.g. moves of
// optimal plans) on n decisions and bumps the policy version.
func (g *Net) BCUpdate(obs []float32, n int, legal []bool, actions []int32) (learner.UpdateStats, error) {
	sb, err := g.seqBatch(n, obs, legal, actions)
	if err != nil {
		return learner.UpdateStats{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	st, err := g.trainer.BCStep(sb)
	if err == nil {
		g.version++
	}
	return st, err
}

// Save writes a checkpoint (weights, optimizer state, counters, gridnet.TrainState) to dir atomically.
func (g *Net) Save(dir string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	weights, opt, err := gomlxtrain.Snapshot(g.ctx)
	if err != nil {
		return err
	}
	cfgJSON, err := json.Marshal(g.cfg)
	if err != nil {
		return err
	}
	ck := &learner.Checkpoint{
		Manifest: learner.Manifest{
			Model: gridnet.Kind, ModelConfig: cfgJSON,
			Step: g.trainer.Steps(), PolicyVersion: g.version,
			ConfigVersion: g.state.ConfigVersion, DataPosition: g.state.DataPosition,
			RNGState: slices.Clone(g.state.RNGState),
		},
		Weights:   weights,
		Optimizer: opt,
	}
	return learner.WriteCheckpoint(dir, ck)
}

// Load restores a checkpoint written by Save. Checksums, the model kind, the architecture and
// every tensor's shape are verified before anything changes: on error (ErrCorruptCheckpoint,
// ErrCheckpointMismatch) the model is left as it was.
func (g *Net) Load(dir string) error {
	ck, err := learner.ReadCheckpoint(dir)
	if err != nil {
		return err
	}
	if ck.Manifest.Model != gridnet.Kind {
		return fmt.Errorf("%w: checkpoint holds a %q model, not %s", learner.ErrCheckpointMismatch, ck.Manifest.Model, gridnet.Kind)
	}
	var cfg gridnet.Config
	if err := json.Unmarshal(ck.Manifest.ModelConfig, &cfg); err != nil {
		return fmt.Errorf("%w: model_config: %w", learner.ErrCorruptCheckpoint, err)
	}
	if cfg.ObsSize != g.cfg.ObsSize || !slices.Equal(cfg.Hidden, g.cfg.Hidden) {
		return fmt.Errorf("%w: checkpoint gridnet obs=%d hidden=%v, model obs=%d hidden=%v", learner.ErrCheckpointMismatch, cfg.ObsSize, cfg.Hidden, g.cfg.ObsSize, g.cfg.Hidden)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := gomlxtrain.RestoreContext(g.ctx, ck); err != nil {
		return err
	}
	g.trainer.SetSteps(ck.Manifest.Step)
	g.version = ck.Manifest.PolicyVersion
	g.state = gridnet.TrainState{ConfigVersion: ck.Manifest.ConfigVersion, DataPosition: ck.Manifest.DataPosition, RNGState: ck.Manifest.RNGState}
	return nil
}
