package rolloutengine

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/t2t-lab/t2t/internal/fielderr"
)

// Engine kinds (Config.Kind, t2t's --rollout-engine).
const (
	// T2T is another t2t process's `t2t serve`: vLLM's adapter endpoints, and SGLang's
	// weight update for full checkpoints.
	T2T = "t2t"
	// VLLM is vLLM's OpenAI-compatible server started with --enable-lora and
	// VLLM_ALLOW_RUNTIME_LORA_UPDATING=True.
	VLLM = "vllm"
	// SGLang is SGLang's server: /update_weights_from_disk replaces its weights.
	SGLang = "sglang"
)

// Kinds lists the engine kinds.
var Kinds = []string{T2T, VLLM, SGLang}

// AdapterPrefix names a version's adapter at the engine: policy version N is the adapter
// AdapterPrefix+N ("t2t-v3"), and rollouts sample it with that model name.
const AdapterPrefix = "t2t-v"

// APIKeyEnv is the environment variable t2t reads the engine's API key from by default: the
// key `t2t serve` and `t2t node` take (--api-key), which vLLM's --api-key and SGLang's
// --api-key check the same way (Authorization: Bearer KEY).
const APIKeyEnv = "T2T_API_KEY"

// ErrConfig marks an invalid Config; the error is a *fielderr.Error naming
// the Config field ("Kind", "URL", "Dir", "Model", "Adapters", "Keep", …).
var ErrConfig = errors.New("rolloutengine: invalid config")

// Config says which engine the learner pushes to and how. Zero values of the optional fields
// take the documented defaults.
type Config struct {
	// Kind is T2T, VLLM or SGLang. Required.
	Kind string
	// URL is the engine's server: its root (http://host:8000) or its OpenAI API root
	// (http://host:8000/v1), the same server either way. Adapter calls go to {root}/v1/…,
	// SGLang's weight update to {root}/update_weights_from_disk, rollouts to {root}/v1.
	// Required.
	URL string
	// Dir is the directory each version is written to (Dir/v<N>), a path the engine reads
	// under the same name (a shared disk). Made absolute. Required.
	Dir string
	// Model is the name the engine's OpenAI API serves the base model under (SGLang's
	// --served-model-name, or its --model-path; t2t serve's --name): rollouts sample it when
	// versions are full checkpoints. Required then; unused with Adapters, where rollouts name
	// a version's adapter.
	Model string
	// Adapters: every version is a PEFT LoRA adapter directory that the engine loads by name
	// (VLLM requires it; T2T takes either); false: a full Hugging Face checkpoint that replaces
	// the engine's weights through /update_weights_from_disk (SGLang requires it, and t2t serve
	// answers it too; a LoRA learner writes its merged weights).
	Adapters bool
	// Keep is the number of newest loaded adapters kept loaded, with their directories;
	// older ones are unloaded once no rollout of this process holds them. Default 3: a
	// rollout on another node plays a version at most a few updates old (the coordinator's
	// --max-lag, 2 by default), and one that asks for an adapter unloaded meanwhile fails
	// its unit, which is issued again.
	Keep int
	// APIKey is sent as "Authorization: Bearer KEY" on every call ("": none).
	APIKey string
	// MaxRetries is the number of further tries of a call after a transient failure (no
	// answer, HTTP 408, 429 or 5xx); other statuses are not retried. Default 4; negative:
	// none.
	MaxRetries int
	// Backoff is the wait before the first retry, doubled after each further failure and
	// capped at 30 s. Default 500 ms.
	Backoff time.Duration
	// Timeout bounds one call (an SGLang weight update of a large model reads gigabytes).
	// Default 10 minutes.
	Timeout time.Duration
	// HTTPClient sends the calls. Default: a client without its own timeout.
	HTTPClient *http.Client
}

// defaults fills the optional fields.
func (c *Config) defaults() {
	if c.Keep == 0 {
		c.Keep = 3
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = 4
	}
	c.MaxRetries = max(c.MaxRetries, 0)
	if c.Backoff == 0 {
		c.Backoff = 500 * time.Millisecond
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Minute
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	c.Kind = strings.ToLower(strings.TrimSpace(c.Kind))
}

// Validate checks c (after its defaults); errors are *fielderr.Error.
func (c *Config) Validate() error {
	bad := func(field string, v any, reason string) error {
		return &fielderr.Error{Kind: ErrConfig, Field: field, Value: v, Reason: reason}
	}
	if !slices.Contains(Kinds, c.Kind) {
		return bad("Kind", strconv.Quote(c.Kind), "want "+strings.Join(Kinds, ", "))
	}
	if _, err := root(c.URL); err != nil {
		return bad("URL", strconv.Quote(c.URL), err.Error())
	}
	switch {
	case strings.TrimSpace(c.Dir) == "":
		return bad("Dir", `""`, "required: the directory the learner writes each version to and the engine reads it from")
	case c.Kind == SGLang && c.Adapters:
		return bad("Adapters", c.Adapters, "SGLang takes full checkpoints (/update_weights_from_disk): write the merged weights")
	case c.Kind == VLLM && !c.Adapters:
		return bad("Adapters", c.Adapters, "vLLM loads LoRA adapters at run time (/v1/load_lora_adapter) but has no API that replaces a model's full weights: train LoRA adapters, or push full checkpoints to SGLang")
	case c.Kind == SGLang && strings.TrimSpace(c.Model) == "":
		return bad("Model", `""`, "required for SGLang: the model name its OpenAI API serves (--served-model-name, else its --model-path)")
	case c.Kind == T2T && !c.Adapters && strings.TrimSpace(c.Model) == "":
		return bad("Model", `""`, "required to push full checkpoints to t2t serve: the model name it serves (its --name, else its --model directory's name)")
	case c.Keep < 1:
		return bad("Keep", c.Keep, "must be ≥ 1")
	case c.Backoff < 0 || c.Timeout < 0:
		return bad("Backoff/Timeout", fmt.Sprint(c.Backoff, " ", c.Timeout), "must be ≥ 0")
	}
	return nil
}

// root returns the server root of an engine URL: scheme and host, and any path but a final
// "/v1".
func root(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if raw == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("want an http(s) URL such as http://127.0.0.1:8000 or http://127.0.0.1:8000/v1")
	}
	p := strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1")
	return u.Scheme + "://" + u.Host + p, nil
}

// absDir is dir made absolute: the engine, another process, reads the path as it is sent.
func absDir(dir string) (string, error) {
	return filepath.Abs(dir)
}
