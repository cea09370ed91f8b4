package store

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits on identifiers and text.
const (
	// MaxIDLen bounds run ids, suite names, versions and phases.
	MaxIDLen = 128
	// MaxUnitIDLen bounds work-unit ids.
	MaxUnitIDLen = 256
	// MaxExampleText is the size in bytes to which Example.Answer and
	// Example.Detail are truncated (on a UTF-8 boundary).
	MaxExampleText = 2048
	// MaxRecordText bounds every free-text field of config, audit and
	// checkpoint records; longer input is rejected with ErrInvalid.
	MaxRecordText = 1 << 20
)

func isIDByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_'
}

func invalid(field string, value any, reason string) error {
	return fmt.Errorf("%w: %s = %v: %s", ErrInvalid, field, value, reason)
}

// checkID accepts 1..MaxIDLen bytes of letters, digits and ".-_".
func checkID(field, v string) error {
	if v == "" {
		return invalid(field, `""`, "must not be empty")
	}
	if len(v) > MaxIDLen {
		return invalid(field, fmt.Sprintf("%.16q...", v), fmt.Sprintf("longer than %d bytes", MaxIDLen))
	}
	for i := 0; i < len(v); i++ {
		if !isIDByte(v[i]) {
			return invalid(field, fmt.Sprintf("%q", v), `only letters, digits and ".-_" allowed`)
		}
	}
	return nil
}

func checkRun(runID string) error { return checkID("RunID", runID) }

func checkStage(stage int) error {
	if stage < 0 {
		return invalid("Stage", stage, "must be >= 0")
	}
	return nil
}

// checkSplit accepts "train", "val" and "eval:<suite>".
func checkSplit(split string) error {
	switch split {
	case SplitTrain, SplitVal:
		return nil
	}
	if suite, ok := strings.CutPrefix(split, SplitEvalPrefix); ok && suite != "" {
		return checkID("Split suite", suite)
	}
	return invalid("Split", fmt.Sprintf("%q", split), `must be "train", "val" or "eval:<suite>"`)
}

func checkText(field, v string, limit int) error {
	if len(v) > limit {
		return invalid(field, fmt.Sprintf("%d bytes", len(v)), fmt.Sprintf("longer than %d bytes", limit))
	}
	if !utf8.ValidString(v) {
		return invalid(field, fmt.Sprintf("%.16q", v), "not valid UTF-8")
	}
	return nil
}

func checkNonNeg(field string, v int64) error {
	if v < 0 {
		return invalid(field, v, "must be >= 0")
	}
	return nil
}

// truncateUTF8 cuts s to at most n bytes without splitting a rune.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
