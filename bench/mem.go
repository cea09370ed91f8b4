package bench

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/t2t-lab/t2t/internal/sysmem"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/gomlxtrain"
	"github.com/t2t-lab/t2t/learner/qwen3"
	"github.com/t2t-lab/t2t/learner/torch"
)

// MemoryReport is the memory seen during a benchmark.
type MemoryReport struct {
	// HostPeakRSS is the process's peak resident set (VmHWM of /proc/self/status), bytes; 0 where
	// that file does not exist.
	HostPeakRSS int64 `json:"host_peak_rss_bytes"`
	// GoSys is the memory the Go runtime obtained from the OS (runtime.MemStats.Sys, which does
	// not shrink: about the Go heap's peak); on the CPU backend the tensors live there.
	GoSys int64 `json:"go_sys_bytes"`
	// GoHeapPeak is the largest HeapInuse sampled after each timed call.
	GoHeapPeak int64 `json:"go_heap_peak_bytes"`
	// Device says what is known about accelerator memory.
	Device string `json:"device_memory"`
	// WorkerPeakRSS and CUDAMaxAllocated are the torch worker's (0 on the gomlx engine).
	WorkerPeakRSS    int64 `json:"worker_peak_rss_bytes,omitempty"`
	CUDAMaxAllocated int64 `json:"cuda_max_allocated_bytes,omitempty"`
}

// memSampler tracks the Go heap's high-water mark between calls.
type memSampler struct{ heapPeak uint64 }

func (s *memSampler) sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.heapPeak = max(s.heapPeak, ms.HeapInuse)
}

func (s *memSampler) report(m engine.Model) MemoryReport {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r := MemoryReport{HostPeakRSS: PeakRSS(), GoSys: int64(ms.Sys), GoHeapPeak: int64(max(s.heapPeak, ms.HeapInuse))}
	switch m := m.(type) {
	case interface {
		Stats() (torch.Stats, error)
		Device() string
	}: // a torch worker, or rank 0 of a torch.Group
		st, err := m.Stats()
		if err != nil {
			r.Device = "worker stats failed: " + err.Error()
			break
		}
		r.WorkerPeakRSS, r.CUDAMaxAllocated = st.PeakRSSBytes, st.CUDAMaxAllocated
		if strings.Contains(m.Device(), "cuda") {
			r.Device = fmt.Sprintf("torch.cuda.max_memory_allocated %.3f GiB", float64(st.CUDAMaxAllocated)/(1<<30))
		} else {
			r.Device = fmt.Sprintf("none (torch on the CPU: the worker's peak RSS is %.3f GiB)", float64(st.PeakRSSBytes)/(1<<30))
		}
	case *qwen3.EngineModel:
		if gomlxtrain.IsXLA(m.Qwen3().Backend()) {
			r.Device = "not exposed: go-xla v0.1.4 wraps no PJRT_Device_MemoryStats; sample nvidia-smi --query-gpu=memory.used (with ,nopreallocate the pool grows to about the peak)"
		} else {
			r.Device = "none (CPU backend: tensors are in the Go heap)"
		}
	}
	return r
}

// PeakRSS is this process's peak resident set (learner.PeakRSS).
func PeakRSS() int64 { return sysmem.PeakRSS() }

// MemAvailable is the memory the machine can give a new process (learner.MemAvailable).
func MemAvailable() int64 { return sysmem.MemAvailable() }
