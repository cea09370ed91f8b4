package movingai

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/t2t-lab/t2t/env"
)

// Command is one of the subcommands `t2t env import` and `t2t env export`:
// its name, usage line, flags and work. The command line only parses the
// flags and hands Run a function that writes a file ("-": standard output).
type Command interface {
	Name() string
	Usage() string
	Register(fs *flag.FlagSet)
	Run(write func(path string, data []byte) error) error
}

// ImportCommand is `t2t env import`: MovingAI .map and .scen files to a
// JSONL file of instances (see Import).
type ImportCommand struct {
	MapPath, ScenPath, Out string
	Agents, First          int
}

// Name is "import".
func (c *ImportCommand) Name() string { return "import" }

// Usage is the command's usage line.
func (c *ImportCommand) Usage() string {
	return "t2t env import --map M.map --scen S.scen --agents K [--first N] [--out FILE]"
}

// Register binds c's fields to flags of fs.
func (c *ImportCommand) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.MapPath, "map", "", "MovingAI .map file (square, at most 32x32; '.'/'G' free, '@'/'O'/'T'/'S'/'W' holes)")
	fs.StringVar(&c.ScenPath, "scen", "", "MovingAI .scen file of the map (version 1)")
	fs.IntVar(&c.Agents, "agents", 0, "agents per instance: consecutive groups of this many scen rows become one instance")
	fs.IntVar(&c.First, "first", 0, "keep the first N instances (0: every full group of rows)")
	fs.StringVar(&c.Out, "out", "-", "output JSONL file (- for stdout)")
}

// Run reads the two files, imports them and writes the instances as JSONL
// to c.Out.
func (c *ImportCommand) Run(write func(path string, data []byte) error) error {
	if err := required("--map", c.MapPath, "--scen", c.ScenPath); err != nil {
		return err
	}
	m, err := ReadMap(c.MapPath)
	if err != nil {
		return err
	}
	rows, err := ReadScen(c.ScenPath)
	if err != nil {
		return err
	}
	ins, err := Import(m, rows, ImportOptions{Agents: c.Agents, First: c.First, MapPath: c.MapPath, ScenPath: c.ScenPath})
	if err != nil {
		return err
	}
	data, err := env.EncodeJSONL(ins)
	if err != nil {
		return err
	}
	return write(c.Out, data)
}

// ExportCommand is `t2t env export`: a JSONL file of instances to MovingAI
// .map and .scen files in a folder (see Export).
type ExportCommand struct {
	In, Out string
	// Report, when set, gets one line per input line that is not an
	// instance ("FILE:LINE: skipped: reason"); the others are exported.
	Report io.Writer
}

// Name is "export".
func (c *ExportCommand) Name() string { return "export" }

// Usage is the command's usage line.
func (c *ExportCommand) Usage() string { return "t2t env export --in FILE.jsonl --out DIR" }

// Register binds c's fields to flags of fs.
func (c *ExportCommand) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.In, "in", "", "input JSONL of instances")
	fs.StringVar(&c.Out, "out", "", "output folder: one .map per distinct grid, one .scen per instance")
}

// Run reads the instances of c.In and writes their files under c.Out.
func (c *ExportCommand) Run(write func(path string, data []byte) error) error {
	if err := required("--in", c.In, "--out", c.Out); err != nil {
		return err
	}
	f, err := os.Open(c.In)
	if err != nil {
		return fileErr(c.In, err)
	}
	defer f.Close()
	recs, err := env.ReadRecords(f, env.ReadOptions{})
	if le := (*env.LineError)(nil); errors.As(err, &le) {
		return at(c.In, le.Line, le.Err)
	} else if err != nil {
		return err
	}
	var ins []*env.Instance
	bad := &env.BatchError{Total: len(recs)}
	for _, r := range recs {
		if r.Err == nil {
			ins = append(ins, r.Instance)
			continue
		}
		if bad.Failed++; bad.First == nil {
			bad.First = r.Err
		}
		if c.Report != nil {
			fmt.Fprintf(c.Report, "%s:%d: skipped: %v\n", c.In, r.Line, errors.Unwrap(r.Err))
		}
	}
	if len(ins) == 0 && bad.First != nil {
		return at(c.In, recs[0].Line, errors.Unwrap(recs[0].Err))
	}
	files, err := Export(ins, c.In)
	if err != nil {
		return err
	}
	for _, file := range files {
		if err := write(filepath.Join(c.Out, file.Name), file.Data); err != nil {
			return err
		}
	}
	if bad.Failed > 0 {
		return bad // the good lines are exported; the status counts the others
	}
	return nil
}

// required fails for the first empty value of the (flag, value) pairs.
func required(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			return inputErr(pairs[i], 0, ErrFlag, "required")
		}
	}
	return nil
}
