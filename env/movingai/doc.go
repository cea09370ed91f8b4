// Package movingai reads and writes the MovingAI MAPF benchmark formats
// (Sturtevant 2012, movingai.com/benchmarks/mapf) that MAPF researchers
// share instances in, and converts them to and from t2t instances.
//
// A .map file is a header ("type octile", "height N", "width N", "map")
// and the grid rows: '.' and 'G' free, '@', 'O', 'T', 'S' and 'W' blocked
// (t2t has no terrain that only some moves may enter, so swamp and water
// are holes). A .scen file is "version 1" and one agent per line: bucket,
// map file, map width, map height, start x, start y, goal x, goal y and the
// optimal length; x is the column and y the row.
//
// Use ReadMap/ParseMap and ReadScen/ParseScen to parse, Import to group
// scen rows into k-agent instances (consecutive groups of k rows), and
// Export to write instances back as .map/.scen files; ImportCommand and
// ExportCommand are the `t2t env import` and `t2t env export` subcommands.
//
// A scen row's optimal length is octile (8-connected, diagonals √2): with
// t2t's 4-connected moves it is only a lower bound, so Import uses it only
// to check that the scen belongs to the map, never as a cost; Export
// writes our own 4-connected shortest length in that column.
//
// The package imports env, internal/limits and internal/fielderr of t2t; it starts no
// goroutines, and its functions are safe for concurrent use on distinct
// values. Errors about the input are *fielderr.Error (file, line and reason)
// wrapping one of the sentinel errors in errors.go.
package movingai
