package serve

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/internal/sysmem"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/textpolicy"
)

// Options configure a Server. Zero values take the documented defaults.
type Options struct {
	// ModelName is the model id clients send and /v1/models lists. Default: the base name of
	// the LM's directory, or "t2t-qwen3" for an LM built in memory.
	ModelName string
	// DefaultMaxTokens caps a chat completion that gives no max_tokens (also by the context
	// left after the prompt). Default 512. Legacy completions default to 16, as OpenAI's do.
	DefaultMaxTokens int
	// NoThinking renders chat prompts without thinking (Qwen3's template with
	// enable_thinking=false: an empty think block ends the prompt) unless a request's
	// chat_template_kwargs.enable_thinking says otherwise: for checkpoints fine-tuned without
	// thinking, as t2t sft's are unless --thinking. Default: with thinking, as Qwen3 and vLLM.
	NoThinking bool
	// MaxN is the largest n (completions per prompt). Default 16.
	MaxN int
	// MaxRows bounds prompts × n of one request (one generation batch). Default 64.
	MaxRows int
	// MaxTopLogprobs is the largest top_logprobs (chat) or logprobs (completions). Default 20.
	MaxTopLogprobs int
	// MaxBodyBytes bounds a request body. Default 8 MiB.
	MaxBodyBytes int64
	// MaxTokens caps max_tokens (and max_completion_tokens) of a request, whatever the model's
	// context: a checkpoint that claims a huge context cannot make one request allocate for it.
	// Default 8192.
	MaxTokens int
	// MaxPromptTokens caps the tokens of one prompt (and the model's context less one caps
	// it too); a longer prompt is answered 422 once tokenizing has counted past the cap, so a
	// huge prompt is never tokenized whole. Default 32768.
	MaxPromptTokens int
	// MaxMemory is the memory budget, in bytes, of the generations running at once: a
	// request's estimate (qwen3.Config.GenerateMemory for its rows = prompts × n at prompt +
	// max_tokens positions, plus its results) must fit, or it is answered 422 before anything
	// is allocated. Default: half of the memory available when the server is built
	// (learner.MemAvailable), or 4 GiB where that is unknown. The estimate is in float32 host
	// memory; on a GPU, set it to the device memory left after the weights.
	MaxMemory int64
	// MaxQueue bounds the requests waiting for the model (one generation runs at a time); a
	// request that finds it full is answered 429 with Retry-After at once, and a waiting
	// request whose client goes away leaves it. Default 64.
	MaxQueue int
	// APIKey, when set, is the bearer token every request but /health must send
	// ("Authorization: Bearer KEY"); others get 401.
	APIKey string
	// AllowOrigins names the origins (scheme://host[:port], or "*") whose cross-origin
	// requests are served; others are answered 403 (origin.go). Their hosts are also served as
	// a Host without an API key. Default: none.
	AllowOrigins []string
	// Seed seeds the sampling of requests that send no seed: the server draws each such
	// request's seed from rand.NewPCG(Seed, ·) in arrival order. Default 0.
	Seed uint64
	// Now gives the "created" timestamps. Default time.Now.
	Now func() time.Time
	// Logger logs requests and swaps. Default: discard.
	Logger *slog.Logger
	// GenSlots, when > 0, samples through one continuous-batching generation scheduler per
	// served model (textpolicy.LM.EnableScheduler) with a KV pool of GenSlots sequences of
	// GenSlotLen positions: up to GenSlots requests run at once and share decode steps; a
	// request with more rows, or a longer prompt plus max_tokens than a slot holds, runs on
	// its own as before. The pool's memory (hfmodel.Config.GenerateMemory) comes out of
	// MaxMemory. A model that already has a scheduler (a rollout node's policy) is served
	// through it whatever GenSlots says. Default 0: one generation at a time.
	GenSlots int
	// GenSlotLen is the positions of one slot (prompt plus new tokens). Default: the model's
	// context, at most 4096.
	GenSlotLen int
	// LoadWeights, when set, loads a checkpoint directory for POST /update_weights_from_disk
	// (SGLang's weight update; weights.go), which swaps it in under the same model id. Run sets
	// it to open directories on its engine. Nil: that route answers 404.
	LoadWeights func(ctx context.Context, dir string) (*textpolicy.LM, error)
}

func (o *Options) defaults() {
	if o.DefaultMaxTokens == 0 {
		o.DefaultMaxTokens = 512
	}
	if o.MaxN == 0 {
		o.MaxN = 16
	}
	if o.MaxRows == 0 {
		o.MaxRows = 64
	}
	if o.MaxTopLogprobs == 0 {
		o.MaxTopLogprobs = 20
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = 8 << 20
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = 8192
	}
	if o.MaxPromptTokens == 0 {
		o.MaxPromptTokens = 32768
	}
	if o.MaxMemory == 0 {
		o.MaxMemory = cmp.Or(sysmem.MemAvailable()/2, defaultMaxMemory)
	}
	if o.MaxQueue == 0 {
		o.MaxQueue = 64
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// slotLen is GenSlotLen or its default for lm.
func (o *Options) slotLen(lm *textpolicy.LM) int {
	if o.GenSlotLen > 0 {
		return min(o.GenSlotLen, lm.MaxContext())
	}
	return min(lm.MaxContext(), 4096)
}

// enableScheduler gives lm its generation scheduler when GenSlots asks for one.
func (o *Options) enableScheduler(lm *textpolicy.LM) error {
	if o.GenSlots == 0 {
		return nil
	}
	return lm.EnableScheduler(o.GenSlots, o.slotLen(lm))
}

// defaultMaxMemory is Options.MaxMemory's default where the available memory is unknown.
const defaultMaxMemory = 4 << 30

// ErrOptions marks invalid server options: a *fielderr.Error naming the
// Options field wraps it.
var ErrOptions = errors.New("serve: invalid options")

// served is the model a request runs on: swapped as a whole.
type served struct {
	lm       *textpolicy.LM
	name     string
	revision int64
	created  int64
}

// Server is an OpenAI-compatible HTTP API over an in-process Qwen3 model (an http.Handler):
//
//	GET  /v1/models, GET /v1/models/{id}
//	POST /v1/chat/completions   (messages → Qwen3 chat template; stream, n, stop, logprobs)
//	POST /v1/completions        (raw prompt text or token ids)
//	GET  /health
//	POST /v1/load_lora_adapter, /v1/unload_lora_adapter (vLLM's runtime LoRA API; see lora.go)
//
//	GET  /metrics               (queued and running requests; with a generation scheduler its
//	                             rows per decode step, tokens, queue wait and KV-pool use)
//
// Swap replaces the model between requests (in-flight requests finish on the model they
// started with); Reload loads a checkpoint directory and swaps it in. A Server is safe for
// concurrent use; generations of concurrent requests run one after another on the model (each
// request's n completions form one batch), or, with Options.GenSlots, side by side through one
// continuous-batching scheduler. Requests that name different LoRA adapters never run at the
// same time (the model has one attached at a time; the gate admits one adapter's requests
// together).
type Server struct {
	opt  Options
	mux  *http.ServeMux
	cur  atomic.Pointer[served]
	seq  atomic.Uint64
	gate *gate

	adMu     sync.Mutex
	adapters []*adapter // loaded through /v1/load_lora_adapter, in load order

	activeMu sync.Mutex     // taken inside the generation slot only
	activeLM *textpolicy.LM // the model activeAd is attached to
	activeAd *adapter       // the adapter attached to activeLM (nil: none)

	swapMu   sync.Mutex // orders swaps (revision numbers)
	reviveMu sync.Mutex // one reload after a worker died (serving)
	updMu    sync.Mutex // one /update_weights_from_disk at a time
	rngMu    sync.Mutex
	rng      *rand.Rand
}

// New returns a server for lm.
func New(lm *textpolicy.LM, opt Options) (*Server, error) {
	if lm == nil {
		return nil, &fielderr.Error{Kind: ErrOptions, Reason: "nil model"}
	}
	opt.defaults()
	for _, f := range []struct {
		name string
		v    int
	}{{"DefaultMaxTokens", opt.DefaultMaxTokens}, {"MaxN", opt.MaxN}, {"MaxRows", opt.MaxRows}, {"MaxTopLogprobs", opt.MaxTopLogprobs}, {"MaxTokens", opt.MaxTokens},
		{"MaxPromptTokens", opt.MaxPromptTokens}, {"MaxQueue", opt.MaxQueue}} {
		if f.v < 1 {
			return nil, &fielderr.Error{Kind: ErrOptions, Field: f.name, Value: f.v, Reason: "must be ≥ 1"}
		}
	}
	if opt.MaxMemory < 1 {
		return nil, &fielderr.Error{Kind: ErrOptions, Field: "MaxMemory", Value: opt.MaxMemory, Reason: "must be ≥ 1"}
	}
	if opt.GenSlots < 0 || opt.GenSlotLen < 0 {
		return nil, &fielderr.Error{Kind: ErrOptions, Field: "GenSlots/GenSlotLen", Value: fmt.Sprintf("%d/%d", opt.GenSlots, opt.GenSlotLen), Reason: "must be ≥ 0"}
	}
	budget, slots := opt.MaxMemory, max(lm.SchedulerSlots(), 1)
	if opt.GenSlots > 0 {
		pool := lm.Model.Config().GenerateMemory(opt.GenSlots, opt.slotLen(lm)-1, 1)
		if pool >= budget {
			return nil, &fielderr.Error{Kind: ErrOptions, Field: "GenSlots", Value: opt.GenSlots, Reason: fmt.Sprintf(
				"a KV pool of %d slots of %d positions needs about %s, the memory budget is %s: lower GenSlots or GenSlotLen, or raise MaxMemory",
				opt.GenSlots, opt.slotLen(lm), mib(pool), mib(budget))}
		}
		if err := opt.enableScheduler(lm); err != nil {
			return nil, &fielderr.Error{Kind: ErrOptions, Field: "GenSlots", Err: err}
		}
		budget, slots = budget-pool, opt.GenSlots
	}
	s := &Server{opt: opt, rng: rand.New(rand.NewPCG(opt.Seed, 0x5e7e)), gate: newGate(budget, slots, opt.MaxQueue)}
	s.cur.Store(&served{lm: lm, name: s.nameFor(lm), created: opt.Now().Unix()})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("GET /v1/models/{id...}", s.handleModel)
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("POST /v1/completions", s.handleCompletions)
	mux.HandleFunc("POST /v1/load_lora_adapter", s.handleLoadLoRA)
	mux.HandleFunc("POST /v1/unload_lora_adapter", s.handleUnloadLoRA)
	mux.HandleFunc("POST /update_weights_from_disk", s.handleUpdateWeights)
	mux.Handle("GET /metrics", s.metricsHandler())
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		queued, running := s.gate.stats()
		writeJSON(w, http.StatusOK, health{Status: "ok", Queued: queued, Running: running})
	})
	for _, p := range []string{"/v1/models", "/v1/chat/completions", "/v1/completions", "/v1/load_lora_adapter", "/v1/unload_lora_adapter", "/update_weights_from_disk", "/health", "/metrics"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "", "method_not_allowed",
				fmt.Sprintf("method %s is not allowed on %s", r.Method, r.URL.Path))
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found_error", "", "not_found", fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
	})
	s.mux = mux
	return s, nil
}

func (s *Server) nameFor(lm *textpolicy.LM) string {
	switch {
	case s.opt.ModelName != "":
		return s.opt.ModelName
	case lm.Dir != "":
		return filepath.Base(filepath.Clean(lm.Dir))
	}
	return "t2t-qwen3"
}

// ServeHTTP implements http.Handler. With Options.APIKey every route but /health needs the
// key as a bearer token.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.opt.APIKey != "" && r.URL.Path != "/health" {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.opt.APIKey)) != 1 {
			writeError(w, http.StatusUnauthorized, "invalid_request_error", "", "invalid_api_key", "missing or wrong API key (Authorization: Bearer KEY)")
			return
		}
	}
	if rerr := s.crossSite(r); rerr != nil {
		writeReqError(w, rerr)
		return
	}
	if p := r.URL.Path; p == "" || p[0] != '/' || cleanPath(p) != p {
		// ServeMux would redirect (3xx) to the clean path: no route of this API has one.
		writeError(w, http.StatusNotFound, "not_found_error", "", "not_found", fmt.Sprintf("no route %s %q", r.Method, r.URL.Path))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// cleanPath is p as ServeMux cleans it (path.Clean keeping a final slash).
func cleanPath(p string) string {
	np := path.Clean(p)
	if strings.HasSuffix(p, "/") && np != "/" {
		np += "/"
	}
	return np
}

// ModelName is the id of the model being served.
func (s *Server) ModelName() string { return s.cur.Load().name }

// Current returns the model being served and its revision (0 for the model given to New, +1
// per swap).
func (s *Server) Current() (*textpolicy.LM, int64) {
	c := s.cur.Load()
	return c.lm, c.revision
}

// Swap serves lm from the next request on (a new policy version); requests already running
// finish on the previous model. The model id stays the same unless Options.ModelName is empty
// and lm comes from another directory. It returns the new revision.
func (s *Server) Swap(lm *textpolicy.LM) int64 { return s.swap(lm, "") }

// swap serves lm under name ("": nameFor(lm)) from the next request on.
func (s *Server) swap(lm *textpolicy.LM, name string) int64 {
	s.swapMu.Lock()
	defer s.swapMu.Unlock()
	old := s.cur.Load()
	if name == "" {
		name = s.nameFor(lm)
	}
	if err := s.opt.enableScheduler(lm); err != nil {
		s.opt.Logger.Warn("no generation scheduler on the swapped-in model: one generation at a time", "err", err)
	}
	next := &served{lm: lm, name: name, revision: old.revision + 1, created: s.opt.Now().Unix()}
	s.cur.Store(next)
	s.opt.Logger.Info("model swapped", "model", next.name, "revision", next.revision, "dir", lm.Dir)
	return next.revision
}

// Reload loads the checkpoint directory dir on the engine spec names (textpolicy.OpenLM) and
// swaps it in; on error the current model stays.
func (s *Server) Reload(ctx context.Context, spec engine.Spec, dir string) (int64, error) {
	lm, err := textpolicy.OpenLM(ctx, spec, dir)
	if err != nil {
		return 0, fmt.Errorf("serve: reload %s: %w", dir, err)
	}
	return s.Swap(lm), nil
}

// requestSeed is the seed of a request: its own, or the next one of the server's stream.
func (s *Server) requestSeed(p *int64) uint64 {
	if p != nil {
		return uint64(*p)
	}
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.Uint64()
}

func (s *Server) newID(prefix string) string {
	return fmt.Sprintf("%s-%016x", prefix, s.seq.Add(1))
}

// ---- models

func (s *Server) modelObject(c *served) modelObject {
	return modelObject{ID: c.name, Object: "model", Created: c.created, OwnedBy: "t2t", MaxModelLen: c.lm.MaxContext(), Revision: c.revision}
}

func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	c := s.cur.Load()
	writeJSON(w, http.StatusOK, modelList{Object: "list", Data: append([]modelObject{s.modelObject(c)}, s.adapterObjects(c)...)})
}

func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	c := s.cur.Load()
	id := r.PathValue("id")
	if id == c.name {
		writeJSON(w, http.StatusOK, s.modelObject(c))
		return
	}
	for _, o := range s.adapterObjects(c) {
		if o.ID == id {
			writeJSON(w, http.StatusOK, o)
			return
		}
	}
	writeModelNotFound(w, id)
}

// ---- errors and JSON

// reqError is a request error to answer with the OpenAI error shape.
type reqError struct {
	status int
	typ    string // invalid_request_error, not_found_error, server_error
	param  string
	code   string
	msg    string
}

func (e *reqError) Error() string { return e.msg }

func badRequest(param, format string, args ...any) *reqError {
	return &reqError{http.StatusBadRequest, "invalid_request_error", param, "invalid_value", fmt.Sprintf(format, args...)}
}

func unprocessable(param, code, format string, args ...any) *reqError {
	return &reqError{http.StatusUnprocessableEntity, "invalid_request_error", param, code, fmt.Sprintf(format, args...)}
}

func modelNotFound(id string) *reqError {
	return &reqError{http.StatusNotFound, "invalid_request_error", "model", "model_not_found",
		fmt.Sprintf("The model %q does not exist", id)}
}

func writeModelNotFound(w http.ResponseWriter, id string) { writeReqError(w, modelNotFound(id)) }

func writeReqError(w http.ResponseWriter, e *reqError) {
	writeError(w, e.status, e.typ, e.param, e.code, e.msg)
}

func writeError(w http.ResponseWriter, status int, typ, param, code, msg string) {
	body := apiError{Error: apiErrorBody{Message: msg, Type: typ}}
	if param != "" {
		body.Error.Param = &param
	}
	if code != "" {
		body.Error.Code = &code
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"encoding the response failed","type":"server_error","param":null,"code":null}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// decodeBody reads a JSON request body into v (whatever its Content-Type says): a body that is not JSON, or a field of the
// wrong type, is a 400 naming the field.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) *reqError {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opt.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &reqError{http.StatusRequestEntityTooLarge, "invalid_request_error", "", "request_too_large", fmt.Sprintf("request body exceeds %d bytes", mbe.Limit)}
		}
		return badRequest("", "reading the request body: %v", err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := strings.TrimPrefix(te.Field, "samplingParams.")
			return badRequest(field, "%s: want %s, got JSON %s", field, te.Type, te.Value)
		}
		return badRequest("", "the request body is not valid JSON: %v", err)
	}
	return nil
}
