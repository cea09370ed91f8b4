package evaluate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/internal/jsonl"
	"github.com/t2t-lab/t2t/internal/limits"
	"github.com/t2t-lab/t2t/report"
)

// CacheFile is the answer cache inside an evaluation's folder: one JSON
// line per answer, {"policy": ID, ...report.Outcome}.
const CacheFile = "answers.jsonl"

// CacheLine is one line of the answer cache: a policy's outcome on an
// instance.
type CacheLine struct {
	Policy string `json:"policy"`
	report.Outcome
}

// ReadCache reads the answer cache at path (at most limits.Text bytes) and
// returns the answers of policyID by instance content hash (the outcomes'
// InstanceID); a missing file is an empty cache. A last line without its
// newline (a write torn by a kill) is dropped and cut off the file; any
// other bad line is a *fielderr.Error naming the line.
func ReadCache(path, policyID string) (map[string]report.Outcome, error) {
	data, err := limits.ReadFile(path, limits.Text)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]report.Outcome{}, nil
	}
	if err != nil {
		return nil, err
	}
	if n := bytes.LastIndexByte(data, '\n') + 1; n < len(data) {
		if err := os.Truncate(path, int64(n)); err != nil {
			return nil, err
		}
		data = data[:n]
	}
	return parseCache(path, data, policyID)
}

// parseCache returns the answers of policyID in the cache lines data
// (read from path), as ReadCache describes.
func parseCache(path string, data []byte, policyID string) (map[string]report.Outcome, error) {
	out := map[string]report.Outcome{}
	err := env.ScanJSONL(bytes.NewReader(data), func(line int, b []byte) error {
		var l CacheLine
		if err := json.Unmarshal(b, &l); err != nil {
			return &fielderr.Error{File: path, Line: line, Reason: jsonl.LineReason(b, err).Error()}
		}
		if l.InstanceID == "" {
			return &fielderr.Error{File: path, Line: line, Reason: "missing instance_id"}
		}
		if l.Policy == policyID {
			out[l.InstanceID] = l.Outcome
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// cacheWriter appends answers to the cache file, one write and one fsync
// per chunk: an acknowledged chunk survives a kill, and a torn write
// leaves at most one partial last line, which ReadCache drops.
type cacheWriter struct {
	mu       sync.Mutex
	f        *os.File
	path     string
	policyID string
}

func openCache(path, policyID string) (*cacheWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &cacheWriter{f: f, path: path, policyID: policyID}, nil
}

// append writes outs and syncs them; then, still holding the lock, it
// calls acked, so that acknowledgements come in order.
func (c *cacheWriter) append(outs []report.Outcome, acked func() error) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, o := range outs {
		if err := enc.Encode(CacheLine{Policy: c.policyID, Outcome: o}); err != nil {
			return err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("%s: %w", c.path, err)
	}
	if err := c.f.Sync(); err != nil {
		return fmt.Errorf("%s: %w", c.path, err)
	}
	return acked()
}

func (c *cacheWriter) Close() error { return c.f.Close() }
