package query

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"

	"github.com/cairnstore/cairn/workbench/internal/core"
)

// Query cursors (search, grep) and the digests that bind them to a query.
//
// Cursors are opaque to callers: base64url without padding of a small
// JSON document naming the operation (op) and the cursor version (v),
// followed by a 12-byte check, the first bytes of SHA-256 over a domain
// tag, the RootId and the document. Decoding is strict (canonical
// base64url, a valid check, a JSON document with only the cursor's own
// members), so a truncated, corrupted or edited token is "cursor is
// malformed" rather than read as something else (InvalidState for a
// search cursor, which the reference's server checks; InvalidArguments
// with details {} for a grep cursor, which its tool layer checks), and a
// token minted for another root never decodes. The check is not a keyed
// MAC; a forged token still has to match the caller's own query binding
// and the current fence.

const (
	QueryCursorVersion  = 1
	queryCursorCheckLen = 12
	queryCursorCheckTag = "cairn.workbench.query-cursor.v1\x00"
)

func QueryCursorCheck(s *core.Service, doc []byte) []byte {
	h := sha256.New()
	h.Write([]byte(queryCursorCheckTag))
	root := s.Root()
	h.Write(root[:])
	h.Write(doc)
	return h.Sum(nil)[:queryCursorCheckLen]
}

// EncodeQueryCursor mints the token of cursor document v.
func EncodeQueryCursor(s *core.Service, v any) string {
	doc, err := json.Marshal(v)
	if err != nil {
		panic("workbench: encode cursor: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(append(doc, QueryCursorCheck(s, doc)...))
}

// cursorFault says why a query cursor token does not decode.
type cursorFault int

const (
	CursorOK        cursorFault = iota
	CursorMalformed             // not an intact token of this root
	CursorForeign               // an intact token of another operation
)

// ParseQueryCursor checks a token minted for operation op and decodes its
// document into v.
func ParseQueryCursor(s *core.Service, token, op string, v any) cursorFault {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil || len(raw) <= queryCursorCheckLen {
		return CursorMalformed
	}
	doc, check := raw[:len(raw)-queryCursorCheckLen], raw[len(raw)-queryCursorCheckLen:]
	if !bytes.Equal(check, QueryCursorCheck(s, doc)) {
		return CursorMalformed
	}
	var head struct {
		V  int    `json:"v"`
		Op string `json:"op"`
	}
	if json.Unmarshal(doc, &head) != nil || head.V != QueryCursorVersion {
		return CursorMalformed
	}
	if head.Op != op {
		return CursorForeign
	}
	d := json.NewDecoder(bytes.NewReader(doc))
	d.DisallowUnknownFields()
	if d.Decode(v) != nil || d.More() {
		return CursorMalformed
	}
	return CursorOK
}

// DecodeQueryCursor is parseQueryCursor with the storage side's errors,
// as a search cursor is checked: InvalidState "cursor is malformed" for
// anything that is not an intact token of this root, "cursor belongs to a
// different operation" for one of another operation.
func DecodeQueryCursor(s *core.Service, token, op string, v any) *core.Error {
	switch ParseQueryCursor(s, token, op, v) {
	case CursorMalformed:
		return core.InvalidState("cursor is malformed")
	case CursorForeign:
		return core.InvalidState("cursor belongs to a different operation")
	}
	return nil
}

// QueryDigest is the hex SHA-256 of v's canonical result encoding.
func QueryDigest(v any) string {
	b, err := core.MarshalResult(v)
	if err != nil {
		panic("workbench: digest: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// predicatesDigestForm is the predicates in a canonical form for digests.
func predicatesDigestForm(preds []queryPredicate) []any {
	out := make([]any, len(preds))
	for i, p := range preds {
		var vals []string
		switch p.op {
		case "exists", "not_exists":
			vals = []string{}
		case "in":
			vals = make([]string, len(p.values))
			for j, v := range p.values {
				vals[j] = hex.EncodeToString([]byte(indexScalarKey(v)))
			}
		default:
			vals = []string{hex.EncodeToString([]byte(indexScalarKey(p.value)))}
		}
		out[i] = map[string]any{"field": p.field, "op": p.op, "values": vals}
	}
	return out
}

func sortDigestForm(keys []querySort) []any {
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = map[string]any{"field": k.field, "desc": k.desc}
	}
	return out
}
