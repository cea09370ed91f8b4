package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/t2t-lab/t2t/internal/testseed"
)

// TestSafetensorsExactBytes pins the on-disk layout: length prefix, space-padded JSON with
// sorted keys, then the data.
func TestSafetensorsExactBytes(t *testing.T) {
	var buf bytes.Buffer
	ts := []Tensor{F32Tensor("b", []int{2}, []float32{1, -2}), I64Tensor("a", []int{}, []int64{7})}
	if err := Write(&buf, ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	js := `{"__metadata__":{"format":"pt"},"a":{"dtype":"I64","shape":[],"data_offsets":[8,16]},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	for len(js)%8 != 0 {
		js += " "
	}
	want := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	want = append(want, js...)
	want = append(want, 0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0) // 1.0, -2.0
	want = append(want, 7, 0, 0, 0, 0, 0, 0, 0)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("bytes:\n got %q\nwant %q", buf.Bytes(), want)
	}
}

func TestSafetensorsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Get(t, 71), 7))
	vals := make([]float32, 24)
	for i := range vals {
		vals[i] = float32(rng.NormFloat64())
	}
	ts := []Tensor{
		F32Tensor("model.layers.0.w", []int{4, 6}, vals),
		BF16Tensor("model.embed", []int{2, 12}, vals),
		F16Tensor("h", []int{24}, vals),
		I64Tensor("step", []int{}, []int64{-42}),
		{Name: "empty", DType: F32, Shape: []int{0, 3}, Data: nil},
	}
	p := filepath.Join(t.TempDir(), "model.safetensors")
	if err := WriteFile(p, ts, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	got, meta, err := ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if meta["k"] != "v" || len(got) != len(ts) {
		t.Fatalf("meta %v, %d tensors", meta, len(got))
	}
	byName := map[string]Tensor{}
	for _, x := range got {
		byName[x.Name] = x
	}
	for _, w := range ts {
		g := byName[w.Name]
		if g.DType != w.DType || !slices.Equal(g.Shape, w.Shape) || !bytes.Equal(g.Data, w.Data) {
			t.Fatalf("%s: got %s %v (%d bytes), want %s %v (%d bytes)", w.Name, g.DType, g.Shape, len(g.Data), w.DType, w.Shape, len(w.Data))
		}
	}
	for _, name := range []string{"model.layers.0.w", "model.embed", "h"} {
		f, err := byName[name].Float32(nil)
		if err != nil {
			t.Fatal(err)
		}
		tol := map[string]float64{"model.layers.0.w": 0, "model.embed": 1.0 / 128, "h": 1.0 / 1024}[name]
		for i := range vals {
			if math.Abs(float64(f[i]-vals[i])) > tol*math.Abs(float64(vals[i]))+1e-7 {
				t.Fatalf("%s[%d]=%v want %v", name, i, f[i], vals[i])
			}
		}
	}
	if n, _ := byName["step"].Int64(nil); n[0] != -42 {
		t.Fatalf("step=%v", n)
	}
}

func TestHalfConversions(t *testing.T) {
	for h := range 1 << 16 {
		f := F16ToF32(uint16(h))
		if f != f {
			if g := F16ToF32(F32ToF16(f)); g == g {
				t.Fatalf("NaN %#04x did not stay NaN", h)
			}
			continue
		}
		if back := F32ToF16(f); back != uint16(h) {
			t.Fatalf("f16 %#04x → %v → %#04x", h, f, back)
		}
	}
	for _, c := range []struct {
		f float32
		h uint16
	}{
		{1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {65520, 0x7c00}, {1e-8, 0}, {5.960464e-08, 1},
		{1 + 1.0/2048, 0x3c00}, {1 + 3.0/2048, 0x3c02}, {float32(math.Inf(-1)), 0xfc00},
	} {
		if got := F32ToF16(c.f); got != c.h {
			t.Errorf("F32ToF16(%v)=%#04x want %#04x", c.f, got, c.h)
		}
	}
	for _, c := range []struct {
		f float32
		h uint16
	}{{1, 0x3f80}, {-2, 0xc000}, {1 + 1.0/256, 0x3f80}, {1 + 3.0/256, 0x3f82}, {3.0e38, 0x7f62}} {
		if got := F32ToBF16(c.f); got != c.h {
			t.Errorf("F32ToBF16(%v)=%#04x want %#04x", c.f, got, c.h)
		}
		if BF16ToF32(c.h) != math.Float32frombits(uint32(c.h)<<16) {
			t.Fatal("BF16ToF32")
		}
	}
	if nan := F32ToBF16(float32(math.NaN())); BF16ToF32(nan) == BF16ToF32(nan) {
		t.Error("bf16 NaN lost")
	}
}

func TestSafetensorsRejectsMalformed(t *testing.T) {
	info := func(dt string, shape []int, b, e int64) map[string]any {
		return map[string]any{"dtype": dt, "shape": shape, "data_offsets": []int64{b, e}}
	}
	cases := map[string]map[string]any{
		"unknown dtype": {"a": info("Q8", []int{2}, 0, 2)},
		"size mismatch": {"a": info("F32", []int{2}, 0, 4)},
		"hole":          {"a": info("F32", []int{1}, 0, 4), "b": info("F32", []int{1}, 8, 12)},
		"overlap":       {"a": info("F32", []int{2}, 0, 8), "b": info("F32", []int{1}, 4, 8)},
		"negative dim":  {"a": info("F32", []int{-1}, 0, 0)},
		"reversed":      {"a": info("F32", []int{0}, 4, 0)},
	}
	for name, hdr := range cases {
		js, _ := json.Marshal(hdr)
		if _, err := ParseHeader(js); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v", name, err)
		}
	}
	if _, err := ParseHeader([]byte(`{"__metadata__":{"a":1}}`)); !errors.Is(err, ErrMalformed) {
		t.Errorf("non-string metadata: got %v", err)
	}
	// File-level: trailing bytes, short data, absurd header length.
	dir := t.TempDir()
	var buf bytes.Buffer
	if err := Write(&buf, []Tensor{F32Tensor("x", []int{2}, []float32{1, 2})}, nil); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	for name, data := range map[string][]byte{
		"trailing": append(slices.Clone(good), 0),
		"short":    good[:len(good)-1],
		"huge hdr": append(binary.LittleEndian.AppendUint64(nil, 1<<40), good[8:]...),
		"tiny":     good[:5],
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(p); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v", name, err)
		}
	}
	// Writer refuses inconsistent tensors.
	if err := Write(&buf, []Tensor{{Name: "x", DType: F32, Shape: []int{3}, Data: make([]byte, 8)}}, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("writer size check: got %v", err)
	}
	if err := Write(&buf, []Tensor{F32Tensor("x", nil, []float32{1}), F32Tensor("x", nil, []float32{1})}, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("writer duplicate check: got %v", err)
	}
}

func TestSafetensorsShardedDir(t *testing.T) {
	dir := t.TempDir()
	a := []Tensor{F32Tensor("layer.0", []int{2}, []float32{1, 2}), F32Tensor("layer.1", []int{1}, []float32{3})}
	b := []Tensor{BF16Tensor("head", []int{2}, []float32{4, 5})}
	if err := WriteFile(filepath.Join(dir, "model-00001-of-00002.safetensors"), a, nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(dir, "model-00002-of-00002.safetensors"), b, nil); err != nil {
		t.Fatal(err)
	}
	index := map[string]any{"metadata": map[string]any{"total_size": 16}, "weight_map": map[string]string{
		"layer.0": "model-00001-of-00002.safetensors", "layer.1": "model-00001-of-00002.safetensors",
		"head": "model-00002-of-00002.safetensors",
	}}
	js, _ := json.Marshal(index)
	if err := os.WriteFile(filepath.Join(dir, IndexFile), js, 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := set.Names(); !slices.Equal(got, []string{"head", "layer.0", "layer.1"}) {
		t.Fatalf("names %v", got)
	}
	h, err := set.Read("head")
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := h.Float32(nil); !slices.Equal(f, []float32{4, 5}) {
		t.Fatalf("head=%v", f)
	}
	if info, ok := set.Info("layer.0"); !ok || info.DType != F32 || !slices.Equal(info.Shape, []int{2}) {
		t.Fatalf("info %+v", info)
	}
	set.Close()

	// An index pointing a tensor at the wrong shard is rejected.
	index["weight_map"].(map[string]string)["head"] = "model-00001-of-00002.safetensors"
	js, _ = json.Marshal(index)
	if err := os.WriteFile(filepath.Join(dir, IndexFile), js, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDir(dir); !errors.Is(err, ErrMalformed) {
		t.Fatalf("wrong shard: got %v", err)
	}
	// Without an index, model.safetensors is read.
	single := t.TempDir()
	if err := WriteFile(filepath.Join(single, "model.safetensors"), a, nil); err != nil {
		t.Fatal(err)
	}
	set, err = OpenDir(single)
	if err != nil || len(set.Names()) != 2 {
		t.Fatalf("single file: %v", err)
	}
	set.Close()
}

func FuzzParseSafetensorsHeader(f *testing.F) {
	f.Add([]byte(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"__metadata__":{"x":"y"}}`))
	f.Add([]byte(`{"a":{"dtype":"BF16","shape":[],"data_offsets":[0,2]},"b":{"dtype":"I64","shape":[1,1],"data_offsets":[2,10]}}`))
	f.Add([]byte(`{"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}}`))
	f.Fuzz(func(t *testing.T, js []byte) {
		h, err := ParseHeader(js)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// A valid header re-encodes to the same tensor table.
		var ts []Tensor
		for _, n := range h.Names() {
			info := h.Tensors[n]
			ts = append(ts, Tensor{Name: n, DType: info.DType, Shape: info.Shape, Data: make([]byte, info.DataOffsets[1]-info.DataOffsets[0])})
		}
		if h.DataLen > 1<<20 {
			return
		}
		enc, err := EncodeHeader(ts, h.Metadata)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		h2, err := ParseHeader(enc[8:])
		if err != nil || len(h2.Tensors) != len(h.Tensors) || h2.DataLen != h.DataLen {
			t.Fatalf("re-parse: %v", err)
		}
	})
}
