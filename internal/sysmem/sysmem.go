// Package sysmem reads this process's peak memory and the machine's available memory from /proc.
package sysmem

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// PeakRSS is this process's peak resident set (VmHWM of /proc/self/status) in bytes; 0 where
// that file does not exist.
func PeakRSS() int64 { return procKB("/proc/self/status", "VmHWM") }

// RSS is this process's resident set now (VmRSS of /proc/self/status) in bytes; 0 where that
// file does not exist.
func RSS() int64 { return procKB("/proc/self/status", "VmRSS") }

// MemAvailable is MemAvailable of /proc/meminfo in bytes: the memory the machine can give a new
// process without swapping; 0 if unknown.
func MemAvailable() int64 { return procKB("/proc/meminfo", "MemAvailable") }

// procKB reads a "kB" field of a /proc file (0 if absent).
func procKB(path, field string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		fs := strings.Fields(rest)
		if len(fs) == 0 {
			return 0
		}
		kb, err := strconv.ParseInt(fs[0], 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}
