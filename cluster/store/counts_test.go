package store

import "testing"

func TestCountsAdd(t *testing.T) {
	var sum Counts
	a := Counts{Episodes: 4, Valid: 2, Optimal: 1, RewardSum: 1.5, Categories: map[string]int64{CatConflict: 2}}
	b := Counts{Episodes: 3, Valid: 3, Optimal: 3, RewardSum: 3}
	c := Counts{Episodes: 2, Categories: map[string]int64{CatConflict: 1, CatHole: 1}}
	for _, x := range []Counts{a, b, c} {
		sum = sum.Add(x)
	}
	if sum.Episodes != 9 || sum.Valid != 5 || sum.Optimal != 4 || sum.RewardSum != 4.5 ||
		sum.Categories[CatConflict] != 3 || sum.Categories[CatHole] != 1 || len(sum.Categories) != 2 {
		t.Fatalf("sum %+v", sum)
	}
	if a.Categories[CatConflict] != 2 || len(c.Categories) != 2 {
		t.Fatal("Add changed an addend")
	}
}
