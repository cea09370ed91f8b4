package torch

import (
	"strings"

	"github.com/t2t-lab/t2t/learner/engine"
)

// DeviceMemory implements engine.MemoryReporter from the worker's stats: on CUDA the memory
// torch allocated (and its peak), elsewhere the worker's RSS (and its peak).
func (m *Model) DeviceMemory() (engine.DeviceMemory, error) {
	st, err := m.Stats()
	if err != nil {
		return engine.DeviceMemory{}, err
	}
	dev := m.Device()
	if st.CUDAAllocated > 0 || strings.HasPrefix(dev, "cuda") {
		return engine.DeviceMemory{Device: dev, Bytes: st.CUDAAllocated, PeakBytes: st.CUDAMaxAllocated,
			Source: "CUDA memory allocated by the torch worker"}, nil
	}
	return engine.DeviceMemory{Device: dev, Bytes: st.RSSBytes, PeakBytes: st.PeakRSSBytes, Source: "torch worker RSS"}, nil
}

var _ engine.MemoryReporter = (*Model)(nil)
