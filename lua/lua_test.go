package lua

import (
	"strings"
	"testing"
)

// TestScriptsDocumentContract checks that every script is embedded, starts
// with its contract comment and touches no key but KEYS[1].
func TestScriptsDocumentContract(t *testing.T) {
	t.Parallel()
	for name, src := range map[string]string{
		"begin": Begin(), "complete": Complete(), "release": Release(), "extend": Extend(),
	} {
		if !strings.HasPrefix(src, "-- "+name+":") {
			t.Errorf("%s.lua: does not start with its contract comment %q", name, "-- "+name+":")
		}
		// "resen": each states how it answers a resend by its owner.
		for _, want := range []string{"KEYS[1]", "ARGV[1]", "Returns", "resen"} {
			if !strings.Contains(src, want) {
				t.Errorf("%s.lua: contract comment does not mention %s", name, want)
			}
		}
		if strings.Contains(src, "KEYS[2]") {
			t.Errorf("%s.lua: touches KEYS[2]; only KEYS[1] is allowed", name)
		}
	}
}
