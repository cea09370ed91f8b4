package engine

// DeviceMemory is a model's memory on the device it runs on, as its engine reports it.
type DeviceMemory struct {
	// Device names where the model runs (Model.Device).
	Device string
	// Bytes is the memory in use now and PeakBytes the most since the engine started or last
	// reset its peak (0: not known).
	Bytes, PeakBytes int64
	// Source says what Bytes measures: "CUDA memory allocated by the torch worker", "torch
	// worker RSS", "process RSS".
	Source string
}

// MemoryReporter is a Model that reports its device memory (the torch worker). The call may
// wait for the model's current step: callers poll it off their hot path.
type MemoryReporter interface {
	DeviceMemory() (DeviceMemory, error)
}
