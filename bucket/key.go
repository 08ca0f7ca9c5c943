package bucket

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxKeyLen is the longest key, in bytes, that any adapter accepts,
// counting the adapter's own prefix. It is GCS's and S3's limit.
const MaxKeyLen = 1024

// ValidateKey reports whether key obeys the key rules. The error wraps
// ErrInvalidKey.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	case len(key) > MaxKeyLen:
		return fmt.Errorf("%w: %d bytes, more than %d", ErrInvalidKey, len(key), MaxKeyLen)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidKey)
	case strings.ContainsAny(key, "\r\n"):
		return fmt.Errorf("%w: %q contains CR or LF", ErrInvalidKey, key)
	case key == "." || key == "..":
		return fmt.Errorf("%w: %q", ErrInvalidKey, key)
	}
	return nil
}

// validatePrefix checks a prefix given to an adapter or to WithPrefix: empty,
// or valid key text ending in "/".
func validatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if !strings.HasSuffix(prefix, "/") {
		return fmt.Errorf("%w: prefix %q must end in /", ErrInvalidKey, prefix)
	}
	return ValidateKey(prefix)
}

// JoinKey validates key and returns prefix+key, checking the length of the
// whole. Adapters that keep a prefix use it for every key they send.
func JoinKey(prefix, key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	full := prefix + key
	if len(full) > MaxKeyLen {
		return "", fmt.Errorf("%w: %d bytes with prefix %q, more than %d", ErrInvalidKey, len(full), prefix, MaxKeyLen)
	}
	return full, nil
}

// NormalizePrefix turns a URL path such as "/a/b" or "a/b/" into a prefix
// of the form "a/b/" ("" for the bucket root) and validates it.
func NormalizePrefix(p string) (string, error) {
	p = strings.Trim(p, "/")
	if p == "" {
		return "", nil
	}
	p += "/"
	return p, validatePrefix(p)
}
