// Package payload looks at the raw JSON input of put_file and append for
// a text payload too large to keep, without parsing the input.
//
// A put_file or append whose text payload decodes to more than MaxBytes
// fails with PayloadTooLarge, but only after its whole input has been
// parsed: the raw body, its parsed value and its canonical text, three
// copies of an input that may be six times MaxBytes (96 MiB by default).
// On a machine of two cores, one such input slowed every other call of
// the process for as long as it was copied.
//
// The input is looked at first, without parsing. When its top-level
// text member is one JSON string, valid, whose decoded bytes pass
// MaxBytes, the tool runs on the same input with that string emptied,
// and PayloadInput.Resolve reports the size it was given (the
// workbench's core carries it in the call's context). Every check that comes before the payload's size, in
// the schema, the path or the other members, sees the same input it
// would have, so the answer is what the whole parse would have given.
// Anything the look does not settle (a key written with escapes, text
// given twice, a string that is not valid) goes the usual way.
package payload

import (
	"bytes"
	"sync/atomic"
	"unicode/utf8"
)

// shortcut turns the look on (SetShortcut), and taken counts the inputs
// it settled, for the tests that compare its answers with those of the
// whole parse.
var (
	shortcut atomic.Bool
	taken    atomic.Int64
)

func init() { shortcut.Store(true) }

// SetShortcut turns the look for an oversized text payload on or
// off and returns the function that restores the previous setting, and
// ShortcutsTaken counts the inputs it has settled. They are for
// tests, which compare the answers given with and without it.
func SetShortcut(on bool) (restore func()) {
	was := shortcut.Swap(on)
	return func() { shortcut.Store(was) }
}

// ShortcutsTaken is the number of inputs whose oversized text
// payload was emptied before parsing (see SetShortcut).
func ShortcutsTaken() int64 { return taken.Load() }

// EmptyOversizedText returns raw with the value of its top-level text
// member replaced by "" and the decoded size of that value, when raw is
// an object whose one text member is a valid JSON string of more than
// maxBytes decoded bytes; ok is false otherwise.
func EmptyOversizedText(raw []byte, maxBytes int64) (reduced []byte, size int64, ok bool) {
	if !shortcut.Load() || maxBytes <= 0 || int64(len(raw)) <= maxBytes {
		return nil, 0, false // a string's decoded bytes are at most its raw ones
	}
	start, end := -1, -1
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, 0, false
	}
	i = skipSpace(raw, i+1)
	for i < len(raw) && raw[i] == '"' {
		keyEnd := stringEnd(raw, i)
		if keyEnd < 0 || bytes.IndexByte(raw[i:keyEnd], '\\') >= 0 {
			return nil, 0, false // an escaped key could spell text
		}
		key := raw[i+1 : keyEnd-1]
		i = skipSpace(raw, keyEnd)
		if i >= len(raw) || raw[i] != ':' {
			return nil, 0, false
		}
		i = skipSpace(raw, i+1)
		valEnd := valueEnd(raw, i)
		if valEnd < 0 || i >= len(raw) {
			return nil, 0, false
		}
		if string(key) == "text" {
			if start >= 0 || raw[i] != '"' {
				return nil, 0, false
			}
			start, end = i, valEnd
		}
		i = skipSpace(raw, valEnd)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	if start < 0 {
		return nil, 0, false
	}
	size, valid := decodedSize(raw[start+1 : end-1])
	if !valid || size <= maxBytes {
		return nil, 0, false
	}
	taken.Add(1)
	reduced = make([]byte, 0, len(raw)-(end-start)+2)
	reduced = append(append(append(reduced, raw[:start]...), `""`...), raw[end:]...)
	return reduced, size, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index just past the JSON string that starts at b[i]
// (a quote), or -1 if it does not end.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// valueEnd is the index just past the JSON value that starts at b[i], or
// -1 if it does not end. Only its extent is found: strings and nesting;
// the parse of the reduced input checks the rest.
func valueEnd(b []byte, i int) int {
	if i < len(b) && b[i] == '"' {
		return stringEnd(b, i)
	}
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			end := stringEnd(b, i)
			if end < 0 {
				return -1
			}
			i = end - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the object around a scalar ends
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',':
			if depth == 0 {
				return i
			}
		}
	}
	if depth == 0 {
		return i
	}
	return -1
}

// decodedSize is the number of UTF-8 bytes the JSON string body s (the
// text between its quotes) decodes to, and whether the reference parser
// accepts it: valid UTF-8, no control character, valid escapes and no
// unpaired surrogate.
func decodedSize(s []byte) (int64, bool) {
	var n int64
	for len(s) > 0 {
		i := bytes.IndexByte(s, '\\')
		if i < 0 {
			i = len(s)
		}
		plain := s[:i]
		if !utf8.Valid(plain) {
			return 0, false
		}
		for _, c := range plain {
			if c < 0x20 {
				return 0, false
			}
		}
		n += int64(len(plain))
		s = s[i:]
		if len(s) == 0 {
			break
		}
		size, used := escapeSize(s)
		if used == 0 {
			return 0, false
		}
		n += size
		s = s[used:]
	}
	return n, true
}

// escapeSize reads the escape at the start of s and returns the bytes it
// decodes to and the bytes it takes; used is 0 for an invalid escape.
func escapeSize(s []byte) (size int64, used int) {
	if len(s) < 2 {
		return 0, 0
	}
	switch s[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 1, 2
	case 'u':
	default:
		return 0, 0
	}
	r, ok := hex4(s[2:])
	switch {
	case !ok:
		return 0, 0
	case r >= 0xDC00 && r <= 0xDFFF:
		return 0, 0 // a low surrogate alone
	case r >= 0xD800 && r <= 0xDBFF:
		if len(s) < 12 || s[6] != '\\' || s[7] != 'u' {
			return 0, 0
		}
		if lo, ok := hex4(s[8:]); !ok || lo < 0xDC00 || lo > 0xDFFF {
			return 0, 0
		}
		return 4, 12
	}
	return int64(utf8.RuneLen(r)), 6
}

// hex4 reads four hex digits.
func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
