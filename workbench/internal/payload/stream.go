package payload

import (
	"bytes"
	"encoding/json"
	"io"
)

// Read reads the raw JSON input of put_file or append from r
// without holding a text payload that is too large: the bytes of the
// input's top-level text member are kept only until they decode past
// maxBytes, and from then on they are checked and counted as they arrive,
// and dropped. What is returned is the input with that text emptied and
// its decoded size (0 when nothing was dropped). Run the tool on input
// under the workbench's WithOversizedText(ctx, oversize): its answer is
// the one the whole input would have had (oversize.go). An input that is not valid JSON
// comes back not valid, so that the tool refuses it as it would have.
//
// sizeHint is the input's declared length, or less; errors are r's.
func Read(r io.Reader, maxBytes int64, sizeHint int) (input []byte, oversize int64, err error) {
	s := &payloadScan{maxBytes: maxBytes, out: make([]byte, 0, min(sizeHint, int(maxBytes)+64<<10))}
	buf := make([]byte, 256<<10)
	for {
		n, rerr := r.Read(buf)
		s.feed(buf[:n])
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, 0, rerr
		}
	}
	switch {
	case s.broken || s.text == textIn && s.textDropped:
		// Not JSON, as the whole input was not: a dropped text that was
		// not a valid string, or never ended.
		return []byte("{"), 0, nil
	case s.dropped && !s.overridden:
		return s.out, s.size, nil
	}
	// Nothing dropped, or the dropped text was replaced by a later text
	// member, which is as if it had been "".
	return s.out, 0, nil
}

// The states of a payloadScan's text member.
const (
	textNone = iota // not in a text value
	textIn          // in the text value's string
	textDone        // the last text value seen has ended
)

// payloadScan follows a JSON input as it arrives: strings and nesting
// everywhere, keys and values at the top level, and the text value's
// escapes and UTF-8 byte by byte.
type payloadScan struct {
	maxBytes int64
	out      []byte

	started, object bool // saw the first byte; it opened an object
	depth           int
	inString, esc   bool // in a string outside text; after its backslash
	expectKey       bool // at depth 1: the next string is a key
	keyStart        int  // where the key being read starts in out
	lastKeyText     bool // the last depth-1 key was text

	text        int   // textNone, textIn or textDone
	textStart   int   // where the text's characters start in out
	decoded     int64 // the text's decoded bytes so far
	textDropped bool  // the current text's characters were dropped
	dropped     bool  // a text's characters were dropped
	size        int64 // the decoded size of the last text dropped
	overridden  bool  // a text key came after the dropped one
	broken      bool  // the dropped text was not a valid string

	// Inside the text: an escape being read (escLen bytes of it, in
	// escBuf), or a UTF-8 sequence (need more continuation bytes, the
	// first within [lo, hi]).
	escBuf [12]byte
	escLen int
	need   int
	lo, hi byte
}

// feed takes the next bytes of the input.
func (s *payloadScan) feed(p []byte) {
	if s.broken {
		return // the answer is known: nothing more is kept
	}
	for len(p) > 0 {
		if s.text == textIn {
			p = p[s.textBytes(p):]
			continue
		}
		if s.inString {
			i := bytes.IndexAny(p, `"\`)
			if s.esc || i < 0 {
				n := 1
				if !s.esc && i < 0 {
					n = len(p)
				}
				s.out = append(s.out, p[:n]...)
				s.esc = false
				p = p[n:]
				continue
			}
			s.out = append(s.out, p[:i+1]...)
			if p[i] == '\\' {
				s.esc = true
			} else {
				s.inString = false
				s.stringEnded()
			}
			p = p[i+1:]
			continue
		}
		if s.started && !s.object {
			s.out = append(s.out, p...) // not followed: passed through
			return
		}
		c := p[0]
		s.out = append(s.out, c)
		p = p[1:]
		s.structural(c)
	}
}

// structural handles one byte outside every string.
func (s *payloadScan) structural(c byte) {
	if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
		return
	}
	if !s.started {
		s.started, s.object = true, c == '{'
	}
	if !s.object {
		return // only an object's text member is looked at
	}
	switch c {
	case '"':
		switch {
		case s.depth == 1 && s.expectKey:
			s.keyStart = len(s.out) - 1
			s.inString = true
		case s.depth == 1 && s.lastKeyText:
			s.lastKeyText = false
			s.text, s.textStart, s.decoded, s.need, s.escLen, s.textDropped = textIn, len(s.out), 0, 0, 0, false
		default:
			s.inString = true
		}
	case '{', '[':
		s.depth++
		if s.depth == 1 {
			s.expectKey = true
		}
		s.lastKeyText = false
	case '}', ']':
		s.depth--
		s.lastKeyText = false
	case ':':
		if s.depth == 1 {
			s.expectKey = false
		}
	case ',':
		if s.depth == 1 {
			s.expectKey, s.lastKeyText = true, false
		}
	default:
		s.lastKeyText = false // a scalar value
	}
}

// stringEnded notes a string outside text that has just ended: a depth-1
// key is checked for being text.
func (s *payloadScan) stringEnded() {
	if s.depth != 1 || !s.expectKey {
		return
	}
	key := s.out[s.keyStart:]
	isText := string(key) == `"text"`
	if !isText && bytes.IndexByte(key, '\\') >= 0 {
		var k string
		isText = json.Unmarshal(key, &k) == nil && k == "text"
	}
	s.lastKeyText = isText
	if isText && s.dropped {
		s.overridden = true
	}
}

// textBytes takes bytes of the text value's string and returns how many
// it took: all of p, or up to and including its closing quote.
func (s *payloadScan) textBytes(p []byte) int {
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case s.escLen > 0:
			if !s.escape(c) {
				return s.textBroken(p, i)
			}
		case s.need > 0:
			if c < s.lo || c > s.hi {
				return s.textBroken(p, i)
			}
			s.lo, s.hi = 0x80, 0xBF
			s.need--
			s.count(p[i:i+1], 1)
		case c == '"':
			s.text = textDone
			if s.textDropped {
				s.size = s.decoded
			}
			s.out = append(s.out, '"')
			return i + 1
		case c == '\\':
			s.escBuf[0], s.escLen = c, 1
		case c < 0x20:
			return s.textBroken(p, i)
		case c < 0x80:
			// A run of plain ASCII, taken at once.
			j := i + 1
			for j < len(p) && plainText[p[j]] {
				j++
			}
			s.count(p[i:j], int64(j-i))
			i = j - 1
		default:
			if !s.utf8Lead(c) {
				return s.textBroken(p, i)
			}
			s.count(p[i:i+1], 1)
		}
	}
	return len(p)
}

// count adds raw bytes of the text that decode to n bytes, keeping them
// until the text passes maxBytes and dropping them after.
func (s *payloadScan) count(raw []byte, n int64) {
	s.decoded += n
	if s.textDropped {
		return
	}
	if s.decoded > s.maxBytes {
		s.textDropped, s.dropped, s.overridden = true, true, false
		s.out = s.out[:s.textStart]
		return
	}
	s.out = append(s.out, raw...)
}

// utf8Lead starts a multi-byte UTF-8 sequence at lead byte c, with the
// reference parser's rules (no overlong forms, no surrogates, nothing
// past U+10FFFF).
func (s *payloadScan) utf8Lead(c byte) bool {
	s.lo, s.hi = 0x80, 0xBF
	switch {
	case c >= 0xC2 && c <= 0xDF:
		s.need = 1
	case c == 0xE0:
		s.need, s.lo = 2, 0xA0
	case c == 0xED:
		s.need, s.hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		s.need = 2
	case c == 0xF0:
		s.need, s.lo = 3, 0x90
	case c == 0xF4:
		s.need, s.hi = 3, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		s.need = 3
	default:
		return false
	}
	return true
}

// escape takes byte c of an escape begun in escBuf, and says whether the
// escape is still valid. A complete escape is counted.
func (s *payloadScan) escape(c byte) bool {
	s.escBuf[s.escLen] = c
	s.escLen++
	switch n := s.escLen; {
	case n == 2:
		switch c {
		case 'u':
			return true
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			s.escLen = 0
			s.count(s.escBuf[:2], 1)
			return true
		}
		return false
	case n < 6:
		return isHex(c)
	case n == 6:
		if !isHex(c) {
			return false
		}
		r, _ := hex4(s.escBuf[2:6])
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return false // a low surrogate alone
		case r >= 0xD800 && r <= 0xDBFF:
			return true // a high surrogate: its pair follows
		}
		s.escLen = 0
		s.count(s.escBuf[:6], int64(runeLen(r)))
		return true
	case n == 7:
		return c == '\\'
	case n == 8:
		return c == 'u'
	case n < 12:
		return isHex(c)
	}
	if !isHex(c) {
		return false
	}
	if lo, _ := hex4(s.escBuf[8:12]); lo < 0xDC00 || lo > 0xDFFF {
		return false
	}
	s.escLen = 0
	s.count(s.escBuf[:12], 4)
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// plainText marks the bytes a JSON string holds as they are: printable
// ASCII but the quote and the backslash.
var plainText = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// runeLen is the UTF-8 length of a code point that is not a surrogate.
func runeLen(r rune) int {
	switch {
	case r < 0x80:
		return 1
	case r < 0x800:
		return 2
	}
	return 3
}

// textBroken handles a byte at p[i] that makes the text an invalid
// string. Before anything was dropped, the input is kept whole and the
// rest of it is passed through, for the tool's parse to refuse; after,
// the input is not valid JSON.
func (s *payloadScan) textBroken(p []byte, i int) int {
	s.text, s.object = textDone, false // stop following: pass the rest through
	if s.textDropped {
		s.broken = true
		return len(p)
	}
	s.out = append(s.out, s.escBuf[:s.escLen]...)
	s.escLen, s.need = 0, 0
	return i
}
