package core

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// View is one request's view of one workbench: a pinned snapshot of the
// shard and the workspace marker read through it. Every read of a request
// goes through one view, so it sees one version.
type View struct {
	S  *Service
	Sn *head.Snapshot
	ID string
	Ws nokv.WorkspaceCurrent
	// at is the at_snapshot selector as the caller gave it, echoed in
	// results; nil for a live view.
	at any
}

// Pin reads the head and returns the current snapshot. A deployment never
// written reads as empty (every workbench NotFound) and nothing is
// written; one whose head is lost while other objects remain fails
// (head.ErrNoHead) and is never taken for an empty one.
func (s *Service) Pin(ctx context.Context) (*head.Snapshot, *Error) {
	if p, ok := ctx.Value(pinnedKey{}).(pinned); ok && p.store == s.store {
		return p.sn, nil
	}
	sn, err := s.store.PinOrEmpty(ctx)
	if err != nil {
		return nil, FromError(err)
	}
	return sn, nil
}

// pinnedKey carries a snapshot every read under a context pins
// (WithPinned).
type pinnedKey struct{}

type pinned struct {
	store *head.Store
	sn    *head.Snapshot
}

// WithPinned makes every Pin of s under ctx return sn, which s's store
// pinned: several reads that make up one answer (a console page) see one
// head and read it once. Writes pin for themselves (PinForWrite) and are
// not affected.
func (s *Service) WithPinned(ctx context.Context, sn *head.Snapshot) context.Context {
	return context.WithValue(ctx, pinnedKey{}, pinned{store: s.store, sn: sn})
}

// PinnedContext pins the current head and returns ctx with it
// (WithPinned), for the reads of one answer.
func (s *Service) PinnedContext(ctx context.Context) (context.Context, *Error) {
	sn, werr := s.Pin(ctx)
	if werr != nil {
		return nil, werr
	}
	return s.WithPinned(ctx, sn), nil
}

// PinForWrite is pin for a tool about to commit: a store never written is
// initialized first (create-only), as the engine's first commit would; a
// store whose head is lost fails and is not.
func (s *Service) PinForWrite(ctx context.Context) (*head.Snapshot, *Error) {
	s.store.ExpectCommand() // a paced engine's listing of intents runs beside this pin
	sn, err := s.store.PinOrEmpty(ctx)
	if err == nil && !sn.Empty() {
		return sn, nil
	}
	if err != nil && !errors.Is(err, head.ErrNoHead) {
		return nil, FromError(err)
	}
	// Never written, or objects but no head yet: Initialize tells a
	// concurrent initialization from a lost head, and creates the head
	// only for a shard that holds nothing.
	if err := s.store.Initialize(ctx); err != nil {
		return nil, FromError(err)
	}
	sn, err = s.store.PinOrEmpty(ctx) // never a snapshot WithPinned gave
	if err != nil {
		return nil, FromError(err)
	}
	return sn, nil
}

// Workspace reads the marker of workbench id; ok is false when there is
// none.
func (s *Service) Workspace(ctx context.Context, read func(f shards.Family, key []byte) ([]byte, bool, error), id string) (nokv.WorkspaceCurrent, bool, *Error) {
	key, err := nokv.WorkspaceCurrentKey{Root: s.root, WorkbenchID: id}.Encode()
	if err != nil {
		return nokv.WorkspaceCurrent{}, false, FromError(err)
	}
	b, ok, err := read(nokv.FamilyWorkspaceCurrent, key)
	if err != nil {
		return nokv.WorkspaceCurrent{}, false, FromError(err)
	}
	if !ok {
		return nokv.WorkspaceCurrent{}, false, nil
	}
	ws, err := nokv.DecodeWorkspaceCurrent(b)
	if err != nil {
		return nokv.WorkspaceCurrent{}, false, FromError(err)
	}
	return ws, true, nil
}

// prefetch loads what a view of workbench id will read first (see
// viewReads) and reads the workbench's marker. The tables come first, in
// one round: they name everything else, and small shards (the marker's,
// usually) travel inline in them. Then, in one more round, the shards of
// reads.dirs and, beside them, the marker (free when inline) and, once
// the marker names the incarnation, the pages of each listed directory.
func (s *Service) prefetch(ctx context.Context, sn *head.Snapshot, id string, reads ViewReads) (nokv.WorkspaceCurrent, bool, *Error) {
	fams := append([]shards.Family{nokv.FamilyWorkspaceCurrent, nokv.FamilyPathCurrent, nokv.FamilyPathDirectory}, reads.Fams...)
	if err := sn.Prefetch(ctx, fams, nil); err != nil {
		return nokv.WorkspaceCurrent{}, false, FromError(err)
	}
	var refs []head.ShardRef
	for _, dir := range reads.dirs {
		ds, err := DirShards(s.root, dir)
		if err != nil {
			return nokv.WorkspaceCurrent{}, false, FromError(err)
		}
		refs = append(refs, ds[:]...)
	}
	var (
		ws      nokv.WorkspaceCurrent
		ok      bool
		wsErr   *Error
		listErr error
	)
	dirsDone := make(chan error, 1)
	go func() { dirsDone <- sn.Prefetch(ctx, nil, refs) }()
	ws, ok, wsErr = s.Workspace(ctx, SnapshotReader(ctx, sn), id)
	if wsErr == nil && ok && ws.State == nokv.WorkspaceStateVisible && len(reads.lists)+len(reads.entries) > 0 {
		listErr = s.prefetchPages(ctx, sn, ws.Incarnation, reads)
	}
	dirsErr := <-dirsDone
	switch {
	case wsErr != nil:
		return ws, false, wsErr
	case dirsErr != nil:
		return ws, false, FromError(dirsErr)
	case listErr != nil:
		return ws, false, FromError(listErr)
	}
	return ws, ok, nil
}

// prefetchPages loads the path_current pages that hold the direct
// entries of each directory of reads.lists and the rows of reads.entries,
// in incarnation inc.
func (s *Service) prefetchPages(ctx context.Context, sn *head.Snapshot, inc nokv.IncarnationID, reads ViewReads) error {
	var refs []head.ShardRef
	add := func(dir []string, prefix []byte, err error) error {
		if err != nil {
			return err
		}
		ds, err := DirShards(s.root, dir)
		if err != nil {
			return err
		}
		ref := ds[0]
		ref.Prefix = prefix
		refs = append(refs, ref)
		return nil
	}
	for _, dir := range reads.lists {
		prefix, err := nokv.PathCurrentPrefix(s.root, inc, dir)
		if err := add(dir, prefix, err); err != nil {
			return err
		}
	}
	for _, p := range reads.entries {
		key, err := nokv.PathCurrentKey{Root: s.root, Incarnation: inc, Path: p}.Encode()
		if err := add(p[:len(p)-1:len(p)-1], key, err); err != nil {
			return err
		}
	}
	return sn.Prefetch(ctx, nil, refs)
}

func SnapshotReader(ctx context.Context, sn *head.Snapshot) func(shards.Family, []byte) ([]byte, bool, error) {
	return func(f shards.Family, key []byte) ([]byte, bool, error) { return sn.Get(ctx, f, key) }
}

// ViewReads names what a tool will read through its view beyond the
// workbench's marker, so that openView fetches it together with the
// marker: the tables of fams, path_current and path_directory in one
// round, then the marker's shard and, for each of dirs, the shards of its
// direct entries in both families in a second. (Their shard key leaves
// out the incarnation, so those shards are known before the marker is
// read.) The pages of the directories in lists join the second round
// once the marker names the incarnation, which is at once when the
// marker's shard is inline in its table.
type ViewReads struct {
	// dirs are directories whose direct entries (files, subdirectories)
	// the tool reads: a lookup of dir/name, or a listing of dir.
	dirs [][]string
	// lists are the directories of dirs the tool lists.
	lists [][]string
	// entries are the paths (each in a directory of dirs) whose
	// path_current row the tool looks up.
	entries [][]string
	Fams    []shards.Family
}

// EntryReads are the reads of a tool that looks up the entry at path: an
// artifact, or a directory.
func EntryReads(path []string, fams ...shards.Family) ViewReads {
	if len(path) == 0 {
		return ViewReads{Fams: fams}
	}
	return ViewReads{dirs: [][]string{path[: len(path)-1 : len(path)-1]}, entries: [][]string{path}, Fams: fams}
}

// ListReads are the reads of a listing of dir: the entry at dir itself
// (a file there is NotDirectory) and dir's direct entries.
func ListReads(dir []string) ViewReads {
	r := EntryReads(dir)
	if len(dir) > 0 {
		r.dirs = append(r.dirs, dir)
	} else {
		r.dirs = [][]string{nil}
	}
	r.lists = [][]string{dir}
	return r
}

// pathReads are the reads of a write that creates or replaces path: the
// entries of every ancestor directory, where publication checks that no
// ancestor is a file and finds the directory rows it must add.
func pathReads(path []string) ViewReads {
	var r ViewReads
	for i := range len(path) {
		r.dirs = append(r.dirs, path[:i:i])
	}
	if len(path) > 0 {
		r.entries = [][]string{path}
	}
	return r
}

// OpenView pins the shard and finds workbench id, live (at == nil) or at
// a snapshot. A workbench that does not exist, or is not yet Visible, is
// NotFound.
func (s *Service) OpenView(ctx context.Context, id string, at any) (*View, *Error) {
	return s.OpenViewFor(ctx, id, at, ViewReads{})
}

// OpenViewFor is openView that fetches what reads names in the rounds of
// the marker (see viewReads).
func (s *Service) OpenViewFor(ctx context.Context, id string, at any, reads ViewReads) (*View, *Error) {
	if at != nil {
		return s.snapshotView(ctx, id, at, reads)
	}
	sn, werr := s.Pin(ctx)
	if werr != nil {
		return nil, werr
	}
	ws, ok, werr := s.prefetch(ctx, sn, id, reads)
	if werr != nil {
		return nil, werr
	}
	if !ok || ws.State != nokv.WorkspaceStateVisible {
		return nil, Missing(fmt.Sprintf("workbench %s does not exist", id)).With("path", "")
	}
	return &View{S: s, Sn: sn, ID: id, Ws: ws}, nil
}

// Entry returns the artifact at path, if there is one.
func (v *View) Entry(ctx context.Context, path []string) (nokv.PathEntry, bool, *Error) {
	key, err := nokv.PathCurrentKey{Root: v.S.root, Incarnation: v.Ws.Incarnation, Path: path}.Encode()
	if err != nil {
		return nokv.PathEntry{}, false, FromError(err)
	}
	b, ok, err := v.Sn.Get(ctx, nokv.FamilyPathCurrent, key)
	if err != nil || !ok {
		return nokv.PathEntry{}, false, FromError(err)
	}
	e, err := nokv.DecodePathEntry(b)
	if err != nil {
		return nokv.PathEntry{}, false, FromError(err)
	}
	return e, true, nil
}

// Scan calls fn for every artifact under dir (all of the workbench when
// dir is empty), in key order, until fn returns false. after, when not
// nil, starts strictly after that path's key.
func (v *View) Scan(ctx context.Context, dir []string, after []string, fn func(path []string, e nokv.PathEntry) bool) *Error {
	return v.S.ScanPaths(ctx, v.Sn, v.Ws.Incarnation, dir, after, fn)
}

// ScanPaths calls fn for every PathCurrent row of incarnation inc under
// dir as sn sees it, in key order, until fn returns false. after, when
// not nil, starts strictly after that path's key.
func (s *Service) ScanPaths(ctx context.Context, sn *head.Snapshot, inc nokv.IncarnationID, dir, after []string, fn func(path []string, e nokv.PathEntry) bool) *Error {
	prefix, err := nokv.PathCurrentPrefix(s.root, inc, dir)
	if err != nil {
		return FromError(err)
	}
	var afterKey []byte
	if after != nil {
		if afterKey, err = (nokv.PathCurrentKey{Root: s.root, Incarnation: inc, Path: after}).Encode(); err != nil {
			return FromError(err)
		}
	}
	recs, err := sn.Scan(ctx, nokv.FamilyPathCurrent, prefix, afterKey, 0)
	if err != nil {
		return FromError(err)
	}
	for _, r := range recs {
		k, err := nokv.ParsePathCurrentKey(r.Key)
		if err != nil {
			return FromError(err)
		}
		e, err := nokv.DecodePathEntry(r.Value)
		if err != nil {
			return FromError(err)
		}
		if !fn(k.Path, e) {
			return nil
		}
	}
	return nil
}

// Child is one direct child of a directory: an artifact (entry set) or an
// implicit directory.
type Child struct {
	Name  string
	Path  []string
	Entry *nokv.PathEntry
}

// Manifest returns the ArtifactManifest rows of a revision, in object
// index order.
func (s *Service) Manifest(ctx context.Context, read func(shards.Family, []byte, []byte) ([]shards.Record, error), rev nokv.RevisionID) ([]nokv.ArtifactManifestEntry, *Error) {
	recs, err := read(nokv.FamilyArtifactManifest, nokv.ArtifactManifestPrefix(s.root, rev), nil)
	if err != nil {
		return nil, FromError(err)
	}
	out := make([]nokv.ArtifactManifestEntry, len(recs))
	for i, r := range recs {
		k, err := nokv.ParseArtifactManifestKey(r.Key)
		if err != nil {
			return nil, FromError(err)
		}
		if k.ObjectIndex != uint64(i) {
			return nil, InvalidState(fmt.Sprintf("artifact revision %s: manifest row %d has object index %d", rev, i, k.ObjectIndex))
		}
		if out[i], err = nokv.DecodeArtifactManifestEntry(r.Value); err != nil {
			return nil, FromError(err)
		}
	}
	return out, nil
}

// Body reads an artifact's whole body: its manifest rows, then their
// block objects in parallel, each slice checked against its row's digest
// and the whole against the entry's body digest.
func (v *View) Body(ctx context.Context, e nokv.PathEntry) ([]byte, *Error) {
	if int64(e.LogicalSize) > v.S.Opts.MaxBytes {
		return nil, ArtifactTooLarge(e.LogicalSize, v.S.Opts.MaxBytes)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends a read ahead that no row named
	pre := v.S.prefetchFirstBlock(ctx, e)
	rows, werr := v.S.Manifest(ctx, func(f shards.Family, prefix, after []byte) ([]shards.Record, error) {
		return v.Sn.Scan(ctx, f, prefix, after, 0)
	}, e.Revision)
	if werr != nil {
		return nil, werr
	}
	return v.S.assemble(ctx, rows, e.LogicalSize, e.BodyDigestURI, pre)
}

// BodyRange reads bytes [start, end) of an artifact's body, fetching only
// the blocks that hold them: its manifest rows, then the blocks whose
// logical range meets [start, end), each checked against its row's digest.
// The rows are the committed metadata of the revision, so a checked block
// is the body's bytes there; the whole-body digest, which needs every
// block, is not checked. The caller has checked start <= end <= size. A
// body larger than MaxBytes is ResourceExhausted, as for a whole read.
func (v *View) BodyRange(ctx context.Context, e nokv.PathEntry, start, end uint64) ([]byte, *Error) {
	if int64(e.LogicalSize) > v.S.Opts.MaxBytes {
		return nil, ArtifactTooLarge(e.LogicalSize, v.S.Opts.MaxBytes)
	}
	if start == end {
		return []byte{}, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends a read ahead that no row named
	pre := v.S.prefetchBlockAt(ctx, e, start)
	rows, werr := v.S.Manifest(ctx, func(f shards.Family, prefix, after []byte) ([]shards.Record, error) {
		return v.Sn.Scan(ctx, f, prefix, after, 0)
	}, e.Revision)
	if werr != nil {
		return nil, werr
	}
	blocks, err := RowBlocks(rows)
	if err != nil {
		return nil, FromError(err)
	}
	var total uint64
	for _, r := range rows {
		total += r.Length
	}
	if total != e.LogicalSize {
		return nil, FromError(fmt.Errorf("artifact manifest holds %d bytes, the body %d: %w", total, e.LogicalSize, bucket.ErrIntegrity))
	}
	// The blocks that meet [start, end), and the logical offset of the
	// first; rows are contiguous from zero (rowBlocks).
	first, last := -1, -1
	for i, r := range rows {
		if r.LogicalOffset < end && r.LogicalOffset+r.Length > start {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	want := blocks[first : last+1]
	for i := range want {
		want[i] = pre.Use(want[i])
	}
	out := make([]byte, 0, end-start)
	off := rows[first].LogicalOffset
	err = v.S.Bodies.Stream(ctx, want, func(b []byte) error {
		lo, hi := max(start, off), min(end, off+uint64(len(b)))
		out = append(out, b[lo-off:hi-off]...)
		off += uint64(len(b))
		return nil
	})
	if err != nil {
		if errors.Is(err, bucket.ErrNotExist) {
			return nil, ObjectUnavailable("artifact object operation failed", false)
		}
		return nil, FromError(err)
	}
	return out, nil
}

// assemble fetches and checks the blocks that rows name (the first one
// perhaps already under way, pre) and joins them.
func (s *Service) assemble(ctx context.Context, rows []nokv.ArtifactManifestEntry, size uint64, digest string, pre *bodies.Fetch) ([]byte, *Error) {
	for i, r := range rows {
		if r.LogicalOffset+r.Length > size {
			return nil, InvalidState(fmt.Sprintf("manifest row %d overruns the %d-byte body", i, size))
		}
	}
	body := make([]byte, 0, size)
	err := s.StreamBody(ctx, rows, pre, func(b []byte) error {
		body = append(body, b...)
		return nil
	})
	if err != nil {
		if errors.Is(err, bucket.ErrNotExist) {
			return nil, ObjectUnavailable("artifact object operation failed", false)
		}
		return nil, FromError(err)
	}
	if DigestURI(body) != digest {
		return nil, FromError(fmt.Errorf("artifact body digest mismatch: %w", bucket.ErrIntegrity))
	}
	return body, nil
}

// DigestURI is "sha256:" and the lowercase hex SHA-256 of b.
func DigestURI(b []byte) string { return digest.Sum(b).URI() }

// HasPrefixPath reports whether path starts with the components of dir.
func HasPrefixPath(path, dir []string) bool {
	if len(path) < len(dir) {
		return false
	}
	for i := range dir {
		if path[i] != dir[i] {
			return false
		}
	}
	return true
}
