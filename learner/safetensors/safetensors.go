package safetensors

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/t2t-lab/t2t/internal/limits"
	"github.com/t2t-lab/t2t/internal/regfile"
)

// Safetensors (https://huggingface.co/docs/safetensors): an 8-byte little-endian header length
// N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {k: v}},
// then the raw little-endian tensor bytes; offsets are relative to the end of the header and
// must tile the data exactly (no holes, no overlaps).

// DType is a safetensors dtype name.
type DType string

// Supported safetensors dtypes.
const (
	F64  DType = "F64"
	F32  DType = "F32"
	F16  DType = "F16"
	BF16 DType = "BF16"
	I64  DType = "I64"
	I32  DType = "I32"
	I16  DType = "I16"
	I8   DType = "I8"
	U8   DType = "U8"
	Bool DType = "BOOL"
)

// Size returns the bytes per element, or 0 for an unknown dtype.
func (d DType) Size() int {
	switch d {
	case F64, I64:
		return 8
	case F32, I32:
		return 4
	case F16, BF16, I16:
		return 2
	case I8, U8, Bool:
		return 1
	}
	return 0
}

// maxHeader bounds the JSON header (the reference implementation uses 100 MB).
const maxHeader = 100 << 20

// Tensor is one named tensor with its raw little-endian bytes.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// NumElements is the product of Shape (1 for a scalar).
func (t Tensor) NumElements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// F32Tensor encodes float32 values as an F32 tensor.
func F32Tensor(name string, shape []int, data []float32) Tensor {
	b := make([]byte, 4*len(data))
	for i, x := range data {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return Tensor{Name: name, DType: F32, Shape: slices.Clone(shape), Data: b}
}

// BF16Tensor encodes float32 values as a BF16 tensor (round to nearest even).
func BF16Tensor(name string, shape []int, data []float32) Tensor {
	b := make([]byte, 2*len(data))
	for i, x := range data {
		binary.LittleEndian.PutUint16(b[2*i:], F32ToBF16(x))
	}
	return Tensor{Name: name, DType: BF16, Shape: slices.Clone(shape), Data: b}
}

// F16Tensor encodes float32 values as an IEEE half-precision tensor (round to nearest even).
func F16Tensor(name string, shape []int, data []float32) Tensor {
	b := make([]byte, 2*len(data))
	for i, x := range data {
		binary.LittleEndian.PutUint16(b[2*i:], F32ToF16(x))
	}
	return Tensor{Name: name, DType: F16, Shape: slices.Clone(shape), Data: b}
}

// I64Tensor encodes int64 values as an I64 tensor.
func I64Tensor(name string, shape []int, data []int64) Tensor {
	b := make([]byte, 8*len(data))
	for i, x := range data {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return Tensor{Name: name, DType: I64, Shape: slices.Clone(shape), Data: b}
}

// Float32 decodes an F32, F16, BF16 or F64 tensor into dst (grown as needed) and returns it.
func (t Tensor) Float32(dst []float32) ([]float32, error) {
	n := t.NumElements()
	if t.DType.Size() == 0 || len(t.Data) != n*t.DType.Size() {
		return dst, fmt.Errorf("%w: tensor %q: %d bytes for %d×%s", ErrMalformed, t.Name, len(t.Data), n, t.DType)
	}
	dst = slices.Grow(dst[:0], n)[:n]
	switch t.DType {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
	case BF16:
		for i := range dst {
			dst[i] = BF16ToF32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	case F16:
		for i := range dst {
			dst[i] = F16ToF32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
	case F64:
		for i := range dst {
			dst[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(t.Data[8*i:])))
		}
	default:
		return dst, fmt.Errorf("%w: tensor %q: dtype %s is not a float", ErrMalformed, t.Name, t.DType)
	}
	return dst, nil
}

// Int64 decodes an I64, I32, I16, I8, U8 or BOOL tensor into dst and returns it.
func (t Tensor) Int64(dst []int64) ([]int64, error) {
	n := t.NumElements()
	if t.DType.Size() == 0 || len(t.Data) != n*t.DType.Size() {
		return dst, fmt.Errorf("%w: tensor %q: %d bytes for %d×%s", ErrMalformed, t.Name, len(t.Data), n, t.DType)
	}
	if cap(dst) < n {
		dst = make([]int64, n)
	}
	dst = dst[:n]
	for i := range dst {
		switch t.DType {
		case I64:
			dst[i] = int64(binary.LittleEndian.Uint64(t.Data[8*i:]))
		case I32:
			dst[i] = int64(int32(binary.LittleEndian.Uint32(t.Data[4*i:])))
		case I16:
			dst[i] = int64(int16(binary.LittleEndian.Uint16(t.Data[2*i:])))
		case I8:
			dst[i] = int64(int8(t.Data[i]))
		case U8, Bool:
			dst[i] = int64(t.Data[i])
		default:
			return dst, fmt.Errorf("%w: tensor %q: dtype %s is not an integer", ErrMalformed, t.Name, t.DType)
		}
	}
	return dst, nil
}

// BF16ToF32 widens a bfloat16 bit pattern.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 narrows to bfloat16, rounding to nearest even; NaN stays NaN.
func F32ToBF16(x float32) uint16 {
	u := math.Float32bits(x)
	if x != x {
		return uint16(u>>16) | 0x40 // keep sign, force a quiet NaN
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// F16ToF32 widens an IEEE 754 half-precision bit pattern.
func F16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf / NaN
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
	case man == 0: // ±0
		return math.Float32frombits(sign)
	}
	// Subnormal: man·2^-24.
	f := float32(man) * (1.0 / (1 << 24))
	if sign != 0 {
		f = -f
	}
	return f
}

// F32ToF16 narrows to IEEE half precision, rounding to nearest even (overflow → ±Inf).
func F32ToF16(x float32) uint16 {
	u := math.Float32bits(x)
	sign := uint16(u>>16) & 0x8000
	exp := int32(u>>23) & 0xff
	man := u & 0x7fffff
	if exp == 0xff { // Inf / NaN
		if man != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 { // subnormal half (or zero)
		if e < -10 {
			return sign
		}
		m := man | 0x800000 // implicit 1
		shift := uint32(14 - e)
		half := m >> shift
		rem := m & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++ // may carry into the exponent, up to Inf: correct rounding
	}
	return sign | uint16(half)
}

// Info is a tensor's header entry.
type Info struct {
	DType       DType    `json:"dtype"`
	Shape       []int    `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// Header is a parsed and validated safetensors header.
type Header struct {
	Metadata map[string]string
	Tensors  map[string]Info
	DataLen  int64 // bytes of tensor data the offsets tile
}

// Names returns the tensor names, sorted.
func (h *Header) Names() []string {
	names := make([]string, 0, len(h.Tensors))
	for n := range h.Tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ParseHeader parses and validates the JSON header. Offsets must tile [0, DataLen)
// exactly; every dtype must be known and every entry's byte size must match its shape.
func ParseHeader(js []byte) (*Header, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(js, &raw); err != nil {
		return nil, fmt.Errorf("%w: header JSON: %w", ErrMalformed, err)
	}
	h := &Header{Tensors: make(map[string]Info, len(raw))}
	type span struct {
		begin, end int64
		name       string
	}
	spans := make([]span, 0, len(raw))
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &h.Metadata); err != nil {
				return nil, fmt.Errorf("%w: __metadata__ must map strings to strings: %w", ErrMalformed, err)
			}
			continue
		}
		if name == "" {
			return nil, fmt.Errorf("%w: empty tensor name", ErrMalformed)
		}
		var info Info
		if err := json.Unmarshal(msg, &info); err != nil {
			return nil, fmt.Errorf("%w: tensor %q: %w", ErrMalformed, name, err)
		}
		size := info.DType.Size()
		if size == 0 {
			return nil, fmt.Errorf("%w: tensor %q: unsupported dtype %q", ErrMalformed, name, info.DType)
		}
		n := int64(1)
		for _, d := range info.Shape {
			if d < 0 || (d > 0 && n > math.MaxInt64/int64(size)/int64(d)) {
				return nil, fmt.Errorf("%w: tensor %q: bad shape %v", ErrMalformed, name, info.Shape)
			}
			n *= int64(d)
		}
		b, e := info.DataOffsets[0], info.DataOffsets[1]
		if b < 0 || e < b || e-b != n*int64(size) {
			return nil, fmt.Errorf("%w: tensor %q: offsets %v do not hold %d×%s", ErrMalformed, name, info.DataOffsets, n, info.DType)
		}
		h.Tensors[name] = info
		spans = append(spans, span{b, e, name})
	}
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].begin != spans[j].begin {
			return spans[i].begin < spans[j].begin
		}
		return spans[i].end < spans[j].end
	})
	for _, s := range spans {
		if s.begin != h.DataLen {
			return nil, fmt.Errorf("%w: tensor %q starts at %d, want %d (holes or overlaps)", ErrMalformed, s.name, s.begin, h.DataLen)
		}
		h.DataLen = s.end
	}
	return h, nil
}

// EncodeHeader returns the header bytes (length prefix + space-padded JSON, the data
// then starts 8-byte aligned) for tensors laid out in the given order.
func EncodeHeader(tensors []Tensor, metadata map[string]string) ([]byte, error) {
	hdr := make(map[string]any, len(tensors)+1)
	if len(metadata) > 0 {
		hdr["__metadata__"] = metadata
	}
	var off int64
	for _, t := range tensors {
		if t.Name == "" || t.Name == "__metadata__" {
			return nil, fmt.Errorf("%w: invalid tensor name %q", ErrMalformed, t.Name)
		}
		if _, dup := hdr[t.Name]; dup {
			return nil, fmt.Errorf("%w: duplicate tensor name %q", ErrMalformed, t.Name)
		}
		if t.DType.Size() == 0 || len(t.Data) != t.NumElements()*t.DType.Size() {
			return nil, fmt.Errorf("%w: tensor %q: %d bytes for shape %v of %s", ErrMalformed, t.Name, len(t.Data), t.Shape, t.DType)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		hdr[t.Name] = Info{DType: t.DType, Shape: shape, DataOffsets: [2]int64{off, off + int64(len(t.Data))}}
		off += int64(len(t.Data))
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	out := make([]byte, 8, 8+len(js))
	binary.LittleEndian.PutUint64(out, uint64(len(js)))
	return append(out, js...), nil
}

// Write writes tensors (data in the given order) with optional metadata to w.
func Write(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	hdr, err := EncodeHeader(tensors, metadata)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if _, err := bw.Write(hdr); err != nil {
		return err
	}
	for _, t := range tensors {
		if _, err := bw.Write(t.Data); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// WriteFile writes a safetensors file at path and fsyncs it.
func WriteFile(path string, tensors []Tensor, metadata map[string]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := Write(f, tensors, metadata); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// File is an open safetensors file; tensors are read on demand with ReadAt, so a
// multi-gigabyte checkpoint is never held in memory at once. Safe for concurrent reads.
type File struct {
	Header
	Path      string
	f         *os.File
	dataStart int64
}

// Open opens and validates the header of the file at path (the data must have
// exactly the length the offsets tile).
func Open(path string) (*File, error) {
	f, err := regfile.Open(path) // a FIFO or a device is refused, never waited on
	if err != nil {
		return nil, err
	}
	st, err := readHeader(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	return st, nil
}

func readHeader(f *os.File, path string) (*File, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var lenBuf [8]byte
	if _, err := io.ReadFull(f, lenBuf[:]); err != nil {
		return nil, fmt.Errorf("%w: %s: header length: %w", ErrMalformed, path, err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > maxHeader || int64(n)+8 > fi.Size() {
		return nil, fmt.Errorf("%w: %s: header length out of range (at most %d bytes, and within the file's %d)", ErrMalformed, path, maxHeader, fi.Size()) // n is file bytes: never printed
	}
	js := make([]byte, n)
	if _, err := io.ReadFull(f, js); err != nil {
		return nil, fmt.Errorf("%w: %s: header: %w", ErrMalformed, path, err)
	}
	h, err := ParseHeader(js)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dataStart := 8 + int64(n)
	if fi.Size()-dataStart != h.DataLen {
		return nil, fmt.Errorf("%w: %s: %d data bytes, header describes %d", ErrMalformed, path, fi.Size()-dataStart, h.DataLen)
	}
	return &File{Header: *h, Path: path, f: f, dataStart: dataStart}, nil
}

// Read returns the named tensor with its bytes.
func (s *File) Read(name string) (Tensor, error) {
	info, ok := s.Tensors[name]
	if !ok {
		return Tensor{}, fmt.Errorf("%w: %s: no tensor %q", ErrMalformed, s.Path, name)
	}
	data := make([]byte, info.DataOffsets[1]-info.DataOffsets[0])
	if _, err := s.f.ReadAt(data, s.dataStart+info.DataOffsets[0]); err != nil {
		return Tensor{}, fmt.Errorf("%w: %s: tensor %q: %w", ErrMalformed, s.Path, name, err)
	}
	return Tensor{Name: name, DType: info.DType, Shape: slices.Clone(info.Shape), Data: data}, nil
}

// Close closes the file.
func (s *File) Close() error { return s.f.Close() }

// ReadFile reads every tensor of the file at path, in name order.
func ReadFile(path string) ([]Tensor, map[string]string, error) {
	s, err := Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	var out []Tensor
	for _, n := range s.Names() {
		t, err := s.Read(n)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, t)
	}
	return out, s.Metadata, nil
}

// IndexFile is the name of a sharded checkpoint's index.
const IndexFile = "model.safetensors.index.json"

// Set is a model's weights in one file (model.safetensors) or sharded across several
// (model.safetensors.index.json: {"metadata": {...}, "weight_map": {tensor: shard file}}).
type Set struct {
	shards []*File
	where  map[string]*File
}

// OpenDir opens the weights of a Hugging Face model directory: the sharded index if
// present, else model.safetensors. Every shard is validated, and every tensor must be in the
// shard the index names, and in no other.
func OpenDir(dir string) (*Set, error) {
	idxPath := filepath.Join(dir, IndexFile)
	js, err := limits.ReadRegularFile(idxPath, limits.Text)
	if os.IsNotExist(err) {
		s, err := Open(filepath.Join(dir, "model.safetensors"))
		if err != nil {
			return nil, err
		}
		set := &Set{shards: []*File{s}, where: map[string]*File{}}
		for n := range s.Tensors {
			set.where[n] = s
		}
		return set, nil
	}
	if err != nil {
		return nil, err
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(js, &idx); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrMalformed, idxPath, err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, fmt.Errorf("%w: %s: empty weight_map", ErrMalformed, idxPath)
	}
	set := &Set{where: map[string]*File{}}
	byFile := map[string]*File{}
	files := make([]string, 0)
	for _, f := range idx.WeightMap {
		if _, ok := byFile[f]; !ok {
			if filepath.Base(f) != f || f == "." || f == ".." {
				set.Close()
				return nil, fmt.Errorf("%w: %s: shard %q is not a plain file name", ErrMalformed, idxPath, f)
			}
			byFile[f] = nil
			files = append(files, f)
		}
	}
	sort.Strings(files)
	for _, f := range files {
		s, err := Open(filepath.Join(dir, f))
		if err != nil {
			set.Close()
			return nil, err
		}
		byFile[f] = s
		set.shards = append(set.shards, s)
	}
	for name, f := range idx.WeightMap {
		s := byFile[f]
		if _, ok := s.Tensors[name]; !ok {
			set.Close()
			return nil, fmt.Errorf("%w: %s: tensor %q is not in shard %s", ErrMalformed, idxPath, name, f)
		}
		set.where[name] = s
	}
	for _, s := range set.shards {
		for name := range s.Tensors {
			if set.where[name] != s {
				set.Close()
				return nil, fmt.Errorf("%w: %s: tensor %q in %s is not indexed there", ErrMalformed, idxPath, name, s.Path)
			}
		}
	}
	return set, nil
}

// Names returns every tensor name, sorted.
func (s *Set) Names() []string {
	names := make([]string, 0, len(s.where))
	for n := range s.where {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Info returns the header entry of the named tensor.
func (s *Set) Info(name string) (Info, bool) {
	f, ok := s.where[name]
	if !ok {
		return Info{}, false
	}
	return f.Tensors[name], true
}

// Read returns the named tensor.
func (s *Set) Read(name string) (Tensor, error) {
	f, ok := s.where[name]
	if !ok {
		return Tensor{}, fmt.Errorf("%w: no tensor %q", ErrMalformed, name)
	}
	return f.Read(name)
}

// Close closes every shard.
func (s *Set) Close() error {
	var first error
	for _, f := range s.shards {
		if f == nil {
			continue
		}
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
