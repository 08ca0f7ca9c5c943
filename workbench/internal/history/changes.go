package history

import (
	"bytes"
	"context"
	"fmt"
	"math"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/query"

	"github.com/cairnstore/cairn/bucket/wire"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// The change feed (docs/workbench.md, "Change feed").
//
// ChangeEvent rows are keyed root | commit_version | event_sequence, so
// the family is an append-only log in key order: a commit gets a version
// above every earlier one, and its events are numbered from 0. The feed
// reads that log from a position, strictly after the last event a caller
// has seen, and keeps only events of workbenches a reader could see at the
// event's version.
//
// The family is sharded by root | commit_version >> 8: 256 consecutive
// versions share one shard, and a prefix of the root and the first seven
// bytes of a version names it. The feed therefore scans one group of 256
// versions at a time, in version order, and fetches the shards of the next
// groups together (changesPrefetch groups per round), instead of merging
// all 256 shards of the family for every page.

// Limits of a change-feed page.
const (
	// DefaultChangesLimit is the page size when the request gives none.
	DefaultChangesLimit = 100
	// MaxChangesLimit is the largest page a request may ask for.
	MaxChangesLimit = 1000
	// changesPrefetch is how many version groups (256 versions each) one
	// round fetches ahead.
	changesPrefetch = 32
	// changesMaxGroups bounds the groups one page scans: a page that
	// crosses this many groups without filling returns what it has, with
	// a cursor past the groups it scanned, so that a page of a store with
	// millions of versions and few visible events stays bounded.
	changesMaxGroups = 4096
)

// ChangesScanBatch is how many rows one scan call returns (a variable so
// that tests can make scans page within a group).
var ChangesScanBatch = 256

// ChangesRequest asks for one page of the change feed.
type ChangesRequest struct {
	// WorkbenchID, if not empty, limits the feed to one workbench.
	WorkbenchID string
	// Cursor continues a feed after the last event of an earlier page. It
	// is bound to the root, WorkbenchID and AfterCommitVersion it was
	// minted for.
	Cursor string
	// AfterCommitVersion, if set, starts the feed after every event of
	// that commit version. With a Cursor it may be left out (the cursor
	// carries it) or must equal the cursor's.
	AfterCommitVersion *uint64
	// Limit is the largest number of events returned: 0 means
	// DefaultChangesLimit; 1 to MaxChangesLimit.
	Limit int
}

// ChangesPage is one page of the change feed.
type ChangesPage struct {
	// Events are the visible events after the request's position, in log
	// order, at most Limit of them.
	Events []Change
	// NextCursor continues after the last event returned, or, when the
	// page reached the end of the log, after every version up to
	// ReadVersion. It is never empty: a follower polls with it.
	NextCursor string
	// ReadVersion is the commit version of the snapshot the page was read
	// at.
	ReadVersion uint64
	// CaughtUp reports that the page read the log up to ReadVersion: no
	// visible event after the page's last existed at that version.
	CaughtUp bool
}

// Change is one event of the feed. Its JSON form (MarshalResult) is
//
//	{"commit_version":12,"sequence":0,"workbench_id":"wb1",
//	 "incarnation":"<32 hex>","kind":"PathCreated","path":"outputs/a.txt",
//	 "before":null,"after":{"generation":1,"revision":"<32 hex>",
//	 "logical_size":2,"digest":"sha256:…"},"commit_id":null,"snapshot_id":null}
//
// path is the section-joined path of a path event and null otherwise.
// before and after are null where the kind has none (PathCreated has no
// before, PathRemoved no after, whole-workbench events usually neither).
// commit_id (64 hex digits) is set on WorkbenchCommitted and on a
// WorkspaceRestored from a commit; snapshot_id (a number) on the snapshot
// kinds and on a WorkspaceRestored from a snapshot.
type Change struct {
	CommitVersion uint64            `json:"commit_version"`
	Sequence      uint32            `json:"sequence"`
	WorkbenchID   string            `json:"workbench_id"`
	Incarnation   string            `json:"incarnation"`
	Kind          string            `json:"kind"`
	Path          *string           `json:"path"`
	Before        *ChangeProjection `json:"before"`
	After         *ChangeProjection `json:"after"`
	CommitID      *string           `json:"commit_id"`
	SnapshotID    *uint64           `json:"snapshot_id"`
}

// ChangeProjection is the compact state an event records before or after
// it: for a path its generation, revision, size and body digest; for a
// whole-workbench event the workspace revision (or head generation) as
// generation, and a digest where there is one (a commit's tree digest).
// revision is null when the record names none (whole-workbench events),
// digest when it holds none.
type ChangeProjection struct {
	Generation  uint64  `json:"generation"`
	Revision    *string `json:"revision"`
	LogicalSize uint64  `json:"logical_size"`
	Digest      *string `json:"digest"`
}

// changePosition is where a feed stands: strictly after the event key
// (version, seq), or at the very start when !started.
type changePosition struct {
	started bool
	version uint64
	seq     uint32
}

// afterVersion is the position past every event of commit version v.
func afterVersion(v uint64) changePosition {
	return changePosition{started: true, version: v, seq: math.MaxUint32}
}

// less reports whether p lies before q in the log.
func (p changePosition) less(q changePosition) bool {
	switch {
	case !q.started:
		return false
	case !p.started:
		return true
	case p.version != q.version:
		return p.version < q.version
	}
	return p.seq < q.seq
}

// changesCursor is the document of a change-feed cursor (query_cursor.go
// wraps it in the root-bound check): the scope it was minted for (the
// workbench, "" for the whole root), the request's after_commit_version,
// and the position.
type changesCursor struct {
	V       int     `json:"v"`
	Op      string  `json:"op"`
	Scope   string  `json:"scope"`
	After   *uint64 `json:"after"`
	Started bool    `json:"started"`
	Version uint64  `json:"version"`
	Seq     uint32  `json:"seq"`
}

const changesCursorOp = "changes"

// changesCursorMismatch reports a change-feed cursor used with another
// scope (workbench) or after_commit_version than it was minted for.
func changesCursorMismatch() *core.Error {
	return core.InvalidState("change cursor belongs to a different scope or after_commit_version")
}

// changesAhead reports a position past the version the store is at: an
// after_commit_version newer than the current version, or a cursor minted
// against a later head than this one (a store put back to an older
// head). The feed fails closed rather than skipping what it cannot see.
func changesAhead(what string, v, current uint64) *core.Error {
	e := core.InvalidState(fmt.Sprintf("%s %d is newer than the current commit version %d", what, v, current))
	e.Details["current_version"] = current
	return e
}

// ReadChanges returns one page of the change feed: the events after the
// request's position (a cursor, else after_commit_version, else the
// start), in (commit_version, sequence) order, skipping every event of a
// workbench whose marker does not show that event's incarnation as
// visible at the event's version. Errors are *Error: InvalidArguments for
// a bad workbench id or limit, InvalidState for a malformed cursor, one of
// another scope, or a position newer than the store's version.
func ReadChanges(ctx context.Context, s *core.Service, req ChangesRequest) (ChangesPage, error) {
	page, werr := readChanges(ctx, s, req)
	if werr != nil {
		return ChangesPage{}, werr
	}
	return page, nil
}

func readChanges(ctx context.Context, s *core.Service, req ChangesRequest) (ChangesPage, *core.Error) {
	if req.WorkbenchID != "" {
		if _, werr := core.ParseWorkbenchID(req.WorkbenchID); werr != nil {
			return ChangesPage{}, werr
		}
	}
	limit := req.Limit
	switch {
	case limit == 0:
		limit = DefaultChangesLimit
	case limit < 0 || limit > MaxChangesLimit:
		return ChangesPage{}, core.InvalidArgumentsf("limit must be between 1 and %d", MaxChangesLimit)
	}
	after := req.AfterCommitVersion
	var pos changePosition
	if after != nil {
		pos = afterVersion(*after)
	}
	var cur *changesCursor
	if req.Cursor != "" {
		cur = new(changesCursor)
		if werr := query.DecodeQueryCursor(s, req.Cursor, changesCursorOp, cur); werr != nil {
			return ChangesPage{}, werr
		}
		if cur.Scope != req.WorkbenchID || (after != nil && (cur.After == nil || *cur.After != *after)) {
			return ChangesPage{}, changesCursorMismatch()
		}
		after = cur.After
		pos = changePosition{started: cur.Started, version: cur.Version, seq: cur.Seq}
		if after != nil && pos.less(afterVersion(*after)) {
			// The cursor's own fields disagree: it was not minted here.
			return ChangesPage{}, core.InvalidState("cursor is malformed")
		}
	}
	sn, werr := s.Pin(ctx)
	if werr != nil {
		return ChangesPage{}, werr
	}
	current := sn.Sequence()
	if after != nil && *after > current {
		return ChangesPage{}, changesAhead("after_commit_version", *after, current)
	}
	if cur != nil && pos.started && pos.version > current {
		return ChangesPage{}, changesAhead("change cursor version", pos.version, current)
	}
	r := changeReader{s: s, sn: sn, scope: req.WorkbenchID, markers: map[string]changeMarker{}}
	if req.WorkbenchID != "" {
		// A workbench's visible events all lie at or after its marker's
		// created version, so the scoped feed seeks straight there; with
		// no visible marker yet, past everything so far.
		ws, ok, werr := s.Workspace(ctx, core.SnapshotReader(ctx, sn), req.WorkbenchID)
		if werr != nil {
			return ChangesPage{}, werr
		}
		r.markers[req.WorkbenchID] = changeMarker{ws: ws, ok: ok}
		switch {
		case !ok || ws.State == nokv.WorkspaceStateStaging:
			pos = maxPosition(pos, afterVersion(current))
		case ws.CreatedVersion > 0:
			pos = maxPosition(pos, afterVersion(ws.CreatedVersion-1))
		}
	}
	events, end, caughtUp, werr := r.read(ctx, pos, limit)
	if werr != nil {
		return ChangesPage{}, werr
	}
	next := changesCursor{V: query.QueryCursorVersion, Op: changesCursorOp, Scope: req.WorkbenchID, After: after,
		Started: end.started, Version: end.version, Seq: end.seq}
	return ChangesPage{
		Events:      events,
		NextCursor:  query.EncodeQueryCursor(s, next),
		ReadVersion: current,
		CaughtUp:    caughtUp,
	}, nil
}

// changeMarker is what one page learned of a workbench's marker.
type changeMarker struct {
	ws nokv.WorkspaceCurrent
	ok bool
}

// changeReader reads one page of the feed at one snapshot.
type changeReader struct {
	s       *core.Service
	sn      *head.Snapshot
	scope   string
	markers map[string]changeMarker
}

// read returns up to limit visible events after pos, the position the
// next page starts after, and whether the page reached the snapshot's
// version.
func (r *changeReader) read(ctx context.Context, pos changePosition, limit int) ([]Change, changePosition, bool, *core.Error) {
	current := r.sn.Sequence()
	var out []Change
	group := uint64(0)
	if pos.started {
		if pos.seq == math.MaxUint32 {
			if pos.version == math.MaxUint64 {
				return nil, pos, true, nil
			}
			// Nothing more of pos.version: start at the next version's group.
			group = (pos.version + 1) >> 8
		} else {
			group = pos.version >> 8
		}
	}
	last := current >> 8
	scanned := 0
	for g := group; g <= last; g++ {
		if scanned == changesMaxGroups {
			// Bounded work per page: resume after the groups scanned.
			return out, maxPosition(pos, afterVersion(g<<8-1)), false, nil
		}
		if scanned%changesPrefetch == 0 {
			if err := r.prefetch(ctx, g, min(last, g+changesPrefetch-1)); err != nil {
				return nil, pos, false, core.FromError(err)
			}
		}
		scanned++
		prefix := changeGroupPrefix(r.s.Root(), g)
		var afterKey []byte
		if pos.started && pos.version>>8 == g {
			k, err := nokv.ChangeEventKey{Root: r.s.Root(), CommitVersion: pos.version, Sequence: pos.seq}.Encode()
			if err != nil {
				return nil, pos, false, core.FromError(err)
			}
			afterKey = k
		}
		for {
			recs, err := r.sn.Scan(ctx, nokv.FamilyChangeEvent, prefix, afterKey, ChangesScanBatch)
			if err != nil {
				return nil, pos, false, core.FromError(err)
			}
			for _, rec := range recs {
				k, err := nokv.ParseChangeEventKey(rec.Key)
				if err != nil {
					return nil, pos, false, core.FromError(err)
				}
				if k.CommitVersion > current {
					// Not possible at one snapshot; never serve past it.
					return out, maxPosition(pos, afterVersion(current)), true, nil
				}
				ch, show, werr := r.event(ctx, k, rec.Value)
				if werr != nil {
					return nil, pos, false, werr
				}
				pos = changePosition{started: true, version: k.CommitVersion, seq: k.Sequence}
				if !show {
					continue
				}
				out = append(out, ch)
				if len(out) == limit {
					return out, pos, false, nil
				}
			}
			if len(recs) < ChangesScanBatch {
				break
			}
			afterKey = recs[len(recs)-1].Key
		}
	}
	return out, maxPosition(pos, afterVersion(current)), true, nil
}

// maxPosition returns the later of p and q.
func maxPosition(p, q changePosition) changePosition {
	if p.less(q) {
		return q
	}
	return p
}

// changeGroupPrefix is the scan prefix of version group g: the root and
// the first seven bytes of the big-endian versions g<<8 .. g<<8+255, which
// is exactly what the family's shard key holds, so the scan reads one
// shard.
func changeGroupPrefix(root nokv.RootID, g uint64) []byte {
	b := wire.NewWriter(bytes.Clone(root[:])).U64(g << 8).Bytes()
	return b[:len(b)-1]
}

// prefetch fetches the shards of groups from..to in one round.
func (r *changeReader) prefetch(ctx context.Context, from, to uint64) error {
	refs := make([]head.ShardRef, 0, to-from+1)
	seen := map[uint8]bool{}
	for g := from; g <= to; g++ {
		first, err := nokv.ChangeEventKey{Root: r.s.Root(), CommitVersion: g << 8}.Encode()
		if err != nil {
			return err
		}
		ref, err := r.sn.ShardOf(nokv.FamilyChangeEvent, first)
		if err != nil {
			return err
		}
		if seen[ref.Index] {
			continue
		}
		seen[ref.Index] = true
		ref.Prefix = changeGroupPrefix(r.s.Root(), g)
		refs = append(refs, ref)
	}
	return r.sn.Prefetch(ctx, []shards.Family{nokv.FamilyChangeEvent, nokv.FamilyWorkspaceCurrent}, refs)
}

// event decodes one row and decides whether the page shows it: in the
// scope, and of an incarnation visible at the event's version.
//
// Visibility. The engine keeps no per-version history of the marker, so
// the feed decides from the marker at the page's snapshot, relying on how
// markers move: an incarnation is never reused, and its marker goes from
// Staging (a restore in progress) to Visible (at the version its final
// command set as CreatedVersion) and at most on to Retired, never back. So
// an event at version v of incarnation i was visible at v exactly when
// the marker still names i, is not Staging, and was created at or before
// v. A marker that names another incarnation, or none, hides the event:
// today only a restore that never finished leaves such events (it writes
// none), and a workbench recreated after retirement would hide its
// earlier incarnation's events (nothing retires workbenches yet).
func (r *changeReader) event(ctx context.Context, k nokv.ChangeEventKey, value []byte) (Change, bool, *core.Error) {
	ev, err := nokv.DecodeChangeEvent(value)
	if err != nil {
		return Change{}, false, core.FromError(err)
	}
	if r.scope != "" && ev.WorkbenchID != r.scope {
		return Change{}, false, nil
	}
	m, ok := r.markers[ev.WorkbenchID]
	if !ok {
		ws, found, werr := r.s.Workspace(ctx, core.SnapshotReader(ctx, r.sn), ev.WorkbenchID)
		if werr != nil {
			return Change{}, false, werr
		}
		m = changeMarker{ws: ws, ok: found}
		r.markers[ev.WorkbenchID] = m
	}
	if !m.ok || m.ws.Incarnation != ev.Incarnation || m.ws.State == nokv.WorkspaceStateStaging ||
		k.CommitVersion < m.ws.CreatedVersion {
		return Change{}, false, nil
	}
	return changeOf(k, ev), true, nil
}

// changeOf shapes a decoded event.
func changeOf(k nokv.ChangeEventKey, ev nokv.ChangeEvent) Change {
	ch := Change{
		CommitVersion: k.CommitVersion,
		Sequence:      k.Sequence,
		WorkbenchID:   ev.WorkbenchID,
		Incarnation:   ev.Incarnation.String(),
		Kind:          ev.Kind.String(),
		Before:        projectionOf(ev.Before),
		After:         projectionOf(ev.After),
	}
	if ev.Path != nil {
		p := core.LogicalPath(ev.Path)
		ch.Path = &p
	}
	if ev.Commit != nil {
		c := ev.Commit.String()
		ch.CommitID = &c
	}
	if ev.Snapshot != nil {
		id := uint64(*ev.Snapshot)
		ch.SnapshotID = &id
	}
	return ch
}

func projectionOf(p *nokv.EventProjection) *ChangeProjection {
	if p == nil {
		return nil
	}
	out := &ChangeProjection{Generation: p.Generation, LogicalSize: p.LogicalSize}
	if !p.Revision.IsZero() {
		r := p.Revision.String()
		out.Revision = &r
	}
	if p.DigestURI != "" {
		d := p.DigestURI
		out.Digest = &d
	}
	return out
}
