package env

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/t2t-lab/t2t/internal/jsonl"
)

// ReadOptions say how ReadRecords reads an instance file.
type ReadOptions struct {
	// StrictIDs refuses an instance whose id is not its content hash
	// (ComputeID). By default (false) a user's own id is kept: MovingAI and
	// other suites name their instances.
	StrictIDs bool
}

// Record is one non-blank line of an instance file.
type Record struct {
	// Line is the 1-based line of the file.
	Line int
	// Instance is the instance read from the line; nil when it could not
	// be read.
	Instance *Instance
	// Err is a *LineError when the line is not a valid instance, or when
	// work on its instance failed (SolveRecords); nil otherwise.
	Err error
}

// ReadRecords reads every non-blank line of r as an instance (checked as
// Instance.UnmarshalJSON checks it, and with opt). A line that is not an
// instance becomes a Record with Err set and reading goes on; only a read
// error, or a line over MaxJSONLLine bytes, fails the whole read (a
// *LineError).
func ReadRecords(r io.Reader, opt ReadOptions) ([]Record, error) {
	return ReadRecordsUntil(r, opt, nil)
}

// errStop ends ReadRecordsUntil's scan.
var errStop = errors.New("stop")

// ReadRecordsUntil is ReadRecords that stops reading after the first record
// for which stop returns true (that record included; nil: read all), so
// that what follows it — bad lines, an over-long line — is never read.
func ReadRecordsUntil(r io.Reader, opt ReadOptions, stop func(Record) bool) ([]Record, error) {
	var out []Record
	err := ScanJSONL(r, func(line int, b []byte) error {
		rec := Record{Line: line}
		if in, err := decodeInstance(b, opt); err != nil {
			rec.Err = &LineError{Line: line, Err: err}
		} else {
			rec.Instance = in
		}
		out = append(out, rec)
		if stop != nil && stop(rec) {
			return errStop
		}
		return nil
	})
	if err != nil && err != errStop {
		return nil, err
	}
	return out, nil
}

// decodeInstance reads one line, with the id rule of opt.
func decodeInstance(b []byte, opt ReadOptions) (*Instance, error) {
	in := new(Instance)
	if err := json.Unmarshal(b, in); err != nil {
		return nil, jsonl.LineReason(b, err)
	}
	if opt.StrictIDs {
		if h := in.ComputeID(); in.ID != h {
			return nil, &FieldError{Field: "id", Value: in.ID, Reason: fmt.Sprintf("is not the content hash %s (strict ids)", h)}
		}
	}
	return in, nil
}

// Instances returns the instances of recs in order, or the error of the
// first record that has one.
func Instances(recs []Record) ([]*Instance, error) {
	out := make([]*Instance, len(recs))
	for i, r := range recs {
		if r.Err != nil {
			return nil, r.Err
		}
		out[i] = r.Instance
	}
	return out, nil
}

// Pick returns the instance of recs named id (its id or its content hash),
// or, when id is empty, the one on file line line (0: the first
// instance). An id on several lines, or a line without an instance, is an
// error that names the lines; a line that is not a valid instance returns
// its Err.
func Pick(recs []Record, id string, line int) (*Instance, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("no instances")
	}
	if id == "" {
		if line < 0 {
			return nil, fmt.Errorf("line %d: want a file line ≥ 1, or 0 for the first instance", line)
		}
		if line == 0 {
			line = recs[0].Line
		}
		for _, r := range recs {
			if r.Line == line {
				return r.Instance, r.Err
			}
		}
		return nil, &LineError{Line: line, Err: fmt.Errorf("no instance on this line (instances are on lines %d..%d, blank lines have none)", recs[0].Line, recs[len(recs)-1].Line)}
	}
	var found *Record
	for i := range recs {
		r := &recs[i]
		if r.Instance == nil || (r.Instance.ID != id && r.Instance.ComputeID() != id) {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("id %q is on lines %d and %d: pick one with --line", id, found.Line, r.Line)
		}
		found = r
	}
	if found == nil {
		return nil, fmt.Errorf("no instance with id %q", id)
	}
	return found.Instance, found.Err
}

// SolveRecords annotates every instance of recs (optimal costs,
// needs_wait) and sets its Paths to an optimal plan, in parallel as
// ParallelRange does. An instance the solver fails on (unsolvable, budget
// exhausted) gets its record's Err set, a *LineError, and the others go on.
// It returns a *BatchError when some records have an Err (those that could
// not be read included), nil otherwise.
func SolveRecords(recs []Record, opt SolveOptions, workers int, progress func(done int)) error {
	_ = ParallelRange(len(recs), workers, progress, func(lo, hi int) error {
		s := NewSolver()
		for i := lo; i < hi; i++ {
			r := &recs[i]
			if r.Err != nil {
				continue
			}
			err := s.Annotate(r.Instance, opt)
			if err == nil {
				var sol Solution
				if sol, err = s.Solve(r.Instance, opt); err == nil {
					r.Instance.Paths = sol.Plan.Paths
				}
			}
			if err != nil {
				r.Err = &LineError{Line: r.Line, Err: fmt.Errorf("instance %s: %w", r.Instance.ID, err)}
			}
		}
		return nil
	})
	return batchError(recs)
}

// batchError is the *BatchError of recs, or nil when none failed.
func batchError(recs []Record) error {
	be := &BatchError{Total: len(recs)}
	for _, r := range recs {
		if r.Err != nil {
			if be.Failed == 0 {
				be.First = r.Err
			}
			be.Failed++
		}
	}
	if be.Failed == 0 {
		return nil
	}
	return be
}

// BatchError says that some lines of a batch failed; each has its own
// error line in the output (EncodeRecords).
type BatchError struct {
	// Failed counts the failed lines, of Total instance lines.
	Failed, Total int
	// First is the first failed line's error.
	First error
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("%d of %d instance lines failed (their output lines hold \"error\"); the first: line %v", e.Failed, e.Total, e.First)
}

// Unwrap returns First.
func (e *BatchError) Unwrap() error { return e.First }

// ErrorLine is the output line of a record that failed: the reason (which
// names the input line), the line, and, when the line held an instance, its
// id and, when that is not its content hash, the hash (as an instance's
// JSON has them).
type ErrorLine struct {
	Error string `json:"error"`
	Line  int    `json:"line"`
	ID    string `json:"id,omitempty"`
	Hash  string `json:"hash,omitempty"`
}

// EncodeRecords writes one JSON line per record, in order: the instance,
// or an ErrorLine when the record has an Err.
func EncodeRecords(recs []Record) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range recs {
		var v any = r.Instance
		if r.Err != nil {
			el := ErrorLine{Error: fmt.Sprintf("line %v", r.Err), Line: r.Line}
			if r.Instance != nil {
				el.ID = r.Instance.ID
				if h := r.Instance.ComputeID(); h != el.ID {
					el.Hash = h
				}
			}
			v = el
		}
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}
