package history

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// The reads below are for people looking at a workbench (the console of
// `cairn serve`), beside the tools: what the contract's results leave
// out, a workbench's state, the restore that fills it and the members of
// its last commit. Each pins one validated head, as a tool does.

// WorkbenchView is the state of one workbench.
type WorkbenchView struct {
	WorkbenchID string `json:"workbench_id"`
	Path        string `json:"path"`
	// State is the workspace's lifecycle state (Active, Staging, …).
	State       string `json:"state"`
	Incarnation string `json:"incarnation"`
	// Revision is the workspace revision: it grows with every change.
	Revision        uint64 `json:"revision"`
	CreatedVersion  uint64 `json:"created_version"`
	ModifiedVersion uint64 `json:"modified_version"`
	// ReadVersion is the commit version of the head the view was read at.
	ReadVersion uint64 `json:"read_version"`
	// Restore is the restore filling the workbench while it is staging;
	// nil otherwise.
	Restore *RestoreView `json:"restore"`
	// Commit is the incarnation's commit head; nil when never committed.
	Commit *CommitView `json:"commit"`
}

// RestoreView is a restore in progress.
type RestoreView struct {
	OperationID       string  `json:"operation_id"`
	Phase             string  `json:"phase"`
	SourceWorkbenchID string  `json:"source_workbench_id"`
	SourceSnapshot    *uint64 `json:"source_snapshot"`
	SourceCommit      *string `json:"source_commit"`
	// MemberCursor of MemberCount members are placed.
	MemberCursor uint64 `json:"member_cursor"`
	MemberCount  uint64 `json:"member_count"`
}

// CommitView is a workbench's last commit.
type CommitView struct {
	CommitID          string   `json:"commit_id"`
	HeadGeneration    uint64   `json:"head_generation"`
	ContentDigestURI  string   `json:"content_digest_uri"`
	ManifestDigestURI string   `json:"manifest_digest_uri"`
	MemberCount       uint64   `json:"member_count"`
	Parents           []string `json:"parents"`
}

// MemberView is one member of a commit.
type MemberView struct {
	Path        string `json:"path"` // section-joined, as the change feed's
	Generation  uint64 `json:"generation"`
	Revision    string `json:"revision"`
	SizeBytes   uint64 `json:"size_bytes"`
	DigestURI   string `json:"digest_uri"`
	ContentType string `json:"content_type"`
}

// MembersPage is one page of a commit's members, in path order, with
// the commit's own record.
type MembersPage struct {
	CommitID          string       `json:"commit_id"`
	State             string       `json:"state"` // Sealed
	CreatedVersion    uint64       `json:"created_version"`
	ContentDigestURI  string       `json:"content_digest_uri"`
	ManifestDigestURI string       `json:"manifest_digest_uri"`
	Parents           []string     `json:"parents"`
	MemberCount       uint64       `json:"member_count"`
	Members           []MemberView `json:"members"`
	// NextCursor continues after the last member; empty at the end.
	NextCursor string `json:"next_cursor"`
}

// MaxMembersLimit is the largest page of members asked for.
const MaxMembersLimit = 1000

// InspectWorkbench reads workbench id's state. A workbench that does not
// exist is NotFound.
func InspectWorkbench(ctx context.Context, s *core.Service, id string) (*WorkbenchView, *core.Error) {
	sn, read, ws, werr := pinWorkspace(ctx, s, id)
	if werr != nil {
		return nil, werr
	}
	v := &WorkbenchView{
		WorkbenchID:     id,
		Path:            core.WorkbenchPath(s.LogicalRoot(), id),
		State:           ws.State.String(),
		Incarnation:     ws.Incarnation.String(),
		Revision:        ws.WorkspaceRevision,
		CreatedVersion:  ws.CreatedVersion,
		ModifiedVersion: ws.ModifiedVersion,
		ReadVersion:     sn.Sequence(),
	}
	if ws.Owner != nil && ws.Owner.Kind == nokv.OperationKindRestore {
		op, found, err := restoreOperation(s, read, ws.Owner.ID)
		if err != nil {
			return nil, core.FromError(err)
		}
		if found {
			r := &RestoreView{
				OperationID:       ws.Owner.ID.String(),
				Phase:             op.Phase.String(),
				SourceWorkbenchID: op.SourceWorkbenchID,
				MemberCursor:      op.MemberCursor,
				MemberCount:       op.MemberCount,
			}
			if op.SourceSnapshot != nil {
				n := uint64(*op.SourceSnapshot)
				r.SourceSnapshot = &n
			}
			if op.SourceCommit != nil {
				c := op.SourceCommit.String()
				r.SourceCommit = &c
			}
			v.Restore = r
		}
	}
	h, c, ok, werr := lastCommit(ctx, s, sn, read, ws)
	if werr != nil {
		return nil, werr
	}
	if ok {
		v.Commit = &CommitView{
			CommitID:          h.Commit.String(),
			HeadGeneration:    h.HeadGeneration,
			ContentDigestURI:  c.ContentDigestURI,
			ManifestDigestURI: c.ManifestDigestURI,
			MemberCount:       c.MemberCount,
			Parents:           []string{},
		}
		for _, p := range c.Parents {
			v.Commit.Parents = append(v.Commit.Parents, p.String())
		}
	}
	return v, nil
}

// errPageFull stops a walk of the members once a page is full.
var errPageFull = errors.New("page full")

// CommitMembersPage reads up to limit members of one of workbench id's
// commits (commit, 64 hex digits; empty: its last) whose paths sort
// after the cursor (a member's path, as a page's NextCursor gives it;
// empty: from the first). A commit of another workbench is NotFound; one
// retiring or retired is InvalidState, for its members are no longer
// kept.
func CommitMembersPage(ctx context.Context, s *core.Service, id, commit, cursor string, limit int) (*MembersPage, *core.Error) {
	if limit < 1 || limit > MaxMembersLimit {
		return nil, core.InvalidArgumentsf("members page limit must be between 1 and %d", MaxMembersLimit)
	}
	var after []string
	if cursor != "" {
		comps, werr := core.NormalizePath(cursor)
		if werr != nil {
			return nil, werr
		}
		after = comps
	}
	sn, read, ws, werr := pinWorkspace(ctx, s, id)
	if werr != nil {
		return nil, werr
	}
	var cid nokv.CommitID
	var c nokv.Commit
	if commit == "" {
		h, last, ok, werr := lastCommit(ctx, s, sn, read, ws)
		if werr != nil {
			return nil, werr
		}
		if !ok {
			return nil, core.Missing(fmt.Sprintf("workbench %s has never been committed", id))
		}
		cid, c = h.Commit, last
	} else {
		b, err := hex.DecodeString(commit)
		if err != nil || len(b) != len(cid) {
			return nil, core.InvalidArgumentsf("commit %q is not 64 hexadecimal digits", commit)
		}
		copy(cid[:], b)
		found := false
		if c, found, err = readCommit(s, read, cid); err != nil {
			return nil, core.FromError(err)
		}
		if !found || c.WorkbenchID != id || c.SourceIncarnation != ws.Incarnation {
			return nil, core.Missing(fmt.Sprintf("workbench %s has no commit %s", id, commit))
		}
		if c.State != nokv.CommitStateSealed {
			return nil, core.InvalidState(fmt.Sprintf("commit %s is %s: its members are no longer kept", commit, c.State))
		}
	}
	page := &MembersPage{
		CommitID:          cid.String(),
		State:             c.State.String(),
		CreatedVersion:    c.CreatedVersion,
		ContentDigestURI:  c.ContentDigestURI,
		ManifestDigestURI: c.ManifestDigestURI,
		Parents:           []string{},
		MemberCount:       c.MemberCount,
		Members:           []MemberView{},
	}
	for _, p := range c.Parents {
		page.Parents = append(page.Parents, p.String())
	}
	var last []string
	err := s.CommitMembers(ctx, sn, cid, c, func(path []string, m nokv.CommitMember) error {
		if after != nil && core.ComparePaths(path, after) <= 0 {
			return nil
		}
		if len(page.Members) == limit {
			page.NextCursor = core.LogicalPath(last)
			return errPageFull
		}
		page.Members = append(page.Members, MemberView{
			Path:        core.LogicalPath(path),
			Generation:  m.PathGeneration,
			Revision:    m.Revision.String(),
			SizeBytes:   m.LogicalSize,
			DigestURI:   m.BodyDigestURI,
			ContentType: m.ContentType,
		})
		last = path
		return nil
	})
	if err != nil && !errors.Is(err, errPageFull) {
		return nil, core.FromError(err)
	}
	return page, nil
}

// pinWorkspace pins a head and reads workbench id's marker there; a
// workbench that does not exist is NotFound.
func pinWorkspace(ctx context.Context, s *core.Service, id string) (*head.Snapshot, core.Reader, nokv.WorkspaceCurrent, *core.Error) {
	if _, werr := core.ParseWorkbenchID(id); werr != nil {
		return nil, nil, nokv.WorkspaceCurrent{}, werr
	}
	sn, werr := s.Pin(ctx)
	if werr != nil {
		return nil, nil, nokv.WorkspaceCurrent{}, werr
	}
	read := core.SnapshotReader(ctx, sn)
	ws, ok, werr := s.Workspace(ctx, read, id)
	if werr != nil {
		return nil, nil, nokv.WorkspaceCurrent{}, werr
	}
	if !ok {
		return nil, nil, nokv.WorkspaceCurrent{}, core.Missing(fmt.Sprintf("workbench %s does not exist", id))
	}
	return sn, read, ws, nil
}

// lastCommit reads the commit head of the incarnation ws and its commit;
// ok is false when it was never committed.
func lastCommit(ctx context.Context, s *core.Service, sn *head.Snapshot, read core.Reader, ws nokv.WorkspaceCurrent) (nokv.WorkbenchCommitHead, nokv.Commit, bool, *core.Error) {
	h, ok, err := core.CommitHead(ctx, sn, s.Root(), ws.Incarnation)
	if err != nil {
		return h, nokv.Commit{}, false, core.FromError(err)
	}
	if !ok {
		return h, nokv.Commit{}, false, nil
	}
	c, found, err := readCommit(s, read, h.Commit)
	if err != nil {
		return h, c, false, core.FromError(err)
	}
	if !found {
		return h, c, false, core.Internal(fmt.Sprintf("commit head names commit %s, which has no record", h.Commit))
	}
	return h, c, true, nil
}
