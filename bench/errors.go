package bench

import (
	"errors"
	"fmt"
)

// ErrNotEnoughMemory: a CPU benchmark's memory estimate exceeds the memory available (see
// *MemoryError).
var ErrNotEnoughMemory = errors.New("bench: not enough memory")

// MemoryError refuses a CPU run whose memory estimate exceeds what the machine has available
// (Setup.Force runs it anyway). It wraps ErrNotEnoughMemory.
type MemoryError struct {
	Need      int64 // the estimate, bytes
	Available int64 // MemAvailable, bytes
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("bench: the estimate (%.1f GiB) exceeds the memory available on this machine (%.1f GiB)",
		float64(e.Need)/(1<<30), float64(e.Available)/(1<<30))
}

// Unwrap makes errors.Is(err, ErrNotEnoughMemory) hold.
func (e *MemoryError) Unwrap() error { return ErrNotEnoughMemory }

// OpenError: the model could not be loaded or built: its checkpoint (Dir; empty for a preset)
// or the compute engine failed. Err is the loader's or the engine's error (torch.ErrNoTorch,
// learner.ErrBadDevice, a bad checkpoint, …).
type OpenError struct {
	Dir string
	Err error
}

func (e *OpenError) Error() string {
	if e.Dir == "" {
		return "bench: build the model: " + e.Err.Error()
	}
	return fmt.Sprintf("bench: open %s: %v", e.Dir, e.Err)
}

// Unwrap returns Err.
func (e *OpenError) Unwrap() error { return e.Err }
