package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/textpolicy"
)

// LoRA adapters served by name, as vLLM's runtime adapter API (vLLM ≥ 0.6.1 with
// VLLM_ALLOW_RUNTIME_LORA_UPDATING=True; the request and answer shapes of vLLM 0.10):
//
//	POST /v1/load_lora_adapter    {"lora_name": N, "lora_path": DIR}  → 200 text, 400
//	POST /v1/unload_lora_adapter  {"lora_name": N}                    → 200 text, 404
//	GET  /v1/models               the base model, then each adapter (root = DIR, parent = base)
//
// A load reads and checks the adapter's files once, outside the generation slot and within
// adapterReadTimeout (hfmodel.ReadAdapter: regular files only, so a FIFO never stalls the
// server; the header bounded by what the model's adapter can hold, before the body is read;
// finite values and scale), and holds it in memory: changes on disk later change nothing
// until it is loaded again. A load whose client went away while it waited is dropped.
//
// A completion whose "model" is N samples through adapter N. The model holds one adapter at a
// time: inside the generation slot, before a request that names another adapter (or the base
// model) than the one attached, the server detaches it and attaches the other from memory
// (qwen3.Model.UnloadAdapter, AttachAdapter). That swap drops the compiled graphs, so the
// first generation after it compiles again; requests grouped by adapter avoid it.

// adapter is a LoRA adapter loaded through /v1/load_lora_adapter.
type adapter struct {
	name    string
	path    string // absolute
	created int64
	data    *hfmodel.Adapter // read and checked at load; nil for an engine that reads path itself
}

// adapterReadTimeout bounds reading and checking an adapter's files at load.
const adapterReadTimeout = time.Minute

// adapterAttacher is a model that attaches an adapter held in memory (qwen3.Model).
type adapterAttacher interface {
	AttachAdapter(*hfmodel.Adapter) error
}

// adapterSwapper is a model that replaces the attached adapter's values in place when the
// other has the same shapes and scale (qwen3.Model.SwapAdapter): no recompilation, flat memory.
type adapterSwapper interface {
	SwapAdapter(*hfmodel.Adapter) (bool, error)
}

// loraRequest is the body of /v1/load_lora_adapter and /v1/unload_lora_adapter.
type loraRequest struct {
	LoraName string `json:"lora_name"`
	LoraPath string `json:"lora_path"`
}

// errOwnAdapters: the served model carries adapters the server did not attach (a model a
// learner trains with LoRA in the same process).
var errOwnAdapters = errors.New("the served model carries its own LoRA adapters (trained in this process): it cannot take others")

// resolveModel returns the adapter a request's model names (nil: the base model, or no model
// given) and the model id its answer carries.
func (s *Server) resolveModel(c *served, model string) (*adapter, string, *reqError) {
	if model == "" || model == c.name {
		return nil, c.name, nil
	}
	s.adMu.Lock()
	defer s.adMu.Unlock()
	for _, ad := range s.adapters {
		if ad.name == model {
			return ad, ad.name, nil
		}
	}
	return nil, "", modelNotFound(model)
}

// adapterUse returns a genJob.use that attaches ad (nil: none) to lm.
func (s *Server) adapterUse(lm *textpolicy.LM, ad *adapter) func() error {
	return func() error { return s.activate(lm, ad) }
}

// activate makes ad (nil: no adapter, the base weights) the adapter attached to lm, detaching
// another one first. It runs inside the generation slot only (the gate admits one at a time),
// so no generation runs on lm meanwhile. A model swapped in (Swap) starts with none attached
// by the server.
func (s *Server) activate(lm *textpolicy.LM, ad *adapter) error {
	s.activeMu.Lock()
	defer s.activeMu.Unlock()
	if s.activeLM != lm {
		s.activeLM, s.activeAd = lm, nil
	}
	if s.activeAd == ad {
		return nil
	}
	un, ok := lm.Model.(engine.AdapterUnloader)
	if !ok {
		return fmt.Errorf("the %s engine cannot swap LoRA adapters", lm.Model.Engine())
	}
	return lm.Exclusive(func() error {
		if sw, ok := lm.Model.(adapterSwapper); ok && s.activeAd != nil && ad != nil && ad.data != nil {
			done, err := sw.SwapAdapter(ad.data)
			if err != nil { // partly swapped: detach what is there
				s.activeAd = nil
				return errors.Join(err, un.UnloadAdapter())
			}
			if done {
				s.activeAd = ad
				return nil
			}
		}
		if s.activeAd != nil {
			if err := un.UnloadAdapter(); err != nil {
				return err
			}
			s.activeAd = nil
		}
		if ad == nil {
			return nil
		}
		if _, own := lm.Model.LoRA(); own {
			return errOwnAdapters
		}
		var err error
		if at, ok := lm.Model.(adapterAttacher); ok && ad.data != nil {
			err = at.AttachAdapter(ad.data)
		} else {
			err = lm.Model.LoadAdapter(ad.path)
		}
		if err != nil {
			return err
		}
		s.activeAd = ad
		return nil
	})
}

func (s *Server) handleLoadLoRA(w http.ResponseWriter, r *http.Request) {
	var req loraRequest
	if rerr := s.decodeBody(w, r, &req); rerr != nil {
		writeReqError(w, rerr)
		return
	}
	if req.LoraName == "" || req.LoraPath == "" {
		writeReqError(w, badRequest("", "Both 'lora_name' and 'lora_path' must be provided."))
		return
	}
	c := s.cur.Load()
	if req.LoraName == c.name || s.hasAdapter(req.LoraName) {
		writeReqError(w, badRequest("lora_name", "The lora adapter '%s' has already been loaded.", req.LoraName))
		return
	}
	path, err := filepath.Abs(req.LoraPath)
	if err != nil {
		writeReqError(w, badRequest("lora_path", "lora_path %q: %v", req.LoraPath, err))
		return
	}
	ad := &adapter{name: req.LoraName, path: path, created: s.opt.Now().Unix()}
	log := s.opt.Logger.With("lora_name", ad.name, "lora_path", path)
	if _, ok := c.lm.Model.(adapterAttacher); ok {
		data, err := readAdapter(r.Context(), path, c.lm.Model.Config())
		if err != nil {
			log.Warn("adapter load failed", "err", fileErrText(err))
			writeReqError(w, badRequest("lora_path", "Loading lora %s failed: %s", ad.name, fileErrText(err)))
			return
		}
		ad.data = data
	}
	// Attaching runs in the generation slot, with a zero memory estimate (an adapter is small
	// next to a generation's KV cache), and alone: its key is the new adapter, which no running
	// request has.
	release, ok := s.admit(w, r, &genJob{lm: c.lm, key: ad}, log)
	if !ok {
		return
	}
	defer release()
	if r.Context().Err() != nil { // the client left while the load waited: drop it
		log.Warn("adapter load dropped: the client went away")
		return
	}
	s.adMu.Lock()
	defer s.adMu.Unlock()
	if slices.ContainsFunc(s.adapters, func(a *adapter) bool { return a.name == ad.name }) {
		writeReqError(w, badRequest("lora_name", "The lora adapter '%s' has already been loaded.", ad.name))
		return
	}
	if err := s.activate(c.lm, ad); err != nil {
		log.Warn("adapter load failed", "err", fileErrText(err))
		writeReqError(w, badRequest("lora_path", "Loading lora %s failed: %s", ad.name, fileErrText(err)))
		return
	}
	s.adapters = append(s.adapters, ad)
	log.Info("adapter loaded")
	writeText(w, fmt.Sprintf("Success: LoRA adapter '%s' added successfully.", ad.name))
}

func (s *Server) handleUnloadLoRA(w http.ResponseWriter, r *http.Request) {
	var req loraRequest
	if rerr := s.decodeBody(w, r, &req); rerr != nil {
		writeReqError(w, rerr)
		return
	}
	if req.LoraName == "" {
		writeReqError(w, badRequest("lora_name", "'lora_name' needs to be provided to unload a LoRA adapter."))
		return
	}
	s.adMu.Lock()
	k := slices.IndexFunc(s.adapters, func(a *adapter) bool { return a.name == req.LoraName })
	if k >= 0 {
		s.adapters = slices.Delete(s.adapters, k, k+1)
	}
	s.adMu.Unlock()
	if k < 0 {
		writeReqError(w, &reqError{http.StatusNotFound, "not_found_error", "lora_name", "lora_not_found",
			fmt.Sprintf("The lora adapter '%s' cannot be found.", req.LoraName)})
		return
	}
	s.opt.Logger.Info("adapter unloaded", "lora_name", req.LoraName)
	writeText(w, fmt.Sprintf("Success: LoRA adapter '%s' removed successfully.", req.LoraName))
}

// readAdapter reads and checks the adapter in dir for a model of configuration cfg
// (hfmodel.ReadAdapter) outside the generation slot; it gives up when ctx ends or after
// adapterReadTimeout (the read goes on in the background and its result is dropped).
func readAdapter(ctx context.Context, dir string, cfg hfmodel.Config) (*hfmodel.Adapter, error) {
	ctx, cancel := context.WithTimeout(ctx, adapterReadTimeout)
	defer cancel()
	type result struct {
		ad  *hfmodel.Adapter
		err error
	}
	done := make(chan result, 1)
	go func() {
		ad, err := hfmodel.ReadAdapter(dir, cfg)
		done <- result{ad, err}
	}()
	select {
	case res := <-done:
		return res.ad, res.err
	case <-ctx.Done():
		return nil, fmt.Errorf("reading %s: %w", dir, ctx.Err())
	}
}

func (s *Server) hasAdapter(name string) bool {
	s.adMu.Lock()
	defer s.adMu.Unlock()
	return slices.ContainsFunc(s.adapters, func(a *adapter) bool { return a.name == name })
}

// adapterObjects lists the loaded adapters as vLLM does: id = lora_name, root = its
// directory, parent = the base model.
func (s *Server) adapterObjects(c *served) []modelObject {
	s.adMu.Lock()
	defer s.adMu.Unlock()
	out := make([]modelObject, 0, len(s.adapters))
	for _, ad := range s.adapters {
		o := s.modelObject(c)
		o.ID, o.Created, o.Root, o.Parent = ad.name, ad.created, ad.path, &c.name
		out = append(out, o)
	}
	return out
}

// writeText answers 200 with a plain-text body (vLLM's answer to adapter loads and unloads).
func writeText(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(strings.TrimSpace(msg)))
}
