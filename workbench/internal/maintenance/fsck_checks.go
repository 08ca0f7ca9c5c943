package maintenance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/publish"
	"github.com/cairnstore/cairn/workbench/internal/snapshots"

	"github.com/cairnstore/cairn/workbench/internal/nokv"
	"github.com/cairnstore/cairn/workbench/internal/tree"
)

// The Workbench layer's checks of one root. Each says which records must
// agree and reports a finding naming the record that does not. The list,
// and what a finding means, is docs/operations.md, "What fsck checks".

// checkWorkspaces: every workbench's incarnation is claimed by that
// workbench, and every claim names a workbench.
func (c *rootCheck) checkWorkspaces() {
	for _, id := range sortedKeys(c.workspaces) {
		ws := c.workspaces[id]
		if got, ok := c.claims[ws.v.Incarnation]; !ok || got != id {
			c.finding(nokv.FamilyWorkspaceCurrent, ws.key, "workbench "+id,
				"a WorkspaceIncarnationClaim of incarnation "+ws.v.Incarnation.String()+" naming "+id, claimFound(got, ok))
		}
	}
	incs := slices.SortedFunc(maps.Keys(c.claims), func(a, b nokv.IncarnationID) int { return bytes.Compare(a[:], b[:]) })
	for _, inc := range incs {
		id := c.claims[inc]
		if _, ok := c.workspaces[id]; !ok {
			key, _ := nokv.WorkspaceIncarnationClaimKey{Root: c.root, Incarnation: inc}.Encode()
			c.finding(nokv.FamilyWorkspaceIncarnationClaim, key, "incarnation "+inc.String(), "a WorkspaceCurrent of workbench "+id, "none")
		}
	}
}

func claimFound(id string, ok bool) string {
	if !ok {
		return "none"
	}
	return "a claim naming " + id
}

// incarnations maps each incarnation a WorkspaceCurrent names to its
// workbench id.
func (c *rootCheck) incarnations() map[nokv.IncarnationID]string {
	out := map[nokv.IncarnationID]string{}
	for id, ws := range c.workspaces {
		out[ws.v.Incarnation] = id
	}
	return out
}

// pathName names a path of an incarnation for a finding.
func (c *rootCheck) pathName(incs map[nokv.IncarnationID]string, inc nokv.IncarnationID, path []string) string {
	if id, ok := incs[inc]; ok {
		return "path " + id + ":" + core.LogicalPath(path)
	}
	return "path " + inc.String() + ":" + core.LogicalPath(path)
}

// checkPaths: each PathCurrent belongs to a workbench's incarnation,
// names an Available revision it holds a Path reference on and agrees
// with it; its ancestors have PathDirectory rows and its index rows are
// the ones its entry implies. Each PathDirectory row has a path below it
// and no artifact at its own path; each index row has its path's entry.
func (c *rootCheck) checkPaths() {
	incs := c.incarnations()
	refs := c.refSet()
	wantDirs := map[string]bool{}
	wantIndex := map[string]bool{}
	for _, pid := range sortedKeys(c.paths) {
		p := c.paths[pid]
		name := c.pathName(incs, p.k.Incarnation, p.k.Path)
		if _, ok := incs[p.k.Incarnation]; !ok {
			c.finding(nokv.FamilyPathCurrent, p.key, name, "a workbench of incarnation "+p.k.Incarnation.String(), "none")
		}
		rev, ok := c.revisions[p.v.Revision]
		switch {
		case !ok:
			c.finding(nokv.FamilyPathCurrent, p.key, name, "ArtifactRevision "+p.v.Revision.String(), "none")
		case rev.v.State != nokv.RevisionStateAvailable:
			c.finding(nokv.FamilyPathCurrent, p.key, name, "revision "+p.v.Revision.String()+" Available", rev.v.State.String())
		default:
			if diff := entryAgrees(p.v, rev.v); diff != "" {
				c.finding(nokv.FamilyPathCurrent, p.key, name, "the entry to agree with revision "+p.v.Revision.String(), diff)
			}
		}
		refKey, err := nokv.PathRefKey(c.root, p.k.Incarnation, p.k.Path, p.v.Revision).Encode()
		// A restore in key order places a path's reference and index rows
		// in other commands than its PathCurrent row.
		restoring := c.restoringIncs[p.k.Incarnation]
		if err == nil && !refs[string(refKey)] && !restoring {
			c.finding(nokv.FamilyRevisionRef, refKey, name, "a Path reference on revision "+p.v.Revision.String(), "none")
		}
		for i := 1; i < len(p.k.Path); i++ {
			wantDirs[pathID(p.k.Incarnation, p.k.Path[:i])] = true
		}
		for i := 1; i < len(p.k.Path); i++ {
			dir := p.k.Path[:i]
			if _, ok := c.dirs[pathID(p.k.Incarnation, dir)]; !ok {
				key, _ := core.DirKey(c.root, p.k.Incarnation, dir)
				c.finding(nokv.FamilyPathDirectory, key, c.pathName(incs, p.k.Incarnation, dir),
					"a PathDirectory row for an ancestor of "+core.LogicalPath(p.k.Path), "none")
			}
		}
		keys, err := core.PathIndexKeys(c.root, p.k.Incarnation, p.k.Path, &p.v)
		if err != nil {
			c.finding(nokv.FamilyPathCurrent, p.key, name, "an entry that indexes", err.Error())
			continue
		}
		for _, k := range keys {
			wantIndex[string(k)] = true
			row, ok := c.index[string(k)]
			switch {
			case !ok:
				if !restoring {
					c.finding(nokv.FamilySecondaryIndex, k, name+" in "+indexName(k), "an index row of the path", "none")
				}
			case row.v.PathGeneration != p.v.Generation || row.v.Revision != p.v.Revision:
				c.finding(nokv.FamilySecondaryIndex, k, name+" in "+row.k.IndexID,
					fmt.Sprintf("generation %d, revision %s", p.v.Generation, p.v.Revision),
					fmt.Sprintf("generation %d, revision %s", row.v.PathGeneration, row.v.Revision))
			}
		}
	}
	for _, did := range sortedKeys(c.dirs) {
		d := c.dirs[did]
		name := c.pathName(incs, d.k.Incarnation, d.k.Path)
		if !wantDirs[did] {
			c.finding(nokv.FamilyPathDirectory, d.key, name, "an artifact below the directory", "none")
		}
		if _, ok := c.paths[did]; ok {
			c.finding(nokv.FamilyPathDirectory, d.key, name, "a directory or an artifact", "both")
		}
	}
	for _, k := range sortedKeys(c.index) {
		if row := c.index[k]; !wantIndex[k] && !c.restoringIncs[row.k.Incarnation] {
			c.finding(nokv.FamilySecondaryIndex, row.key, c.pathName(incs, row.k.Incarnation, row.k.Path)+" in "+row.k.IndexID,
				"a path entry the row indexes", "none with this value")
		}
	}
}

// indexName is the index id of an index key, for a finding.
func indexName(key []byte) string {
	k, err := nokv.ParseSecondaryIndexKey(key)
	if err != nil {
		return "an index"
	}
	return k.IndexID
}

// entryAgrees compares the revision fields a path entry copies.
func entryAgrees(e nokv.PathEntry, r nokv.ArtifactRevision) string {
	var diffs []string
	if e.LogicalSize != r.LogicalSize {
		diffs = append(diffs, fmt.Sprintf("size %d vs %d", e.LogicalSize, r.LogicalSize))
	}
	if e.BodyDigestURI != r.BodyDigestURI {
		diffs = append(diffs, "body digest "+e.BodyDigestURI+" vs "+r.BodyDigestURI)
	}
	if e.ManifestDigestURI != r.ManifestDigestURI {
		diffs = append(diffs, "manifest digest "+e.ManifestDigestURI+" vs "+r.ManifestDigestURI)
	}
	if e.DependencyCount != r.DependencyCount || e.DependencyDepth != r.DependencyDepth {
		diffs = append(diffs, fmt.Sprintf("dependencies %d/%d vs %d/%d", e.DependencyCount, e.DependencyDepth, r.DependencyCount, r.DependencyDepth))
	}
	if e.ContentType != r.ContentType {
		diffs = append(diffs, "content type "+e.ContentType+" vs "+r.ContentType)
	}
	return strings.Join(diffs, "; ")
}

// refSet is the set of RevisionRef keys.
func (c *rootCheck) refSet() map[string]bool {
	out := make(map[string]bool, len(c.refs))
	for _, r := range c.refs {
		out[string(r.key)] = true
	}
	return out
}

// checkRevisions recomputes each revision's strong reference count from
// its RevisionRef rows, checks that every reference names an Available
// revision and an owner that exists and names it, and that a revision
// without references has its GcCandidate, and only a current one.
func (c *rootCheck) checkRevisions() {
	incs := c.incarnations()
	count := map[nokv.RevisionID]uint64{}
	for _, r := range c.refs {
		count[r.k.Revision]++
		name := refName(r.k)
		rev, ok := c.revisions[r.k.Revision]
		switch {
		case !ok:
			c.finding(nokv.FamilyRevisionRef, r.key, name, "ArtifactRevision "+r.k.Revision.String(), "none")
		case rev.v.State != nokv.RevisionStateAvailable:
			c.finding(nokv.FamilyRevisionRef, r.key, name, "a referenced revision Available", rev.v.State.String())
		case r.v.ReferenceEpochAtAdd > rev.v.ReferenceEpoch:
			c.finding(nokv.FamilyRevisionRef, r.key, name,
				fmt.Sprintf("epoch at add at most the revision's epoch %d", rev.v.ReferenceEpoch), fmt.Sprint(r.v.ReferenceEpochAtAdd))
		}
		switch r.k.Kind {
		case nokv.ReferenceKindPath:
			p, ok := c.paths[pathID(r.k.Incarnation, r.k.Path)]
			if !ok && c.restoringIncs[r.k.Incarnation] {
				break // placed before its path by a restore in key order
			}
			if !ok || p.v.Revision != r.k.Revision {
				found := "no PathCurrent"
				if ok {
					found = "the path at revision " + p.v.Revision.String()
				}
				c.finding(nokv.FamilyRevisionRef, r.key, name+" of "+c.pathName(incs, r.k.Incarnation, r.k.Path),
					"the path at revision "+r.k.Revision.String(), found)
			}
		case nokv.ReferenceKindCommit:
			// A restore places its commit's references before it seals
			// the commit.
			if _, ok := c.commits[r.k.Commit]; !ok && !c.restoringCommits[r.k.Commit] {
				c.finding(nokv.FamilyRevisionRef, r.key, name, "Commit "+r.k.Commit.String(), "none")
			}
		case nokv.ReferenceKindRevisionDependency:
			if _, ok := c.revisions[r.k.Child]; !ok {
				c.finding(nokv.FamilyRevisionRef, r.key, name, "the dependent ArtifactRevision "+r.k.Child.String(), "none")
			}
		}
	}
	candidates := map[nokv.RevisionID][]candidateRow{}
	for _, cand := range c.candidates {
		candidates[cand.k.Revision] = append(candidates[cand.k.Revision], cand)
	}
	for _, id := range sortedRevisions(c.revisions) {
		rev := c.revisions[id]
		name := "revision " + id.String()
		if got := count[id]; got != rev.v.StrongReferenceCount {
			c.finding(nokv.FamilyArtifactRevision, rev.key, name,
				fmt.Sprintf("strong_reference_count %d", got)+" (the RevisionRef rows naming it)",
				fmt.Sprintf("strong_reference_count %d", rev.v.StrongReferenceCount))
		}
		if rev.v.State != nokv.RevisionStateAvailable || rev.v.StrongReferenceCount != 0 {
			continue
		}
		// No references: the release that dropped the last one wrote a
		// candidate keyed by the epoch it left.
		var current *candidateRow
		for i, cand := range candidates[id] {
			if cand.k.ReferenceEpoch == rev.v.ReferenceEpoch {
				current = &candidates[id][i]
			}
		}
		switch {
		case current == nil:
			key, _ := nokv.GcCandidateKey{Root: c.root, Revision: id, ReferenceEpoch: rev.v.ReferenceEpoch}.Encode()
			c.finding(nokv.FamilyGcCandidate, key, name, fmt.Sprintf("a GcCandidate at epoch %d", rev.v.ReferenceEpoch), "none")
		case current.v.LastZeroRefVersion != rev.v.LastZeroRefVersion:
			c.finding(nokv.FamilyGcCandidate, current.key, name,
				fmt.Sprintf("last-zero version %d", rev.v.LastZeroRefVersion), fmt.Sprint(current.v.LastZeroRefVersion))
		}
	}
	for _, cand := range c.candidates {
		name := fmt.Sprintf("revision %s at epoch %d", cand.k.Revision, cand.k.ReferenceEpoch)
		rev, ok := c.revisions[cand.k.Revision]
		switch {
		case !ok:
			c.finding(nokv.FamilyGcCandidate, cand.key, name, "ArtifactRevision "+cand.k.Revision.String(), "none")
		case cand.k.ReferenceEpoch > rev.v.ReferenceEpoch:
			c.finding(nokv.FamilyGcCandidate, cand.key, name,
				fmt.Sprintf("an epoch at most the revision's %d", rev.v.ReferenceEpoch), fmt.Sprint(cand.k.ReferenceEpoch))
		case cand.k.ReferenceEpoch == rev.v.ReferenceEpoch && rev.v.StrongReferenceCount != 0:
			// The one finding that could let GC delete a body in use.
			c.finding(nokv.FamilyGcCandidate, cand.key, name,
				"a current candidate only for a revision without references",
				fmt.Sprintf("%d references", rev.v.StrongReferenceCount))
		}
	}
}

// refName names a RevisionRef for a finding.
func refName(k nokv.RevisionRefKey) string {
	switch k.Kind {
	case nokv.ReferenceKindPath:
		return "Path reference on " + k.Revision.String()
	case nokv.ReferenceKindCommit:
		return "Commit " + k.Commit.String() + " reference on " + k.Revision.String()
	default:
		return "dependency of " + k.Child.String() + " on " + k.Revision.String()
	}
}

// checkManifests: each revision's rows are numbered 0 to block_count-1,
// hold the body contiguously, sum to its size and hash to its manifest
// digest; a block the revision owns sits at its derived key; the owners
// of reused rows are exactly its dependency references, counted, sealed
// and as deep as the revision says.
func (c *rootCheck) checkManifests() {
	layout := c.fk.store.Layout()
	depRefs := map[nokv.RevisionID][]nokv.RevisionID{}
	for _, r := range c.refs {
		if r.k.Kind == nokv.ReferenceKindRevisionDependency {
			depRefs[r.k.Child] = append(depRefs[r.k.Child], r.k.Revision)
		}
	}
	for _, rev := range sortedRevisions(c.manifests) {
		rows := c.manifests[rev]
		if _, ok := c.revisions[rev]; !ok {
			c.finding(nokv.FamilyArtifactManifest, rows[0].key, "revision "+rev.String(), "ArtifactRevision "+rev.String(), "none")
		}
	}
	for _, id := range sortedRevisions(c.revisions) {
		rev := c.revisions[id]
		name := "revision " + id.String()
		rows := c.manifests[id]
		if rev.v.State == nokv.RevisionStateDeleted {
			continue // its rows may have been pruned
		}
		var off uint64
		owners := map[nokv.RevisionID]bool{}
		for i, r := range rows {
			if r.k.ObjectIndex != uint64(i) {
				c.finding(nokv.FamilyArtifactManifest, r.key, name, fmt.Sprintf("row %d", i), fmt.Sprintf("row %d", r.k.ObjectIndex))
			}
			if r.v.LogicalOffset != off {
				c.finding(nokv.FamilyArtifactManifest, r.key, name+fmt.Sprintf(" row %d", r.k.ObjectIndex),
					fmt.Sprintf("logical offset %d", off), fmt.Sprint(r.v.LogicalOffset))
			}
			off = r.v.LogicalOffset + r.v.Length
			if r.v.PhysicalOwner != id {
				owners[r.v.PhysicalOwner] = true
			} else if r.v.Inline == nil {
				if want := bodies.BlockKey(layout, c.root, id, r.v.PhysicalObjectIndex); r.v.ObjectKey != want {
					c.finding(nokv.FamilyArtifactManifest, r.key, name+fmt.Sprintf(" row %d", r.k.ObjectIndex), "object key "+want, r.v.ObjectKey)
				}
			}
		}
		if uint64(len(rows)) != rev.v.BlockCount {
			c.finding(nokv.FamilyArtifactRevision, rev.key, name, fmt.Sprintf("block_count %d (its manifest rows)", len(rows)), fmt.Sprint(rev.v.BlockCount))
		}
		if off != rev.v.LogicalSize {
			c.finding(nokv.FamilyArtifactRevision, rev.key, name, fmt.Sprintf("logical size %d (its manifest rows)", off), fmt.Sprint(rev.v.LogicalSize))
		}
		found, ok := c.manifestDigests[id]
		if !ok {
			found = manifestDigest(nil)
		}
		if found != rev.v.ManifestDigestURI {
			c.finding(nokv.FamilyArtifactRevision, rev.key, name, "manifest digest "+found+" (its manifest rows)", rev.v.ManifestDigestURI)
		}
		// Dependencies: the reused rows' owners against the references.
		deps := core.SortRevisions(slices.Collect(maps.Keys(owners)))
		refsOn := core.SortRevisions(depRefs[id])
		if !slices.Equal(deps, refsOn) {
			c.finding(nokv.FamilyRevisionRef, nil, name, "dependency references on "+revisionList(deps)+" (owners of reused rows)", revisionList(refsOn))
		}
		var depth uint32
		for _, o := range deps {
			if or, ok := c.revisions[o]; ok {
				depth = max(depth, or.v.DependencyDepth+1)
			}
		}
		if uint32(len(deps)) != rev.v.DependencyCount || publish.DependencyDigest(deps) != rev.v.DependencyDigest || depth != rev.v.DependencyDepth {
			c.finding(nokv.FamilyArtifactRevision, rev.key, name,
				fmt.Sprintf("dependency count %d, depth %d and the digest of %s", len(deps), depth, revisionList(deps)),
				fmt.Sprintf("count %d, depth %d, a digest that matches: %v", rev.v.DependencyCount, rev.v.DependencyDepth, publish.DependencyDigest(deps) == rev.v.DependencyDigest))
		}
	}
}

// manifestDigest is the manifest digest of a revision's rows, in order,
// or why they do not encode.
func manifestDigest(rows []manifestRow) string {
	entries := make([]nokv.ArtifactManifestEntry, len(rows))
	for i, r := range rows {
		entries[i] = r.v
	}
	got, err := publish.ManifestDigestURI(entries)
	if err != nil {
		return err.Error()
	}
	return got
}

func revisionList(ids []nokv.RevisionID) string {
	if len(ids) == 0 {
		return "none"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = id.String()
	}
	return strings.Join(s, ", ")
}

// checkBodies reads, for each live revision (Available and referenced)
// not read at an earlier root, its whole body (every block checked against its row's length and
// digest on the way) and checks it against the revision's body digest.
func (c *rootCheck) checkBodies(ctx context.Context) error {
	if !c.fk.opts.Bodies {
		return nil
	}
	var todo []nokv.RevisionID
	for _, id := range sortedRevisions(c.revisions) {
		if revisionLive(c.revisions[id].v) && !c.fk.checked[id] {
			todo = append(todo, id)
		}
	}
	for i, id := range todo {
		c.fk.checked[id] = true
		rev := c.revisions[id]
		rows := c.manifests[id]
		entries := make([]nokv.ArtifactManifestEntry, len(rows))
		for j, r := range rows {
			entries[j] = r.v
		}
		h := sha256.New()
		blocks, err := core.RowBlocks(entries)
		if err == nil {
			err = c.fk.bodies.Stream(ctx, blocks, func(b []byte) error {
				h.Write(b)
				c.fk.rep.BodyBytes += int64(len(b))
				return nil
			})
		}
		c.fk.rep.Bodies++
		switch {
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			c.finding(nokv.FamilyArtifactRevision, rev.key, "body of revision "+id.String(), "a body whose blocks are present and match their rows", err.Error())
		case publish.DigestURIOf(h) != rev.v.BodyDigestURI:
			c.finding(nokv.FamilyArtifactRevision, rev.key, "body of revision "+id.String(), "body digest "+rev.v.BodyDigestURI, publish.DigestURIOf(h))
		}
		if c.fk.opts.Progress != nil {
			c.fk.opts.Progress(i+1, len(todo))
		}
	}
	return nil
}

// checkCommits recomputes every commit's seals from its rows (the member
// count and digest from its CommitMember rows, the unique revision count
// and digest from its Commit references, which must be exactly its
// members' revisions, the parents from the ChildCommit consumer rows on
// them) and its consumer count from its CommitConsumer rows; a retired
// commit keeps none. Each workbench head names a Sealed commit of its
// incarnation that counts the head among its consumers.
func (c *rootCheck) checkCommits() {
	consumers := map[nokv.CommitID]uint64{}
	childOf := map[nokv.CommitID][]nokv.CommitID{}
	for _, r := range c.consumers {
		consumers[r.k.Commit]++
		name := "consumer of commit " + r.k.Commit.String()
		cm, ok := c.commits[r.k.Commit]
		if !ok {
			c.finding(nokv.FamilyCommitConsumer, r.key, name, "Commit "+r.k.Commit.String(), "none")
			continue
		}
		if r.v.ConsumerEpochAtAdd > cm.v.ConsumerEpoch {
			c.finding(nokv.FamilyCommitConsumer, r.key, name, fmt.Sprintf("epoch at add at most the commit's %d", cm.v.ConsumerEpoch), fmt.Sprint(r.v.ConsumerEpochAtAdd))
		}
		if r.k.Kind == nokv.CommitConsumerKindChildCommit {
			childOf[r.k.Child] = append(childOf[r.k.Child], r.k.Commit)
			if _, ok := c.commits[r.k.Child]; !ok {
				c.finding(nokv.FamilyCommitConsumer, r.key, name, "the child Commit "+r.k.Child.String(), "none")
			}
		}
	}
	commitRefs := map[nokv.CommitID][]nokv.RevisionID{}
	for _, r := range c.refs {
		if r.k.Kind == nokv.ReferenceKindCommit {
			commitRefs[r.k.Commit] = append(commitRefs[r.k.Commit], r.k.Revision)
		}
	}
	for _, id := range sortedCommits(c.commits) {
		cm := c.commits[id]
		name := "commit " + id.String()
		if got := consumers[id]; got != cm.v.ConsumerCount {
			c.finding(nokv.FamilyCommit, cm.key, name, fmt.Sprintf("consumer_count %d (its CommitConsumer rows)", got), fmt.Sprint(cm.v.ConsumerCount))
		}
		rows := c.members[id]
		refs := core.SortRevisions(commitRefs[id])
		parents := sortCommits(childOf[id])
		if cm.v.State == nokv.CommitStateRetired {
			if len(rows) != 0 || len(refs) != 0 || len(parents) != 0 {
				c.finding(nokv.FamilyCommit, cm.key, name, "a retired commit without members, references or parent consumers",
					fmt.Sprintf("%d members, %d references, %d parent consumers", len(rows), len(refs), len(parents)))
			}
			continue
		}
		d := core.NewMemberDigester()
		var entries []tree.Entry // of the member tree, with tree digests
		revSet := map[nokv.RevisionID]bool{}
		for _, m := range rows {
			err := d.Add(m.k.Path, m.v)
			if cm.v.TreeDigests {
				var e tree.Entry
				e, err = core.MemberTreeEntry(m.k.Path, m.v)
				entries = append(entries, e)
			}
			if err != nil {
				c.finding(nokv.FamilyCommitMember, m.key, name+" member "+core.LogicalPath(m.k.Path), "a member that digests", err.Error())
			}
			revSet[m.v.Revision] = true
			if rev, ok := c.revisions[m.v.Revision]; ok {
				e := nokv.PathEntry{LogicalSize: m.v.LogicalSize, BodyDigestURI: m.v.BodyDigestURI, ManifestDigestURI: m.v.ManifestDigestURI,
					DependencyCount: m.v.DependencyCount, DependencyDepth: m.v.DependencyDepth, ContentType: m.v.ContentType}
				if diff := entryAgrees(e, rev.v); diff != "" {
					c.finding(nokv.FamilyCommitMember, m.key, name+" member "+core.LogicalPath(m.k.Path), "the member to agree with revision "+m.v.Revision.String(), diff)
				}
			}
		}
		sum := d.Sum()
		if cm.v.TreeDigests {
			sum, _ = core.MemberTreeDigest(entries) // a bad entry is a finding above
		}
		if uint64(len(rows)) != cm.v.MemberCount || sum != cm.v.MemberDigest {
			c.finding(nokv.FamilyCommit, cm.key, name,
				fmt.Sprintf("member seal of its %d members (tree digest sha256:%x)", len(rows), sum),
				fmt.Sprintf("member_count %d, tree digest %s", cm.v.MemberCount, cm.v.TreeDigestURI()))
		}
		members := core.SortRevisions(slices.Collect(maps.Keys(revSet)))
		if cm.v.MemberTree != nil {
			c.checkTreeReferences(id, cm, members, refs)
		} else if !slices.Equal(refs, members) || uint64(len(refs)) != cm.v.UniqueRevisionCount || core.RevisionDigest(refs) != cm.v.RevisionDigest {
			c.finding(nokv.FamilyCommit, cm.key, name,
				fmt.Sprintf("Commit references on exactly its members' %d revisions (%s), sealed", len(members), revisionList(members)),
				fmt.Sprintf("%d references (%s), unique_revision_count %d, digest matches: %v",
					len(refs), revisionList(refs), cm.v.UniqueRevisionCount, core.RevisionDigest(refs) == cm.v.RevisionDigest))
		}
		sealed := sortCommits(slices.Clone(cm.v.Parents))
		if !slices.Equal(parents, sealed) || core.ParentDigest(cm.v.Parents) != cm.v.ParentDigest {
			c.finding(nokv.FamilyCommit, cm.key, name,
				fmt.Sprintf("parents %s (ChildCommit consumers naming it), sealed", commitList(parents)),
				fmt.Sprintf("parents %s, digest matches: %v", commitList(cm.v.Parents), core.ParentDigest(cm.v.Parents) == cm.v.ParentDigest))
		}
		if _, ok := c.revisions[cm.v.TreeManifestRevision]; !ok {
			c.finding(nokv.FamilyCommit, cm.key, name, "its run manifest's ArtifactRevision "+cm.v.TreeManifestRevision.String(), "none")
		}
	}
	for _, h := range c.heads {
		name := "head of incarnation " + h.k.Incarnation.String()
		cm, ok := c.commits[h.v.Commit]
		switch {
		case !ok:
			c.finding(nokv.FamilyWorkbenchCommitHead, h.key, name, "Commit "+h.v.Commit.String(), "none")
			continue
		case cm.v.State != nokv.CommitStateSealed:
			c.finding(nokv.FamilyWorkbenchCommitHead, h.key, name, "a Sealed commit", cm.v.State.String())
		case cm.v.SourceIncarnation != h.k.Incarnation:
			c.finding(nokv.FamilyWorkbenchCommitHead, h.key, name, "a commit of the head's incarnation", "incarnation "+cm.v.SourceIncarnation.String())
		}
		key, err := nokv.CommitConsumerKey{Root: c.root, Commit: h.v.Commit, Kind: nokv.CommitConsumerKindWorkbenchHead, Incarnation: h.k.Incarnation}.Encode()
		if err == nil && !c.hasConsumer(key) {
			c.finding(nokv.FamilyCommitConsumer, key, name, "a WorkbenchHead consumer on commit "+h.v.Commit.String(), "none")
		}
	}
}

func (c *rootCheck) hasConsumer(key []byte) bool {
	for _, r := range c.consumers {
		if bytes.Equal(r.key, key) {
			return true
		}
	}
	return false
}

func commitList(ids []nokv.CommitID) string {
	if len(ids) == 0 {
		return "none"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = id.String()
	}
	return strings.Join(s, ", ")
}

// checkSnapshots: an Active snapshot is held (an engine hold of its owner
// on its held root, and an Active HistoryHold at its read version); an
// ended one is not; every snapshot hold of the root and every snapshot
// HistoryHold belongs to an Active snapshot; an alias names a snapshot
// minted under it and projects its state.
//
// A snapshot's incarnation need not be a current workbench's: a restore
// of a pinned state (`cairn pin restore`) keeps the snapshot rows and
// their holds as they are, so a snapshot may outlive, in the restored
// state, the workbench it was taken of.
func (c *rootCheck) checkSnapshots() {
	engineHolds := map[string]string{} // owner -> held root
	for _, h := range c.sn.Root().Holds {
		engineHolds[h.Owner] = h.Root.String()
	}
	historyHolds := map[nokv.SnapshotID]historyHoldRow{}
	for _, h := range c.holds {
		if h.k.Kind == nokv.HistoryHoldKindSnapshot {
			historyHolds[h.k.Snapshot] = h
		}
	}
	for _, id := range sortedKeys(c.snapshots) {
		s := c.snapshots[id]
		name := "snapshot " + id.String()
		held, engineHeld := engineHolds[snapshots.HoldOwner(id)]
		hh, historyHeld := historyHolds[id]
		if s.v.State == nokv.SnapshotStateActive {
			want := fmt.Sprintf("%x", s.v.HeldRoot)
			switch {
			case !engineHeld:
				c.finding(nokv.FamilySnapshotRef, s.key, name, "an engine hold "+snapshots.HoldOwner(id)+" on root "+shortHash(want)+" (the snapshot is Active)", "none")
			case held != want:
				c.finding(nokv.FamilySnapshotRef, s.key, name, "an engine hold on root "+want, "a hold on root "+held)
			}
			switch {
			case !historyHeld:
				key, _ := nokv.SnapshotHoldKey(c.root, id).Encode()
				c.finding(nokv.FamilyHistoryHold, key, name, "an Active HistoryHold (the snapshot is Active)", "none")
			case hh.v.State != nokv.HistoryHoldStateActive || hh.v.ReadVersion != s.v.ReadVersion:
				c.finding(nokv.FamilyHistoryHold, hh.key, name, fmt.Sprintf("Active at read version %d", s.v.ReadVersion),
					fmt.Sprintf("%v at read version %d", hh.v.State, hh.v.ReadVersion))
			}
			continue
		}
		if engineHeld {
			c.finding(nokv.FamilySnapshotRef, s.key, name, "no engine hold (the snapshot is "+s.v.State.String()+")", "a hold on root "+held)
		}
		if historyHeld {
			c.finding(nokv.FamilyHistoryHold, hh.key, name, "no HistoryHold (the snapshot is "+s.v.State.String()+")", hh.v.State.String())
		}
	}
	for _, h := range c.sn.Root().Holds {
		id, ok := strings.CutPrefix(h.Owner, "snapshot/")
		if !ok {
			continue
		}
		sid, err := nokv.ParseSnapshotID(id)
		if _, known := c.snapshots[sid]; err != nil || !known {
			c.fk.add(FsckFinding{Layer: "workbench", Root: c.sn.RootHash().String(), Record: "engine hold " + h.Owner,
				Expected: "a SnapshotRef the hold belongs to", Found: "none"})
		}
	}
	for _, h := range c.holds {
		if h.k.Kind != nokv.HistoryHoldKindSnapshot {
			continue
		}
		if _, ok := c.snapshots[h.k.Snapshot]; !ok {
			c.finding(nokv.FamilyHistoryHold, h.key, "snapshot "+h.k.Snapshot.String(), "a SnapshotRef the hold belongs to", "none")
		}
	}
	for _, a := range c.aliases {
		name := "alias " + a.k.Alias
		s, ok := c.snapshots[a.v.Snapshot]
		switch {
		case !ok:
			c.finding(nokv.FamilySnapshotAlias, a.key, name, "SnapshotRef "+a.v.Snapshot.String(), "none")
		case s.k.Incarnation != a.k.Incarnation || s.v.Alias == nil || *s.v.Alias != a.k.Alias:
			c.finding(nokv.FamilySnapshotAlias, a.key, name, "snapshot "+a.v.Snapshot.String()+" minted under the name in the alias's incarnation", "another snapshot")
		case a.v.State != s.v.State:
			// Every change of the snapshot's state sets the projection of
			// the alias that names it, in the same command.
			c.finding(nokv.FamilySnapshotAlias, a.key, name, "the state of snapshot "+a.v.Snapshot.String()+", "+s.v.State.String(), a.v.State.String())
		}
	}
}

// sortedKeys returns the keys of m in order, so findings come out in a
// stable order.
func sortedKeys[K interface{ ~string | ~uint64 }, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}

func sortedRevisions[V any](m map[nokv.RevisionID]V) []nokv.RevisionID {
	return core.SortRevisions(slices.Collect(maps.Keys(m)))
}

func sortedCommits[V any](m map[nokv.CommitID]V) []nokv.CommitID {
	return sortCommits(slices.Collect(maps.Keys(m)))
}

func sortCommits(ids []nokv.CommitID) []nokv.CommitID {
	slices.SortFunc(ids, func(a, b nokv.CommitID) int { return bytes.Compare(a[:], b[:]) })
	return ids
}

// checkTreeReferences checks the references of a commit with a member
// tree: its seal covers every revision its members hold, and it
// references a subset of them that holds at least every one its
// parent's members do not (the parent, which outlives it, keeps the
// rest).
func (c *rootCheck) checkTreeReferences(id nokv.CommitID, cm commitRow, members, refs []nokv.RevisionID) {
	name := "commit " + id.String()
	// Flat digests seal every revision of the members; tree digests the
	// commit's own references.
	sealed, what := members, "its members'"
	if cm.v.TreeDigests {
		sealed, what = refs, "its Commit references'"
	}
	if uint64(len(sealed)) != cm.v.UniqueRevisionCount || core.RevisionDigest(sealed) != cm.v.RevisionDigest {
		c.finding(nokv.FamilyCommit, cm.key, name, fmt.Sprintf("a revision seal of %s %d revisions", what, len(sealed)),
			fmt.Sprintf("unique_revision_count %d, digest matches: %v", cm.v.UniqueRevisionCount, core.RevisionDigest(sealed) == cm.v.RevisionDigest))
	}
	held := map[nokv.RevisionID]bool{}
	for _, r := range members {
		held[r] = true
	}
	parent := map[nokv.RevisionID]bool{}
	if len(cm.v.Parents) > 0 {
		for _, m := range c.members[cm.v.Parents[0]] {
			parent[m.v.Revision] = true
		}
	}
	own := map[nokv.RevisionID]bool{}
	for _, r := range refs {
		own[r] = true
		if !held[r] {
			c.finding(nokv.FamilyCommit, cm.key, name, "Commit references only on its members' revisions", "a reference on "+r.String())
		}
	}
	for _, r := range members {
		if !own[r] && !parent[r] {
			c.finding(nokv.FamilyCommit, cm.key, name, "a Commit reference on "+r.String()+", which its parent's members do not hold", "none")
		}
	}
	if uint64(len(refs)) != cm.v.MemberTree.References {
		c.finding(nokv.FamilyCommit, cm.key, name, fmt.Sprintf("%d Commit references, as its member tree says", cm.v.MemberTree.References), fmt.Sprint(len(refs)))
	}
}
