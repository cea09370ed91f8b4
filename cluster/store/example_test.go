package store_test

import (
	"context"
	"fmt"

	"github.com/t2t-lab/t2t/cluster/store"
)

// An embedded store (no URL) counts each work unit once, however often it
// is delivered.
func Example() {
	ctx := context.Background()
	s, err := store.Open(ctx, store.Options{})
	if err != nil {
		panic(err)
	}
	defer s.Close()

	unit := store.UnitResult{
		RunID: "demo", Stage: 0, Split: "train", UnitID: "unit-1",
		Buckets: map[store.Key]store.Counts{
			{Size: 4, Agents: 2}: {Episodes: 8, Valid: 5, Optimal: 3,
				Categories: map[string]int64{store.CatConflict: 2, store.CatHole: 1}, RewardSum: 4.25},
		},
	}
	for range 2 { // a redelivery is not applied
		applied, err := s.RecordUnit(ctx, unit)
		fmt.Println("applied:", applied, err)
	}
	agg, _ := s.Aggregates(ctx, "demo", 0, "train")
	c := agg[store.Key{Size: 4, Agents: 2}]
	fmt.Printf("episodes %d valid %d optimal %d conflicts %d reward %.2f\n",
		c.Episodes, c.Valid, c.Optimal, c.Categories[store.CatConflict], c.RewardSum)
	// Output:
	// applied: true <nil>
	// applied: false <nil>
	// episodes 8 valid 5 optimal 3 conflicts 2 reward 4.25
}
