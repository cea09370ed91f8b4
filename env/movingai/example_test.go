package movingai_test

import (
	"fmt"
	"strings"

	"github.com/t2t-lab/t2t/env/movingai"
)

// Two scen rows on a 4×4 map become one 2-agent instance; x is the column,
// so the first agent starts at row 0, column 1. Exported back, the scen's
// last column is our 4-connected lengths (4 and 5), not the octile ones
// (2.83 and 4.41).
func ExampleImport() {
	m, err := movingai.ParseMap([]byte("type octile\nheight 4\nwidth 4\nmap\n....\n@...\n....\n..T.\n"), "small.map")
	if err != nil {
		panic(err)
	}
	rows, err := movingai.ParseScen([]byte("version 1\n"+
		"0\tsmall.map\t4\t4\t1\t0\t3\t2\t2.82842712\n"+
		"1\tsmall.map\t4\t4\t0\t3\t0\t0\t4.41421356\n"), "small.scen")
	if err != nil {
		panic(err)
	}
	ins, err := movingai.Import(m, rows, movingai.ImportOptions{Agents: 2})
	if err != nil {
		panic(err)
	}
	in := ins[0]
	fmt.Println(strings.Join(in.GridRows(), "\n"))
	fmt.Println(in.Agents)
	files, err := movingai.Export(ins, "example")
	if err != nil {
		panic(err)
	}
	fmt.Print(string(files[1].Data))
	// Output:
	// ....
	// H...
	// ....
	// ..H.
	// [{(0,1) (2,3)} {(3,0) (0,0)}]
	// version 1
	// 1	t2t-4x4-fdc314f00477.map	4	4	1	0	3	2	4
	// 1	t2t-4x4-fdc314f00477.map	4	4	0	3	0	0	5
}
