package nokv

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
)

// Field rules shared by encoders and decoders, and by package workbench,
// which checks tool arguments with the same rules before any record is
// built.

// Limits of ids and paths.
const (
	// MaxWorkbenchIDBytes bounds a workbench id.
	MaxWorkbenchIDBytes = 128
	// MaxPathBytes bounds a relative path, its components joined with "/".
	MaxPathBytes = 4096
	// MaxPathComponents bounds the components of a relative path.
	MaxPathComponents = 64
)

// Limits the record layer enforces besides those of ids and paths.
const (
	// MaxContentTypeBytes is the longest content type.
	MaxContentTypeBytes = 255
	// MaxIndexFieldIDBytes is the longest index field id.
	MaxIndexFieldIDBytes = 128
	// MaxIndexScalarBytes is the longest bytes or string index scalar.
	MaxIndexScalarBytes = 64 << 10
)

// RuleError is a value that breaks a field rule. Its text is the reason
// alone ("workbench id is empty"), as the Workbench reports it to a
// caller.
type RuleError struct{ Reason string }

func (e *RuleError) Error() string { return e.Reason }

func ruleErrorf(format string, args ...any) *RuleError {
	return &RuleError{Reason: fmt.Sprintf(format, args...)}
}

// CheckWorkbenchID is the one workbench id check: 1 to 128 bytes, the
// first an ASCII letter or digit, the others ASCII letters, digits, '_' or
// '-'. Ids are case-sensitive. The error names the first offending byte
// ("workbench id contains invalid byte 0x2e at offset 3").
func CheckWorkbenchID(s string) error {
	switch {
	case s == "":
		return &RuleError{Reason: "workbench id is empty"}
	case len(s) > MaxWorkbenchIDBytes:
		return ruleErrorf("workbench id is %d bytes, maximum is %d", len(s), MaxWorkbenchIDBytes)
	case !isAlnum(s[0]):
		return ruleErrorf("workbench id must start with an ASCII letter or digit, found byte 0x%02x", s[0])
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '_' && c != '-' {
			return ruleErrorf("workbench id contains invalid byte 0x%02x at offset %d", c, i)
		}
	}
	return nil
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// SplitPath is the one path normalizer: it splits p on "/" and returns
// the components, or an error when p is
//
//   - empty ("relative path is empty");
//   - absolute ("relative path must not start with '/'");
//   - over 4096 bytes ("relative path is N bytes, maximum is 4096");
//   - not UTF-8 ("relative path is not valid UTF-8");
//   - over 64 components ("relative path has 65 components, maximum is
//     64": the count stops at the first component over the limit);
//   - holding an empty component, so "a//b" and a trailing "/" ("relative
//     path component I is empty"), a "." or ".." component ("relative path
//     component I is '.'"), or a component with a backslash or NUL
//     ("relative path component I contains backslash", "... contains
//     NUL"), I counting from 0.
//
// Components are checked in order, so the first bad one is reported, and
// a bad component before the 65th is reported instead of the count. Nothing
// else is changed: no case folding, no Unicode normalization, no cleanup.
// strings.Join(components, "/") is always p.
func SplitPath(p string) ([]string, error) {
	switch {
	case p == "":
		return nil, &RuleError{Reason: "relative path is empty"}
	case p[0] == '/':
		return nil, &RuleError{Reason: "relative path must not start with '/'"}
	case len(p) > MaxPathBytes:
		return nil, ruleErrorf("relative path is %d bytes, maximum is %d", len(p), MaxPathBytes)
	case !utf8.ValidString(p):
		return nil, &RuleError{Reason: "relative path is not valid UTF-8"}
	}
	out := make([]string, 0, strings.Count(p, "/")+1)
	for i := 0; ; i++ {
		c, rest, more := strings.Cut(p, "/")
		if i+1 > MaxPathComponents {
			return nil, ruleErrorf("relative path has %d components, maximum is %d", i+1, MaxPathComponents)
		}
		switch c {
		case "":
			return nil, ruleErrorf("relative path component %d is empty", i)
		case ".":
			return nil, ruleErrorf("relative path component %d is '.'", i)
		case "..":
			return nil, ruleErrorf("relative path component %d is '..'", i)
		}
		if strings.IndexByte(c, '\\') >= 0 {
			return nil, ruleErrorf("relative path component %d contains backslash", i)
		}
		if strings.IndexByte(c, 0) >= 0 {
			return nil, ruleErrorf("relative path component %d contains NUL", i)
		}
		out = append(out, c)
		if !more {
			return out, nil
		}
		p = rest
	}
}

// pathValid reports whether p is a normalized relative path by looking at
// each component, without joining them: what SplitPath would accept,
// with no component holding '/'. It is pathReason's quick yes; a no is
// explained by SplitPath.
func pathValid(p []string) bool {
	if len(p) > MaxPathComponents {
		return false
	}
	n := len(p) - 1
	for _, c := range p {
		switch c {
		case "", ".", "..":
			return false
		}
		if strings.ContainsAny(c, "/\\\x00") || !utf8.ValidString(c) {
			return false
		}
		n += len(c)
	}
	return n <= MaxPathBytes
}

// workbenchIDReason returns why s is not a workbench id, or "".
func workbenchIDReason(s string) string {
	if err := CheckWorkbenchID(s); err != nil {
		return err.Error()
	}
	return ""
}

// pathReason returns why p is not a normalized relative path, or "". It
// asks SplitPath about the joined path; a component holding "/" splits
// differently and is refused here.
func pathReason(p []string) string {
	if len(p) == 0 {
		return "path has no components"
	}
	if pathValid(p) {
		return ""
	}
	c, err := SplitPath(strings.Join(p, "/"))
	if err != nil {
		return err.Error()
	}
	if !slices.Equal(c, p) {
		return "a path component contains '/'"
	}
	return ""
}

func digestURIReason(field, s string) string {
	if !digest.ValidURI(s) {
		return fmt.Sprintf("%s %q is not \"sha256:\" and 64 lowercase hex digits", field, s)
	}
	return ""
}

func contentTypeReason(s string) string {
	if s == "" || len(s) > MaxContentTypeBytes || strings.IndexByte(s, 0) >= 0 {
		return fmt.Sprintf("content type of %d bytes, want 1 to %d without NUL", len(s), MaxContentTypeBytes)
	}
	return ""
}

func objectKeyReason(s string) string {
	if err := bucket.ValidateKey(s); err != nil {
		return "object key: " + err.Error()
	}
	return ""
}

func indexFieldIDReason(s string) string {
	if s == "" || len(s) > MaxIndexFieldIDBytes || !utf8.ValidString(s) {
		return fmt.Sprintf("index field id of %d bytes, want 1 to %d of UTF-8", len(s), MaxIndexFieldIDBytes)
	}
	return ""
}

// bodyReason checks the body fields PathEntry and ArtifactRevision share:
// the body and manifest digest URIs and the content type.
func bodyReason(bodyDigestURI, manifestDigestURI, contentType string) string {
	return firstReason(
		digestURIReason("body digest uri", bodyDigestURI),
		digestURIReason("manifest digest uri", manifestDigestURI),
		contentTypeReason(contentType))
}

// firstReason returns the first non-empty reason.
func firstReason(reasons ...string) string {
	for _, r := range reasons {
		if r != "" {
			return r
		}
	}
	return ""
}
