package actors

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/vmihailenco/msgpack/v5"
)

// Sample has its own msgpack codec: the token ids and log-probabilities, by
// far the bulk of the traffic, travel as msgpack bin values holding packed
// little-endian int32 / IEEE-754 float32 (4 bytes each) instead of arrays of
// numbers, which msgpack v5 decodes one reflected element at a time. It is
// still a map keyed by the field tags, so fields can be appended and unknown
// keys are skipped. A nil slice travels as nil.

var (
	_ msgpack.CustomEncoder = (*Sample)(nil)
	_ msgpack.CustomDecoder = (*Sample)(nil)
)

const samplePackChunk = 256 // bytes staged per write/read

// EncodeMsgpack writes s as a 5-entry map.
func (s *Sample) EncodeMsgpack(enc *msgpack.Encoder) error {
	if err := enc.EncodeMapLen(5); err != nil {
		return err
	}
	if err := enc.EncodeString("tokens"); err != nil {
		return err
	}
	if err := encodePacked(enc, s.Tokens); err != nil {
		return err
	}
	if err := enc.EncodeString("logprobs"); err != nil {
		return err
	}
	if err := encodePacked(enc, s.LogProbs); err != nil {
		return err
	}
	for _, kv := range []struct {
		k string
		v any
	}{{"reward", s.Reward}, {"valid", s.Valid}, {"optimal", s.Optimal}} {
		if err := enc.EncodeString(kv.k); err != nil {
			return err
		}
		var err error
		switch v := kv.v.(type) {
		case float32:
			err = enc.EncodeFloat32(v)
		case bool:
			err = enc.EncodeBool(v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// packed is the element type of a packed slice.
type packed interface{ ~int32 | ~float32 }

func packWord[T packed](v T) uint32 {
	switch x := any(v).(type) {
	case int32:
		return uint32(x)
	case float32:
		return math.Float32bits(x)
	}
	panic("unreachable")
}

func unpackWord[T packed](w uint32) T {
	var zero T
	switch any(zero).(type) {
	case int32:
		return T(int32(w))
	case float32:
		return T(math.Float32frombits(w))
	}
	panic("unreachable")
}

func encodePacked[T packed](enc *msgpack.Encoder, vs []T) error {
	if vs == nil {
		return enc.EncodeNil()
	}
	if err := enc.EncodeBytesLen(4 * len(vs)); err != nil {
		return err
	}
	var buf [samplePackChunk]byte
	w := enc.Writer()
	for i := 0; i < len(vs); {
		k := 0
		for ; k+4 <= len(buf) && i < len(vs); i, k = i+1, k+4 {
			binary.LittleEndian.PutUint32(buf[k:], packWord(vs[i]))
		}
		if _, err := w.Write(buf[:k]); err != nil {
			return err
		}
	}
	return nil
}

// DecodeMsgpack reads what EncodeMsgpack wrote, skipping unknown keys.
func (s *Sample) DecodeMsgpack(dec *msgpack.Decoder) error {
	n, err := dec.DecodeMapLen()
	if err != nil {
		return err
	}
	*s = Sample{}
	for range max(n, 0) {
		k, err := dec.DecodeString()
		if err != nil {
			return err
		}
		switch k {
		case "tokens":
			s.Tokens, err = decodePacked[int32](dec)
		case "logprobs":
			s.LogProbs, err = decodePacked[float32](dec)
		case "reward":
			s.Reward, err = dec.DecodeFloat32()
		case "valid":
			s.Valid, err = dec.DecodeBool()
		case "optimal":
			s.Optimal, err = dec.DecodeBool()
		default:
			err = dec.Skip()
		}
		if err != nil {
			return fmt.Errorf("sample field %q: %w", k, err)
		}
	}
	return nil
}

func decodePacked[T packed](dec *msgpack.Decoder) ([]T, error) {
	n, err := dec.DecodeBytesLen()
	if err != nil {
		return nil, err
	}
	if n == -1 {
		return nil, nil
	}
	if n%4 != 0 {
		return nil, fmt.Errorf("packed length %d is not a multiple of 4", n)
	}
	// n is at most the payload size: checkMsgpack ran first.
	vs := make([]T, n/4)
	var buf [samplePackChunk]byte
	for i := 0; i < len(vs); {
		k := min(len(buf), n-4*i)
		if err := dec.ReadFull(buf[:k]); err != nil {
			return nil, err
		}
		for j := 0; j < k; j, i = j+4, i+1 {
			vs[i] = unpackWord[T](binary.LittleEndian.Uint32(buf[j:]))
		}
	}
	return vs, nil
}
