package config

import (
	"fmt"
	"strings"

	"github.com/oncepay/oncepay/pkg/service/envconf"
)

// MinKeyLen is the shortest API key accepted, in bytes.
const MinKeyLen = 16

// merchants parses "merchant_id=api_key,merchant_id=api_key". Merchant ids
// are 1-64 characters of [A-Za-z0-9_-]; keys are at least MinKeyLen visible
// ASCII characters other than ','. No merchant may appear twice and no key
// may be shared. Problems name the entry and the merchant, never the key.
func merchants(p *envconf.Parser, name string) map[string]string {
	raw := p.Required(name)
	if raw == "" {
		p.Fail(name, "required, not set (merchant_id=api_key,merchant_id=api_key)")
		return nil
	}
	out := make(map[string]string)
	owner := make(map[string]string) // key -> merchant, to reject shared keys
	for i, entry := range strings.Split(raw, ",") {
		entry = strings.TrimSpace(entry)
		id, key, ok := strings.Cut(entry, "=")
		id, key = strings.TrimSpace(id), strings.TrimSpace(key)
		switch {
		case entry == "":
			p.Fail(name, fmt.Sprintf("entry %d is empty", i+1))
			continue
		case !ok:
			p.Fail(name, fmt.Sprintf("entry %d has no '=' (want merchant_id=api_key)", i+1))
			continue
		case !validMerchantID(id):
			p.Fail(name, fmt.Sprintf("entry %d: merchant id %q must be 1-64 characters of [A-Za-z0-9_-]", i+1, id))
			continue
		case len(key) < MinKeyLen:
			p.Fail(name, fmt.Sprintf("entry %d: the key of merchant %q is shorter than %d characters", i+1, id, MinKeyLen))
			continue
		case strings.ContainsFunc(key, func(c rune) bool { return c <= ' ' || c > '~' }):
			p.Fail(name, fmt.Sprintf("entry %d: the key of merchant %q has a character that is not visible ASCII", i+1, id))
			continue
		}
		if _, dup := out[id]; dup {
			p.Fail(name, fmt.Sprintf("merchant %q appears more than once", id))
			continue
		}
		if other, dup := owner[key]; dup {
			p.Fail(name, fmt.Sprintf("merchants %q and %q share one key", other, id))
			continue
		}
		out[id] = key
		owner[key] = id
	}
	return out
}

func validMerchantID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
