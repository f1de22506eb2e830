// Package redisinfo reads the text that Redis's INFO command returns; bench
// and the peer phase count commands with it.
package redisinfo

import (
	"strconv"
	"strings"
)

// Calls returns the calls of every command in info's commandstats section
// (lines "cmdstat_<name>:calls=<n>,usec=..."), by command name.
func Calls(info string) map[string]int64 {
	out := map[string]int64{}
	for line := range strings.Lines(info) {
		name, rest, _ := strings.Cut(strings.TrimSpace(line), ":")
		cmd, isCmd := strings.CutPrefix(name, "cmdstat_")
		calls, hasCalls := strings.CutPrefix(rest, "calls=")
		if isCmd && hasCalls {
			calls, _, _ = strings.Cut(calls, ",")
			out[cmd], _ = strconv.ParseInt(calls, 10, 64)
		}
	}
	return out
}
