package qwen3

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/gomlxtrain"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

// Module indices into LayerModules.
const (
	modInNorm = iota
	modQ
	modK
	modV
	modO
	modQNorm
	modKNorm
	modPostNorm
	modGate
	modUp
	modDown
	numModules
)

// maskBias is added to the attention scores of masked keys. It is finite so that a query with
// no visible key (a padding position) gets a uniform distribution instead of NaN.
const maskBias = -1e9

// modelMaxGraphs bounds the graphs each executable keeps compiled (one per bucketed shape).
const modelMaxGraphs = 64

// Model is a Qwen3 causal language model in GoMLX: float32 master weights in a
// context.Context (scopes follow the Hugging Face names, e.g.
// model/layers/0/self_attn/q_proj/weight), a forward pass for training (LogitsFunc /
// NewTrainer), generation with a KV cache, LoRA adapters and Hugging Face checkpoints.
//
// Generate, Logits and the Save methods serialise on a mutex. A learner.Trainer built by
// NewTrainer updates the same variables: do not run its steps concurrently with this model's
// other methods.
type Model struct {
	mu      sync.Mutex
	backend backends.Backend
	cfg     hfmodel.Config
	ctx     *context.Context
	embed   *context.Variable
	norm    *context.Variable
	lmHead  *context.Variable // nil when tied
	layers  [][numModules]*context.Variable
	lora    *loraState
	srcDir  string // directory loaded from: Save copies its tokenizer files
	trained bool   // a Trainer was built: the set of trainable variables is fixed

	rot      *tensors.Tensor // [D, D]: x·rot = rotate_half(x)
	invFreq  *tensors.Tensor // [D]: RoPE inverse frequencies, both halves
	dynSlice bool            // the backend has DynamicUpdateSlice
	noSplit  bool            // dotT never splits skinny products (tests compare both ways)

	logitsExec, prefillExec, decodeExec *context.Exec
	slotStepExec, slotWriteExec         *context.Exec // engine.Decoder's graphs (slots.go)
}

// New builds a model of configuration cfg from Hugging Face-named tensors (as InitRandom
// returns; F32, BF16, F16 or F64). Missing, unexpected or mis-shaped tensors give a
// *WeightError.
func New(backend backends.Backend, cfg hfmodel.Config, ts []safetensors.Tensor) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	byName := map[string]safetensors.Tensor{}
	for _, t := range ts {
		byName[t.Name] = t
	}
	weights := map[string][]float32{}
	for _, s := range cfg.WeightSpecs() {
		t, ok := byName[s.Name]
		if !ok {
			return nil, &hfmodel.WeightError{Tensor: s.Name, Problem: hfmodel.ProblemMissing, Want: s.Shape}
		}
		if !slices.Equal(t.Shape, s.Shape) {
			return nil, &hfmodel.WeightError{Tensor: s.Name, Problem: hfmodel.ProblemShape, Want: s.Shape, Got: t.Shape}
		}
		f, err := t.Float32(nil)
		if err != nil {
			return nil, &hfmodel.WeightError{Tensor: s.Name, Problem: hfmodel.ProblemDType, Want: s.Shape, Got: t.Shape, DType: string(t.DType)}
		}
		weights[s.Name] = f
		delete(byName, s.Name)
	}
	for name, t := range byName {
		if name == hfmodel.NameLMHead && cfg.TieWordEmbeddings {
			continue
		}
		return nil, &hfmodel.WeightError{Tensor: name, Problem: hfmodel.ProblemUnexpected, Got: t.Shape}
	}
	return newModel(backend, cfg, weights)
}

// NewRandom builds a model with InitRandom(cfg, seed) weights. It draws them straight into
// float32 slices (no safetensors encoding in between), so its peak host memory is about twice
// the float32 weights rather than three times: a 4b-shape model fits in ~32 GB.
func NewRandom(backend backends.Backend, cfg hfmodel.Config, seed uint64) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	weights := map[string][]float32{}
	hfmodel.DrawRandom(cfg, seed, func(s hfmodel.WeightSpec, data []float32) { weights[s.Name] = data })
	return newModel(backend, cfg, weights)
}

// Load reads a Hugging Face Qwen3 directory: config.json and model.safetensors (or a sharded
// model.safetensors.index.json), weights in F32, BF16 or F16 (converted to float32). Every
// tensor is checked before any is used: a missing, unexpected or mis-shaped tensor is a
// *WeightError naming it. Save later copies the directory's tokenizer files.
func Load(backend backends.Backend, dir string) (*Model, error) {
	cfg, err := hfmodel.LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	weights, err := hfmodel.ReadWeights(dir, cfg)
	if err != nil {
		return nil, err
	}
	m, err := newModel(backend, cfg, weights)
	if err != nil {
		return nil, err
	}
	m.srcDir = dir
	return m, nil
}

func newModel(backend backends.Backend, cfg hfmodel.Config, weights map[string][]float32) (*Model, error) {
	gomlxtrain.RegisterFastMatMulGradient()
	m := &Model{backend: backend, cfg: cfg, ctx: context.New()}
	caps := backend.Capabilities()
	m.dynSlice = caps.Operations[backends.OpTypeDynamicUpdateSlice]
	d := cfg.HeadDim
	rot := make([]float32, d*d)
	half := d / 2
	for j := range half {
		rot[(j+half)*d+j] = -1 // out[j] = −x[j+D/2]
		rot[j*d+j+half] = 1    // out[j+D/2] = x[j]
	}
	m.rot = tensors.FromFlatDataAndDimensions(rot, d, d)
	inv := make([]float32, d)
	for i := range half {
		f := float32(1 / math.Pow(cfg.RopeTheta, float64(2*i)/float64(d)))
		inv[i], inv[i+half] = f, f
	}
	m.invFreq = tensors.FromFlatDataAndDimensions(inv, d)
	err := gomlxtrain.Catch(func() {
		m.embed = m.newVar(hfmodel.NameEmbed, weights)
		m.norm = m.newVar(hfmodel.NameNorm, weights)
		if !cfg.TieWordEmbeddings {
			m.lmHead = m.newVar(hfmodel.NameLMHead, weights)
		}
		m.layers = make([][numModules]*context.Variable, cfg.NumHiddenLayers)
		for l := range cfg.NumHiddenLayers {
			for i, mod := range hfmodel.LayerModules {
				m.layers[l][i] = m.newVar(hfmodel.LayerName(l, mod), weights)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// newVar creates the variable of a Hugging Face tensor: scope = the name's dotted prefix.
func (m *Model) newVar(hfName string, weights map[string][]float32) *context.Variable {
	parts := strings.Split(strings.TrimSuffix(hfName, ".weight"), ".")
	c := m.ctx
	for _, p := range parts {
		c = c.In(p)
	}
	shape := m.specShape(hfName)
	v := c.VariableWithValue("weight", tensors.FromFlatDataAndDimensions(weights[hfName], shape...))
	delete(weights, hfName) // the tensor holds a copy: let the slice go (peak memory ≈ one model, not two)
	return v
}

func (m *Model) specShape(hfName string) []int {
	for _, s := range m.cfg.WeightSpecs() {
		if s.Name == hfName {
			return s.Shape
		}
	}
	panic("qwen3: unknown tensor " + hfName)
}

// Config returns the model's configuration.
func (m *Model) Config() hfmodel.Config { return m.cfg }

// Backend returns the compute backend.
func (m *Model) Backend() backends.Backend { return m.backend }

// Context returns the context holding the model's variables (and, once a Trainer has run, the
// optimizer's state).
func (m *Model) Context() *context.Context { return m.ctx }

// ---- Graph building.

// linear applies the module's weight [out, in] (and its LoRA adapter) to x [..., in].
func (m *Model) linear(x *graph.Node, l, mod int) *graph.Node {
	g := x.Graph()
	y := m.dotT(x, m.layers[l][mod].ValueGraph(g))
	if m.lora != nil {
		if ad, ok := m.lora.adapters[loraKey{l, mod}]; ok {
			xab := m.dotT(m.dotT(x, ad.a.ValueGraph(g)), ad.b.ValueGraph(g))
			y = graph.Add(y, graph.MulScalar(xab, m.lora.scale))
		}
	}
	return y
}

// rmsNorm normalises x over its last axis and scales by w [D] (Qwen3RMSNorm, in float32).
func (m *Model) rmsNorm(x *graph.Node, w *context.Variable) *graph.Node {
	ms := graph.ReduceAndKeep(graph.Square(x), graph.ReduceMean, -1)
	// 1/Sqrt rather than Rsqrt: GoMLX has no gradient for Rsqrt.
	y := graph.Mul(x, graph.Reciprocal(graph.Sqrt(graph.AddScalar(ms, m.cfg.RMSNormEps))))
	dims := make([]int, x.Rank())
	for i := range dims {
		dims[i] = 1
	}
	dims[len(dims)-1] = x.Shape().Dimensions[x.Rank()-1]
	return graph.Mul(y, graph.Reshape(w.ValueGraph(x.Graph()), dims...))
}

// ropeTables returns cos and sin [B, T, 1, D] for positions [B, T] (float32).
func (m *Model) ropeTables(pos *graph.Node) (cos, sin *graph.Node) {
	g := pos.Graph()
	b, t := pos.Shape().Dimensions[0], pos.Shape().Dimensions[1]
	d := m.cfg.HeadDim
	ang := graph.Mul(graph.Reshape(pos, b, t, 1), graph.Reshape(graph.ConstCachedTensor(g, m.invFreq), 1, 1, d))
	return graph.Reshape(graph.Cos(ang), b, t, 1, d), graph.Reshape(graph.Sin(ang), b, t, 1, d)
}

// rope rotates x [B, T, heads, D]: x·cos + rotate_half(x)·sin, with rotate_half as a product
// with a constant ±1 matrix (no Slice on the differentiated path; exact, since every output
// is one input times ±1).
func (m *Model) rope(x, cos, sin *graph.Node) *graph.Node {
	rot := graph.DotGeneral(x, []int{3}, nil, graph.ConstCachedTensor(x.Graph(), m.rot), []int{0}, nil)
	return graph.Add(graph.Mul(x, cos), graph.Mul(rot, sin))
}

// kvFunc gives attention the keys and values [B, S, KVH, D] to read in layer l, from the new
// ones [B, T, KVH, D] (training: themselves; generation: a cache with them written in).
type kvFunc func(l int, k, v *graph.Node) (*graph.Node, *graph.Node)

// blocks runs the decoder layers and the final norm on x [B, T, H]. bias [B, T, S] is added to
// the attention scores (0 = visible, maskBias = masked).
func (m *Model) blocks(x, cos, sin, bias *graph.Node, kv kvFunc) *graph.Node {
	c := m.cfg
	b, t := x.Shape().Dimensions[0], x.Shape().Dimensions[1]
	nh, kvh, d := c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim
	grp := nh / kvh
	s := bias.Shape().Dimensions[2]
	bias5 := graph.Reshape(bias, b, 1, t, 1, s)
	scale := 1 / math.Sqrt(float64(d))
	for l := range c.NumHiddenLayers {
		w := &m.layers[l]
		h := m.rmsNorm(x, w[modInNorm])
		q := m.rope(m.rmsNorm(graph.Reshape(m.linear(h, l, modQ), b, t, nh, d), w[modQNorm]), cos, sin)
		k := m.rope(m.rmsNorm(graph.Reshape(m.linear(h, l, modK), b, t, kvh, d), w[modKNorm]), cos, sin)
		v := graph.Reshape(m.linear(h, l, modV), b, t, kvh, d)
		k, v = kv(l, k, v)
		q5 := graph.MulScalar(graph.Reshape(q, b, t, kvh, grp, d), scale)
		scores := graph.DotGeneral(q5, []int{4}, []int{0, 2}, k, []int{3}, []int{0, 2}) // [B, KVH, T, G, S]
		probs := graph.Softmax(graph.Add(scores, bias5), -1)
		o := graph.DotGeneral(probs, []int{4}, []int{0, 1}, v, []int{1}, []int{0, 2}) // [B, KVH, T, G, D]
		o = graph.Reshape(graph.TransposeAllAxes(o, 0, 2, 1, 3, 4), b, t, nh*d)
		x = graph.Add(x, m.linear(o, l, modO))
		h = m.rmsNorm(x, w[modPostNorm])
		gate := m.linear(h, l, modGate)
		act := graph.Mul(graph.Mul(gate, graph.Sigmoid(gate)), m.linear(h, l, modUp))
		x = graph.Add(x, m.linear(act, l, modDown))
	}
	return m.rmsNorm(x, m.norm)
}

// embedTokens looks up token ids [B, T] (int32) → [B, T, H].
func (m *Model) embedTokens(tokens *graph.Node) *graph.Node {
	b, t := tokens.Shape().Dimensions[0], tokens.Shape().Dimensions[1]
	idx := graph.Reshape(graph.ConvertDType(tokens, dtypes.Int32), b, t, 1)
	return graph.Gather(m.embed.ValueGraph(tokens.Graph()), idx)
}

// head maps hidden states [B, T, H] to logits [B, T, V] (at decode, B·T = the batch: a skinny
// product that dotT splits over the vocabulary on the pure-Go backend).
func (m *Model) head(x *graph.Node) *graph.Node {
	w := m.embed
	if m.lmHead != nil {
		w = m.lmHead
	}
	return m.dotT(x, w.ValueGraph(x.Graph()))
}

// seqMask returns the RoPE positions [B, T] (float32) and the attention bias [B, T, T] of
// sequences padded on either side: valid [B, T] is 1 on real tokens. A token's position is the
// number of real tokens before it; a query sees the real keys at or before it.
func seqMask(valid *graph.Node) (pos, bias *graph.Node) {
	g := valid.Graph()
	b, t := valid.Shape().Dimensions[0], valid.Shape().Dimensions[1]
	vf := graph.ConvertDType(valid, dtypes.Float32)
	lower := graph.ConvertDType(graph.LessOrEqual(graph.Iota(g, shapes.Make(dtypes.Int32, t, t), 0), graph.Iota(g, shapes.Make(dtypes.Int32, t, t), 1)), dtypes.Float32)
	pos = graph.DotGeneral(vf, []int{1}, nil, lower, []int{0}, nil) // Σ_{j ≤ i} valid[j]
	pos = graph.Max(graph.AddScalar(pos, -1), graph.ZerosLike(pos))
	causal := graph.GreaterOrEqual(graph.Iota(g, shapes.Make(dtypes.Int32, 1, t, t), 1), graph.Iota(g, shapes.Make(dtypes.Int32, 1, t, t), 2))
	keyOK := graph.GreaterThan(graph.Reshape(valid, b, 1, t), graph.ScalarZero(g, valid.DType()))
	allowed := graph.LogicalAnd(graph.BroadcastToDims(causal, b, t, t), graph.BroadcastToDims(keyOK, b, t, t))
	bias = graph.Where(allowed, graph.ScalarZero(g, dtypes.Float32), graph.Scalar(g, dtypes.Float32, maskBias))
	return pos, bias
}

// forward returns the logits [B, tail, V] of the last tail positions of tokens [B, T] with
// valid [B, T] marking real tokens (tail == T: every position).
func (m *Model) forward(tokens, valid *graph.Node, tail int) *graph.Node {
	pos, bias := seqMask(valid)
	cos, sin := m.ropeTables(pos)
	x := m.blocks(m.embedTokens(tokens), cos, sin, bias, func(_ int, k, v *graph.Node) (*graph.Node, *graph.Node) { return k, v })
	if t := x.Shape().Dimensions[1]; tail < t {
		x = lastPositions(x, tail)
	}
	return m.head(x)
}

// lastPositions returns x [B, T, H] restricted to its last n positions, [B, n, H], as a product
// with a constant one-hot [n, T] selection: differentiable on every backend (Slice's gradient
// needs Pad, which the pure-Go backend lacks), and O(B·n·T·H), small next to the layers.
func lastPositions(x *graph.Node, n int) *graph.Node {
	g := x.Graph()
	t := x.Shape().Dimensions[1]
	rows := graph.AddScalar(graph.Iota(g, shapes.Make(dtypes.Int32, n, t), 0), float64(t-n))
	sel := graph.ConvertDType(graph.Equal(rows, graph.Iota(g, shapes.Make(dtypes.Int32, n, t), 1)), x.DType())
	y := graph.DotGeneral(x, []int{1}, nil, sel, []int{1}, nil) // [B, H, n]
	return graph.TransposeAllAxes(y, 0, 2, 1)
}

// LogitsFunc is the model's learner.LogitsFunc: inputs are token ids [B, T] and a validity
// mask [B, T] (1 = real token, 0 = padding), both int32. Padding may be on either side; the
// trainer pads NewSeqBatch's batches on the left (SeqBatch.Tail).
func (m *Model) LogitsFunc() gomlxtrain.LogitsFunc {
	return func(_ *context.Context, in []*graph.Node) *graph.Node {
		return m.forward(in[0], in[1], in[0].Shape().Dimensions[1])
	}
}

// NewTrainer returns a learner.Trainer over this model's trainable variables (all weights, or
// only the LoRA adapters once AddLoRA was called), with the same GRPO loss every policy uses.
// Batches have two inputs, token ids and the validity mask: build them with NewSeqBatch.
func (m *Model) NewTrainer(cfg learner.GRPOConfig) (*gomlxtrain.Trainer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tr, err := gomlxtrain.NewTrainer(m.backend, m.ctx, cfg, gomlxtrain.ModelSpec{
		NumInputs: 2, Vocab: m.cfg.VocabSize, Logits: m.LogitsFunc(),
		TailLogits: func(_ *context.Context, in []*graph.Node, tail int) *graph.Node { return m.forward(in[0], in[1], tail) },
	})
	if err == nil {
		m.trained = true
	}
	return tr, err
}

// resetExecs drops compiled executables (after the graph changed, e.g. LoRA added).
func (m *Model) resetExecs() {
	for _, e := range []*context.Exec{m.logitsExec, m.prefillExec, m.decodeExec, m.slotStepExec, m.slotWriteExec} {
		if e != nil {
			e.Finalize()
		}
	}
	m.logitsExec, m.prefillExec, m.decodeExec = nil, nil, nil
	m.slotStepExec, m.slotWriteExec = nil, nil
}

func (m *Model) newExec(fn func(ctx *context.Context, in []*graph.Node) []*graph.Node) (*context.Exec, error) {
	e, err := context.NewExec(m.backend, m.ctx, fn)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", learner.ErrCompute, err)
	}
	e.SetMaxCache(modelMaxGraphs)
	return e, nil
}

// Logits runs the full forward pass (no cache) on each sequence and returns its logits,
// len(seq)·VocabSize values per sequence (row t = the distribution of token t+1). Sequences
// are right-padded to learner.PadLen of the longest and batched (a power-of-two batch).
func (m *Model) Logits(seqs [][]int32) ([][]float32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(seqs) == 0 {
		return nil, nil
	}
	tmax := 0
	for i, s := range seqs {
		if len(s) == 0 {
			return nil, fmt.Errorf("%w: sequence %d is empty", learner.ErrBadBatch, i)
		}
		if err := m.checkTokens(s); err != nil {
			return nil, fmt.Errorf("sequence %d: %w", i, err)
		}
		tmax = max(tmax, len(s))
	}
	if m.logitsExec == nil {
		e, err := m.newExec(func(_ *context.Context, in []*graph.Node) []*graph.Node {
			return []*graph.Node{m.forward(in[0], in[1], in[0].Shape().Dimensions[1])}
		})
		if err != nil {
			return nil, err
		}
		m.logitsExec = e
	}
	b, t := learner.PadRows(len(seqs)), learner.PadLen(tmax)
	tok := make([]int32, b*t)
	valid := make([]int32, b*t)
	for i, s := range seqs {
		copy(tok[i*t:], s)
		for j := range s {
			valid[i*t+j] = 1
		}
	}
	v := m.cfg.VocabSize
	out := make([][]float32, len(seqs))
	err := gomlxtrain.Catch(func() {
		res, err := m.logitsExec.Exec(tensors.FromFlatDataAndDimensions(tok, b, t), tensors.FromFlatDataAndDimensions(valid, b, t))
		if err != nil {
			panic(err)
		}
		defer finalize(res)
		tensors.MustConstFlatData(res[0], func(flat []float32) {
			for i, s := range seqs {
				out[i] = slices.Clone(flat[i*t*v : (i*t+len(s))*v])
			}
		})
	})
	return out, err
}

func (m *Model) checkTokens(s []int32) error { return m.cfg.CheckTokens(s) }

func finalize(ts []*tensors.Tensor) {
	for _, t := range ts {
		if t != nil {
			_ = t.FinalizeAll()
		}
	}
}

// ---- Checkpoints.

// weightTensors returns the model's weights as Hugging Face tensors (float32), LoRA adapters
// merged in (W + α/r·B·A) when attached.
func (m *Model) weightTensors() ([]safetensors.Tensor, error) {
	var out []safetensors.Tensor
	for _, s := range m.cfg.WeightSpecs() {
		v, l, mod := m.varOf(s.Name)
		f, err := varFloats(v)
		if err != nil {
			return nil, err
		}
		if m.lora != nil && l >= 0 {
			if ad, ok := m.lora.adapters[loraKey{l, mod}]; ok {
				if err := ad.mergeInto(f, s.Shape, m.lora.scale); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, safetensors.F32Tensor(s.Name, s.Shape, f))
	}
	return out, nil
}

// varOf returns the variable of a Hugging Face tensor name, with its layer and module index
// (−1, −1 for the embedding, final norm and head).
func (m *Model) varOf(name string) (*context.Variable, int, int) {
	switch name {
	case hfmodel.NameEmbed:
		return m.embed, -1, -1
	case hfmodel.NameNorm:
		return m.norm, -1, -1
	case hfmodel.NameLMHead:
		return m.lmHead, -1, -1
	}
	rest := strings.TrimPrefix(name, "model.layers.")
	ls, mod, _ := strings.Cut(rest, ".")
	l, _ := strconv.Atoi(ls)
	i := slices.Index(hfmodel.LayerModules, strings.TrimSuffix(mod, ".weight"))
	return m.layers[l][i], l, i
}

func varFloats(v *context.Variable) ([]float32, error) {
	t, err := v.Value()
	if err != nil {
		return nil, fmt.Errorf("qwen3: variable %s: %w", v.ScopeAndName(), err)
	}
	f, err := tensors.CopyFlatData[float32](t)
	if err != nil {
		return nil, fmt.Errorf("qwen3: variable %s: %w", v.ScopeAndName(), err)
	}
	return f, nil
}

// Save writes a Hugging Face model directory that transformers (Qwen3ForCausalLM) and vLLM
// load: config.json, model.safetensors (float32; LoRA adapters merged in) and the tokenizer
// files of the directory the model was loaded from. Each file is written to a temporary name
// and renamed into place.
func (m *Model) Save(dir string) error { return m.SaveAs(dir, safetensors.F32) }

// SaveAs is Save with the weights stored as dtype (learner.STF32, STBF16 or STF16).
func (m *Model) SaveAs(dir string, dtype safetensors.DType) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ts, err := m.weightTensors()
	if err != nil {
		return err
	}
	if err := hfmodel.WriteHFDir(dir, m.cfg, ts, dtype); err != nil {
		return err
	}
	if m.srcDir == "" || hfmodel.SameDir(m.srcDir, dir) {
		return nil
	}
	for _, f := range hfmodel.TokenizerFiles {
		src := filepath.Join(m.srcDir, f)
		if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := hfmodel.CopyFile(src, filepath.Join(dir, f)); err != nil {
			return err
		}
	}
	return nil
}

// SetSourceDir sets the directory whose tokenizer files Save copies (Load sets it).
func (m *Model) SetSourceDir(dir string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.srcDir = dir
}
