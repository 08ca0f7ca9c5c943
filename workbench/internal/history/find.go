package history

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/query"

	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/wire"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/manifests"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// workbench_find lists the root's workbenches, one page at a time in
// workbench id order, filtered by commit state and by a literal match in
// their run manifests (docs/workbench.md, "Find").
//
// A page is drawn first: the Visible workbenches after the cursor (only
// those with a commit head when committed is true), up to limit; its size
// is entry_count. The page is then filtered: committed false keeps those
// without a head, and a manifest_pattern keeps those whose stored run
// manifest contains it, ASCII letters compared case-insensitively. A page
// may therefore hold fewer matches than limit while truncated is true.
// Staging workbenches (a restore in progress) never appear.
//
// The run manifest is read only when include_manifest is true or a
// pattern is given; otherwise every manifest field is null and
// commit_identity_verified false. A manifest that is read is verified:
// canonical bytes, exactly the eight envelope keys, the schema string,
// this workbench's id and path, well-formed digests, the manifest digest
// and commit identity recomputed, and the identity equal to the
// workbench's commit head. When it fails, the digest and identity fields
// are null and commit_identity_verified false.
func init() { core.RegisterTool("workbench_find", findTool) }

// Find limits.
const (
	defaultFindLimit = 50
	maxFindLimit     = 100
)

// findInput is workbench_find's input.
type findInput struct {
	Committed       *bool   `json:"committed"`
	Cursor          *string `json:"cursor"`
	IncludeManifest bool    `json:"include_manifest"`
	Limit           *uint64 `json:"limit"`
	ManifestPattern *string `json:"manifest_pattern"`

	limit int
}

// FindInput is workbench_find's input.
type FindInput struct {
	// Committed keeps the workbenches with a commit head (true) or
	// without one (false); nil keeps both.
	Committed *bool `json:"committed,omitempty"`
	// Cursor continues the listing a page's NextCursor came from, with the
	// same Committed; nil starts at the first workbench.
	Cursor *string `json:"cursor,omitempty"`
	// IncludeManifest reads each workbench's run manifest and returns it
	// whole.
	IncludeManifest bool `json:"include_manifest,omitempty"`
	// Limit is the page size, 1 to 100; nil is 50.
	Limit *uint64 `json:"limit,omitempty"`
	// ManifestPattern keeps the workbenches whose run manifest holds it,
	// ASCII letters compared without case; nil keeps all, "" those with a
	// manifest.
	ManifestPattern *string `json:"manifest_pattern,omitempty"`
}

// FindResult is workbench_find's result: one page of workbenches.
type FindResult struct {
	core.Success
	// Path is the logical root.
	Path    string      `json:"path"`
	Matches []FindMatch `json:"matches"`
	// MatchCount is the number of matches in this page; EntryCount the
	// number of workbenches the page drew before the committed false and
	// manifest filters.
	MatchCount int `json:"match_count"`
	EntryCount int `json:"entry_count"`
	// NextCursor continues the listing; nil when this page is the last.
	NextCursor *string `json:"next_cursor"`
	// Truncated says that more workbenches follow (NextCursor is set).
	Truncated bool `json:"truncated"`
}

// FindMatch is one workbench find returned. The manifest members are nil
// when its run manifest was not read (neither IncludeManifest nor a
// pattern) or it has none; the digest and identity members are nil
// unless the manifest verified.
type FindMatch struct {
	WorkbenchID string `json:"workbench_id"`
	Path        string `json:"path"` // the workbench's presentation path
	// Committed says that the workbench has a commit head.
	Committed bool `json:"committed"`
	// ManifestPath, ManifestSizeBytes and ManifestGeneration describe the
	// stored run manifest.
	ManifestPath       *string `json:"manifest_path"`
	ManifestSizeBytes  *uint64 `json:"manifest_size_bytes"`
	ManifestGeneration *uint64 `json:"manifest_generation"`
	// ContentDigestURI, ManifestDigestURI and CommitIdentity are the
	// verified envelope's; EnvelopeDigestURI is the digest of its bytes.
	ContentDigestURI  *string `json:"content_digest_uri"`
	ManifestDigestURI *string `json:"manifest_digest_uri"`
	CommitIdentity    *string `json:"commit_identity"`
	// CommitIdentityVerified says that the envelope verified and names
	// the workbench's commit head.
	CommitIdentityVerified bool    `json:"commit_identity_verified"`
	EnvelopeDigestURI      *string `json:"envelope_digest_uri"`
	// ManifestSummary is set when the stored manifest is a JSON object.
	ManifestSummary *ManifestSummary `json:"manifest_summary"`
	// Manifest is the stored envelope, with IncludeManifest only.
	Manifest json.RawMessage `json:"manifest"`
}

// ManifestSummary sums up a stored run manifest envelope. Its members are
// the envelope's own values, whatever their JSON type, nil when absent.
type ManifestSummary struct {
	Schema                 json.RawMessage `json:"schema"`
	WorkbenchID            json.RawMessage `json:"workbench_id"`
	ContentDigestURI       json.RawMessage `json:"content_digest_uri"`
	ManifestDigestURI      json.RawMessage `json:"manifest_digest_uri"`
	CommitIdentity         json.RawMessage `json:"commit_identity"`
	CommittedAtUnixSeconds json.RawMessage `json:"committed_at_unix_seconds"`
	// ManifestKeys are the caller manifest's top-level keys, sorted.
	ManifestKeys []string `json:"manifest_keys"`
	// ManifestTask is the caller manifest's "task" value.
	ManifestTask json.RawMessage `json:"manifest_task"`
}

func (in *findInput) Resolve(*core.Service) *core.Error {
	in.limit = defaultFindLimit
	if in.Limit != nil {
		if *in.Limit < 1 || *in.Limit > maxFindLimit {
			return core.InvalidState("find page limit must be between 1 and 100")
		}
		in.limit = int(*in.Limit)
	}
	return nil
}

func findTool(ctx context.Context, s *core.Service, in *findInput) (*FindResult, *core.Error) {
	sn, werr := s.Pin(ctx)
	if werr != nil {
		return nil, werr
	}
	var after string
	if in.Cursor != nil {
		if after, werr = decodeFindCursor(s.Root(), *in.Cursor, in.Committed); werr != nil {
			return nil, werr
		}
	}
	views, werr := query.VisibleViews(ctx, s, sn)
	if werr != nil {
		return nil, werr
	}
	// The heads of the candidates, fetched in one parallel round rather
	// than one shard at a time.
	var refs []head.ShardRef
	for _, v := range views {
		if in.Cursor != nil && v.ID <= after {
			continue
		}
		key, err := nokv.WorkbenchCommitHeadKey{Root: s.Root(), Incarnation: v.Ws.Incarnation}.Encode()
		if err != nil {
			return nil, core.FromError(err)
		}
		ref, err := sn.ShardOf(nokv.FamilyWorkbenchCommitHead, key)
		if err != nil {
			return nil, core.FromError(err)
		}
		ref.Prefix = key
		refs = append(refs, ref)
	}
	if err := sn.Prefetch(ctx, []shards.Family{nokv.FamilyWorkbenchCommitHead}, refs); err != nil {
		return nil, core.FromError(err)
	}
	// The page: workbenches after the cursor, those with a head only when
	// committed is true, up to limit and one more to tell whether more
	// follow.
	type candidate struct {
		v    *core.View
		head *nokv.WorkbenchCommitHead
	}
	var page []candidate
	more := false
	for _, v := range views {
		if in.Cursor != nil && v.ID <= after {
			continue
		}
		h, ok, err := core.CommitHead(ctx, sn, s.Root(), v.Ws.Incarnation)
		if err != nil {
			return nil, core.FromError(err)
		}
		if in.Committed != nil && *in.Committed && !ok {
			continue
		}
		if len(page) == in.limit {
			more = true
			break
		}
		c := candidate{v: v}
		if ok {
			c.head = &h
		}
		page = append(page, c)
	}
	loadManifest := in.IncludeManifest || in.ManifestPattern != nil
	matches := []FindMatch{}
	for _, c := range page {
		if in.Committed != nil && !*in.Committed && c.head != nil {
			continue
		}
		var rm *runManifest
		if loadManifest {
			if rm, werr = loadRunManifest(ctx, s, c.v, c.head); werr != nil {
				return nil, werr
			}
		}
		if in.ManifestPattern != nil && (rm == nil || !containsFoldASCII(rm.raw, []byte(*in.ManifestPattern))) {
			continue
		}
		matches = append(matches, findMatch(s, c.v.ID, c.head != nil, rm, in.IncludeManifest))
	}
	var next *string
	if more {
		cur := encodeFindCursor(s.Root(), page[len(page)-1].v.ID, in.Committed)
		next = &cur
	}
	return &FindResult{
		Path:       s.LogicalRoot(),
		Matches:    matches,
		MatchCount: len(matches),
		EntryCount: len(page),
		NextCursor: next,
		Truncated:  more,
	}, nil
}

// runManifest is a workbench's stored run manifest as find reads it.
type runManifest struct {
	entry nokv.PathEntry
	raw   []byte
	// envelope is raw decoded, when it is a JSON object; its numbers are
	// json.Number, its manifest kept as text.
	envelope map[string]json.RawMessage
	verified bool
}

// loadRunManifest reads and verifies the run manifest of v's workbench,
// nil when it has none.
func loadRunManifest(ctx context.Context, s *core.Service, v *core.View, h *nokv.WorkbenchCommitHead) (*runManifest, *core.Error) {
	e, ok, werr := v.Entry(ctx, core.RunManifestComps)
	if werr != nil || !ok {
		return nil, werr
	}
	raw, werr := v.Body(ctx, e)
	if werr != nil {
		return nil, werr
	}
	rm := &runManifest{entry: e, raw: raw}
	if err := json.Unmarshal(raw, &rm.envelope); err != nil {
		rm.envelope = nil
	}
	rm.verified = verifyRunManifest(s, v.ID, raw, rm.envelope, h)
	return rm, nil
}

// verifyRunManifest checks a stored envelope as the reference does on
// read, and that it names the workbench's commit head.
func verifyRunManifest(s *core.Service, id string, raw []byte, env map[string]json.RawMessage, h *nokv.WorkbenchCommitHead) bool {
	if env == nil || len(env) != 8 || manifests.CheckCanonical(raw) != nil {
		return false
	}
	str := func(key string) (string, bool) {
		var v string
		b, ok := env[key]
		return v, ok && len(b) > 0 && b[0] == '"' && json.Unmarshal(b, &v) == nil
	}
	schema, ok1 := str("schema")
	wbID, ok2 := str("workbench_id")
	wbPath, ok3 := str("workbench_path")
	content, ok4 := str("content_digest_uri")
	md, ok5 := str("manifest_digest_uri")
	identity, ok6 := str("commit_identity")
	var at uint64
	atOK := json.Unmarshal(env["committed_at_unix_seconds"], &at) == nil && isUnsignedInteger(env["committed_at_unix_seconds"])
	manifest := env["manifest"]
	switch {
	case !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && atOK),
		schema != core.RunManifestSchema,
		wbID != id, wbPath != core.WorkbenchPath(s.LogicalRoot(), id),
		!digest.ValidURI(content), !digest.ValidURI(md),
		len(manifest) == 0 || manifest[0] != '{',
		core.DigestURI(manifest) != md:
		return false
	}
	want := core.CommitIdentity(wbID, content, md)
	return identity == want.String() && h != nil && h.Commit == want
}

// isUnsignedInteger reports whether a JSON number's text is a plain
// non-negative integer.
func isUnsignedInteger(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// containsFoldASCII reports whether pattern occurs in b, ASCII letters
// compared without case and every other byte exactly.
func containsFoldASCII(b, pattern []byte) bool {
	return bytes.Contains(lowerASCII(b), lowerASCII(pattern))
}

func lowerASCII(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// findMatch shapes one match.
func findMatch(s *core.Service, id string, committed bool, rm *runManifest, include bool) FindMatch {
	m := FindMatch{WorkbenchID: id, Path: core.WorkbenchPath(s.LogicalRoot(), id), Committed: committed}
	if rm == nil {
		return m
	}
	path := core.PresentationPath(s.LogicalRoot(), id, core.RunManifestComps)
	size, gen := rm.entry.LogicalSize, rm.entry.Generation
	m.ManifestPath, m.ManifestSizeBytes, m.ManifestGeneration = &path, &size, &gen
	if rm.verified {
		m.ContentDigestURI = rawString(rm.envelope["content_digest_uri"])
		m.ManifestDigestURI = rawString(rm.envelope["manifest_digest_uri"])
		m.CommitIdentity = rawString(rm.envelope["commit_identity"])
		m.CommitIdentityVerified = true
		env := core.DigestURI(rm.raw)
		m.EnvelopeDigestURI = &env
	}
	if rm.envelope != nil {
		m.ManifestSummary = manifestSummary(rm.envelope)
		if include {
			m.Manifest = json.RawMessage(rm.raw)
		}
	}
	return m
}

// manifestSummary is the envelope's summary: its identity fields, the
// caller manifest's top-level keys, sorted, and its "task" value.
func manifestSummary(env map[string]json.RawMessage) *ManifestSummary {
	sum := &ManifestSummary{
		Schema:                 env["schema"],
		WorkbenchID:            env["workbench_id"],
		ContentDigestURI:       env["content_digest_uri"],
		ManifestDigestURI:      env["manifest_digest_uri"],
		CommitIdentity:         env["commit_identity"],
		CommittedAtUnixSeconds: env["committed_at_unix_seconds"],
		ManifestKeys:           []string{},
	}
	var manifest map[string]json.RawMessage
	if json.Unmarshal(env["manifest"], &manifest) == nil && manifest != nil {
		sum.ManifestKeys = slices.Sorted(maps.Keys(manifest))
		sum.ManifestTask = manifest["task"]
	}
	return sum
}

// rawString is b's string value, nil when b is not a JSON string.
func rawString(b json.RawMessage) *string {
	var s string
	if json.Unmarshal(b, &s) != nil {
		return nil
	}
	return &s
}

// Find cursors.
//
// A find cursor is base64url without padding of
//
//	version u8 (1) | filter u8 (0 all, 1 committed, 2 uncommitted) |
//	u32(len(anchor)) | anchor | check [12]
//
// anchor is the id of the page's last workbench: the next page starts
// strictly after it. check is the first 12 bytes of SHA-256 over a domain
// tag, the RootId and the bytes before it, so an edited or foreign token
// is refused as malformed; a cursor minted with another committed filter
// is refused as belonging to a different operation (InvalidState). The
// cursor carries no read fence: workbench markers are never removed and
// ids order the pages, so a continuation neither repeats nor skips a
// workbench that was visible when the first page was read; one created
// since appears if its id comes after the anchor.
const (
	findCursorVersion = 1
	findCheckTag      = "cairn.workbench.find-cursor.v1\x00"
)

func findFilter(committed *bool) uint8 {
	switch {
	case committed == nil:
		return 0
	case *committed:
		return 1
	}
	return 2
}

func findCursorCheck(root nokv.RootID, body []byte) []byte {
	h := sha256.New()
	h.Write([]byte(findCheckTag))
	h.Write(root[:])
	h.Write(body)
	return h.Sum(nil)[:core.ListCursorCheck]
}

func encodeFindCursor(root nokv.RootID, anchor string, committed *bool) string {
	b := wire.NewWriter(nil).U8(findCursorVersion).U8(findFilter(committed)).Bytes32([]byte(anchor)).Bytes()
	return base64.RawURLEncoding.EncodeToString(append(b, findCursorCheck(root, b)...))
}

func decodeFindCursor(root nokv.RootID, token string, committed *bool) (string, *core.Error) {
	malformed := core.InvalidState("find cursor is malformed")
	b, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil || len(b) < 2+4+core.ListCursorCheck || b[0] != findCursorVersion {
		return "", malformed
	}
	body, check := b[:len(b)-core.ListCursorCheck], b[len(b)-core.ListCursorCheck:]
	if !bytes.Equal(check, findCursorCheck(root, body)) {
		return "", malformed
	}
	r := wire.NewReader(body[1:])
	filter := r.U8()
	anchor := string(r.Bytes32())
	if r.End() != nil || filter > 2 {
		return "", malformed
	}
	if _, werr := core.ParseWorkbenchID(anchor); werr != nil {
		return "", malformed
	}
	if filter != findFilter(committed) {
		return "", core.InvalidState("cursor belongs to a different operation")
	}
	return anchor, nil
}
