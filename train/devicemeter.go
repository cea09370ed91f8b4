package train

import (
	"fmt"
	"sync"
	"time"

	"github.com/t2t-lab/t2t/learner/engine"
)

// DeviceReporter is a policy that reports the memory of the device it runs on (an LLM
// policy: textpolicy.Policy, from its torch worker or this process's RSS).
type DeviceReporter interface {
	DeviceMemory() (engine.DeviceMemory, error)
}

// DeviceStatus is an LLM policy's device memory as a DeviceMeter last read it.
type DeviceStatus struct {
	// Device names where the policy runs ("cuda:0 (torch 2.11, …)").
	Device string `json:"device,omitempty"`
	// Bytes is the memory in use when read, PeakBytes the most so far (0: not known).
	Bytes     int64 `json:"device_memory_bytes"`
	PeakBytes int64 `json:"peak_device_memory_bytes,omitempty"`
	// Source says what Bytes measures (engine.DeviceMemory.Source).
	Source string `json:"memory_source,omitempty"`
	// ReadUnixMs is when the reading was asked for; 0: none yet (the first is on its way).
	ReadUnixMs int64 `json:"read_unix_ms,omitempty"`
	// Error is the last reading's failure.
	Error string `json:"error,omitempty"`
}

// String is "1.23 GiB (peak 1.50 GiB) CUDA memory allocated by the torch worker on cuda:0 (…)".
func (d *DeviceStatus) String() string {
	switch {
	case d.Error != "":
		return "not known: " + d.Error
	case d.ReadUnixMs == 0:
		return "not read yet"
	}
	s := gib(d.Bytes)
	if d.PeakBytes > 0 {
		s += " (peak " + gib(d.PeakBytes) + ")"
	}
	return fmt.Sprintf("%s %s on %s", s, d.Source, d.Device)
}

func gib(b int64) string { return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30)) }

// DeviceMemoryEvery is how often a DeviceMeter reads the device at most: a torch worker
// answers between its steps, so a reading is not free.
const DeviceMemoryEvery = 5 * time.Second

// DeviceMeter reads an LLM policy's device memory for the live page: at most every
// DeviceMemoryEvery and in the background (a torch worker's answer can wait for a training
// step), so that a page request never waits for the device; Status returns the last
// reading. Safe for concurrent use.
type DeviceMeter struct {
	read  func() (engine.DeviceMemory, error)
	every time.Duration

	mu      sync.Mutex
	last    DeviceStatus
	asked   time.Time // when the last reading was started (zero: never)
	reading bool
	wg      sync.WaitGroup
}

// NewDeviceMeter returns the meter of pol's device; nil when pol reports none (not an LLM
// policy).
func NewDeviceMeter(pol Policy) *DeviceMeter {
	dr, ok := pol.(DeviceReporter)
	if !ok {
		return nil
	}
	return &DeviceMeter{read: dr.DeviceMemory, every: DeviceMemoryEvery}
}

// Status returns the last reading, and starts a new one in the background when none runs
// and the last was asked for DeviceMemoryEvery or more before now.
func (m *DeviceMeter) Status(now time.Time) *DeviceStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.reading && (m.asked.IsZero() || now.Sub(m.asked) >= m.every) {
		m.reading, m.asked = true, now
		m.wg.Add(1)
		go m.refresh(now)
	}
	s := m.last
	return &s
}

func (m *DeviceMeter) refresh(at time.Time) {
	defer m.wg.Done()
	dm, err := m.read()
	s := DeviceStatus{Device: dm.Device, Bytes: dm.Bytes, PeakBytes: dm.PeakBytes, Source: dm.Source, ReadUnixMs: at.UnixMilli()}
	if err != nil {
		s = DeviceStatus{Device: m.last.Device, ReadUnixMs: at.UnixMilli(), Error: err.Error()}
	}
	m.mu.Lock()
	m.last, m.reading = s, false
	m.mu.Unlock()
}

// Wait returns once no reading runs (tests, and a page that stops).
func (m *DeviceMeter) Wait() { m.wg.Wait() }
