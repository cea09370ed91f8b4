package evaluate

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fsutil"
	"github.com/t2t-lab/t2t/report"
)

// ErrOptions marks Options that Run cannot start with.
var ErrOptions = errors.New("evaluate: Options need a Player, a PolicyID, a Suite and a Dir")

// Options configure Run.
type Options struct {
	// Player is the policy evaluated.
	Player Player
	// PolicyID names the policy in the answer cache and the report; cached
	// answers of another id are ignored. Name the weights in it (a gridnet
	// checkpoint by its hash, the scripted policy by its mistake rate and
	// seed) so that a cache never mixes policies.
	PolicyID string
	// Suite is the suite played.
	Suite *Suite
	// Dir is the output folder: the answer cache (CacheFile) and the report
	// files (WriteReport).
	Dir string
	// Play says how the player is seeded.
	Play PlayOptions
	// Workers is the number of goroutines playing chunks of instances (0:
	// one per CPU).
	Workers int
	// Progress, when set, reports the progress of the play.
	Progress Progress
	// Hooks let the caller watch and interrupt the run.
	Hooks Hooks
}

// Hooks are callbacks into Run. Each may be nil.
type Hooks struct {
	// Started sees the work once the cache is read: the suite's lines,
	// the policy's cached answers and the distinct instances to play.
	Started func(lines, cached, toPlay int)
	// Played sees the content hashes (env.Instance.ComputeID, the answer
	// cache's keys) of every chunk's instances before the policy plays it;
	// with several workers it is called concurrently.
	Played func(ids []string)
	// Acked is called after each chunk's outcomes are written and synced,
	// in order, with the number of instances played so far; an error stops
	// the run as a kill would after the acknowledged chunks, and Run
	// returns it.
	Acked func(done int) error
}

// Progress starts reporting a job of total items named label. It returns
// update, called after each chunk with the number of items done (never
// concurrently), and end, called once when the job is over.
type Progress func(label string, total int) (update func(done int), end func())

// parallel runs fn over [0,n) in chunks on workers goroutines
// (env.ParallelRange), reporting to progress when it is set.
func parallel(n, workers int, label string, progress Progress, fn func(lo, hi int) error) error {
	var update func(int)
	if progress != nil {
		var end func()
		update, end = progress(label, n)
		defer end()
	}
	return env.ParallelRange(n, workers, update, fn)
}

// Run evaluates a policy on a suite, resumably: the distinct instances not
// yet answered in the answer cache are played greedily in chunks (Play),
// each chunk's outcomes appended to the cache and synced before the next
// is acknowledged; then every suite line is tallied from the cache (the
// line decides the subset its answer counts in) and the report is written
// into Dir. A killed run resumes where its last acknowledged chunk ended.
func Run(ctx context.Context, opt Options) (*report.Eval, error) {
	if opt.Player == nil || opt.PolicyID == "" || opt.Suite == nil || opt.Dir == "" {
		return nil, ErrOptions
	}
	cachePath := filepath.Join(opt.Dir, CacheFile)
	cache, err := ReadCache(cachePath, opt.PolicyID)
	if err != nil {
		return nil, err
	}
	// Distinct instances not yet answered, in suite order. Answers are
	// keyed by content hash: a user's ids may repeat or rename content.
	var todo []*env.Instance
	keys := make([]string, len(opt.Suite.Instances))
	queued := map[string]bool{}
	for i, in := range opt.Suite.Instances {
		keys[i] = in.ComputeID()
		if _, ok := cache[keys[i]]; ok || queued[keys[i]] {
			continue
		}
		queued[keys[i]] = true
		todo = append(todo, in)
	}
	if opt.Hooks.Started != nil {
		opt.Hooks.Started(len(opt.Suite.Instances), len(cache), len(todo))
	}
	if len(todo) > 0 {
		if err := playInto(ctx, &opt, cachePath, todo, cache); err != nil {
			return nil, err
		}
	}
	outs := make([]report.Outcome, len(opt.Suite.Instances))
	for i, in := range opt.Suite.Instances {
		o := cache[keys[i]]
		o.Agents, o.Size, o.Subset = len(in.Agents), in.Width, opt.Suite.Subsets[i]
		outs[i] = o
	}
	e := report.Tally(opt.PolicyID, opt.Suite.Name, outs)
	if err := WriteReport(opt.Dir, e); err != nil {
		return nil, err
	}
	return e, nil
}

// playInto plays todo in chunks and adds every acknowledged answer to
// the cache file and to cache.
func playInto(ctx context.Context, opt *Options, cachePath string, todo []*env.Instance, cache map[string]report.Outcome) error {
	if err := os.MkdirAll(opt.Dir, 0o755); err != nil {
		return err
	}
	w, err := openCache(cachePath, opt.PolicyID)
	if err != nil {
		return err
	}
	defer w.Close()
	done := 0
	return parallel(len(todo), opt.Workers, "eval", opt.Progress, func(lo, hi int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk := todo[lo:hi]
		if opt.Hooks.Played != nil {
			ids := make([]string, len(chunk))
			for i, in := range chunk {
				ids[i] = in.ComputeID()
			}
			opt.Hooks.Played(ids)
		}
		outs, err := Play(opt.Player, chunk, opt.Play)
		if err != nil {
			return err
		}
		return w.append(outs, func() error {
			for _, o := range outs {
				cache[o.InstanceID] = o
			}
			done += len(chunk)
			if opt.Hooks.Acked != nil {
				return opt.Hooks.Acked(done)
			}
			return nil
		})
	})
}

// reportFiles are the files WriteReport writes.
var reportFiles = []string{"eval.md", "eval.csv", "eval.json", "eval.html", "size.svg", "failures.svg"}

// WriteReport writes e's renderings into dir, each file atomically:
// eval.md, eval.csv, eval.json, eval.html, size.svg and failures.svg.
func WriteReport(dir string, e *report.Eval) error {
	js, err := report.EvalJSON(e)
	if err != nil {
		return err
	}
	files := [][]byte{[]byte(report.EvalMarkdown(e)), []byte(report.EvalCSV(e)), js, []byte(report.EvalHTML(e)),
		[]byte(report.EvalSizeSVG(e)), []byte(report.EvalFailureSVG(e))}
	for i, name := range reportFiles {
		if err := fsutil.WriteBytesAtomic(filepath.Join(dir, name), files[i]); err != nil {
			return err
		}
	}
	return nil
}
