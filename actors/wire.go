package actors

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/remote"
	"github.com/vmihailenco/msgpack/v5"
)

// Wire format of one t2t message: a 2-byte header, then the msgpack encoding
// of the struct (a map keyed by the msgpack tags). The type name travels
// beside the payload (the remote envelope's type name).
//
//	byte 0: wireMagic
//	byte 1: WireVersion
//	rest:   msgpack
const (
	// WireVersion is the version byte every payload carries. A node rejects
	// payloads of any other version with ErrVersion.
	WireVersion byte = 1
	wireMagic   byte = 0x74 // 't'
	wireHeader       = 2
)

// Registry maps wire type names to Go struct types and back. Build one when a
// node is built (NewRegistry, then Register or RegisterMessages); there is no
// package-level registry. A Registry is not safe for concurrent use: the
// Serializer takes a snapshot of it, so register everything before calling
// NewSerializer.
type Registry struct {
	byName map[string]reflect.Type
	byType map[reflect.Type]string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{byName: map[string]reflect.Type{}, byType: map[reflect.Type]string{}}
}

// Register maps name to the struct type of proto (a struct value or a pointer
// to one). A name or type registered twice, an empty name and a non-struct
// prototype are errors wrapping ErrRegistry.
func (r *Registry) Register(name string, proto any) error {
	if name == "" {
		return fmt.Errorf("%w: empty type name", ErrRegistry)
	}
	t := reflect.TypeOf(proto)
	if t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return fmt.Errorf("%w: %q: prototype %T is not a struct", ErrRegistry, name, proto)
	}
	if old, ok := r.byName[name]; ok {
		return fmt.Errorf("%w: name %q already maps to %v", ErrRegistry, name, old)
	}
	if old, ok := r.byType[t]; ok {
		return fmt.Errorf("%w: type %v already registered as %q", ErrRegistry, t, old)
	}
	r.byName[name] = t
	r.byType[t] = name
	return nil
}

// Names returns the registered type names, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.byName))
	for n := range r.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// New returns a pointer to a new zero value of the type registered as name.
func (r *Registry) New(name string) (any, bool) {
	t, ok := r.byName[name]
	if !ok {
		return nil, false
	}
	return reflect.New(t).Interface(), true
}

// WireStats counts what a Serializer did. All counters only grow.
type WireStats struct {
	Encoded      uint64 // messages serialized
	Decoded      uint64 // messages deserialized
	EncodeErrors uint64 // Serialize or GetTypeName failures (unregistered Go type, nil)
	Unknown      uint64 // incoming type names not in the registry
	Corrupt      uint64 // truncated, trailing bytes, bad magic, undecodable
	Version      uint64 // wrong WireVersion in the header
}

// Serializer is the msgpack serializer for t2t messages. It implements
// protoactor remote's Serializer interface and counts every rejection. It is
// safe for concurrent use.
type Serializer struct {
	byName map[string]reflect.Type // frozen snapshot, read-only
	byType map[reflect.Type]string

	encoded, decoded, encodeErrors, unknown, corrupt, version atomic.Uint64
}

var _ remote.Serializer = (*Serializer)(nil)

// NewSerializer returns a serializer for the types registered in reg so far
// (later registrations do not reach it).
func NewSerializer(reg *Registry) *Serializer {
	s := &Serializer{
		byName: make(map[string]reflect.Type, len(reg.byName)),
		byType: make(map[reflect.Type]string, len(reg.byType)),
	}
	for n, t := range reg.byName {
		s.byName[n] = t
		s.byType[t] = n
	}
	return s
}

// Stats returns a snapshot of the counters.
func (s *Serializer) Stats() WireStats {
	return WireStats{
		Encoded:      s.encoded.Load(),
		Decoded:      s.decoded.Load(),
		EncodeErrors: s.encodeErrors.Load(),
		Unknown:      s.unknown.Load(),
		Corrupt:      s.corrupt.Load(),
		Version:      s.version.Load(),
	}
}

// Knows reports whether msg's Go type is registered.
func (s *Serializer) Knows(msg any) bool {
	_, err := s.typeName(msg)
	return err == nil
}

func (s *Serializer) typeName(msg any) (string, error) {
	t := reflect.TypeOf(msg)
	if t != nil && t.Kind() == reflect.Pointer {
		if reflect.ValueOf(msg).IsNil() {
			return "", &WireError{TypeName: t.String(), Err: ErrUnknownType, Detail: "nil message"}
		}
		t = t.Elem()
	}
	name, ok := s.byType[t]
	if !ok {
		return "", &WireError{TypeName: fmt.Sprintf("%T", msg), Err: ErrUnknownType, Detail: "Go type not registered"}
	}
	return name, nil
}

// GetTypeName returns the registered name of msg's type (msg may be a struct
// or a pointer to one). Unregistered types wrap ErrUnknownType.
func (s *Serializer) GetTypeName(msg any) (string, error) {
	name, err := s.typeName(msg)
	if err != nil {
		s.encodeErrors.Add(1)
	}
	return name, err
}

// Serialize encodes msg (a registered struct or pointer to one) as header +
// msgpack. Unregistered types wrap ErrUnknownType.
func (s *Serializer) Serialize(msg any) ([]byte, error) {
	if _, err := s.typeName(msg); err != nil {
		s.encodeErrors.Add(1)
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(128)
	buf.WriteByte(wireMagic)
	buf.WriteByte(WireVersion)
	enc := msgpack.GetEncoder()
	enc.Reset(&buf)
	err := enc.Encode(msg)
	msgpack.PutEncoder(enc)
	if err != nil {
		s.encodeErrors.Add(1)
		return nil, fmt.Errorf("actors: encode %T: %w", msg, err)
	}
	s.encoded.Add(1)
	return buf.Bytes(), nil
}

// Deserialize decodes a payload of the type registered as typeName and
// returns a pointer to a new value (*WorkUnit for "t2t.WorkUnit"). It never
// panics; failures wrap ErrUnknownType, ErrVersion or ErrCorrupt and are
// counted.
func (s *Serializer) Deserialize(typeName string, b []byte) (any, error) {
	t, ok := s.byName[typeName]
	if !ok {
		s.unknown.Add(1)
		return nil, &WireError{TypeName: typeName, Err: ErrUnknownType}
	}
	if len(b) < wireHeader || b[0] != wireMagic {
		s.corrupt.Add(1)
		return nil, &WireError{TypeName: typeName, Err: ErrCorrupt, Detail: "missing or bad header"}
	}
	if b[1] != WireVersion {
		s.version.Add(1)
		return nil, &WireError{TypeName: typeName, Err: ErrVersion,
			Detail: fmt.Sprintf("payload version %d, node speaks %d", b[1], WireVersion)}
	}
	if err := checkMsgpack(b[wireHeader:]); err != nil {
		s.corrupt.Add(1)
		return nil, &WireError{TypeName: typeName, Err: ErrCorrupt, Detail: err.Error()}
	}
	v := reflect.New(t)
	r := bytes.NewReader(b[wireHeader:])
	dec := msgpack.GetDecoder()
	dec.Reset(r)
	err := decodeSafe(dec, v.Interface())
	msgpack.PutDecoder(dec)
	if err == nil && r.Len() != 0 {
		err = fmt.Errorf("%d trailing bytes", r.Len())
	}
	if err != nil {
		s.corrupt.Add(1)
		return nil, &WireError{TypeName: typeName, Err: ErrCorrupt, Detail: err.Error()}
	}
	s.decoded.Add(1)
	return v.Interface(), nil
}

// decodeSafe turns a panic inside the msgpack decoder (none known; this is
// the guard the fuzz test relies on) into an error.
func decodeSafe(dec *msgpack.Decoder, v any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("decoder panic: %v", p)
		}
	}()
	return dec.Decode(v)
}

// IsWireError reports whether err is one of the wire sentinels.
func IsWireError(err error) bool {
	return errors.Is(err, ErrUnknownType) || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrVersion)
}
