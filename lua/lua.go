// Package lua holds the idempotency boundary's Redis scripts, the single source
// of truth for every state transition. Each script touches only KEYS[1] and
// starts with a comment that states its KEYS, ARGV and return contract.
// Every script answers a resend by the same owner (go-redis sends a command
// or pipeline again after a connection reset, although Redis may have run
// it) as it answered the first run, so a client retry never turns into a
// different decision.
//
// The scripts are plain files so that they can be read, reviewed and loaded
// with redis-cli on their own; this package only embeds them for Go callers.
// They need Redis 7.0 or later (complete.lua uses PEXPIRE GT).
package lua

import _ "embed"

var (
	//go:embed begin.lua
	begin string
	//go:embed complete.lua
	complete string
	//go:embed release.lua
	release string
	//go:embed extend.lua
	extend string
)

// Begin returns the source of begin.lua: claim a stage (ACQUIRED,
// IN_PROGRESS, COMPLETED or MISMATCH).
func Begin() string { return begin }

// Complete returns the source of complete.lua: store a stage's result if the
// caller still owns it, optionally under another fingerprint ("OK" or
// "LOST").
func Complete() string { return complete }

// Release returns the source of release.lua: give a pending stage back
// ("OK" or "LOST").
func Release() string { return release }

// Extend returns the source of extend.lua: move the lease expiry of a pending
// stage (new expiry in ms, or "LOST").
func Extend() string { return extend }
