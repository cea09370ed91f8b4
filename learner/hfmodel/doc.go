// Package hfmodel describes a Hugging Face Qwen3 checkpoint without computing anything: its
// config.json (Config, LoadConfig, presets "tiny", "0.6b-shape", "4b-shape" and Shape
// overrides), its tensor names and shapes (WeightSpecs), random initialisation and writing a
// checkpoint directory (InitRandom, WriteRandomCheckpoint, Init), inspection (Inspect), PEFT LoRA
// adapter configs (LoRAConfig), and the arithmetic of FLOPs and memory (EstimateMemory,
// GenerateMemory). Both compute engines (learner/qwen3 on GoMLX and learner/torch) build on it;
// it imports no tensor library.
package hfmodel
