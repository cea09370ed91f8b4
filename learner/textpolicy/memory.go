package textpolicy

import (
	"github.com/t2t-lab/t2t/internal/sysmem"
	"github.com/t2t-lab/t2t/learner/engine"
)

// DeviceMemory is the memory of the device lm runs on: the engine's own report where it has
// one (engine.MemoryReporter: the torch worker), otherwise this process's RSS and peak RSS (a
// GoMLX model lives in this process; on an accelerator its device memory is not known).
func (lm *LM) DeviceMemory() (engine.DeviceMemory, error) {
	if r, ok := lm.Model.(engine.MemoryReporter); ok {
		return r.DeviceMemory()
	}
	return engine.DeviceMemory{Device: lm.Model.Device(), Bytes: sysmem.RSS(), PeakBytes: sysmem.PeakRSS(), Source: "process RSS"}, nil
}

// DeviceMemory implements train.DeviceReporter: the LM's device memory.
func (p *Policy) DeviceMemory() (engine.DeviceMemory, error) { return p.lm.DeviceMemory() }
