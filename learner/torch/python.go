package torch

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/t2t-lab/t2t/learner/engine"
)

// PythonEnv names the environment variable that chooses the worker's interpreter.
const PythonEnv = engine.PythonEnv

// pythonCandidates are tried in order when neither --python nor $T2T_PYTHON names one. Debian's
// python3-torch installs for /usr/bin/python3, which is not always the first python3 on PATH.
var pythonCandidates = []string{"python3", "/usr/bin/python3", "python"}

var (
	pythonMu    sync.Mutex
	pythonFound = map[string]string{} // explicit choice ("" = search) → interpreter
)

// FindPython returns an interpreter that imports torch: explicit when given (an error if it
// does not import torch), else $T2T_PYTHON, else the first of python3, /usr/bin/python3, python
// that does. The error wraps ErrNoTorch, names what was tried and says how to install torch.
// Answers are cached for the process.
func FindPython(ctx context.Context, explicit string) (string, error) {
	pythonMu.Lock()
	defer pythonMu.Unlock()
	if py, ok := pythonFound[explicit]; ok {
		return py, nil
	}
	var cands []string
	switch {
	case explicit != "":
		cands = []string{explicit}
	case os.Getenv(PythonEnv) != "":
		cands = []string{os.Getenv(PythonEnv)}
	default:
		cands = pythonCandidates
	}
	var tried []string
	for _, c := range cands {
		path, err := exec.LookPath(c)
		if err != nil {
			tried = append(tried, c+" (not found)")
			continue
		}
		ver, err := torchVersion(ctx, path)
		if err != nil {
			tried = append(tried, path+" ("+err.Error()+")")
			continue
		}
		_ = ver
		pythonFound[explicit] = path
		return path, nil
	}
	return "", fmt.Errorf("%w: tried %s; install torch (Debian: apt-get install python3-torch; or pip install torch) or name the interpreter with --python or $%s",
		ErrNoTorch, strings.Join(tried, ", "), PythonEnv)
}

// torchVersion runs py and returns the torch version it imports.
func torchVersion(ctx context.Context, py string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, "-c", "import torch; print(torch.__version__)").Output()
	if err != nil {
		return "", fmt.Errorf("no torch")
	}
	return strings.TrimSpace(string(out)), nil
}

//go:embed worker/t2t_worker/*.py
var workerFS embed.FS

var (
	workerDirOnce sync.Once
	workerDir     string
	workerDirErr  error
)

// WorkerDir returns a directory holding the t2t_worker package embedded in this binary,
// extracted once per content into the user cache directory (t2t/torch-worker-<hash>), so that a
// binary copied to another machine carries its worker. $T2T_WORKER_DIR overrides it (a folder
// holding t2t_worker/, e.g. learner/torch/worker of a checkout).
func WorkerDir() (string, error) {
	workerDirOnce.Do(func() { workerDir, workerDirErr = extractWorker() })
	return workerDir, workerDirErr
}

func extractWorker() (string, error) {
	if d := os.Getenv("T2T_WORKER_DIR"); d != "" {
		return d, nil
	}
	h := sha256.New()
	var files []string
	err := fs.WalkDir(workerFS, "worker", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := workerFS.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, p)
		h.Write([]byte(p))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("torch: embedded worker: %w", err)
	}
	base, err := os.UserCacheDir()
	if err != nil || base == "" {
		base = os.TempDir()
	}
	dst := filepath.Join(base, "t2t", "torch-worker-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(filepath.Join(dst, "t2t_worker", "__main__.py")); err == nil {
		return dst, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", fmt.Errorf("torch: worker cache: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".extract-*")
	if err != nil {
		return "", fmt.Errorf("torch: worker cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	for _, p := range files {
		b, _ := workerFS.ReadFile(p)
		out := filepath.Join(tmp, strings.TrimPrefix(p, "worker/"))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(out, b, 0o644); err != nil {
			return "", fmt.Errorf("torch: worker cache: %w", err)
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		// Another process extracted the same content first.
		if _, serr := os.Stat(filepath.Join(dst, "t2t_worker", "__main__.py")); serr == nil {
			return dst, nil
		}
		return "", fmt.Errorf("torch: worker cache: %w", err)
	}
	return dst, nil
}
