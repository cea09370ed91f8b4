package env

import (
	"runtime"
	"sync"
)

// batchChunk is how many items ParallelRange hands a worker at a time.
const batchChunk = 16

// ParallelRange runs fn over [0,n) split into chunks on workers goroutines
// (0 or less: one per CPU). fn fills its own part of the output. progress,
// when not nil, is called after each chunk with the number of items done,
// never concurrently. After the first error no new chunk starts, and that
// error is returned.
func ParallelRange(n, workers int, progress func(done int), fn func(lo, hi int) error) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var (
		mu         sync.Mutex
		next, done int
		err        error
		wg         sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				if err != nil || next >= n {
					mu.Unlock()
					return
				}
				lo := next
				hi := min(n, lo+batchChunk)
				next = hi
				mu.Unlock()
				e := fn(lo, hi)
				mu.Lock()
				if e != nil && err == nil {
					err = e
				}
				done += hi - lo
				if progress != nil {
					progress(done)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return err
}

// GenerateAll generates all cfg.Instances instances of cfg with seed, in
// parallel; the result is the same as Generate(cfg, seed, 0, cfg.Instances).
func GenerateAll(cfg Config, seed uint64, workers int, progress func(done int)) ([]*Instance, error) {
	ins := make([]*Instance, cfg.Instances)
	err := ParallelRange(cfg.Instances, workers, progress, func(lo, hi int) error {
		part, err := Generate(cfg, seed, lo, hi)
		copy(ins[lo:hi], part)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ins, nil
}

// SuiteSized returns the named suite (SuiteEval, SuiteVal or SuiteQuick)
// with perSize instances per size and subset; perSize 0 keeps the suite's
// default.
func SuiteSized(name string, seed uint64, perSize int) (SuiteSpec, error) {
	if perSize == 0 {
		return SuiteByName(name, seed)
	}
	switch name {
	case SuiteEval:
		return PaperEvalSpec(seed, perSize), nil
	case SuiteVal:
		return ValidationSpec(seed, perSize), nil
	case SuiteQuick:
		return QuickSpec(seed, perSize), nil
	}
	return SuiteByName(name, seed)
}

// GenerateSuiteAll generates every instance of spec in parallel.
func GenerateSuiteAll(spec *SuiteSpec, workers int, progress func(done int)) ([]*Instance, error) {
	ins := make([]*Instance, spec.Len())
	err := ParallelRange(len(ins), workers, progress, func(lo, hi int) error {
		part, err := GenerateSuite(spec, lo, hi)
		copy(ins[lo:hi], part)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ins, nil
}

// BuildSuite generates spec in parallel and encodes it (JSONL and its
// manifest, as EncodeSuite).
func BuildSuite(spec *SuiteSpec, workers int, progress func(done int)) ([]byte, SuiteManifest, error) {
	ins, err := GenerateSuiteAll(spec, workers, progress)
	if err != nil {
		return nil, SuiteManifest{}, err
	}
	return EncodeSuite(*spec, ins)
}
