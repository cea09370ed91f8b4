package hfmodel

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"slices"

	"github.com/t2t-lab/t2t/internal/limits"
	"github.com/t2t-lab/t2t/internal/regfile"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

// MaxAdapterScale bounds an adapter's lora_alpha / r: PEFT's defaults give 2 and published
// adapters stay well under 100; 1e308 (accepted as "finite and > 0") turned every logit into
// Inf or NaN.
const MaxAdapterScale = 1e4

// adapterHeaderPerTensor bounds the safetensors header bytes of one adapter tensor (its name,
// about 60 bytes, dtype, shape and offsets, padded generously); the header of a model's
// adapter is at most this times the number of tensors it can have, plus adapterHeaderBase.
const (
	adapterHeaderPerTensor = 512
	adapterHeaderBase      = 4096
)

// Adapter is a PEFT LoRA adapter read whole, checked against a model's configuration and
// held in memory (ReadAdapter): attaching it again later reads no file, so changes on disk
// after the load change nothing.
type Adapter struct {
	Dir    string
	Config LoRAConfig
	// Weights maps each PEFT tensor name (PEFTName) to its values, row-major float32.
	Weights map[string][]float32
}

// AdapterError is an adapter directory that cannot be loaded: the file and what was wrong
// with it, never the file's content. It wraps Err where there is one.
type AdapterError struct {
	File   string
	Reason string
	Err    error
}

func (e *AdapterError) Error() string { return fmt.Sprintf("%s: %s", e.File, e.Reason) }
func (e *AdapterError) Unwrap() error { return e.Err }

// ReadAdapter reads the PEFT LoRA adapter in dir (adapter_config.json and
// adapter_model.safetensors) for a model of configuration model. Every file must be a regular
// file (a FIFO or a device is refused at once, never waited on); the config must be plain LoRA
// with a finite scale α/r ≤ MaxAdapterScale; the safetensors header must fit the tensors such
// an adapter can have, which is checked before any of the body is read; every tensor must be
// present with its shape, float and finite. Errors are *AdapterError, *WeightError or a
// *fielderr.Error, and hold no byte of the files.
func ReadAdapter(dir string, model Config) (*Adapter, error) {
	cfgPath := filepath.Join(dir, AdapterConfigFile)
	js, err := limits.ReadRegularFile(cfgPath, limits.Config)
	if err != nil {
		return nil, &AdapterError{File: cfgPath, Reason: fileReason(err), Err: err}
	}
	if !json.Valid(js) { // json's syntax errors quote the byte they stopped at
		return nil, &AdapterError{File: cfgPath, Reason: "not valid JSON"}
	}
	cfg, err := ParseAdapterConfig(js)
	if err != nil {
		return nil, err
	}
	if scale := cfg.Alpha / float64(cfg.Rank); !(scale <= MaxAdapterScale) {
		return nil, &AdapterError{File: cfgPath, Reason: fmt.Sprintf("lora_alpha / r = %g: want at most %g", scale, float64(MaxAdapterScale))}
	}
	if maxRank := max(model.HiddenSize, model.IntermediateSize); cfg.Rank > maxRank {
		return nil, &AdapterError{File: cfgPath, Reason: fmt.Sprintf("r = %d: want at most %d (the model's widest projection)", cfg.Rank, maxRank)}
	}
	want := adapterShapes(model, cfg)
	w, err := readAdapterWeights(filepath.Join(dir, AdapterWeightsFile), want)
	if err != nil {
		return nil, err
	}
	return &Adapter{Dir: dir, Config: cfg, Weights: w}, nil
}

// adapterShapes maps each tensor name an adapter of cfg has on model to its shape.
func adapterShapes(model Config, cfg LoRAConfig) map[string][]int {
	want := map[string][]int{}
	for l := range model.NumHiddenLayers {
		for _, t := range cfg.Targets {
			mod := moduleIndex(loraModules[t])
			shape := model.ModuleShape(LayerModules[mod])
			want[PEFTName(l, mod, "A")] = []int{cfg.Rank, shape[1]}
			want[PEFTName(l, mod, "B")] = []int{shape[0], cfg.Rank}
		}
	}
	return want
}

// moduleIndex is the index of a per-layer module name in LayerModules.
func moduleIndex(name string) int {
	for i, m := range LayerModules {
		if m == name {
			return i
		}
	}
	return -1
}

// readAdapterWeights reads the tensors of want from the safetensors file at path: the header
// length is checked against want's size before the header is read, the header against want
// before the body is read.
func readAdapterWeights(path string, want map[string][]int) (map[string][]float32, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, &AdapterError{File: path, Reason: fileReason(err), Err: err}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, &AdapterError{File: path, Reason: "cannot stat", Err: err}
	}
	var lenBuf [8]byte
	if _, err := io.ReadFull(f, lenBuf[:]); err != nil {
		return nil, &AdapterError{File: path, Reason: "shorter than a safetensors header", Err: safetensors.ErrMalformed}
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	maxHdr := uint64(adapterHeaderBase + adapterHeaderPerTensor*len(want))
	if n > maxHdr || n+8 > uint64(fi.Size()) {
		return nil, &AdapterError{File: path, Reason: fmt.Sprintf("safetensors header length out of range (at most %d bytes for the %d tensors of this adapter)", maxHdr, len(want)),
			Err: safetensors.ErrMalformed}
	}
	hjs := make([]byte, n)
	if _, err := io.ReadFull(f, hjs); err != nil {
		return nil, &AdapterError{File: path, Reason: "truncated safetensors header", Err: safetensors.ErrMalformed}
	}
	if !json.Valid(hjs) {
		return nil, &AdapterError{File: path, Reason: "safetensors header is not valid JSON", Err: safetensors.ErrMalformed}
	}
	h, err := safetensors.ParseHeader(hjs)
	if err != nil {
		return nil, &AdapterError{File: path, Reason: "malformed safetensors header", Err: safetensors.ErrMalformed}
	}
	if dataStart := 8 + int64(n); fi.Size()-dataStart != h.DataLen {
		return nil, &AdapterError{File: path, Reason: fmt.Sprintf("%d data bytes, the header describes %d", fi.Size()-dataStart, h.DataLen), Err: safetensors.ErrMalformed}
	}
	if err := checkAdapterHeader(h, want); err != nil {
		return nil, err
	}
	return readAdapterTensors(f, path, 8+int64(n), h, want)
}

// checkAdapterHeader: every tensor of want is in h with its shape and a float dtype, and h has
// no other.
func checkAdapterHeader(h *safetensors.Header, want map[string][]int) error {
	for name, shape := range want {
		info, ok := h.Tensors[name]
		switch {
		case !ok:
			return &WeightError{Tensor: name, Problem: ProblemMissing, Want: shape}
		case !slices.Equal(info.Shape, shape):
			return &WeightError{Tensor: name, Problem: ProblemShape, Want: shape, Got: info.Shape}
		case !slices.Contains([]safetensors.DType{safetensors.F32, safetensors.BF16, safetensors.F16, safetensors.F64}, info.DType):
			return &WeightError{Tensor: name, Problem: ProblemDType, Want: shape, Got: info.Shape, DType: string(info.DType)}
		}
	}
	for _, name := range h.Names() {
		if _, ok := want[name]; !ok {
			return &WeightError{Tensor: name, Problem: ProblemUnexpected, Got: h.Tensors[name].Shape}
		}
	}
	return nil
}

// readAdapterTensors reads and converts every tensor of want; a NaN or an infinity is a
// *WeightError (ProblemNonFinite), as full weights are refused.
func readAdapterTensors(f io.ReaderAt, path string, dataStart int64, h *safetensors.Header, want map[string][]int) (map[string][]float32, error) {
	out := make(map[string][]float32, len(want))
	for name, shape := range want {
		info := h.Tensors[name]
		data := make([]byte, info.DataOffsets[1]-info.DataOffsets[0])
		if _, err := f.ReadAt(data, dataStart+info.DataOffsets[0]); err != nil {
			return nil, &AdapterError{File: path, Reason: fmt.Sprintf("tensor %s: read failed", name), Err: err}
		}
		vals, err := safetensors.Tensor{Name: name, DType: info.DType, Shape: info.Shape, Data: data}.Float32(nil)
		if err != nil {
			return nil, &WeightError{Tensor: name, Problem: ProblemDType, Want: shape, Got: info.Shape, DType: string(info.DType)}
		}
		for _, x := range vals {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, &WeightError{Tensor: name, Problem: ProblemNonFinite, Want: shape, Got: info.Shape}
			}
		}
		out[name] = vals
	}
	return out, nil
}

// fileReason says why a file could not be read, without its content.
func fileReason(err error) string {
	var te *limits.TooLargeError
	switch {
	case errors.Is(err, regfile.ErrNotRegular):
		return err.(*regfile.Error).Err.Error()
	case errors.As(err, &te):
		return fmt.Sprintf("larger than %d bytes", te.Limit)
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist"
	}
	return "cannot be read"
}
