// Package testutil holds helpers shared by the tests of several packages. Only _test.go files
// import it.
//
// # Golden files
//
// Golden compares a test's output with a file under testdata/ and, when the tests run with the
// one rewrite flag -update, writes the output there instead:
//
//	testutil.Golden(t, filepath.Join("testdata", "eval.md.golden"), []byte(got))
//
//	go test ./report/ -update   # accept the new output, then review the diff
//
// GoldenCompare does the same with a comparison of the caller's (for files whose bytes may
// differ while their meaning does not, such as PNG images). -update is registered once, here,
// for every test binary that imports the package.
//
// # Goroutine leaks
//
// Packages whose code starts goroutines check for leaks in their TestMain with
// go.uber.org/goleak. IgnoreProtoactor lists the third-party goroutines that protoactor-go
// leaves behind, for the packages that run protoactor nodes:
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(m, testutil.IgnoreProtoactor()...) }
package testutil
