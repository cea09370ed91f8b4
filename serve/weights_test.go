package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/serve"
)

// SGLang's weight update over real HTTP: a checkpoint directory replaces the weights under the
// same model id (the answer and the samples become those of a server started on it), a
// directory that does not load or holds another architecture is a 400 {"success": false} that
// keeps the model, and a server without a loader answers 404.
func TestUpdateWeightsFromDisk(t *testing.T) {
	seed := srvTestSeed(t)
	lm, other := srvCheckpoint(t, seed), srvCheckpoint(t, seed+1)
	wide := srvCheckpointOf(t, seed, func(c *hfmodel.Config) { c.IntermediateSize *= 2 })
	load := func(_ context.Context, dir string) (*textpolicy.LM, error) { return loadTestLM(dir) }
	_, hs, c := srvStart(t, lm, serve.Options{ModelName: "base", LoadWeights: load})
	_, _, rc := srvStart(t, other, serve.Options{ModelName: "base"})
	ctx := context.Background()
	sample := func(c openai.Client) []float64 {
		t.Helper()
		res, err := c.Chat.Completions.New(ctx, srvChatParams("base", 5))
		if err != nil {
			t.Fatal(err)
		}
		var lps []float64
		for _, ch := range res.Choices {
			for _, e := range ch.Logprobs.Content {
				lps = append(lps, e.Logprob)
			}
		}
		return lps
	}
	update := func(body string) (int, map[string]any) {
		t.Helper()
		code, b := srvPostKey(t, hs.URL+"/update_weights_from_disk", "", body)
		var ans map[string]any
		if err := json.Unmarshal([]byte(b), &ans); err != nil {
			t.Fatalf("answer %d %q: %v", code, b, err)
		}
		return code, ans
	}
	before, want := sample(c), sample(rc)
	if slices.Equal(before, want) {
		t.Fatal("the two checkpoints sample alike: the test could not tell them apart")
	}
	for _, bad := range []string{`{"model_path": ` + string(mustJSON(filepath.Join(t.TempDir(), "missing"))) + `}`,
		`{"model_path": ` + string(mustJSON(wide.Dir)) + `}`, `{}`, `{"model_path": 3}`} {
		code, ans := update(bad)
		if code != http.StatusBadRequest || ans["success"] != false || ans["message"] == "" {
			t.Fatalf("%s: %d %v", bad, code, ans)
		}
		if got := sample(c); !slices.Equal(got, before) {
			t.Fatalf("%s changed the model", bad)
		}
	}
	code, ans := update(`{"model_path": ` + string(mustJSON(other.Dir)) + `, "load_format": null, "abort_all_requests": false}`)
	if code != http.StatusOK || ans["success"] != true || ans["message"] != "Succeeded to update model weights." || ans["num_paused_requests"] != 0.0 {
		t.Fatalf("update: %d %v", code, ans)
	}
	if got := sample(c); !slices.Equal(got, want) {
		t.Fatalf("after the update the server samples %v, a server on the new checkpoint %v", got, want)
	}
	models, err := c.Models.List(ctx)
	if err != nil || len(models.Data) != 1 || models.Data[0].ID != "base" {
		t.Fatalf("models after the update: %+v, %v", models, err)
	}
	_, plain, _ := srvStart(t, srvCheckpoint(t, seed+2), serve.Options{})
	if code, body := srvPostKey(t, plain.URL+"/update_weights_from_disk", "", `{"model_path": "/x"}`); code != http.StatusNotFound {
		t.Fatalf("without a loader: %d %s", code, body)
	}
}
