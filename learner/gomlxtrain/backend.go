package gomlxtrain

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/t2t-lab/t2t/learner"
)

// Backend device strings accepted by NewBackend.
const (
	// DeviceCPU selects GoMLX's pure-Go backend ("go"), which needs no cgo and no plugin.
	DeviceCPU = "cpu"
	// DeviceXLAPrefix prefixes an absolute path to a PJRT plugin, e.g.
	// "xla:/opt/jax_plugins/xla_cuda13/xla_cuda_plugin.so".
	DeviceXLAPrefix = "xla:"
)

// OptNoPreallocate, after an XLA plugin path ("xla:/abs/plugin.so,nopreallocate"), creates the
// PJRT client with preallocate=false: the CUDA plugin then grows its memory pool as buffers are
// needed instead of taking 75% of the GPU's memory at start, so the memory nvidia-smi shows is
// about the peak the program needed (benchmarks); allocation is a little slower.
const OptNoPreallocate = "nopreallocate"

// goBackendConfig configures the pure-Go backend. parallelism=-1 is GoMLX's "unlimited": every
// parallel piece of an op (a DotGeneral's batch examples and output blocks, a long unary op's
// chunks) gets its own goroutine, so the Go scheduler spreads the op over all GOMAXPROCS cores
// (a 4-layer GRPO step ran at 160–167 % CPU on 2 cores, 1.65× faster than with GOMAXPROCS=1; a
// bounded pool, "parallelism=2", was no faster). A small DotGeneral (output ≤ 16 blocks of
// 32×32 per batch example) without batch axes runs on one goroutine: qwen3 splits its skinny
// decode products into batches for that reason. ops_sequential runs the ops of a graph one
// after another (each op still splits its work). v0.26.0's parallel op scheduler runs each op on
// a worker of the bounded pool, and an op there waits for free workers for its own pieces: once
// every worker holds a waiting op it deadlocks (GOMLX.md, pitfall 3; with "parallelism=2" and
// parallel ops, TestGoBackendManyReadyMatmuls hangs). It also decides buffer reuse from
// counters it reads without a lock, which the race detector reports.
const goBackendConfig = "parallelism=-1,ops_sequential"

// NewBackend returns a compute backend for device and registers the package's fast matmul
// gradient (RegisterFastMatMulGradient) so that every model built on it trains at full speed.
//
//   - "" or "cpu": the pure-Go backend with unlimited op parallelism.
//   - "xla:/abs/path/plugin.so": the XLA backend loading that PJRT plugin in place; automatic
//     plugin installation is disabled. Only in binaries built with cgo; otherwise the error
//     wraps ErrNoXLA. Comma-separated options may follow the path: OptNoPreallocate, and
//     GoMLX's own ("tf32": float32 matmuls in TF32 on CUDA; "shared_buffers").
//
// Any other string returns an error wrapping ErrBadDevice. For a CUDA plugin the process
// should also set GOPJRT_CUDA_CHECKS=0 and XLA_FLAGS=--xla_gpu_cuda_data_dir=<dir with
// bin/ptxas> before the call (go-xla v0.1.4 otherwise points that flag at a fixed home
// directory); that is the caller's job (cmd/), not this library's.
func NewBackend(device string) (backends.Backend, error) {
	RegisterFastMatMulGradient()
	switch {
	case device == "" || device == DeviceCPU:
		b, err := newSimpleGo()
		if err != nil {
			return nil, fmt.Errorf("learner: pure-Go backend: %w", err)
		}
		return b, nil
	case strings.HasPrefix(device, DeviceXLAPrefix):
		plugin := strings.TrimPrefix(device, DeviceXLAPrefix)
		if !filepath.IsAbs(plugin) {
			return nil, fmt.Errorf("learner: device %q: %w: the PJRT plugin path must be absolute", device, learner.ErrBadDevice)
		}
		return newXLABackend(plugin)
	default:
		return nil, fmt.Errorf("learner: device %q: %w: want \"cpu\" or \"xla:/abs/path/plugin.so\"", device, learner.ErrBadDevice)
	}
}

// simpleGoMu serializes newSimpleGo's swap of os.Stdout.
var simpleGoMu sync.Mutex

// newSimpleGo builds the pure-Go backend. GoMLX v0.26.0 prints "SimpleGo backend: parallelism
// set to -1" on standard output when it applies that option, which corrupts the output of
// commands that print JSON or tables there (t2t bench --json); the line goes nowhere instead,
// and anything else written to os.Stdout meanwhile is passed on.
func newSimpleGo() (backends.Backend, error) {
	simpleGoMu.Lock()
	defer simpleGoMu.Unlock()
	r, w, err := os.Pipe()
	if err != nil {
		return simplego.New(goBackendConfig)
	}
	stdout := os.Stdout
	os.Stdout = w
	b, err := simplego.New(goBackendConfig)
	os.Stdout = stdout
	w.Close()
	out, _ := io.ReadAll(r)
	r.Close()
	for _, line := range strings.SplitAfter(string(out), "\n") {
		if line != "" && !strings.HasPrefix(line, "SimpleGo backend: parallelism set to") {
			io.WriteString(stdout, line)
		}
	}
	return b, err
}

// IsXLA reports whether b is the XLA backend.
func IsXLA(b backends.Backend) bool { return b != nil && b.String() == "xla" }
