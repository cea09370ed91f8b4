package serve

import (
	"fmt"
	"net/http"
	"path/filepath"
	"time"
)

// Weights replaced from disk, as SGLang's POST /update_weights_from_disk (SGLang ≥ 0.4.0, the
// shapes of its http_server), so a t2t serve also stands in for SGLang as a rollout engine:
//
//	POST /update_weights_from_disk {"model_path": DIR}
//	  → 200 {"success": true, "message": "…", "num_paused_requests": 0}
//	  → 400 {"success": false, "message": "…"}: DIR did not load, or holds another architecture;
//	    the model being served is kept
//
// DIR is loaded as a new model (Options.LoadWeights) and swapped in under the same model id
// (SGLang keeps its served name): requests already running finish on the previous model, later
// ones run on DIR's weights. LoRA adapters loaded by name stay loaded and attach to the new
// weights. Other fields SGLang takes (load_format, abort_all_requests, weight_version, …) are
// accepted and ignored. Without Options.LoadWeights (t2t node's endpoint, which serves the model
// it trains) the route answers 404.

// weightsRequest is the body of /update_weights_from_disk.
type weightsRequest struct {
	ModelPath string `json:"model_path"`
}

// weightsAnswer is SGLang's answer to /update_weights_from_disk.
type weightsAnswer struct {
	Success           bool   `json:"success"`
	Message           string `json:"message"`
	NumPausedRequests int    `json:"num_paused_requests"`
}

func (s *Server) handleUpdateWeights(w http.ResponseWriter, r *http.Request) {
	if s.opt.LoadWeights == nil {
		writeError(w, http.StatusNotFound, "not_found_error", "", "not_found", "this server does not replace its weights (its model is trained in this process)")
		return
	}
	var req weightsRequest
	if rerr := s.decodeBody(w, r, &req); rerr != nil {
		writeJSON(w, rerr.status, weightsAnswer{Message: rerr.msg})
		return
	}
	if req.ModelPath == "" {
		writeJSON(w, http.StatusBadRequest, weightsAnswer{Message: "model_path must be provided"})
		return
	}
	dir, err := filepath.Abs(req.ModelPath)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, weightsAnswer{Message: fmt.Sprintf("model_path %q: %v", req.ModelPath, err)})
		return
	}
	s.updMu.Lock()
	defer s.updMu.Unlock()
	if r.Context().Err() != nil { // the client left while the update waited: drop it
		s.opt.Logger.Warn("weights update dropped: the client went away", "model_path", dir)
		return
	}
	t0 := time.Now()
	log := s.opt.Logger.With("model_path", dir)
	lm, err := s.opt.LoadWeights(r.Context(), dir)
	if err != nil {
		log.Warn("weights update failed", "err", fileErrText(err))
		writeJSON(w, http.StatusBadRequest, weightsAnswer{Message: fmt.Sprintf("Failed to load %s: %s", dir, fileErrText(err))})
		return
	}
	old := s.cur.Load()
	if !lm.Model.Config().SameArchitecture(old.lm.Model.Config()) {
		_ = lm.Close()
		log.Warn("weights update failed", "err", "another architecture")
		writeJSON(w, http.StatusBadRequest, weightsAnswer{Message: fmt.Sprintf("Failed to load %s: its config.json describes another architecture than the model served", dir)})
		return
	}
	rev := s.swap(lm, old.name)
	go func() { _ = old.lm.Close() }()
	log.Info("weights updated from disk", "model", old.name, "revision", rev, "ms", time.Since(t0).Milliseconds())
	writeJSON(w, http.StatusOK, weightsAnswer{Success: true, Message: "Succeeded to update model weights."})
}
