package safetensors

import "errors"

// ErrMalformed: a safetensors file or index is malformed.
var ErrMalformed = errors.New("safetensors: malformed file")
