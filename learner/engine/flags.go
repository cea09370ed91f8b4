package engine

import (
	"flag"
	"sync"
)

// PythonEnv names the environment variable that chooses the torch worker's
// interpreter.
const PythonEnv = "T2T_PYTHON"

// Flags are the compute-engine settings of a command line (--engine,
// --python, --autocast, --threads); the device is the command's own flag.
type Flags struct {
	Kind, Python, Autocast  string
	Threads                 int
	ActivationCheckpointing bool
	// Devices is the --devices list (ParseDevices), of the commands that train.
	Devices string
}

// Register binds f to fs, with the defaults of a zero Spec.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Kind, "engine", GoMLX, "LLM compute engine: gomlx (pure Go, no Python) or torch (a PyTorch worker process: fast on CPU, the path for GPUs)")
	fs.StringVar(&f.Python, "python", "", "torch engine: the Python interpreter (default $"+PythonEnv+", else the first of python3, /usr/bin/python3, python that imports torch)")
	fs.StringVar(&f.Autocast, "autocast", "", "torch engine on CUDA: bf16 for bfloat16 autocast over float32 master weights (default: float32)")
	fs.IntVar(&f.Threads, "threads", 0, "torch engine: CPU threads of the worker (0: every core)")
}

// RegisterTraining binds the flags of commands that train (--activation-checkpointing,
// --devices).
func (f *Flags) RegisterTraining(fs *flag.FlagSet) {
	fs.StringVar(&f.Devices, "devices", "", DevicesHelp)
	fs.BoolVar(&f.ActivationCheckpointing, "activation-checkpointing", false, "torch engine: run each decoder layer again in the backward pass instead of keeping its activations (less memory, about a third more compute; same loss and gradients)")
}

// Spec is the checked engine spec on device. For the torch engine, log
// (when not nil) receives the worker's stderr lines, one call at a time.
func (f *Flags) Spec(device string, log func(line string)) (Spec, error) {
	s := Spec{Kind: f.Kind, Device: device, Python: f.Python, Autocast: f.Autocast, Threads: f.Threads,
		ActivationCheckpointing: f.ActivationCheckpointing}
	var err error
	if s.Devices, err = ParseDevices(f.Devices); err != nil {
		return s, err
	}
	if err := s.Validate(); err != nil {
		return s, err
	}
	if s.Kind == Torch && log != nil {
		var mu sync.Mutex
		s.Log = func(line string) {
			mu.Lock()
			defer mu.Unlock()
			log(line)
		}
	}
	return s, nil
}
