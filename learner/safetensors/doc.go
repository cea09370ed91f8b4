// Package safetensors reads and writes the safetensors format (a JSON header of names, dtypes,
// shapes and byte ranges, then the raw little-endian data), single files and Hugging Face
// sharded directories (model.safetensors.index.json). A malformed file is an error wrapping
// ErrMalformed. File reads are safe for concurrent use; Set is not.
package safetensors
