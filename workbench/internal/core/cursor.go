package core

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cairnstore/cairn/bucket/wire"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// List cursors.
//
// A workbench_list cursor is an opaque token, base64url without padding,
// of these bytes:
//
//	version u8 (1) | scope [16] | view u8 (0 live, 1 snapshot) |
//	incarnation [16] | fence u64 | u16(len(anchor)) | anchor | check [12]
//
// scope is a digest of the RootId, the workbench id, the normalized
// prefix (the listed path's components) and the view selector (live, a
// snapshot id or a snapshot name); a cursor is honoured only by a call
// whose own scope digest is the same, so a cursor never moves between
// workbenches, prefixes or views. incarnation and fence are the
// continuation fence: for a live view the workspace incarnation and
// workspace revision the page was read at, so any write to the workbench
// between two pages fails the continuation with ReadFenceChanged
// (conflict "Workspace") instead of mixing two states; for a snapshot
// view the snapshot's exact read version (conflict "ReadVersion" if it
// ever differs). anchor is the name of the last child returned: the next
// page starts strictly after it.
//
// check is the first 12 bytes of SHA-256 over a domain tag, the RootId
// and every byte before it. Decoding is strict (canonical base64url, no
// padding, no trailing bits, no trailing bytes, a known version, an
// anchor that is one valid path component), so a corrupted or edited
// token fails as "list cursor is malformed" rather than being read as
// something else. The check is not a secret-keyed MAC: cairn keeps no key,
// and a client able to recompute the digest can forge a token. That buys
// it nothing: a forged token still has to match the caller's own scope and
// the current fence, and the only free field, the anchor, merely picks
// where in the same listing the page starts, which the caller can see
// anyway.

const (
	ListCursorVersion = 1
	ListCursorCheck   = 12
	listScopeTag      = "cairn.workbench.list-scope.v1\x00"
	listCheckTag      = "cairn.workbench.list-cursor.v1\x00"
)

// Views a cursor was minted in.
const (
	cursorLive     = 0
	CursorSnapshot = 1
)

// ListCursor is a decoded list cursor.
type ListCursor struct {
	Scope       [16]byte
	View        uint8
	Incarnation nokv.IncarnationID
	Fence       uint64
	Anchor      string
}

// listScope digests what a cursor is bound to besides its fence: the
// RootId, the workbench, the normalized prefix and the view selector.
func listScope(root nokv.RootID, id string, prefix []string, at any) [16]byte {
	var parts [][]byte
	parts = append(parts, []byte(listScopeTag), root[:], []byte(id))
	for _, c := range prefix {
		parts = append(parts, []byte(c))
	}
	parts = append(parts, viewSelector(at))
	h := head.Digest(lengthPrefixed(parts)...)
	var d [16]byte
	copy(d[:], h[:16])
	return d
}

// lengthPrefixed prefixes each part with its length, so that no two
// different part lists digest alike.
func lengthPrefixed(parts [][]byte) [][]byte {
	out := make([][]byte, 0, 2*len(parts))
	for _, p := range parts {
		out = append(out, wire.NewWriter(nil).U64(uint64(len(p))).Bytes(), p)
	}
	return out
}

// viewSelector encodes the view: "live", "id:<decimal>" or "name:<name>".
func viewSelector(at any) []byte {
	switch v := at.(type) {
	case nil:
		return []byte("live")
	case string:
		return []byte("name:" + v)
	default:
		return []byte("id:" + fmt.Sprint(v))
	}
}

// fenceOf returns the continuation fence of a view.
func fenceOf(v *View) (kind uint8, inc nokv.IncarnationID, fence uint64) {
	if v.at == nil {
		return cursorLive, v.Ws.Incarnation, v.Ws.WorkspaceRevision
	}
	return CursorSnapshot, v.Ws.Incarnation, v.Sn.Sequence()
}

// Encode returns the token. The anchor is one path component, so its
// length fits the u16.
func (c ListCursor) Encode(root nokv.RootID) string {
	w := wire.NewWriter(make([]byte, 0, 1+16+1+16+8+2+len(c.Anchor)+ListCursorCheck))
	w.U8(ListCursorVersion).Raw(c.Scope[:]).U8(c.View).Raw(c.Incarnation[:]).U64(c.Fence).Bytes16([]byte(c.Anchor))
	b := w.Bytes()
	b = append(b, CursorCheck(root, b)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

func CursorCheck(root nokv.RootID, body []byte) []byte {
	h := sha256.New()
	h.Write([]byte(listCheckTag))
	h.Write(root[:])
	h.Write(body)
	return h.Sum(nil)[:ListCursorCheck]
}

// ErrCursorMalformed is the error of a token that does not decode.
func ErrCursorMalformed() *Error { return InvalidState("list cursor is malformed") }

// DecodeListCursor parses a token minted for root.
func DecodeListCursor(root nokv.RootID, token string) (ListCursor, *Error) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(token)
	const fixed = 1 + 16 + 1 + 16 + 8 + 2
	if err != nil || len(b) < fixed+ListCursorCheck || b[0] != ListCursorVersion {
		return ListCursor{}, ErrCursorMalformed()
	}
	body, check := b[:len(b)-ListCursorCheck], b[len(b)-ListCursorCheck:]
	if !bytes.Equal(check, CursorCheck(root, body)) {
		return ListCursor{}, ErrCursorMalformed()
	}
	var c ListCursor
	r := wire.NewReader(body[1:])
	r.Copy(c.Scope[:])
	c.View = r.U8()
	r.Copy(c.Incarnation[:])
	c.Fence = r.U64()
	c.Anchor = string(r.Bytes16())
	if r.End() != nil || (c.View != cursorLive && c.View != CursorSnapshot) {
		return ListCursor{}, ErrCursorMalformed()
	}
	if comps, werr := NormalizePath(c.Anchor); werr != nil || len(comps) != 1 || !utf8.ValidString(c.Anchor) {
		return ListCursor{}, ErrCursorMalformed()
	}
	return c, nil
}

// CheckListCursor checks that c continues the listing of prefix in v:
// same scope (else InvalidState), same fence (else ReadFenceChanged).
func CheckListCursor(c ListCursor, v *View, prefix []string) *Error {
	kind, inc, fence := fenceOf(v)
	if c.Scope != listScope(v.S.root, v.ID, prefix, v.at) || c.View != kind {
		return InvalidState("list cursor belongs to a different workbench, prefix, or read view")
	}
	if c.Incarnation != inc || c.Fence != fence {
		if kind == cursorLive {
			return ReadFenceChanged("list", "Workspace")
		}
		return ReadFenceChanged("list", "ReadVersion")
	}
	return nil
}

// NewListCursor mints the cursor that continues after anchor.
func NewListCursor(v *View, prefix []string, anchor string) string {
	kind, inc, fence := fenceOf(v)
	return ListCursor{
		Scope:       listScope(v.S.root, v.ID, prefix, v.at),
		View:        kind,
		Incarnation: inc,
		Fence:       fence,
		Anchor:      anchor,
	}.Encode(v.S.root)
}

// Read cursors.
//
// A workbench_read cursor is plain text, "<kind>:<n>": "r:<n>" is a
// record index of a structured read and "b:<n>" a byte offset of a bytes
// read. It is not bound to a generation: reused after the artifact
// changed, it indexes the new body.

// ParseReadCursor parses a read cursor of the wanted kind ("r" or "b").
// Errors are InvalidArguments: "cursor has an invalid shape" without a
// colon or with an unknown kind, "cursor belongs to a different read
// format" for the other kind, "cursor offset is invalid" when n is not a
// decimal u64 (an optional leading '+' is accepted, as the reference's
// integer parser does).
func ParseReadCursor(s, want string) (uint64, *Error) {
	kind, num, ok := strings.Cut(s, ":")
	if !ok || (kind != "r" && kind != "b") {
		return 0, InvalidArguments("cursor has an invalid shape")
	}
	if kind != want {
		return 0, InvalidArguments("cursor belongs to a different read format")
	}
	digits := num
	if len(digits) > 0 && digits[0] == '+' {
		digits = digits[1:]
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, InvalidArguments("cursor offset is invalid")
		}
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, InvalidArguments("cursor offset is invalid")
	}
	return n, nil
}

// ReadCursor formats a read cursor.
func ReadCursor(kind string, n uint64) string {
	return kind + ":" + strconv.FormatUint(n, 10)
}
