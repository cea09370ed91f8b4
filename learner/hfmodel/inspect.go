package hfmodel

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"

	"github.com/t2t-lab/t2t/learner/safetensors"
)

// TensorGroup is a set of checkpoint tensors that differ only in their layer index.
type TensorGroup struct {
	Pattern string // the name with the layer index replaced by N, e.g. model.layers.N.mlp.up_proj.weight
	DType   string
	Shape   []int
	Count   int   // tensors in the group
	Params  int64 // elements over the group
}

// Inspection summarises a checkpoint directory without loading its weights (headers only).
type Inspection struct {
	Dir    string
	Config Config
	// Tensors, Params and Bytes count what the safetensors files hold; ParamsByDType splits
	// Params by dtype.
	Tensors       int
	Params        int64
	Bytes         int64
	ParamsByDType map[string]int64
	Groups        []TensorGroup // in checkpoint-name order of their first tensor
	// Problems lists tensors that Load would reject (missing, unexpected, mis-shaped or not a
	// float type), as *WeightError messages; empty when the checkpoint loads.
	Problems []string
	// Files are the directory's files (name → bytes).
	Files map[string]int64
}

var layerIndex = regexp.MustCompile(`\.layers\.\d+\.`)

// Inspect reads dir's config.json and safetensors headers and checks the tensors against the
// configuration.
func Inspect(dir string) (*Inspection, error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	defer set.Close()
	ins := &Inspection{Dir: dir, Config: cfg, ParamsByDType: map[string]int64{}, Files: map[string]int64{}}
	groups := map[string]*TensorGroup{}
	var order []string
	names := set.Names()
	for _, name := range names {
		info, _ := set.Info(name)
		n := int64(1)
		for _, d := range info.Shape {
			n *= int64(d)
		}
		ins.Tensors++
		ins.Params += n
		ins.Bytes += info.DataOffsets[1] - info.DataOffsets[0]
		ins.ParamsByDType[string(info.DType)] += n
		pat := layerIndex.ReplaceAllString(name, ".layers.N.")
		key := fmt.Sprintf("%s|%s|%v", pat, info.DType, info.Shape)
		g, ok := groups[key]
		if !ok {
			g = &TensorGroup{Pattern: pat, DType: string(info.DType), Shape: slices.Clone(info.Shape)}
			groups[key] = g
			order = append(order, key)
		}
		g.Count++
		g.Params += n
	}
	for _, k := range order {
		ins.Groups = append(ins.Groups, *groups[k])
	}
	seen := map[string]bool{}
	for _, s := range cfg.WeightSpecs() {
		seen[s.Name] = true
		info, ok := set.Info(s.Name)
		var werr *WeightError
		switch {
		case !ok:
			werr = &WeightError{Tensor: s.Name, Problem: ProblemMissing, Want: s.Shape}
		case !slices.Equal(info.Shape, s.Shape):
			werr = &WeightError{Tensor: s.Name, Problem: ProblemShape, Want: s.Shape, Got: info.Shape}
		case !slices.Contains([]safetensors.DType{safetensors.F32, safetensors.BF16, safetensors.F16, safetensors.F64}, info.DType):
			werr = &WeightError{Tensor: s.Name, Problem: ProblemDType, Want: s.Shape, Got: info.Shape, DType: string(info.DType)}
		}
		if werr != nil {
			ins.Problems = append(ins.Problems, werr.Error())
		}
	}
	for _, name := range names {
		if !seen[name] && !(name == NameLMHead && cfg.TieWordEmbeddings) {
			info, _ := set.Info(name)
			ins.Problems = append(ins.Problems, (&WeightError{Tensor: name, Problem: ProblemUnexpected, Got: info.Shape}).Error())
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			ins.Files[e.Name()] = fi.Size()
		}
	}
	sort.Strings(ins.Problems)
	return ins, nil
}
