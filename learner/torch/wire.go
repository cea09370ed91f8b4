package torch

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"

	"github.com/vmihailenco/msgpack/v5"
)

// ProtocolVersion is the worker protocol this package speaks (worker/PROTOCOL.md).
const ProtocolVersion = 3

// maxFrame bounds one frame's body (PROTOCOL.md).
const maxFrame = 1 << 30

// writeFrame writes v as one frame: a 4-byte big-endian length and its msgpack encoding.
func writeFrame(w *bufio.Writer, v any) error {
	body, err := msgpack.Marshal(v)
	if err != nil {
		return fmt.Errorf("torch: encode request: %w", err)
	}
	if len(body) > maxFrame {
		return fmt.Errorf("torch: request of %d bytes exceeds the %d-byte frame limit", len(body), maxFrame)
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(body)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	if _, err := w.Write(body); err != nil {
		return err
	}
	return w.Flush()
}

// readFrame reads one frame's body. io.EOF means the stream ended cleanly between frames; a
// bad length wraps ErrProtocol.
func readFrame(r *bufio.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("%w: stream ended inside a frame header", ErrProtocol)
		}
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 || n > maxFrame {
		return nil, fmt.Errorf("%w: frame length %d outside [1, %d]", ErrProtocol, n, maxFrame)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("%w: stream ended inside a %d-byte frame: %v", ErrProtocol, n, err)
	}
	return body, nil
}

// envelope is the part of every worker frame that routes it.
type envelope struct {
	Type  string `msgpack:"type"`  // "hello" for the handshake
	ID    uint64 `msgpack:"id"`    // the request answered
	OK    bool   `msgpack:"ok"`    // replies: success
	Event string `msgpack:"event"` // events: "token"
	Error *struct {
		Kind    string `msgpack:"kind"`
		Message string `msgpack:"message"`
	} `msgpack:"error"`
}

// i32Bytes packs ids as little-endian int32 (a msgpack bin).
func i32Bytes(xs []int32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return b
}

// f32Bytes packs values as little-endian float32; nil stays nil (msgpack nil).
func f32Bytes(xs []float32) []byte {
	if xs == nil {
		return nil
	}
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// bytesI32 unpacks little-endian int32s.
func bytesI32(b []byte) ([]int32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%w: int32 array of %d bytes", ErrProtocol, len(b))
	}
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

// bytesF32 unpacks little-endian float32s.
func bytesF32(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%w: float32 array of %d bytes", ErrProtocol, len(b))
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

// rowsI32 packs each row as a bin.
func rowsI32(rows [][]int32) [][]byte {
	out := make([][]byte, len(rows))
	for i, r := range rows {
		out[i] = i32Bytes(r)
	}
	return out
}
