package rolloutengine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/internal/fsutil"
)

// ErrNotLoaded: no version is loaded at the engine yet (Acquire before the first Load).
var ErrNotLoaded = errors.New("rolloutengine: no policy version loaded at the engine")

// Pusher writes a learner's policy versions to Config.Dir and has the engine load them. A
// version is written at once, by the learner, between two of its updates (Write), so the
// directory holds exactly that version's weights; the engine loads the newest written version
// in the background (Run), so the learner never waits for the engine, and a version written
// while another loads is skipped when a newer one follows it. Rollouts sample the newest
// loaded version (Acquire), never one the engine does not serve yet. Once a newer version is
// loaded, adapters beyond the newest Config.Keep are unloaded when no rollout of this process
// holds them, and the directories of versions no longer loaded are removed.
//
// Engine failures never touch the learner: a failed load is logged with the engine's status
// and message (a *EngineError), the previous version stays the one rollouts sample, and the
// next written version is tried afresh. All methods are safe for concurrent use.
type Pusher struct {
	cfg    Config
	client *Client
	log    *slog.Logger

	opMu sync.Mutex // one engine operation sequence (load, then prune) at a time

	mu      sync.Mutex
	wake    chan struct{} // cap 1: a version was written, or a hold released
	changed chan struct{} // closed (and replaced) when current or failed changes
	written map[int64]bool
	pending int64   // newest written version (-1: none)
	current int64   // newest loaded version (-1: none)
	loaded  []int64 // versions loaded at the engine, ascending (full checkpoints: current only)
	holds   map[int64]int
	failed  map[int64]error // the last load error of a version not loaded
	stats   Stats
}

// Stats count what a Pusher did.
type Stats struct {
	Written, Loaded, LoadFailures, Unloaded, UnloadFailures, Removed int64
	// LastLoad is how long the newest successful load took (engine call only).
	LastLoad time.Duration
}

// New returns the Pusher of cfg (its defaults filled, validated: a *fielderr.Error); logger (nil:
// discard) gets its progress. It starts nothing: call Run.
func New(cfg Config, logger *slog.Logger) (*Pusher, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir, err := absDir(cfg.Dir)
	if err != nil {
		return nil, &fielderr.Error{Kind: ErrConfig, Field: "Dir", Value: cfg.Dir, Reason: err.Error()}
	}
	cfg.Dir = dir
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c, err := NewClient(cfg, logger)
	if err != nil {
		return nil, err
	}
	return &Pusher{cfg: cfg, client: c, log: logger, wake: make(chan struct{}, 1), changed: make(chan struct{}),
		written: map[int64]bool{}, pending: -1, current: -1, holds: map[int64]int{}, failed: map[int64]error{}}, nil
}

// Kind is the engine kind (T2T, VLLM or SGLang).
func (p *Pusher) Kind() string { return p.cfg.Kind }

// Adapters reports whether versions are LoRA adapters (else full checkpoints).
func (p *Pusher) Adapters() bool { return p.cfg.Adapters }

// BaseURL is the engine's OpenAI API root, where rollouts sample.
func (p *Pusher) BaseURL() string { return p.client.BaseURL() }

// APIKey is the key sent to the engine.
func (p *Pusher) APIKey() string { return p.cfg.APIKey }

// ModelPrefix is the prefix of the model name rollouts sample version N as (AdapterPrefix
// followed by N), or "" when every version is Model (full checkpoints).
func (p *Pusher) ModelPrefix() string {
	if p.cfg.Adapters {
		return AdapterPrefix
	}
	return ""
}

// ModelFor is the model name rollouts sample version v under: its adapter's name, or the
// engine's base model (full checkpoints replace its weights).
func (p *Pusher) ModelFor(v int64) string {
	if p.cfg.Adapters {
		return AdapterPrefix + strconv.FormatInt(v, 10)
	}
	return p.cfg.Model
}

// Dir is the directory of version v: Config.Dir/v<v>.
func (p *Pusher) Dir(v int64) string { return filepath.Join(p.cfg.Dir, "v"+strconv.FormatInt(v, 10)) }

// Current is the newest version loaded at the engine (-1: none yet).
func (p *Pusher) Current() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.current
}

// Loaded lists the versions loaded at the engine, oldest first.
func (p *Pusher) Loaded() []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.loaded)
}

// Stats returns the counters.
func (p *Pusher) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Write writes version v into Dir(v) with write (the policy's adapter or checkpoint writer,
// given a temporary sibling directory that is renamed to Dir(v) once write returned and its
// files are synced: the engine never sees half a version) and queues it for Run to load. v
// must be newer than every loaded version.
func (p *Pusher) Write(v int64, write func(dir string) error) error {
	p.mu.Lock()
	cur := p.current
	p.mu.Unlock()
	if v <= cur {
		return fmt.Errorf("rolloutengine: version %d is not newer than the loaded version %d", v, cur)
	}
	t0 := time.Now()
	if err := fsutil.ReplaceDir(p.Dir(v), write); err != nil {
		return fmt.Errorf("rolloutengine: write version %d to %s: %w", v, p.Dir(v), err)
	}
	p.mu.Lock()
	p.written[v] = true
	p.pending = max(p.pending, v)
	p.stats.Written++
	p.mu.Unlock()
	p.log.Info("rollout engine: version written", "version", v, "dir", p.Dir(v), "ms", time.Since(t0).Milliseconds())
	p.poke()
	return nil
}

func (p *Pusher) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Load has the engine load version v, written before: LoadAdapter under ModelFor(v), or
// SGLang's UpdateWeights. On success v becomes the version rollouts sample and older ones are
// pruned (see Pusher); on failure (a *EngineError) nothing changes. Run calls it for the newest
// written version; call it directly for a version rollouts need before they start.
func (p *Pusher) Load(ctx context.Context, v int64) error {
	p.opMu.Lock()
	defer p.opMu.Unlock()
	p.mu.Lock()
	ok, cur := p.written[v], p.current
	p.mu.Unlock()
	switch {
	case v <= cur:
		return nil
	case !ok:
		return fmt.Errorf("rolloutengine: version %d was not written", v)
	}
	t0 := time.Now()
	var err error
	if p.cfg.Adapters {
		err = p.client.LoadAdapter(ctx, p.ModelFor(v), p.Dir(v))
	} else {
		var msg string
		if msg, err = p.client.UpdateWeights(ctx, p.Dir(v)); err == nil && msg != "" {
			p.log.Info("rollout engine: weights updated", "version", v, "message", msg)
		}
	}
	d := time.Since(t0)
	p.mu.Lock()
	if err != nil {
		p.failed[v] = err
		p.stats.LoadFailures++
	} else {
		delete(p.failed, v)
		p.current = v
		if p.cfg.Adapters {
			p.loaded = append(p.loaded, v)
		} else {
			p.loaded = []int64{v}
		}
		p.stats.Loaded++
		p.stats.LastLoad = d
	}
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
	if err != nil {
		p.log.Error("rollout engine: load failed; rollouts keep the loaded version", "version", v, "loaded", cur, "error", err)
		return err
	}
	p.log.Info("rollout engine: version loaded", "engine", p.cfg.Kind, "version", v, "model", p.ModelFor(v), "ms", d.Milliseconds())
	p.prune(ctx)
	return nil
}

// Run loads each newest written version until ctx ends, calling onLoaded (nil: nothing) with
// every version it loaded, in increasing order, and prunes when a hold is released. Run it in
// one goroutine.
func (p *Pusher) Run(ctx context.Context, onLoaded func(v int64)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		}
		p.mu.Lock()
		v, cur, failed := p.pending, p.current, p.failed[p.pending]
		p.mu.Unlock()
		if v <= cur || failed != nil { // nothing new, or it failed already: wait for the next version
			p.opMu.Lock()
			p.prune(ctx)
			p.opMu.Unlock()
			continue
		}
		if err := p.Load(ctx, v); err == nil && onLoaded != nil {
			onLoaded(v)
		}
	}
}

// WaitLoaded waits until version v or a newer one is loaded (nil), v's load failed (its
// error), or ctx ends.
func (p *Pusher) WaitLoaded(ctx context.Context, v int64) error {
	for {
		p.mu.Lock()
		cur, err, ch := p.current, p.failed[v], p.changed
		p.mu.Unlock()
		switch {
		case cur >= v:
			return nil
		case err != nil:
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// Acquire returns the newest loaded version and holds it loaded until release is called
// (once; later calls do nothing): rollouts of this process sample it meanwhile. It fails
// with ErrNotLoaded before the first load.
func (p *Pusher) Acquire() (int64, func(), error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v := p.current
	if v < 0 {
		return 0, nil, ErrNotLoaded
	}
	p.holds[v]++
	var once sync.Once
	return v, func() {
		once.Do(func() {
			p.mu.Lock()
			p.holds[v]--
			last := p.holds[v] == 0
			if last {
				delete(p.holds, v)
			}
			p.mu.Unlock()
			if last && v != p.Current() {
				p.poke() // Run prunes
			}
		})
	}, nil
}

// prune unloads adapters older than the newest Keep that no rollout holds, and removes the
// directories of versions no longer loaded and older than the newest loaded one. The caller
// holds opMu. Failures are logged and retried at the next prune.
func (p *Pusher) prune(ctx context.Context) {
	p.mu.Lock()
	var drop []int64
	if p.cfg.Adapters && len(p.loaded) > p.cfg.Keep {
		for _, v := range p.loaded[:len(p.loaded)-p.cfg.Keep] {
			if p.holds[v] == 0 {
				drop = append(drop, v)
			}
		}
	}
	p.mu.Unlock()
	for _, v := range drop {
		err := p.client.UnloadAdapter(ctx, p.ModelFor(v))
		p.mu.Lock()
		if err != nil {
			p.stats.UnloadFailures++
		} else {
			p.loaded = slices.DeleteFunc(p.loaded, func(x int64) bool { return x == v })
			p.stats.Unloaded++
		}
		p.mu.Unlock()
		if err != nil {
			p.log.Warn("rollout engine: unload failed; retried later", "version", v, "model", p.ModelFor(v), "error", err)
			continue
		}
		p.log.Info("rollout engine: version unloaded", "version", v, "model", p.ModelFor(v))
	}
	p.mu.Lock()
	var rm []int64
	for v := range p.written {
		if v < p.current && !slices.Contains(p.loaded, v) {
			rm = append(rm, v)
		}
	}
	p.mu.Unlock()
	slices.Sort(rm)
	for _, v := range rm {
		if err := os.RemoveAll(p.Dir(v)); err != nil {
			p.log.Warn("rollout engine: directory not removed", "version", v, "dir", p.Dir(v), "error", err)
			continue
		}
		p.mu.Lock()
		delete(p.written, v)
		delete(p.failed, v)
		p.stats.Removed++
		p.mu.Unlock()
	}
}
