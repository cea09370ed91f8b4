package actors

import (
	"sync"
	"time"
)

// Clock tells the coordinator the time, for lease deadlines. Inject a
// ManualClock in tests so that leases expire when the test says so.
type Clock interface{ Now() time.Time }

// WallClock is the real clock.
type WallClock struct{}

// Now returns time.Now().
func (WallClock) Now() time.Time { return time.Now() }

// ManualClock is a Clock that moves only when Advance or Set is called. It is
// safe for concurrent use.
type ManualClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewManualClock returns a clock reading t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{t: t} }

// Now returns the clock's time.
func (m *ManualClock) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.t
}

// Advance moves the clock forward by d.
func (m *ManualClock) Advance(d time.Duration) {
	m.mu.Lock()
	m.t = m.t.Add(d)
	m.mu.Unlock()
}

// Set moves the clock to t.
func (m *ManualClock) Set(t time.Time) {
	m.mu.Lock()
	m.t = t
	m.mu.Unlock()
}
