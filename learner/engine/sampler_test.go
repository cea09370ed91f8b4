package engine

import (
	"slices"
	"testing"
)

func TestTopKIndices(t *testing.T) {
	if got := topKIndices([]float64{1, 3, 3, 2, 0}, 3, nil); len(got) != 3 || !slices.Contains(got, 1) || !slices.Contains(got, 2) || !slices.Contains(got, 3) {
		t.Errorf("topKIndices = %v", got)
	}
}
