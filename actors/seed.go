package actors

import (
	"crypto/sha256"
	"encoding/binary"
)

// Seeds of a run. Every seed a work unit uses is derived here from the run
// seed, so that the coordinator (which issues units) and whichever node
// plays them agree without sending more than the unit's own seed:
//
//   - StageSeed: the generator seed of a stage's instances (env.Generate
//     over the stage config; a unit generates its index range [Lo, Hi));
//   - UnitSeed: the sampling seed of a unit (WorkUnit.Seed);
//   - ChunkSeed: the sampling seed of each chunk of a unit played a chunk
//     at a time (a rollout node that takes up newer policy versions);
//   - EvalSeed: the sampling seed of the evaluation after a stage.
//
// The values are part of a run's reproducibility (a deterministic run, a
// resumed run): never change them.

// golden is 2^64/φ, the splitmix64 increment.
const golden = 0x9e3779b97f4a7c15

// splitmix mixes k into seed (the splitmix64 finaliser over seed ^ k·golden).
func splitmix(seed, k uint64) uint64 {
	z := seed ^ k*golden
	z += golden
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// UnitSeed is the sampling seed of unit (its index in the stage) of stage.
func UnitSeed(seed uint64, stage, unit int) uint64 {
	return splitmix(seed^uint64(stage)<<40, uint64(unit))
}

// StageSeed is the generator seed of stage's instances: the first 8 bytes
// (little endian) of the SHA-256 of seed and stage, each 8 bytes little
// endian.
func StageSeed(seed uint64, stage int) uint64 {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(stage))
	s := sha256.Sum256(b[:])
	return binary.LittleEndian.Uint64(s[:8])
}

// ChunkSeed is the sampling seed of chunk c of a unit whose seed is
// unitSeed: the unit's own for chunk 0, so a unit played whole samples as
// one played in chunks starts.
func ChunkSeed(unitSeed uint64, c int) uint64 {
	if c == 0 {
		return unitSeed
	}
	return splitmix(unitSeed, uint64(c))
}

// EvalSeed is the sampling seed of the evaluation after stage (stage -1:
// the initial policy's, before the first stage).
func EvalSeed(seed uint64, stage int) uint64 { return StageSeed(seed^0xe7a1, stage) }
