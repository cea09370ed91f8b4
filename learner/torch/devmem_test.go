package torch

import (
	"context"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/learner/engine"
)

// TestDeviceMemory: the worker's device memory as the live page reads it: on CUDA the memory
// torch allocated (the model's weights at least) within its peak, elsewhere the worker's RSS.
func TestDeviceMemory(t *testing.T) {
	requireTorch(t)
	const seed = 47
	t.Logf("seed %d", seed)
	tm, err := Load(context.Background(), engine.Spec{Kind: engine.Torch}, checkpoint(t, tinyConfig(t), seed))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tm.Close() })
	dm, err := tm.DeviceMemory()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", dm)
	want := "torch worker RSS"
	if strings.HasPrefix(tm.Device(), "cuda") {
		want = "CUDA memory allocated by the torch worker"
	}
	if dm.Device != tm.Device() || dm.Source != want || dm.Bytes <= 0 || dm.PeakBytes < dm.Bytes {
		t.Fatalf("device memory %+v on %s, want %q with 0 < bytes <= peak", dm, tm.Device(), want)
	}
}
