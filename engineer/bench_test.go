package engineer

import (
	"context"
	"testing"
)

func BenchmarkBuildPromptFGHT(b *testing.B) {
	h := engHandHistory()
	m := Modules{F: true, G: true, H: true, HistoryNoRound0: true, T: true}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := BuildPrompt(h, m, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseAnswer(b *testing.B) {
	ans := "<think>" + string(make([]byte, 4000)) + "</think>\nHere is the config:\n```json\n" + engAnswerText("r", engGoodConfig()) + "\n```\n"
	b.SetBytes(int64(len(ans)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseAnswer(ans); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLearnabilityPropose(b *testing.B) {
	h := engHandHistory()
	l, _ := NewLearnability(Options{})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Propose(context.Background(), h); err != nil {
			b.Fatal(err)
		}
	}
}
