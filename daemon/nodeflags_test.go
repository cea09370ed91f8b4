package daemon

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/internal/fielderr"
)

// TestCheckRanges: the defaults pass; each field out of range is a field
// error worded as t2t node's flag.
func TestCheckRanges(t *testing.T) {
	if c := DefaultConfig(); c.CheckRanges(time.Second) != nil {
		t.Fatalf("defaults: %v", c.CheckRanges(time.Second))
	}
	for _, tc := range []struct {
		edit  func(*Config)
		join  time.Duration
		usage string
	}{
		{func(c *Config) { c.Capacity = 0 }, time.Second, "--capacity 0: want 1..256"},
		{func(c *Config) { c.MaxInFlight = 65 }, time.Second, "--max-in-flight 65: want 1..64"},
		{func(*Config) {}, 0, "--join-timeout and --lease must be > 0"},
		{func(c *Config) { c.Lease = 0 }, time.Second, "--join-timeout and --lease must be > 0"},
		{func(c *Config) { c.StalenessK = 0 }, time.Second, "--staleness 0: want >= 1"},
		{func(c *Config) { c.MaxLag = 5 }, time.Second, "--max-lag 5: want 1..--staleness (4), or -1 for no pacing"},
		{func(c *Config) { c.KeepLateK = -1 }, time.Second, "--keep-late -1: want >= 0"},
		{func(c *Config) { c.Chunk = -1 }, time.Second, "--chunk -1: want >= 0"},
	} {
		c := DefaultConfig()
		c.Capacity, c.StalenessK = 8, 4
		tc.edit(&c)
		var fe *fielderr.Error
		if err := c.CheckRanges(tc.join); !errors.As(err, &fe) || fe.Usage() != tc.usage {
			t.Errorf("%v, want %q", err, tc.usage)
		}
	}
}

// TestListenAddr: a loopback address passes as it is; an exposed one
// without TLS is refused, or passes with a warning when insecure; a bad
// one names --listen.
func TestListenAddr(t *testing.T) {
	warned := 0
	warn := func() { warned++ }
	for _, l := range []string{"127.0.0.1:7000", "localhost:7000"} {
		if got, err := ListenAddr(l, "", false, false, warn); err != nil || got != l {
			t.Errorf("ListenAddr(%q) = %q, %v", l, got, err)
		}
	}
	if got, err := ListenAddr("10.1.2.3:7000", "", true, false, warn); err != nil || got != "10.1.2.3:7000" {
		t.Errorf("with TLS: %q, %v", got, err)
	}
	var fe *fielderr.Error
	if _, err := ListenAddr("10.1.2.3:7000", "", false, false, warn); !errors.As(err, &fe) ||
		!strings.HasPrefix(fe.Usage(), "--listen 10.1.2.3:7000: other hosts can reach this address") {
		t.Errorf("exposed without TLS: %v", err)
	}
	if warned != 0 {
		t.Fatalf("warned %d times before --insecure-listen", warned)
	}
	if got, err := ListenAddr("10.1.2.3:7000", "", false, true, warn); err != nil || got != "10.1.2.3:7000" || warned != 1 {
		t.Errorf("insecure: %q, %v, warned %d times", got, err, warned)
	}
	if got, err := ListenAddr("0.0.0.0:0", "10.9.8.7", false, true, warn); err != nil || got != "10.9.8.7:0" {
		t.Errorf("wildcard with --advertise: %q, %v", got, err)
	}
	if _, err := ListenAddr("nope", "", false, false, warn); !errors.As(err, &fe) || !strings.HasPrefix(fe.Usage(), `--listen "nope": `) {
		t.Errorf("bad address: %v", err)
	}
}
