package main

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchCluster runs the cluster simulation on a few rollout counts
// with the embedded Redis: a table per profile, where each saturates, and
// a well-formed SVG.
func TestBenchCluster(t *testing.T) {
	dir := t.TempDir()
	svg := filepath.Join(dir, "scaling.svg")
	var out, errb bytes.Buffer
	err := benchCluster([]string{"--rollouts", "1,2,8", "--record-units", "20", "--profiles", "gridnet,gridnet-unpaced",
		"--svg", svg, "--json", filepath.Join(dir, "points.json")}, &out, &errb)
	if err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	t.Logf("\n%s", out.String())
	for _, want := range []string{"Redis RecordUnit", "profile gridnet:", "profile gridnet-unpaced:",
		"saturates at R=2", "bound by the learner"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b, new(struct{})); err != nil || strings.Count(string(b), "<polyline") != 2 {
		t.Fatalf("svg: %v\n%s", err, b)
	}
	if err := benchCluster([]string{"--rollouts", "0"}, &out, &errb); err == nil {
		t.Fatal("--rollouts 0 accepted")
	}
	if err := benchCluster([]string{"--profiles", "nope"}, &out, &errb); err == nil {
		t.Fatal("unknown profile accepted")
	}
}
