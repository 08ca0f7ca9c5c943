package workbench

import (
	"bytes"
	"context"
	"slices"
	"strings"

	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/nokv"
)

func init() {
	registerTool("workbench_list", (*Service).listTool)
}

// Listing limits.
const (
	// defaultListLimit is the page size when the caller gives none.
	defaultListLimit = 100
	// maxListLimit is the largest page (the schema's bound, kept here too).
	maxListLimit = 100
	// listScanBatch is how many rows one scan of the path family returns
	// while a listing walks a directory.
	listScanBatch = 256
)

// listInput is workbench_list's input.
type listInput struct {
	scopeInput
	Limit  *uint64 `json:"limit"`
	Cursor *string `json:"cursor"`

	limit uint64 // Limit or defaultListLimit
}

func (in *listInput) resolve(s *Service) *Error {
	if werr := in.scopeInput.resolve(s); werr != nil {
		return werr
	}
	in.limit = defaultListLimit
	if in.Limit != nil {
		in.limit = *in.Limit
	}
	if in.limit < 1 || in.limit > maxListLimit {
		return InvalidState("list page limit must be between 1 and 100")
	}
	return nil
}

// listTool serves workbench_list: the direct children of the workbench, a
// section or a directory, one page at a time, in component byte order.
//
// At the workbench itself the five sections are always listed, as
// directories, even when empty, beside any other top-level name; where an
// artifact sits at a section's name the file is listed instead (file,
// then section, then directory). Directories are implicit: a name with
// artifacts below it. A path that is an exact artifact is NotDirectory
// (details {path}); a path with nothing below it is an empty page, not an
// error; a workbench that does not exist is NotFound.
//
// Each entry is {name, path, section, relative_path, kind, size_bytes,
// entry_count}: size_bytes is null for a directory and entry_count is
// always null. The result's entry_count counts this page's entries.
// limit is 1 to 100 (default 100). next_cursor is set exactly when more
// entries follow, and truncated says the same. A cursor continues only
// the listing it came from (same RootId, workbench, prefix and view;
// otherwise InvalidState) and only while the workbench is unchanged
// (otherwise ReadFenceChanged, retryable): see cursor.go. A null cursor
// is no cursor; any string, "" included, must be a valid one.
func (s *Service) listTool(ctx context.Context, in *listInput) (map[string]any, *Error) {
	sc := in.scope
	v, werr := s.openViewFor(ctx, sc.id, sc.at, entryReads(sc.comps))
	if werr != nil {
		return nil, werr
	}
	var after *string
	if in.Cursor != nil {
		c, werr := decodeListCursor(s.root, *in.Cursor)
		if werr != nil {
			return nil, werr
		}
		if werr := checkListCursor(c, v, sc.comps); werr != nil {
			return nil, werr
		}
		after = &c.anchor
	}
	if len(sc.comps) > 0 {
		_, exact, werr := v.entry(ctx, sc.comps)
		if werr != nil {
			return nil, werr
		}
		if exact {
			return nil, NotDirectory(sc.logical())
		}
	}
	kids, more, werr := v.listPage(ctx, sc.comps, after, int(in.limit))
	if werr != nil {
		return nil, werr
	}
	entries := make([]any, len(kids))
	for i, c := range kids {
		entries[i] = s.node(sc.id, append(slices.Clip(sc.comps), c.name), c.entry)
	}
	var next any
	if more {
		next = newListCursor(v, sc.comps, kids[len(kids)-1].name)
	}
	res := s.header(sc)
	res["entry_count"] = len(entries)
	res["entries"] = entries
	res["next_cursor"] = next
	res["truncated"] = more
	return res, nil
}

// listPage returns up to limit direct children of dir after the child
// named after (from the first when nil), and whether more follow. At the
// workbench itself (dir empty) the five sections are merged in.
func (v *view) listPage(ctx context.Context, dir []string, after *string, limit int) ([]child, bool, *Error) {
	it, werr := v.childIter(ctx, dir, after)
	if werr != nil {
		return nil, false, werr
	}
	var sections []string
	if len(dir) == 0 {
		sections = sortedSections()
		if after != nil {
			sections = slices.DeleteFunc(sections, func(s string) bool { return s <= *after })
		}
	}
	var out []child
	peeked, ok, werr := it.next()
	if werr != nil {
		return nil, false, werr
	}
	for len(out) <= limit {
		var c child
		switch {
		case ok && (len(sections) == 0 || peeked.name < sections[0]):
			c = peeked
			peeked, ok, werr = it.next()
		case len(sections) > 0 && (!ok || sections[0] < peeked.name):
			c = child{name: sections[0], path: []string{sections[0]}}
			sections = sections[1:]
		case ok:
			// A scanned child at a section's name: a file wins over
			// the section, the section over a directory.
			c = peeked
			sections = sections[1:]
			peeked, ok, werr = it.next()
		default:
			return out, false, nil
		}
		if werr != nil {
			return nil, false, werr
		}
		out = append(out, c)
	}
	return out[:limit], true, nil
}

// childIterator walks the direct children of one directory in order,
// reading the path family in bounded batches and skipping each child
// directory's subtree with one seek.
type childIterator struct {
	v      *view
	ctx    context.Context
	dir    []string
	prefix []byte // the scan prefix of everything below dir
	after  []byte // the next batch starts strictly after this key
	buf    []shards.Record
	pos    int
	last   bool // buf holds every remaining row
}

// childIter returns an iterator over the children of dir after the child
// named after (from the first when nil).
func (v *view) childIter(ctx context.Context, dir []string, after *string) (*childIterator, *Error) {
	prefix, err := nokv.PathCurrentPrefix(v.s.root, v.ws.Incarnation, dir)
	if err != nil {
		return nil, FromError(err)
	}
	it := &childIterator{v: v, ctx: ctx, dir: dir, prefix: prefix}
	if after != nil {
		// The exact row of a child sorts after the child's whole
		// subtree, so starting after it skips the child entirely.
		if it.after, err = v.exactKey(dir, *after); err != nil {
			return nil, errCursorMalformed()
		}
	}
	return it, nil
}

// exactKey is the PathCurrent key of dir/name.
func (v *view) exactKey(dir []string, name string) ([]byte, error) {
	return nokv.PathCurrentKey{Root: v.s.root, Incarnation: v.ws.Incarnation, Path: append(slices.Clip(dir), name)}.Encode()
}

// row returns the next row below dir, or ok false at the end.
func (it *childIterator) row() (shards.Record, bool, *Error) {
	if it.pos >= len(it.buf) {
		if it.last {
			return shards.Record{}, false, nil
		}
		recs, err := it.v.sn.Scan(it.ctx, nokv.FamilyPathCurrent, it.prefix, it.after, listScanBatch)
		if err != nil {
			return shards.Record{}, false, FromError(err)
		}
		it.buf, it.pos, it.last = recs, 0, len(recs) < listScanBatch
		if len(recs) == 0 {
			return shards.Record{}, false, nil
		}
	}
	r := it.buf[it.pos]
	it.pos++
	it.after = r.Key
	return r, true, nil
}

// skipTo drops every row up to and including key and continues after it.
func (it *childIterator) skipTo(key []byte) {
	for it.pos < len(it.buf) && bytes.Compare(it.buf[it.pos].Key, key) <= 0 {
		it.pos++
	}
	it.after = key
}

// next returns the next child: an artifact (entry set) or an implicit
// directory, which an artifact at the same name (not something the
// Workbench tools write, but legal in the store) overrides.
func (it *childIterator) next() (child, bool, *Error) {
	r, ok, werr := it.row()
	if werr != nil || !ok {
		return child{}, false, werr
	}
	k, err := nokv.ParsePathCurrentKey(r.Key)
	if err != nil {
		return child{}, false, FromError(err)
	}
	if len(k.Path) <= len(it.dir) || !hasPrefixPath(k.Path, it.dir) {
		return child{}, false, InvalidState("path scan returned a row outside the listed directory")
	}
	name := k.Path[len(it.dir)]
	c := child{name: name, path: append(slices.Clip(it.dir), name)}
	if len(k.Path) == len(it.dir)+1 {
		e, err := nokv.DecodePathEntry(r.Value)
		if err != nil {
			return child{}, false, FromError(err)
		}
		c.entry = &e
		return c, true, nil
	}
	// A row deeper down: name is a directory. Its exact row, if any,
	// follows its subtree; look it up, then skip past both.
	exact, err := it.v.exactKey(it.dir, name)
	if err != nil {
		return child{}, false, FromError(err)
	}
	e, found, werr := it.v.entry(it.ctx, c.path)
	if werr != nil {
		return child{}, false, werr
	}
	if found {
		c.entry = &e
	}
	it.skipTo(exact)
	return c, true, nil
}

// sortedSections is the five sections in component byte order, the order
// a root listing shows them.
func sortedSections() []string {
	s := Sections()
	slices.SortFunc(s, strings.Compare)
	return s
}
