package torch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/hfmodel"
)

// Group is the torch engine on several ranks: one worker process per device (engine.Spec's
// Devices), joined into one torch.distributed process group (gloo on the CPU, NCCL on GPUs),
// behind one engine.Model. Every rank holds the whole model and its optimizer (replicated
// parameters): a Step gives each rank a contiguous share of the batch's rows, the workers sum
// their gradients and take the same update, so the weights stay equal and the step equals one
// rank's on the whole batch. Calls that change the model (loads, adapters, the train config,
// the optimizer state) go to every rank; LogProbs splits its rows over the ranks; generation,
// logits, the decoder and saves run on rank 0.
//
// A rank that exits fails the call running then (or the next one) with a *RankError naming it,
// and the group kills its other ranks at once: they would otherwise wait in a collective for
// the dead one (the workers' collective timeout, 60 s, is the backstop). Every later call
// returns the same error.
//
// Methods are safe for concurrent use; they serialise on the group (a Step's collectives must
// not interleave with another call's on any rank).
type Group struct {
	mu      sync.Mutex // serialises the engine.Model methods
	infoMu  sync.Mutex // guards the ranks' config and adapters (Config, LoRA); taken after mu
	ranks   []*Model
	devices []string

	failMu  sync.Mutex
	failed  *RankError // the first rank that exited; nil while all run
	closing atomic.Bool
	done    chan struct{} // closed by Close: the watchers return
	watch   sync.WaitGroup
	close   sync.Once
}

// init registers the torch engine: engine.Open and engine.NewRandom open torch models in
// every binary that links this package.
func init() {
	engine.Register(engine.Torch, engine.Opener{Open: Open, Random: OpenRandom})
}

// Open loads the Hugging Face directory dir on the torch engine: one worker (Load), or a Group
// when spec has several Devices.
func Open(ctx context.Context, spec engine.Spec, dir string) (engine.Model, error) {
	if len(spec.Ranks()) > 1 {
		return LoadGroup(ctx, spec, dir)
	}
	return Load(ctx, spec, dir)
}

// OpenRandom is Open with random weights (NewRandom, NewRandomGroup), for benchmarks.
func OpenRandom(ctx context.Context, spec engine.Spec, cfg hfmodel.Config, seed uint64) (engine.Model, error) {
	if len(spec.Ranks()) > 1 {
		return NewRandomGroup(ctx, spec, cfg, seed)
	}
	return NewRandom(ctx, spec, cfg, seed)
}

// LoadGroup starts a rank per device of spec.Devices and loads dir on every rank.
func LoadGroup(ctx context.Context, spec engine.Spec, dir string) (*Group, error) {
	cfg, abs, err := readModelDir(dir)
	if err != nil {
		return nil, err
	}
	g, err := startGroup(ctx, spec, cfg)
	if err != nil {
		return nil, err
	}
	err = g.each(func(_ int, m *Model) error { return m.loadDir(abs) })
	if err != nil {
		_ = g.Close()
		return nil, fmt.Errorf("torch: load %s: %w", dir, err)
	}
	return g, nil
}

// NewRandomGroup starts a rank per device of spec.Devices, each building the same random model
// of cfg from seed (the worker's draw, as NewRandom).
func NewRandomGroup(ctx context.Context, spec engine.Spec, cfg hfmodel.Config, seed uint64) (*Group, error) {
	fields, err := configFields(cfg)
	if err != nil {
		return nil, err
	}
	g, err := startGroup(ctx, spec, cfg)
	if err != nil {
		return nil, err
	}
	err = g.each(func(_ int, m *Model) error {
		return m.initRandom(fields, seed)
	})
	if err != nil {
		_ = g.Close()
		return nil, fmt.Errorf("torch: init: %w", err)
	}
	return g, nil
}

// startGroup starts the ranks' workers at once (each waits in torch.distributed's rendezvous
// for the others before its hello) and watches them.
func startGroup(ctx context.Context, spec engine.Spec, cfg hfmodel.Config) (*Group, error) {
	spec.Kind = engine.Torch
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	py, err := FindPython(ctx, spec.Python)
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("torch: a port for the ranks' rendezvous: %w", err)
	}
	devs := spec.Ranks()
	threads := spec.Threads
	if threads == 0 && devs[0] == "cpu" { // the ranks share the cores
		threads = max(1, runtime.NumCPU()/len(devs))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g := &Group{ranks: make([]*Model, len(devs)), devices: devs, done: make(chan struct{})}
	errs := make([]error, len(devs))
	var wg sync.WaitGroup
	for i, dev := range devs {
		wg.Go(func() {
			opt := WorkerOptions{Python: py, Device: dev, Threads: threads, Log: rankLog(spec.Log, i),
				Ranks: &RankOptions{Rank: i, WorldSize: len(devs), MasterPort: port}}
			wk, err := StartWorker(ctx, opt)
			if err != nil {
				errs[i] = fmt.Errorf("torch rank %d (%s): %w", i, dev, err)
				cancel() // the other ranks would wait for this one in the rendezvous
				return
			}
			g.ranks[i] = &Model{wk: wk, cfg: cfg, device: dev, autocast: spec.Autocast, actCkpt: spec.ActivationCheckpointing}
		})
	}
	wg.Wait()
	if err := startErr(errs); err != nil {
		for _, m := range g.ranks {
			if m != nil {
				m.wk.kill()
				_ = m.wk.Close()
			}
		}
		return nil, err
	}
	for i, m := range g.ranks {
		g.watch.Go(func() {
			select {
			case <-m.wk.Exited():
				g.fail(i, nil)
			case <-g.done:
			}
		})
	}
	return g, nil
}

// startErr is the error of the rank that failed first: not one cancelled because another had.
func startErr(errs []error) error {
	var first error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if !errors.Is(err, context.Canceled) {
			return err
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// freePort asks the kernel for a free TCP port on 127.0.0.1 (rank 0 listens on it next; another
// process taking it in between fails the rendezvous, and the start).
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// rankLog prefixes a rank's stderr lines with its rank.
func rankLog(log func(string), rank int) func(string) {
	if log == nil {
		return nil
	}
	return func(line string) { log(fmt.Sprintf("rank %d: %s", rank, line)) }
}

// fail records that rank i exited (err: the call's *DiedError, or nil from a watcher) unless
// the group is closing, and kills the other ranks. The first rank recorded is the one named.
func (g *Group) fail(i int, err error) {
	if g.closing.Load() {
		return
	}
	g.failMu.Lock()
	defer g.failMu.Unlock()
	if g.failed != nil {
		return
	}
	wk := g.ranks[i].wk
	var de *DiedError
	if !errors.As(err, &de) {
		errors.As(wk.died(""), &de)
	}
	g.failed = &RankError{Rank: i, PID: wk.PID(), Device: g.devices[i], Died: de}
	for j, m := range g.ranks {
		if j != i {
			m.wk.kill()
		}
	}
}

// failure is the group's *RankError once a rank has exited (as an error; nil before).
func (g *Group) failure() error {
	g.failMu.Lock()
	defer g.failMu.Unlock()
	if g.failed == nil {
		return nil
	}
	return g.failed
}

// each runs fn on every rank at once and waits for all. A rank that exits fails the group;
// otherwise the error is the first rank's whose is not a follower's ("another rank ...": the
// ranks that agreed to fail because one refused).
func (g *Group) each(fn func(i int, m *Model) error) error {
	if err := g.failure(); err != nil {
		return err
	}
	errs := make([]error, len(g.ranks))
	var wg sync.WaitGroup
	for i, m := range g.ranks {
		wg.Go(func() {
			errs[i] = fn(i, m)
			if errors.Is(errs[i], ErrWorkerDied) {
				g.fail(i, errs[i])
			}
		})
	}
	wg.Wait()
	if err := g.failure(); err != nil {
		return err
	}
	var follower error
	for _, err := range errs {
		var re *RemoteError
		switch {
		case err == nil:
		case errors.As(err, &re) && strings.HasPrefix(re.Message, "another rank"):
			follower = cmpOr(follower, err)
		default:
			return err
		}
	}
	return follower
}

// one runs fn on rank 0.
func (g *Group) one(fn func(m *Model) error) error {
	if err := g.failure(); err != nil {
		return err
	}
	err := fn(g.ranks[0])
	if errors.Is(err, ErrWorkerDied) {
		g.fail(0, err)
	}
	if ferr := g.failure(); ferr != nil {
		return ferr
	}
	return err
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// Workers returns the ranks' worker processes, rank 0 first.
func (g *Group) Workers() []*Worker {
	out := make([]*Worker, len(g.ranks))
	for i, m := range g.ranks {
		out[i] = m.wk
	}
	return out
}

// Close implements engine.Model: it stops every rank. Close is idempotent.
func (g *Group) Close() error {
	g.close.Do(func() {
		g.closing.Store(true)
		close(g.done)
		g.watch.Wait()
		var wg sync.WaitGroup
		for _, m := range g.ranks {
			wg.Go(func() { _ = m.wk.Close() })
		}
		wg.Wait()
	})
	return nil
}
