package file

import (
	"fmt"
	"strings"

	"github.com/cairnstore/cairn/bucket"
)

// maxNameLen is the longest file name local file systems accept.
const maxNameLen = 255

const hexDigits = "0123456789ABCDEF"

// plain reports whether c is written as itself in an escaped segment.
func plain(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}

// escape writes every byte of seg outside [A-Za-z0-9._-] as %XX.
func escape(seg string) string {
	n := 0
	for i := 0; i < len(seg); i++ {
		if !plain(seg[i]) {
			n++
		}
	}
	if n == 0 {
		return seg
	}
	var sb strings.Builder
	sb.Grow(len(seg) + 2*n)
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if plain(c) {
			sb.WriteByte(c)
			continue
		}
		sb.WriteByte('%')
		sb.WriteByte(hexDigits[c>>4])
		sb.WriteByte(hexDigits[c&0xf])
	}
	return sb.String()
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// unescape reverses escape. It accepts only what escape produces, so that
// every key has exactly one name and foreign files are not mistaken for
// objects.
func unescape(name string) (string, bool) {
	if !strings.Contains(name, "%") {
		for i := 0; i < len(name); i++ {
			if !plain(name[i]) {
				return "", false
			}
		}
		return name, true
	}
	out := make([]byte, 0, len(name))
	for i := 0; i < len(name); i++ {
		c := name[i]
		if plain(c) {
			out = append(out, c)
			continue
		}
		if c != '%' || i+2 >= len(name) {
			return "", false
		}
		hi, ok1 := unhex(name[i+1])
		lo, ok2 := unhex(name[i+2])
		b := hi<<4 | lo
		if !ok1 || !ok2 || plain(b) {
			return "", false
		}
		out = append(out, b)
		i += 2
	}
	return string(out), true
}

// location is where one key lives under a bucket's root.
type location struct {
	dirs []string // the key's directories, outermost first; none for a top-level key
	path string   // the object file
}

// parent returns the directory that holds the object file.
func (l location) parent(root string) string {
	if len(l.dirs) == 0 {
		return root
	}
	return l.dirs[len(l.dirs)-1]
}

// locate maps a valid key to its location under root, refusing segments
// whose names would be too long.
func locate(root, key string) (location, error) {
	segs := strings.Split(key, "/")
	l := location{dirs: make([]string, 0, len(segs)-1)}
	p := root
	for i, seg := range segs {
		kind := "d"
		if i == len(segs)-1 {
			kind = "o"
		}
		name := kind + escape(seg)
		if len(name) > maxNameLen {
			return location{}, fmt.Errorf("%w: segment %d (%d bytes) escapes to a %d-byte file name, more than the file system's %d",
				bucket.ErrInvalidKey, i+1, len(seg), len(name), maxNameLen)
		}
		p += "/" + name
		if kind == "d" {
			l.dirs = append(l.dirs, p)
		}
	}
	l.path = p
	return l, nil
}
