package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
)

// storeBenchUnit is a typical unit: 4 buckets with all counters set and 2
// failure examples.
func storeBenchUnit(run, id string) UnitResult {
	u := UnitResult{RunID: run, Stage: 0, Split: "train", UnitID: id, Buckets: map[Key]Counts{}, PolicyVersion: 1, ConfigVersion: "c"}
	cats := map[string]int64{}
	for _, c := range CategoryNames() {
		cats[c] = 1
	}
	for s := 3; s < 7; s++ {
		u.Buckets[Key{s, 2}] = Counts{Episodes: 16, Valid: 7, Optimal: 5, Categories: cats, RewardSum: 6.25}
	}
	for i := range 2 {
		u.Examples = append(u.Examples, Example{InstanceID: fmt.Sprintf("i%d", i), Size: 5, Agents: 2, Category: CatConflict,
			Detail: "vertex conflict at (2,3) t=4", Answer: "Agent 0: RIGHT RIGHT DOWN\nAgent 1: UP LEFT WAIT UP"})
	}
	return u
}

func storeBenchRecord(b *testing.B, s *Store) {
	ctx := context.Background()
	run := fmt.Sprintf("bench%d", rand.Uint32())
	var seq atomic.Int64
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if ok, err := s.RecordUnit(ctx, storeBenchUnit(run, fmt.Sprint("s", seq.Add(1)))); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if ok, err := s.RecordUnit(ctx, storeBenchUnit(run, fmt.Sprint("p", seq.Add(1)))); !ok || err != nil {
					b.Error(ok, err)
					return
				}
			}
		})
	})
	b.Run("duplicate", func(b *testing.B) {
		u := storeBenchUnit(run, "dup")
		_, _ = s.RecordUnit(ctx, u)
		b.ReportAllocs()
		for b.Loop() {
			if ok, err := s.RecordUnit(ctx, u); ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
}

func BenchmarkRecordUnit(b *testing.B) {
	b.Run("miniredis", func(b *testing.B) {
		s, err := Open(context.Background(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		storeBenchRecord(b, s)
	})
	b.Run("redis", func(b *testing.B) {
		srv := storeStartRedis(b)
		s, err := Open(context.Background(), Options{URL: srv.url()})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		storeBenchRecord(b, s)
	})
}
