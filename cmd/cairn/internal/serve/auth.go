package serve

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// tokenDigest is what the server keeps of a token: comparing digests of
// equal length in constant time tells a caller nothing of a token's
// length or prefix.
type tokenDigest [sha256.Size]byte

// bearer returns the token of an "Authorization: Bearer T" header, and
// whether the header has that form (the scheme is case-insensitive).
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// authorize checks the request's bearer token against want, the digest of
// the agent's own token, in constant time.
func authorize(r *http.Request, want tokenDigest) (ok, present bool) {
	tok, present := bearer(r)
	if !present {
		return false, false
	}
	got := sha256.Sum256([]byte(tok))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1, true
}
