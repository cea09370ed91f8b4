package gomlxnet

import (
	"sync"
	"testing"

	"github.com/gomlx/gomlx/backends"

	"github.com/t2t-lab/t2t/learner/gomlxtrain"
)

var (
	testBackendOnce sync.Once
	testBackendVal  backends.Backend
	testBackendErr  error
)

// testBackend is one pure-Go backend shared by the package's tests.
func testBackend(t testing.TB) backends.Backend {
	t.Helper()
	testBackendOnce.Do(func() { testBackendVal, testBackendErr = gomlxtrain.NewBackend("cpu") })
	if testBackendErr != nil {
		t.Fatal(testBackendErr)
	}
	return testBackendVal
}
