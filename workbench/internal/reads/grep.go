package reads

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/query"

	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// workbench_grep: case-insensitive literal line matching over the bodies
// of a workbench's artifacts. Not regex.
//
// # Patterns
//
// When patterns is absent or empty and pattern holds '|', pattern is split
// on '|' (empty pieces dropped; more than 16 pieces is InvalidArguments;
// when every piece is empty the literal string is the one pattern).
// Otherwise the set is pattern (skipped when "") followed by patterns
// (each non-empty). An empty set is InvalidArguments; duplicates are
// dropped case-insensitively, the first kept.
//
// # Matching
//
// Lines and patterns are lower-cased as Rust's str::to_lowercase does
// (full Unicode lowercase: 'İ' becomes "i̇", a word-final 'Σ' becomes
// 'ς'), and a line matches when it contains any pattern; each line is
// reported once. A body holding a NUL byte is binary: read and counted in
// files_scanned, never matched. Other bodies are decoded as UTF-8 with
// every maximal invalid subsequence replaced by U+FFFD and split like
// Rust's str::lines (on '\n', one '\r' before it dropped; no empty last
// line). line_number counts from 1; snippet is the original line's first
// 240 Unicode scalar values.
//
// # Scope
//
// The glob (optional) applies to an artifact's basename: '*' is any run,
// '?' one character, everything else literal and case-sensitive; an empty
// glob or one holding '/' or '\' is InvalidArguments. Glob-filtered files
// are not read. A section[/path] scope that names an exact artifact scans
// only it (either recursion mode); a nested scope with no artifacts is
// NotFound "grep scope does not exist"; an empty section is a success with
// no matches; recursive false scans direct children only (at the
// workbench root: the top-level files outside the sections).
//
// # Pages
//
// limit (default 100) counts matching lines. One call reads at most
// grepMaxFiles bodies and grepMaxBytes bytes; reaching a bound ends the
// page with a cursor. A first candidate over the byte budget on its own
// is ResourceExhausted. When the limit is reached the scan goes on, within
// the same bounds, for one more match: the cursor points at that line,
// and is null (truncated false) when no further match exists; a page that
// stops at a work bound instead points at the first candidate not read.
// The cursor binds the RootId, the logical root, the workbench, the
// scope, the recursion mode, the exact pattern set and the glob, and the
// workspace incarnation and revision the first page read. A cursor that
// does not decode (not an intact grep cursor of this deployment), or
// that another query made, is InvalidArguments with details {}, checked
// before anything is read, as the reference's tool layer does; a write
// to the workbench between pages makes the continuation fail
// ReadFenceChanged (retryable).
// It resumes at a candidate path and line index, so a page may end inside
// a body. Every error after argument validation carries details.path, the
// presentation path of the scope.

func init() { core.RegisterTool("workbench_grep", grepTool) }

// Grep limits.
const (
	grepDefaultLimit = 100
	grepMaxPatterns  = 16
	grepSnippetRunes = 240
	// grepFetchBytes bounds the bytes of the bodies read ahead of the
	// scanner (fetched or in flight, and not yet scanned): small files
	// are fetched a few hundred at once, their manifest rows and first
	// blocks in one round, large ones a few at a time. The body the
	// scanner waits for is always fetched, whatever its size.
	grepFetchBytes = 8 << 20
	// grepFetchFiles bounds the bodies read ahead, however small.
	grepFetchFiles = 512
)

// The work bounds of one grep call. Variables so that tests can lower
// them.
var (
	GrepMaxFiles        = 10_000
	GrepMaxBytes uint64 = 512 << 20
)

// GrepCursor is a grep continuation.
type GrepCursor struct {
	V           int      `json:"v"`
	Op          string   `json:"op"`
	Binding     string   `json:"b"`
	Incarnation string   `json:"inc"`
	Revision    uint64   `json:"rev"`
	Path        []string `json:"p"`
	Line        int      `json:"l"`
}

// grepCandidate is an artifact to scan.
type grepCandidate struct {
	path []string
	e    nokv.PathEntry
}

// grepPatterns builds the pattern set of pattern and patterns and its
// lower-cased forms.
func grepPatterns(pattern string, extra []string) (set, lower []string, werr *core.Error) {
	if len(extra) > grepMaxPatterns {
		return nil, nil, core.InvalidArgumentsf("grep accepts at most %d patterns", grepMaxPatterns)
	}
	if len(extra) == 0 && strings.Contains(pattern, "|") {
		for piece := range strings.SplitSeq(pattern, "|") {
			if piece != "" {
				set = append(set, piece)
			}
		}
		if len(set) > grepMaxPatterns {
			return nil, nil, core.InvalidArgumentsf("grep accepts at most %d patterns", grepMaxPatterns)
		}
		if len(set) == 0 {
			set = []string{pattern}
		}
	} else {
		if pattern != "" {
			set = append(set, pattern)
		}
		for _, p := range extra {
			if p == "" {
				return nil, nil, core.InvalidArguments("grep patterns must not contain empty strings")
			}
			set = append(set, p)
		}
	}
	if len(set) == 0 {
		return nil, nil, core.InvalidArguments("grep patterns must not be empty")
	}
	var kept []string
	for _, p := range set {
		l := grepLower(p)
		dup := false
		for _, k := range lower {
			if k == l {
				dup = true
				break
			}
		}
		if !dup {
			kept = append(kept, p)
			lower = append(lower, l)
		}
	}
	return kept, lower, nil
}

// grepInput is workbench_grep's input.
type grepInput struct {
	ID        string   `json:"id"`
	Pattern   string   `json:"pattern"`
	Patterns  []string `json:"patterns"`
	Recursive bool     `json:"recursive"`
	Section   string   `json:"section"`
	Path      string   `json:"path"`
	Glob      *string  `json:"glob"`
	Limit     *uint64  `json:"limit"`
	Cursor    *string  `json:"cursor"`

	req grepRequest
	core.JoinedPath
}

// GrepInput is workbench_grep's input.
type GrepInput struct {
	ID string `json:"id"`
	// Pattern is a literal to find, or several separated by '|' when
	// Patterns is empty; "" adds none.
	Pattern string `json:"pattern"`
	// Patterns are more literals (at most 16, none empty).
	Patterns []string `json:"patterns,omitempty"`
	// Recursive scans the whole scope; false scans its direct children.
	Recursive bool `json:"recursive"`
	// Section and Path narrow the scope (nil and "" are none): a
	// directory, a section or one file.
	Section *string `json:"section,omitempty"`
	Path    string  `json:"path,omitempty"`
	// Glob filters files by basename ('*' any run, '?' one character);
	// nil is every file.
	Glob *string `json:"glob,omitempty"`
	// Limit counts matching lines, 1 to 300; nil is 100.
	Limit *uint64 `json:"limit,omitempty"`
	// Cursor continues from a page's NextCursor; nil starts at the
	// beginning.
	Cursor *string `json:"cursor,omitempty"`
}

// GrepResult is workbench_grep's result: one page of matching lines.
type GrepResult struct {
	core.Success
	core.ScopeHeader
	Pattern   string      `json:"pattern"` // the request's, as given
	Recursive bool        `json:"recursive"`
	Matches   []GrepMatch `json:"matches"`
	// FilesScanned counts the bodies this call read.
	FilesScanned int `json:"files_scanned"`
	// NextCursor continues the scan; nil when nothing is left.
	NextCursor *string `json:"next_cursor"`
	// Truncated says that more may follow (NextCursor is set).
	Truncated bool `json:"truncated"`
}

// GrepMatch is one matching line.
type GrepMatch struct {
	Path string `json:"path"` // the file's presentation path
	// Section is the file's section, nil outside the five; RelativePath
	// the rest of its path.
	Section      *string `json:"section"`
	RelativePath *string `json:"relative_path"`
	LineNumber   int     `json:"line_number"` // from 1
	// Snippet is the line's first 240 Unicode scalar values.
	Snippet string `json:"snippet"`
}

func (in *grepInput) Resolve(s *core.Service) *core.Error {
	id, werr := core.ParseWorkbenchID(in.ID)
	if werr != nil {
		return werr
	}
	prefix, werr := in.Take(core.ScopePath(in.Section, in.Path))
	if werr != nil {
		return werr
	}
	if in.Refused != nil { // like every error past the arguments, with the scope
		in.Refused = in.Refused.With("path", core.PresentationPath(s.LogicalRoot(), id, []string{in.Section, in.Path}))
	}
	r := grepRequest{id: id, prefix: prefix, recursive: in.Recursive}
	if in.Glob != nil {
		if *in.Glob == "" || strings.ContainsAny(*in.Glob, "/\\") {
			return core.InvalidArguments("glob must be a non-empty basename pattern without '/' or '\\'")
		}
		r.glob, r.hasGlob = *in.Glob, true
	}
	if r.set, r.lower, werr = grepPatterns(in.Pattern, in.Patterns); werr != nil {
		return werr
	}
	limit := uint64(grepDefaultLimit)
	if in.Limit != nil {
		limit = *in.Limit
	}
	if limit == 0 {
		return core.InvalidArguments("limit must be greater than zero")
	}
	r.limit = int(limit)
	if in.Cursor != nil {
		switch query.ParseQueryCursor(s, *in.Cursor, "grep", &r.cursor) {
		case query.CursorMalformed:
			return core.InvalidArguments("grep cursor is malformed")
		case query.CursorForeign:
			return core.InvalidArguments("cursor belongs to a different operation")
		}
		if r.cursor.Line < 0 || len(r.cursor.Path) == 0 {
			return core.InvalidArguments("grep cursor is malformed")
		}
		if r.cursor.Binding != grepBinding(s, r) {
			return core.InvalidArguments("grep cursor belongs to a different workbench, scope, pattern set, glob, or recursion mode")
		}
		r.hasCursor = true
	}
	in.req = r
	return nil
}

func grepTool(ctx context.Context, s *core.Service, in *grepInput) (*GrepResult, *core.Error) {
	h := s.Header(core.ReadScope{ID: in.req.id, Comps: in.req.prefix, Section: in.Section, Rel: in.Path})
	res, werr := grep(ctx, s, in.req)
	if werr != nil {
		return nil, werr.With("path", h.Path)
	}
	res.ScopeHeader = h
	res.Pattern = in.Pattern
	res.Recursive = in.Recursive
	return res, nil
}

type grepRequest struct {
	id        string
	prefix    []string
	recursive bool
	glob      string
	hasGlob   bool
	set       []string
	lower     []string
	limit     int
	cursor    GrepCursor // when hasCursor
	hasCursor bool
}

// binding is the digest a grep cursor is bound to.
func grepBinding(s *core.Service, r grepRequest) string {
	glob := any(nil)
	if r.hasGlob {
		glob = r.glob
	}
	return query.QueryDigest(map[string]any{
		"op":        "grep",
		"root":      s.Root().String(),
		"logical":   s.LogicalRoot(),
		"workbench": r.id,
		"scope":     r.prefix,
		"recursive": r.recursive,
		"patterns":  r.set,
		"glob":      glob,
	})
}

// grep returns the page's matches, files_scanned and cursor.
func grep(ctx context.Context, s *core.Service, r grepRequest) (*GrepResult, *core.Error) {
	cur := r.cursor
	reads := core.ListReads(r.prefix)
	reads.Fams = []shards.Family{nokv.FamilyArtifactManifest}
	v, werr := s.OpenViewFor(ctx, r.id, nil, reads)
	if werr != nil {
		return nil, werr
	}
	if r.hasCursor && (cur.Incarnation != v.Ws.Incarnation.String() || cur.Revision != v.Ws.WorkspaceRevision) {
		return nil, core.ReadFenceChanged("grep candidate enumeration", "Workspace")
	}
	cands, werr := grepCandidates(ctx, v, r)
	if werr != nil {
		return nil, werr
	}
	start := 0
	if r.hasCursor {
		for start < len(cands) && core.ComparePaths(cands[start].path, cur.Path) < 0 {
			start++
		}
	}
	cands = cands[start:]

	// The bodies this call may read, within its work bounds.
	plan := 0
	var planned uint64
	for plan < len(cands) && plan < GrepMaxFiles {
		size := cands[plan].e.LogicalSize
		if planned+size > GrepMaxBytes {
			if plan == 0 {
				return nil, core.GrepScanExhausted("bytes", GrepMaxBytes)
			}
			break
		}
		planned += size
		plan++
	}

	f := newGrepFetcher(ctx, v, cands[:plan])
	defer f.stop()
	matches := []GrepMatch{}
	filesScanned := 0
	var next *GrepCursor
	binding := grepBinding(s, r)
	position := func(path []string, line int) *GrepCursor {
		return &GrepCursor{
			V: query.QueryCursorVersion, Op: "grep", Binding: binding,
			Incarnation: v.Ws.Incarnation.String(), Revision: v.Ws.WorkspaceRevision,
			Path: path, Line: line,
		}
	}
scan:
	for i := range plan {
		c := cands[i]
		body, werr := f.get(i)
		if werr != nil {
			return nil, werr
		}
		filesScanned++
		if bytes.IndexByte(body, 0) >= 0 {
			continue
		}
		first := 0
		if r.hasCursor && i == 0 && core.ComparePaths(c.path, cur.Path) == 0 {
			first = cur.Line
		}
		lines := grepSplitLines(grepLossy(body))
		for j := first; j < len(lines); j++ {
			if !grepMatch(lines[j], r.lower) {
				continue
			}
			if len(matches) == r.limit {
				next = position(c.path, j)
				break scan
			}
			section, rel := core.Projection(c.path)
			matches = append(matches, GrepMatch{
				Path:         core.PresentationPath(s.LogicalRoot(), r.id, c.path),
				Section:      section,
				RelativePath: rel,
				LineNumber:   j + 1,
				Snippet:      grepSnippet(lines[j]),
			})
		}
	}
	if next == nil && plan < len(cands) {
		next = position(cands[plan].path, 0)
	}
	res := &GrepResult{Matches: matches, FilesScanned: filesScanned}
	if next != nil {
		cur := query.EncodeQueryCursor(s, next)
		res.NextCursor, res.Truncated = &cur, true
	}
	return res, nil
}

// grepCandidates lists the artifacts a grep scans, in key order.
func grepCandidates(ctx context.Context, v *core.View, r grepRequest) ([]grepCandidate, *core.Error) {
	keep := func(path []string) bool {
		return !r.hasGlob || grepGlob(r.glob, path[len(path)-1])
	}
	if len(r.prefix) > 0 {
		e, ok, werr := v.Entry(ctx, r.prefix)
		if werr != nil {
			return nil, werr
		}
		if ok {
			if !keep(r.prefix) {
				return nil, nil
			}
			return []grepCandidate{{path: r.prefix, e: e}}, nil
		}
		has, werr := v.IsDirectory(ctx, r.prefix)
		if werr != nil {
			return nil, werr
		}
		if !has {
			if len(r.prefix) == 1 && core.IsSection(r.prefix[0]) {
				return nil, nil
			}
			return nil, &core.Error{Code: core.CodeNotFound, Message: "grep scope does not exist", Details: map[string]any{}}
		}
	}
	var out []grepCandidate
	if !r.recursive {
		// The files directly in the scope: one shard, in name order,
		// which is key order among direct children.
		it, werr := childIter(ctx, v, r.prefix, nil)
		if werr != nil {
			return nil, werr
		}
		for {
			c, ok, werr := it.next()
			if werr != nil || !ok {
				return out, werr
			}
			if c.Entry != nil && keep(c.Path) {
				out = append(out, grepCandidate{path: c.Path, e: *c.Entry})
			}
		}
	}
	werr := v.Scan(ctx, r.prefix, nil, func(path []string, e nokv.PathEntry) bool {
		if (r.recursive || len(path) == len(r.prefix)+1) && keep(path) {
			out = append(out, grepCandidate{path: path, e: e})
		}
		return true
	})
	return out, werr
}

// grepFetcher reads the bodies of candidates ahead of the scanner,
// bounded by grepFetchBytes and grepFetchFiles. Each body's manifest rows
// and first block are read together (view.body), and the bodies in the
// window are read in parallel, so a window of small files costs about
// one round.
type grepFetcher struct {
	v      *core.View
	cands  []grepCandidate
	ctx    context.Context
	cancel context.CancelFunc
	slots  []*grepSlot
	wg     sync.WaitGroup
	next   int    // the next body to start
	ahead  uint64 // logical bytes of the bodies started and not yet handed out
}

type grepSlot struct {
	done chan struct{}
	body []byte
	err  *core.Error
}

func newGrepFetcher(ctx context.Context, v *core.View, cands []grepCandidate) *grepFetcher {
	fctx, cancel := context.WithCancel(ctx)
	return &grepFetcher{v: v, cands: cands, ctx: fctx, cancel: cancel, slots: make([]*grepSlot, len(cands))}
}

func (f *grepFetcher) start(i int) {
	sl := &grepSlot{done: make(chan struct{})}
	f.slots[i] = sl
	f.ahead += f.cands[i].e.LogicalSize
	f.wg.Go(func() {
		defer close(sl.done)
		sl.body, sl.err = f.v.Body(f.ctx, f.cands[i].e)
	})
}

// get returns body i, having started the reads of the bodies after it
// that fit the window. Bodies are handed out in order, each once.
func (f *grepFetcher) get(i int) ([]byte, *core.Error) {
	if i >= f.next {
		f.start(i)
		f.next = i + 1
	}
	for f.next < len(f.cands) && f.next < i+grepFetchFiles && f.ahead+f.cands[f.next].e.LogicalSize <= grepFetchBytes {
		f.start(f.next)
		f.next++
	}
	sl := f.slots[i]
	<-sl.done
	f.slots[i] = nil
	f.ahead -= f.cands[i].e.LogicalSize
	return sl.body, sl.err
}

// stop cancels the reads nobody will use and waits for them.
func (f *grepFetcher) stop() {
	f.cancel()
	f.wg.Wait()
}

// grepMatch reports whether a line contains any of the lower-cased
// patterns.
func grepMatch(line string, lower []string) bool {
	l := grepLower(line)
	for _, p := range lower {
		if strings.Contains(l, p) {
			return true
		}
	}
	return false
}

// grepSnippet returns the first grepSnippetRunes scalar values of line.
func grepSnippet(line string) string {
	n := 0
	for i := range line {
		if n == grepSnippetRunes {
			return line[:i]
		}
		n++
	}
	return line
}

// grepSplitLines splits text as Rust's str::lines does: at each '\n',
// dropping it and one '\r' before it; a last line without '\n' is kept as
// is (with any '\r'), and there is no empty line after a final '\n'.
func grepSplitLines(text string) []string {
	var out []string
	for text != "" {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			out = append(out, text)
			break
		}
		line := text[:i]
		line = strings.TrimSuffix(line, "\r")
		out = append(out, line)
		text = text[i+1:]
	}
	return out
}

// grepLossy decodes b as UTF-8, replacing each maximal invalid subsequence
// (the longest prefix of a well-formed sequence, or one byte) with U+FFFD,
// as Rust's String::from_utf8_lossy does.
func grepLossy(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var out strings.Builder
	out.Grow(len(b) + 8)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || n > 1 {
			out.Write(b[i : i+n])
			i += n
			continue
		}
		out.WriteRune(utf8.RuneError)
		i += invalidSubpart(b[i:])
	}
	return out.String()
}

// invalidSubpart returns the length of the maximal subpart at the start
// of b, which does not begin a valid sequence: the lead byte and the
// continuation bytes that could still have completed it.
func invalidSubpart(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xbf)
	switch {
	case c >= 0xc2 && c <= 0xdf:
		need = 1
	case c == 0xe0:
		need, lo = 2, 0xa0
	case c >= 0xe1 && c <= 0xec, c == 0xee, c == 0xef:
		need = 2
	case c == 0xed:
		need, hi = 2, 0x9f
	case c == 0xf0:
		need, lo = 3, 0x90
	case c >= 0xf1 && c <= 0xf3:
		need = 3
	case c == 0xf4:
		need, hi = 3, 0x8f
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(b); k++ {
		x := b[n]
		if k == 0 {
			if x < lo || x > hi {
				break
			}
		} else if x < 0x80 || x > 0xbf {
			break
		}
		n++
	}
	return n
}

// grepLower lower-cases s as Rust's str::to_lowercase does: each character
// by its Unicode lowercase mapping, 'İ' (U+0130) to "i\u0307", and a
// capital sigma to final 'ς' when a cased letter precedes it and none
// follows it (case-ignorable characters skipped on both sides), else 'σ'.
func grepLower(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range s {
		switch r {
		case 'İ':
			b.WriteString("i\u0307")
		case 'Σ':
			if finalSigma(s, i) {
				b.WriteRune('ς')
			} else {
				b.WriteRune('σ')
			}
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// finalSigma reports whether the capital sigma at byte i of s ends a word.
func finalSigma(s string, i int) bool {
	before := false
	for j := i; j > 0; {
		r, n := utf8.DecodeLastRuneInString(s[:j])
		j -= n
		if caseIgnorable(r) {
			continue
		}
		before = isCased(r)
		break
	}
	if !before {
		return false
	}
	for _, r := range s[i+len("Σ"):] {
		if caseIgnorable(r) {
			continue
		}
		return !isCased(r)
	}
	return true
}

// isCased is Unicode's Cased property: lowercase, uppercase or titlecase.
func isCased(r rune) bool {
	return unicode.IsLower(r) || unicode.IsUpper(r) || unicode.IsTitle(r) ||
		unicode.Is(unicode.Other_Lowercase, r) || unicode.Is(unicode.Other_Uppercase, r)
}

// caseIgnorable is Unicode's Case_Ignorable property: marks, format
// characters, modifiers, and the word-internal punctuation of word
// breaking (apostrophes, periods, colons, middle dots).
func caseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', 0x00b7, 0x0387, 0x055f, 0x05f4, 0x2018, 0x2019, 0x2024, 0x2027,
		0xfe13, 0xfe52, 0xfe55, 0xff07, 0xff0e, 0xff1a:
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

// grepGlob matches a basename against a glob: '*' any run of characters,
// '?' exactly one, everything else itself.
func grepGlob(glob, name string) bool {
	g := []rune(glob)
	n := []rune(name)
	gi, ni := 0, 0
	star, mark := -1, 0
	for ni < len(n) {
		switch {
		case gi < len(g) && (g[gi] == '?' || (g[gi] != '*' && g[gi] == n[ni])):
			gi++
			ni++
		case gi < len(g) && g[gi] == '*':
			star, mark = gi, ni
			gi++
		case star >= 0:
			mark++
			gi, ni = star+1, mark
		default:
			return false
		}
	}
	for gi < len(g) && g[gi] == '*' {
		gi++
	}
	return gi == len(g)
}
