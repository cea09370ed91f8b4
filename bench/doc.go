// Package bench holds the benchmarks behind `t2t bench`: GRPO steps and batched KV-cache
// decoding of a Qwen3 model on either compute engine (learner/engine), and the simulated
// cluster of train.SimulateCluster.
//
// # Use
//
// GRPO and Decode time a model that is already built (any engine.Model); RunGRPO and RunDecode
// first resolve a Source (a preset shape with random weights, or a checkpoint directory),
// check that the memory estimate fits the machine, and build the model on Setup.Engine:
//
//	s := bench.Setup{Source: bench.Source{Preset: qwen3.PresetTiny, Seed: 1}, Engine: engine.Spec{Device: "cpu"}}
//	rep, err := bench.RunGRPO(ctx, s, bench.DefaultGRPOOptions())
//	…
//	rep.WriteText(os.Stdout, "t2t bench grpo") // or encode rep as JSON
//
// The reports are plain structs whose JSON is the --json output of t2t bench; WriteText
// renders the table. The model FLOPs come from qwen3.Config.TrainFLOPsPerToken, the padded
// shapes from learner.GRPOConfig.PaddedShape, the warm-up length from qwen3.WarmupTokens.
// Cluster runs the cluster simulation and writes its tables.
//
// # Concurrency
//
// The functions run one benchmark at a time on the calling goroutine; a model must not be
// used by anything else while it is benchmarked.
//
// # Errors
//
// Input problems are typed, for the caller to map: an option out of range, a positional
// budget exceeded or an unknown profile is a *fielderr.Error naming the field as
// "<Options type>.<Field>" (qwen3's for a bad preset or shape override); a checkpoint or an
// engine that fails to load is an *OpenError; a CPU run whose estimate exceeds the memory
// available is a *MemoryError (ErrNotEnoughMemory). Failures while timing are returned as they
// come, wrapped with what was running.
package bench
