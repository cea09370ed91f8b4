package hfmodel

import (
	"errors"
	"os"
	"path/filepath"
)

// CopyTokenizerFiles copies the TokenizerFiles that exist in src into dst (each atomically),
// as Save does for the directory a model was loaded from. Nothing is copied when src is empty
// or is dst.
func CopyTokenizerFiles(src, dst string) error {
	if src == "" || SameDir(src, dst) {
		return nil
	}
	for _, f := range TokenizerFiles {
		p := filepath.Join(src, f)
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := CopyFile(p, filepath.Join(dst, f)); err != nil {
			return err
		}
	}
	return nil
}
func SameDir(a, b string) bool {
	ia, err1 := os.Stat(a)
	ib, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(ia, ib)
}
