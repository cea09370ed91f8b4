// Package env is the MAPF-FrozenLake testbed: instances on square grids with
// holes, the generator configuration that the environment engineer edits, a
// seeded generator, an optimal Conflict-Based Search solver, prompt rendering,
// the plan grammar and its parser, the paper's eight-check verifier, the
// reward, step-wise simulation, benchmark suites and human renderings.
//
// The package is pure: it starts no goroutines, does no I/O, reads no clock
// and uses no global randomness. Randomness comes from a *rand.Rand built
// with rand.NewPCG(seed, stream) from math/rand/v2, so the same seed gives the
// same instances on every machine. All functions are safe for concurrent use
// on distinct values; hot paths (verification, simulation steps, the solver's
// inner loop) take caller-owned scratch buffers and do not allocate.
//
// Conventions: positions are (row, column) with row 0 at the top and column 0
// at the left; UP decreases the row, DOWN increases it, LEFT decreases the
// column, RIGHT increases it. Time is discrete; a path lists an agent's cell
// at t = 0, 1, ..., T. An agent's cost is the first time after which it stays
// on its goal for good; the sum of costs (SOC) and the makespan (the largest
// cost) are the two objectives.
//
// Instance files are JSONL, one instance per non-blank line. ReadRecords
// reads one Record per line (its file line, and the instance or why the line
// is not one), so a batch can go on past a bad line (SolveRecords,
// EncodeRecords) and every message names a file line. An instance's id is
// its content hash (ComputeID) or a user's own name; whatever keys by
// content uses ComputeID.
//
// Errors are typed: see errors.go for the sentinel errors and the error
// types that carry the field, line or agent they refer to.
package env
