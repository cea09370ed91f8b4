package rolloutengine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/t2t-lab/t2t/internal/fielderr"
)

// Engine operations (EngineError.Op), named after the endpoints they call.
const (
	OpLoadAdapter   = "load_lora_adapter"
	OpUnloadAdapter = "unload_lora_adapter"
	OpUpdateWeights = "update_weights_from_disk"
)

// EngineError is a failed call to the engine: an HTTP status other than 2xx (StatusCode and
// the engine's Message), an SGLang answer with "success": false, or no answer at all
// (StatusCode 0, Err the transport or context error), after Attempts tries.
type EngineError struct {
	Op         string // OpLoadAdapter, OpUnloadAdapter or OpUpdateWeights
	URL        string // the endpoint called
	StatusCode int    // 0: no HTTP answer
	// Message is the engine's error message (the "message" of its JSON error, else the body),
	// at most 512 bytes.
	Message  string
	Attempts int
	Err      error
}

func (e *EngineError) Error() string {
	tries := "1 attempt"
	if e.Attempts != 1 {
		tries = fmt.Sprintf("%d attempts", e.Attempts)
	}
	if e.StatusCode == 0 {
		return fmt.Sprintf("rolloutengine: %s %s: no answer (%s): %v", e.Op, e.URL, tries, e.Err)
	}
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	return fmt.Sprintf("rolloutengine: %s %s: HTTP %d: %s (%s)", e.Op, e.URL, e.StatusCode, msg, tries)
}

// Unwrap returns Err.
func (e *EngineError) Unwrap() error { return e.Err }

// Transient reports whether the failure may pass by itself: no answer, or HTTP 408, 429 or
// 5xx. The client retries exactly these.
func (e *EngineError) Transient() bool {
	return e.StatusCode == 0 || e.StatusCode == http.StatusRequestTimeout || e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500
}

// Client calls an engine's weight endpoints (vLLM's runtime LoRA API, which `t2t serve`
// implements too, and SGLang's weight update from disk), retrying transient failures with
// exponential backoff. It is safe for concurrent use.
type Client struct {
	cfg  Config
	root string
	log  *slog.Logger
}

// NewClient returns a client of cfg's engine (cfg's defaults filled, its URL checked);
// logger (nil: discard) sees each retry.
func NewClient(cfg Config, logger *slog.Logger) (*Client, error) {
	cfg.defaults()
	r, err := root(cfg.URL)
	if err != nil {
		return nil, &fielderr.Error{Kind: ErrConfig, Field: "URL", Value: cfg.URL, Reason: err.Error()}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Client{cfg: cfg, root: r, log: logger}, nil
}

// BaseURL is the engine's OpenAI API root ({root}/v1), where rollouts sample.
func (c *Client) BaseURL() string { return c.root + "/v1" }

// LoadAdapter asks the engine to load the PEFT adapter directory path as name
// (POST {root}/v1/load_lora_adapter {"lora_name", "lora_path"}). An adapter of that name
// loaded already (HTTP 400 "… has already been loaded", as when an earlier try's answer was
// lost) counts as loaded.
func (c *Client) LoadAdapter(ctx context.Context, name, path string) error {
	_, err := c.call(ctx, OpLoadAdapter, "/v1/load_lora_adapter", map[string]string{"lora_name": name, "lora_path": path})
	var ee *EngineError
	if errors.As(err, &ee) && ee.StatusCode == http.StatusBadRequest && strings.Contains(ee.Message, "already been loaded") {
		return nil
	}
	return err
}

// UnloadAdapter asks the engine to unload adapter name (POST {root}/v1/unload_lora_adapter
// {"lora_name"}). An adapter the engine does not know (HTTP 404, or vLLM < 0.10's 400 "…
// cannot be found") counts as unloaded.
func (c *Client) UnloadAdapter(ctx context.Context, name string) error {
	_, err := c.call(ctx, OpUnloadAdapter, "/v1/unload_lora_adapter", map[string]string{"lora_name": name})
	var ee *EngineError
	if errors.As(err, &ee) && (ee.StatusCode == http.StatusNotFound || (ee.StatusCode == http.StatusBadRequest && strings.Contains(ee.Message, "cannot be found"))) {
		return nil
	}
	return err
}

// UpdateWeights asks an SGLang engine to replace its weights by the Hugging Face checkpoint
// directory path (POST {root}/update_weights_from_disk {"model_path"}; the answer
// {"success", "message"} with 200, or 400 when it failed and SGLang kept its weights). It
// returns SGLang's message.
func (c *Client) UpdateWeights(ctx context.Context, path string) (string, error) {
	body, err := c.call(ctx, OpUpdateWeights, "/update_weights_from_disk", map[string]string{"model_path": path})
	if err != nil {
		return "", err
	}
	var ans struct {
		Success *bool  `json:"success"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &ans) != nil || ans.Success == nil {
		return "", &EngineError{Op: OpUpdateWeights, URL: c.root + "/update_weights_from_disk", StatusCode: http.StatusOK, Attempts: 1,
			Message: "the answer is not SGLang's {\"success\", \"message\"}: " + clip(string(body))}
	}
	if !*ans.Success {
		return "", &EngineError{Op: OpUpdateWeights, URL: c.root + "/update_weights_from_disk", StatusCode: http.StatusOK, Attempts: 1, Message: ans.Message}
	}
	return ans.Message, nil
}

// call posts req as JSON to path, retrying transient failures, and returns a 2xx answer's
// body.
func (c *Client) call(ctx context.Context, op, path string, req any) ([]byte, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	url := c.root + path
	wait := c.cfg.Backoff
	for attempt := 1; ; attempt++ {
		data, status, msg, err := c.post(ctx, url, body)
		if err == nil && status/100 == 2 {
			return data, nil
		}
		ee := &EngineError{Op: op, URL: url, StatusCode: status, Message: msg, Attempts: attempt, Err: err}
		if ctx.Err() != nil {
			ee.Err = ctx.Err()
			return nil, ee
		}
		if !ee.Transient() || attempt > c.cfg.MaxRetries {
			return nil, ee
		}
		c.log.Warn("rollout engine: call failed, retrying", "op", op, "url", url, "status", status, "message", msg, "error", err, "attempt", attempt, "wait", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			ee.Err = ctx.Err()
			return nil, ee
		case <-t.C:
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// post sends one request; it returns a 2xx answer's body, or the status and the engine's
// message.
func (c *Client) post(ctx context.Context, url string, body []byte) ([]byte, int, string, error) {
	cctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(cctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, 0, "", err
	}
	hr.Header.Set("Content-Type", "application/json")
	if c.cfg.APIKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.cfg.HTTPClient.Do(hr)
	if err != nil {
		return nil, 0, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, 0, "", err
	}
	if resp.StatusCode/100 == 2 {
		return data, resp.StatusCode, "", nil
	}
	return nil, resp.StatusCode, message(data), nil
}

// message is an error answer's message: OpenAI's and vLLM ≥ 0.10's {"error": {"message"}},
// vLLM's older {"message"} and SGLang's {"success": false, "message"}, else the body.
func message(data []byte) string {
	var e struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(data, &e) == nil {
		if e.Error != nil && e.Error.Message != "" {
			return clip(e.Error.Message)
		}
		if e.Message != "" {
			return clip(e.Message)
		}
	}
	return clip(strings.TrimSpace(string(data)))
}

// clip cuts s to 512 bytes.
func clip(s string) string {
	if len(s) > 512 {
		return s[:512]
	}
	return s
}
