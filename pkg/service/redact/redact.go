// Package redact removes passwords from connection strings before they are
// logged: Postgres (every form pgx accepts), Redis and AMQP URLs.
package redact

import (
	"regexp"
	"strings"
)

// Mask replaces every password Secret removes.
const Mask = "xxxxx"

// Secret returns s with every password replaced by Mask:
//
//   - a URL's userinfo password (scheme://user:password@host...), also when
//     net/url cannot parse the URL (pgx's multi-host URLs, an unescaped @,
//     / or # in the password): everything up to the last @ counts as
//     userinfo, so an @ later in the string hides more, never less;
//   - the password and sslpassword query parameters of a URL;
//   - the password and sslpassword keywords of a Postgres keyword/value
//     string (host=... password=secret, or password='se cr\'et'). A string
//     that does not parse as keyword/value is cut after the first such
//     keyword.
//
// A comma-separated list of URLs (AMQP_URL's nodes) is redacted URL by URL.
// A string that is neither a URL nor keyword/value is returned unchanged.
// Secret is written by hand: net/url's URL.Redacted leaves keyword/value
// strings and query parameters alone, and url.Parse's error quotes the
// whole URL.
func Secret(s string) string {
	if parts := strings.Split(s, ","); len(parts) > 1 && allURLs(parts) {
		for i, p := range parts {
			parts[i] = Secret(p)
		}
		return strings.Join(parts, ",")
	}
	if scheme, rest, ok := strings.Cut(s, "://"); ok && !strings.ContainsAny(scheme, " ='") {
		return scheme + "://" + redactURL(rest)
	}
	if strings.Contains(s, "=") {
		return redactKeywordValue(s)
	}
	return s
}

// allURLs reports whether every part looks like scheme://...
func allURLs(parts []string) bool {
	for _, p := range parts {
		scheme, _, ok := strings.Cut(strings.TrimSpace(p), "://")
		if !ok || scheme == "" || strings.ContainsAny(scheme, " =',") {
			return false
		}
	}
	return true
}

// sensitive are the keys whose values are secrets, in a query or as keywords.
var sensitive = map[string]bool{"password": true, "sslpassword": true}

var queryPassword = regexp.MustCompile(`(?i)([?&](?:ssl)?password=)[^&#]*`)

// redactURL redacts rest, a URL after its "scheme://".
func redactURL(rest string) string {
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if user, _, hasPassword := strings.Cut(rest[:at], ":"); hasPassword {
			rest = user + ":" + Mask + rest[at:]
		}
	}
	return queryPassword.ReplaceAllString(rest, "${1}"+Mask)
}

// redactKeywordValue redacts a libpq keyword/value string: keyword = value
// pairs separated by whitespace, a value either single-quoted (with \' and
// \\ escapes) or unquoted up to whitespace (with backslash escapes).
func redactKeywordValue(s string) string {
	var b strings.Builder
	i := 0
	skip := func() {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
	}
	for {
		start := i
		skip()
		if i >= len(s) {
			b.WriteString(s[start:])
			return b.String()
		}
		keyStart := i
		for i < len(s) && s[i] != '=' && !isSpace(s[i]) {
			i++
		}
		key := strings.ToLower(s[keyStart:i])
		skip()
		if i >= len(s) || s[i] != '=' {
			return cut(s)
		}
		i++
		skip()
		valueStart := i
		if i < len(s) && s[i] == '\'' {
			i++
			for i < len(s) && s[i] != '\'' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(s) { // unterminated quote
				return cut(s)
			}
			i++
		} else {
			for i < len(s) && !isSpace(s[i]) {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			i = min(i, len(s))
		}
		b.WriteString(s[start:valueStart])
		if sensitive[key] {
			b.WriteString(Mask)
		} else {
			b.WriteString(s[valueStart:i])
		}
	}
}

// cut handles a string that is not valid keyword/value: everything from
// the first mention of a sensitive keyword on is replaced by Mask; without
// one, s is returned as it is.
func cut(s string) string {
	first := -1
	lower := strings.ToLower(s)
	for k := range sensitive {
		if i := strings.Index(lower, k); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	if first < 0 {
		return s
	}
	return s[:first] + Mask
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
