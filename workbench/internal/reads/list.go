package reads

import (
	"bytes"
	"context"
	"slices"
	"strings"

	"github.com/cairnstore/cairn/workbench/internal/core"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

func init() {
	core.RegisterTool("workbench_list", listTool)
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
	core.ScopeInput
	Limit  *uint64 `json:"limit"`
	Cursor *string `json:"cursor"`

	limit uint64 // Limit or defaultListLimit
}

// ListInput is workbench_list's input.
type ListInput struct {
	ID string `json:"id"`
	// Section is one of the five sections; nil lists the workbench, or
	// with Path a directory from the workbench's top.
	Section *string `json:"section,omitempty"`
	// Path is the directory below Section; "" is none.
	Path string `json:"path,omitempty"`
	// AtSnapshot selects a snapshot by id (a non-negative integer) or by
	// name (a non-empty string); nil lists the live workbench.
	AtSnapshot any `json:"at_snapshot,omitempty"`
	// Limit is the page size, 1 to 100; nil is 100.
	Limit *uint64 `json:"limit,omitempty"`
	// Cursor continues the listing a page's NextCursor came from; nil
	// starts at the first child.
	Cursor *string `json:"cursor,omitempty"`
}

// ListResult is workbench_list's result: one page of a directory's
// direct children.
type ListResult struct {
	core.Success
	core.ScopeHeader
	// AtSnapshot echoes the request's snapshot selector, a json.Number
	// id or a string name; nil (absent from the JSON) for a live read.
	AtSnapshot any `json:"at_snapshot,omitempty"`
	// EntryCount is the number of entries in this page.
	EntryCount int              `json:"entry_count"`
	Entries    []core.ListEntry `json:"entries"`
	// NextCursor continues the listing; nil when this page is the last.
	NextCursor *string `json:"next_cursor"`
	// Truncated says that more entries follow (NextCursor is set).
	Truncated bool `json:"truncated"`
}

func (in *listInput) Resolve(s *core.Service) *core.Error {
	if werr := in.ScopeInput.Resolve(s); werr != nil {
		return werr
	}
	in.limit = defaultListLimit
	if in.Limit != nil {
		in.limit = *in.Limit
	}
	if in.limit < 1 || in.limit > maxListLimit {
		return core.InvalidState("list page limit must be between 1 and 100")
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
func listTool(ctx context.Context, s *core.Service, in *listInput) (*ListResult, *core.Error) {
	sc := in.Scope
	v, werr := s.OpenViewFor(ctx, sc.ID, sc.At, core.ListReads(sc.Comps))
	if werr != nil {
		return nil, werr
	}
	var after *string
	if in.Cursor != nil {
		c, werr := core.DecodeListCursor(s.Root(), *in.Cursor)
		if werr != nil {
			return nil, werr
		}
		if werr := core.CheckListCursor(c, v, sc.Comps); werr != nil {
			return nil, werr
		}
		after = &c.Anchor
	}
	if len(sc.Comps) > 0 {
		_, exact, werr := v.Entry(ctx, sc.Comps)
		if werr != nil {
			return nil, werr
		}
		if exact {
			return nil, core.NotDirectory(sc.Logical())
		}
	}
	kids, more, werr := listPage(ctx, v, sc.Comps, after, int(in.limit))
	if werr != nil {
		return nil, werr
	}
	entries := make([]core.ListEntry, len(kids))
	for i, c := range kids {
		entries[i] = s.Node(sc.ID, append(slices.Clip(sc.Comps), c.Name), c.Entry)
	}
	var next *string
	if more {
		cur := core.NewListCursor(v, sc.Comps, kids[len(kids)-1].Name)
		next = &cur
	}
	return &ListResult{
		ScopeHeader: s.Header(sc),
		AtSnapshot:  sc.At,
		EntryCount:  len(entries),
		Entries:     entries,
		NextCursor:  next,
		Truncated:   more,
	}, nil
}

// listPage returns up to limit direct children of dir after the child
// named after (from the first when nil), and whether more follow. At the
// workbench itself (dir empty) the five sections are merged in.
func listPage(ctx context.Context, v *core.View, dir []string, after *string, limit int) ([]core.Child, bool, *core.Error) {
	it, werr := childIter(ctx, v, dir, after)
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
	var out []core.Child
	peeked, ok, werr := it.next()
	if werr != nil {
		return nil, false, werr
	}
	for len(out) <= limit {
		var c core.Child
		switch {
		case ok && (len(sections) == 0 || peeked.Name < sections[0]):
			c = peeked
			peeked, ok, werr = it.next()
		case len(sections) > 0 && (!ok || sections[0] < peeked.Name):
			c = core.Child{Name: sections[0], Path: []string{sections[0]}}
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

// childIterator walks the direct children of one directory in name
// order: its files from the directory's path_current shard and its
// subdirectories from its path_directory shard, merged. A file and a
// directory of the same name (not something the Workbench tools write,
// but legal in the store) are one child, the file.
type childIterator struct {
	files, dirs *shardChildren
	f, d        *core.Child // the next of each, peeked; nil at the end
	fDone       bool
	dDone       bool
}

// childIter returns an iterator over the children of dir after the child
// named after (from the first when nil).
func childIter(ctx context.Context, v *core.View, dir []string, after *string) (*childIterator, *core.Error) {
	refs, err := core.DirShards(v.S.Root(), dir)
	if err != nil {
		return nil, core.FromError(err)
	}
	prefix, err := nokv.PathCurrentPrefix(v.S.Root(), v.Ws.Incarnation, dir)
	if err != nil {
		return nil, core.FromError(err)
	}
	var start []byte
	if after != nil {
		// The exact row of a child sorts after the child's whole
		// subtree, so starting after it skips the child entirely. A
		// directory's row has the same key in its family.
		if start, err = exactKey(v, dir, *after); err != nil {
			return nil, core.ErrCursorMalformed()
		}
	}
	shard := func(ref head.ShardRef) *shardChildren {
		return &shardChildren{v: v, ctx: ctx, ref: ref, dir: dir, prefix: prefix, after: start}
	}
	return &childIterator{files: shard(refs[0]), dirs: shard(refs[1])}, nil
}

// exactKey is the PathCurrent key of dir/name.
func exactKey(v *core.View, dir []string, name string) ([]byte, error) {
	return nokv.PathCurrentKey{Root: v.S.Root(), Incarnation: v.Ws.Incarnation, Path: append(slices.Clip(dir), name)}.Encode()
}

// next returns the next child: an artifact (entry set) or a directory.
func (it *childIterator) next() (core.Child, bool, *core.Error) {
	var werr *core.Error
	if it.f == nil && !it.fDone {
		if it.f, werr = it.files.next(); werr != nil {
			return core.Child{}, false, werr
		}
		it.fDone = it.f == nil
	}
	if it.d == nil && !it.dDone {
		if it.d, werr = it.dirs.next(); werr != nil {
			return core.Child{}, false, werr
		}
		it.dDone = it.d == nil
	}
	switch {
	case it.f != nil && (it.d == nil || it.f.Name <= it.d.Name):
		c := *it.f
		if it.d != nil && it.d.Name == c.Name {
			it.d = nil // the file wins
		}
		it.f = nil
		return c, true, nil
	case it.d != nil:
		c := *it.d
		it.d = nil
		return c, true, nil
	}
	return core.Child{}, false, nil
}

// shardChildren walks the rows of one shard that name direct children of
// dir, reading it in bounded batches. The shard is dir's in its family,
// but it may also hold rows of deeper directories that hash to it; those
// are skipped, each child's subtree with one seek.
type shardChildren struct {
	v      *core.View
	ctx    context.Context
	ref    head.ShardRef
	dir    []string
	prefix []byte // the scan prefix of everything below dir
	after  []byte // the next batch starts strictly after this key
	buf    []shards.Record
	pos    int
	last   bool // buf holds every remaining row
}

// row returns the shard's next row below dir, or ok false at the end.
func (it *shardChildren) row() (shards.Record, bool, *core.Error) {
	if it.pos >= len(it.buf) {
		if it.last {
			return shards.Record{}, false, nil
		}
		recs, err := it.v.Sn.ScanShard(it.ctx, it.ref, it.prefix, it.after, listScanBatch)
		if err != nil {
			return shards.Record{}, false, core.FromError(err)
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

// skipSubtree drops the rows strictly below dir/name and continues
// after them: every such key begins with the subtree prefix of dir/name,
// and the next byte is an ordered component byte (at most 0xf5, UTF-8
// plus one), so the prefix followed by 0xff sorts after all of them and
// before the exact row of dir/name.
func (it *shardChildren) skipSubtree(name string) *core.Error {
	sub, err := nokv.PathCurrentPrefix(it.v.S.Root(), it.v.Ws.Incarnation, append(slices.Clip(it.dir), name))
	if err != nil {
		return core.FromError(err)
	}
	key := append(sub, 0xff)
	for it.pos < len(it.buf) && bytes.Compare(it.buf[it.pos].Key, key) <= 0 {
		it.pos++
	}
	if bytes.Compare(key, it.after) > 0 {
		it.after = key
	}
	return nil
}

// next returns the next direct child the shard names, or nil at the end.
func (it *shardChildren) next() (*core.Child, *core.Error) {
	for {
		r, ok, werr := it.row()
		if werr != nil || !ok {
			return nil, werr
		}
		k, err := nokv.ParsePathCurrentKey(r.Key) // path_directory shares the encoding
		if err != nil {
			return nil, core.FromError(err)
		}
		if len(k.Path) <= len(it.dir) || !core.HasPrefixPath(k.Path, it.dir) {
			return nil, core.InvalidState("path scan returned a row outside the listed directory")
		}
		name := k.Path[len(it.dir)]
		if len(k.Path) > len(it.dir)+1 {
			// A row of a deeper directory that shares the shard: skip
			// the subtree of name, up to (not past) name's own row.
			if werr := it.skipSubtree(name); werr != nil {
				return nil, werr
			}
			continue
		}
		c := &core.Child{Name: name, Path: append(slices.Clip(it.dir), name)}
		if it.ref.Family == nokv.FamilyPathCurrent {
			e, err := nokv.DecodePathEntry(r.Value)
			if err != nil {
				return nil, core.FromError(err)
			}
			c.Entry = &e
		} else if _, err := nokv.DecodePathDirectory(r.Value); err != nil {
			return nil, core.FromError(err)
		}
		return c, nil
	}
}

// sortedSections is the five sections in component byte order, the order
// a root listing shows them.
func sortedSections() []string {
	s := core.Sections()
	slices.SortFunc(s, strings.Compare)
	return s
}
