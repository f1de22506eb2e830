// Package auth maps API keys to merchants without leaking, through timing,
// which key matched or how much of a guess was right.
package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"sort"
)

// Keyring finds the merchant that owns an API key. It is immutable and safe
// for concurrent use. It keeps only SHA-256 digests of the keys.
type Keyring struct {
	entries []entry
}

type entry struct {
	merchant string
	digest   [sha256.Size]byte
}

// NewKeyring returns a keyring over keys, which maps merchant id to API key.
// Keys must be unique (config.LoadServe guarantees it).
func NewKeyring(keys map[string]string) *Keyring {
	k := &Keyring{entries: make([]entry, 0, len(keys))}
	for merchant, key := range keys {
		k.entries = append(k.entries, entry{merchant: merchant, digest: sha256.Sum256([]byte(key))})
	}
	sort.Slice(k.entries, func(i, j int) bool { return k.entries[i].merchant < k.entries[j].merchant })
	return k
}

// Lookup returns the merchant whose API key is key, and whether there is one.
//
// It hashes key and compares the digest with every configured digest using
// crypto/subtle, with no early exit: the time taken does not depend on which
// entry matched, on whether one did, or on how long a common prefix is
// (comparing fixed-size digests also hides the key's length).
func (k *Keyring) Lookup(key string) (merchant string, ok bool) {
	digest := sha256.Sum256([]byte(key))
	found, index := 0, 0
	for i := range k.entries {
		eq := subtle.ConstantTimeCompare(digest[:], k.entries[i].digest[:])
		index = subtle.ConstantTimeSelect(eq, i, index)
		found |= eq
	}
	if found == 0 {
		return "", false
	}
	return k.entries[index].merchant, true
}

// Len returns the number of merchants.
func (k *Keyring) Len() int { return len(k.entries) }
