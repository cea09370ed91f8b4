package store

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

var storeSeed = flag.Uint64("storeseed", 0, "seed for the randomised store tests (0: pick one and log it)")

// storeRNG returns a seeded generator and logs the seed so a failure can be
// replayed with -storeseed.
func storeRNG(t testing.TB) (*rand.Rand, uint64) {
	t.Helper()
	seed := *storeSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -storeseed=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0x5703e)), seed
}

// storeLogs is a slog handler that forwards records to t.Log and counts
// retry warnings, signalling the first one on retried.
type storeLogs struct {
	t       testing.TB
	mu      sync.Mutex
	records []slog.Record
	retried chan struct{}
	once    sync.Once
}

func newStoreLogs(t testing.TB) *storeLogs {
	return &storeLogs{t: t, retried: make(chan struct{})}
}

func (h *storeLogs) Enabled(context.Context, slog.Level) bool { return true }
func (h *storeLogs) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *storeLogs) WithGroup(string) slog.Handler            { return h }
func (h *storeLogs) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.records = append(h.records, r.Clone())
	h.mu.Unlock()
	if r.Level == slog.LevelWarn {
		h.once.Do(func() { close(h.retried) })
	}
	var b strings.Builder
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	h.t.Logf("log %s %q%s", r.Level, r.Message, b.String())
	return nil
}

func storeSlog(h *storeLogs) *slog.Logger { return slog.New(h) }

func (h *storeLogs) warnings() []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []slog.Record
	for _, r := range h.records {
		if r.Level == slog.LevelWarn {
			out = append(out, r)
		}
	}
	return out
}

// storeKeys lists every key under the store's prefix.
func storeKeys(t testing.TB, s *Store) []string {
	t.Helper()
	keys, err := s.rdb.Keys(context.Background(), s.opt.Prefix+":*").Result()
	if err != nil {
		t.Fatalf("KEYS: %v", err)
	}
	return keys
}

// storeRedis is a real redis-server process on 127.0.0.1 that a test can
// kill (SIGKILL) and restart on the same port and data directory.
type storeRedis struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

// storeStartRedis starts redis-server with AOF (appendfsync always) in a
// temp dir. Without redis-server on PATH it skips the test, unless
// T2T_REQUIRE_REDIS=1, when it fails it.
func storeStartRedis(t testing.TB) *storeRedis {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("T2T_REQUIRE_REDIS") == "1" {
			t.Fatalf("redis-server not on PATH and T2T_REQUIRE_REDIS=1: %v", err)
		}
		t.Skip("redis-server not on PATH: skipping the real-Redis tests (install redis-server, or set T2T_REQUIRE_REDIS=1 to make this a failure)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pick a free port: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	r := &storeRedis{t: t, bin: bin, dir: t.TempDir(), port: port}
	t.Cleanup(func() {
		r.kill()
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(r.dir, "redis.log")); err == nil {
				t.Logf("redis.log:\n%s", b)
			}
		}
	})
	r.start()
	return r
}

func (r *storeRedis) url() string { return "redis://127.0.0.1:" + strconv.Itoa(r.port) + "/0" }

// start launches the server and waits until it answers PING (polling with
// a deadline: this is a real network edge).
func (r *storeRedis) start() {
	r.t.Helper()
	r.cmd = exec.Command(r.bin,
		"--bind", "127.0.0.1", "--port", strconv.Itoa(r.port),
		"--save", "", "--appendonly", "yes", "--appendfsync", "always",
		"--dir", r.dir, "--logfile", filepath.Join(r.dir, "redis.log"))
	if err := r.cmd.Start(); err != nil {
		r.t.Fatalf("start redis-server: %v", err)
	}
	r.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(r.cmd, r.done)
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(r.port), MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("redis-server on port %d not answering PING after 20s: %v", r.port, err)
		}
		select {
		case <-r.done:
			b, _ := os.ReadFile(filepath.Join(r.dir, "redis.log"))
			r.t.Fatalf("redis-server exited during start: %s\n%s", r.cmd.ProcessState, b)
		case <-tick.C:
		}
	}
}

// kill sends SIGKILL and waits for the process to exit.
func (r *storeRedis) kill() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.done
	r.cmd = nil
}

// storeRandUnit builds a random but valid unit result.
func storeRandUnit(rng *rand.Rand, run string, stage int, split, id string) UnitResult {
	u := UnitResult{RunID: run, Stage: stage, Split: split, UnitID: id,
		Buckets: map[Key]Counts{}, PolicyVersion: rng.Int64N(5), ConfigVersion: "cfg" + strconv.Itoa(stage)}
	cats := CategoryNames()
	for range 1 + rng.IntN(4) {
		k := Key{Size: 3 + rng.IntN(8), Agents: 2 + rng.IntN(4)}
		ep := rng.Int64N(40)
		c := Counts{Episodes: ep}
		c.Valid = rng.Int64N(ep + 1)
		c.Optimal = rng.Int64N(c.Valid + 1)
		if bad := ep - c.Valid; bad > 0 {
			c.Categories = map[string]int64{}
			for _, name := range cats {
				if rng.IntN(2) == 0 {
					c.Categories[name] = rng.Int64N(bad + 1)
				}
			}
		}
		c.RewardSum = (rng.Float64()*2 - 1) * float64(ep)
		u.Buckets[k] = c
	}
	for range rng.IntN(3) {
		u.Examples = append(u.Examples, Example{
			InstanceID: fmt.Sprintf("inst-%d", rng.IntN(1000)),
			Size:       3 + rng.IntN(8), Agents: 2 + rng.IntN(4),
			Category: cats[rng.IntN(len(cats))],
			Detail:   "agent 1 steps into a hole at t=3",
			Answer:   "Agent 0: RIGHT DOWN\nAgent 1: UP",
		})
	}
	return u
}

// storeSum is the independent model of the aggregates: integer sums, with
// reward sums counted in units of 1e-9 as documented.
type storeSum struct {
	ep, valid, opt, rewardNano int64
	cats                       map[string]int64
}

func storeAdd(m map[Key]*storeSum, u UnitResult) {
	for k, c := range u.Buckets {
		a := m[k]
		if a == nil {
			a = &storeSum{cats: map[string]int64{}}
			m[k] = a
		}
		a.ep += c.Episodes
		a.valid += c.Valid
		a.opt += c.Optimal
		a.rewardNano += int64(math.Round(c.RewardSum * 1e9))
		for n, v := range c.Categories {
			a.cats[n] += v
		}
	}
}

func storeExpected(m map[Key]*storeSum) map[Key]Counts {
	out := map[Key]Counts{}
	for k, a := range m {
		c := Counts{Episodes: a.ep, Valid: a.valid, Optimal: a.opt, RewardSum: float64(a.rewardNano) / 1e9}
		for n, v := range a.cats {
			if v != 0 {
				if c.Categories == nil {
					c.Categories = map[string]int64{}
				}
				c.Categories[n] = v
			}
		}
		if c.Episodes != 0 || c.RewardSum != 0 || c.Categories != nil {
			out[k] = c
		}
	}
	return out
}
