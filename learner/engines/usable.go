package engines

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/t2t-lab/t2t/learner/torch"
)

// WriteUsable writes which engines and devices this binary can use here,
// as `t2t version` prints them: gomlx (always), torch (usable when
// torch.FindPython finds a Python with torch within ctx, else why not), xla
// (built in with cgo) and the devices (the CPU cores, and the NVIDIA GPU
// device files in /dev).
func WriteUsable(ctx context.Context, w io.Writer) error {
	var b strings.Builder
	fmt.Fprintln(&b, "engines:")
	fmt.Fprintln(&b, "  gomlx   usable (pure Go, CPU)")
	if py, err := torch.FindPython(ctx, ""); err != nil {
		fmt.Fprintf(&b, "  torch   not usable: %v\n", err)
	} else {
		fmt.Fprintf(&b, "  torch   usable (%s)\n", py)
	}
	if xlaBuilt {
		fmt.Fprintln(&b, "  xla     built in (cgo); needs a PJRT plugin (--device xla:PLUGIN)")
	} else {
		fmt.Fprintln(&b, "  xla     not built in (this binary was built without cgo)")
	}
	fmt.Fprintf(&b, "devices: cpu (%d cores)", runtime.NumCPU())
	if gpus, _ := filepath.Glob("/dev/nvidia[0-9]*"); len(gpus) > 0 {
		fmt.Fprintf(&b, ", %d NVIDIA GPU device(s)", len(gpus))
	}
	fmt.Fprintln(&b)
	_, err := io.WriteString(w, b.String())
	return err
}
