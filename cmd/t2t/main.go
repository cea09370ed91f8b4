// Command t2t trains LLM agents with reinforcement learning on the
// MAPF-FrozenLake testbed, with an environment engineer that designs each
// next training stage. Run "t2t help" for the subcommands.
package main

import (
	"fmt"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fmt.Fprintln(os.Stderr, "t2t: no subcommands yet")
	return 2
}
