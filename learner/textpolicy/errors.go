package textpolicy

import (
	"errors"
	"fmt"
)

// Sentinel errors of the package; match them with errors.Is.
var (
	// ErrOptions: Options or ClientOptions failed validation: a *fielderr.Error naming the
	// option wraps it.
	ErrOptions = errors.New("textpolicy: invalid options")
	// ErrTokenizer: a model directory's tokenizer is missing or does not fit the model.
	ErrTokenizer = errors.New("textpolicy: tokenizer")
	// ErrNotTrainable: Update was called on a policy that cannot learn (a Client: the weights
	// live behind the endpoint).
	ErrNotTrainable = errors.New("textpolicy: policy cannot be trained here")
	// ErrNoLogProbs: training needs per-token ids and log-probs and the endpoint returned none
	// (see *LogProbsError).
	ErrNoLogProbs = errors.New("textpolicy: endpoint returned no token log-probs")
	// ErrEndpoint: a call to an OpenAI-compatible endpoint failed after its retries (see
	// *EndpointError).
	ErrEndpoint = errors.New("textpolicy: endpoint call failed")
)

// LogProbsError reports a completion without the token ids and log-probs that training
// needs: the server ignored "logprobs" or cannot return token ids (vLLM's
// return_tokens_as_token_ids).
type LogProbsError struct {
	Model    string
	Instance string // instance id of the prompt
	Reason   string
}

func (e *LogProbsError) Error() string {
	return fmt.Sprintf("textpolicy: model %s, instance %s: %s", e.Model, e.Instance, e.Reason)
}

// Unwrap returns ErrNoLogProbs.
func (e *LogProbsError) Unwrap() error { return ErrNoLogProbs }

// EndpointError is the last failure of a call to an OpenAI-compatible endpoint, after every
// retry: an HTTP status (StatusCode > 0, with the server's error message) or a transport error
// (Err).
type EndpointError struct {
	URL        string
	StatusCode int    // 0 for a transport error
	Message    string // the server's error message, if any
	Attempts   int
	Err        error // transport error or context error, if any
}

func (e *EndpointError) Error() string {
	if e.StatusCode > 0 {
		return fmt.Sprintf("textpolicy: POST %s: HTTP %d after %d attempt(s): %s", e.URL, e.StatusCode, e.Attempts, e.Message)
	}
	return fmt.Sprintf("textpolicy: POST %s failed after %d attempt(s): %v", e.URL, e.Attempts, e.Err)
}

// Unwrap returns ErrEndpoint and the transport error.
func (e *EndpointError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrEndpoint, e.Err}
	}
	return []error{ErrEndpoint}
}
