package history

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math/bits"
	"slices"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/publish"

	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
	"github.com/cairnstore/cairn/workbench/internal/tree"
)

// Copying in each family's key order (value format 7).
//
// A copy command of the member-ordered protocol places members [lo, hi)
// whole: their path rows, index rows, references and revision counts.
// The members are in path order, so the path-keyed families take one
// slice of their key space per command; but the SecondaryIndex rows are
// keyed by a member's body digest, size or type, and the revisions'
// counts and the commit's references by revision id, so every command
// rewrote most pages of those families: at 100,000 files, 42,120 of the
// 73,609 objects a restore wrote were artifact_revision pages
// (docs/performance.md, "What a restore of 100,000 files spends on each
// kind of row").
//
// In a shard of value format 7 a restore's command at member cursor
// [lo, hi) places instead, for each group of rows, the same share of
// that group's own key order:
//
//   - path rows: members [lo, hi) in path order: PathCurrent, the
//     directories and the RestoreMember rows, as before;
//   - references: the members at positions [lo, hi) of the revision
//     order (byRevision): each one's Path reference and the revision's
//     count, and, at the first member of each revision, the destination
//     commit's Commit reference; a reference and its count stay in one
//     command, as the schema requires;
//   - index rows: rows [lo·R/n, hi·R/n) of every member's SecondaryIndex
//     rows in key order (R rows for n members).
//
// The destination commit keeps its members in a member tree, which the
// final command makes (sealTree): the source commit's tree with the two
// manifests edited in, sharing every other node, or, from a snapshot, a
// tree built from the members; no copy command writes CommitMember rows.
//
// Each share is a function of the cursor alone, so commands of any batch
// size compose (a replica with other batches resumes at the cursor), and
// an abort removes exactly what the cursor says was placed, in the same
// shares (cleanOrdered). What a command writes at a given cursor differs
// from the member-ordered protocol's, so the protocol follows the value
// format of the shard: a release of format 6 refuses a shard of 7 whole
// and never resumes such a restore.

// indexRow is one SecondaryIndex row a restore places.
type indexRow struct {
	key    []byte
	member uint32
}

// orderRows fixes the key-ordered shares of p's members: the revision
// order and the index rows in key order.
func (p *RestorePlan) orderRows(root nokv.RootID) error {
	n := len(p.members)
	p.byRevision = make([]uint32, n)
	for i := range p.byRevision {
		p.byRevision[i] = uint32(i)
	}
	slices.SortFunc(p.byRevision, func(a, b uint32) int {
		ra, rb := p.members[a].entry.Revision, p.members[b].entry.Revision
		if c := bytes.Compare(ra[:], rb[:]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	keys := make([][][]byte, n)
	if err := inParallel(n, func(lo, hi int) error {
		for i := lo; i < hi; i++ {
			m := &p.members[i]
			k, err := core.PathIndexKeys(root, p.DstInc, m.path, &m.entry)
			if err != nil {
				return err
			}
			keys[i] = k
		}
		return nil
	}); err != nil {
		return err
	}
	total := 0
	for _, k := range keys {
		total += len(k)
	}
	p.index = slices.Grow(p.index[:0], total)
	for i, ks := range keys {
		for _, k := range ks {
			p.index = append(p.index, indexRow{key: k, member: uint32(i)})
		}
	}
	slices.SortFunc(p.index, func(a, b indexRow) int { return bytes.Compare(a.key, b.key) })
	for i := 1; i < len(p.index); i++ {
		if bytes.Equal(p.index[i-1].key, p.index[i].key) {
			return fmt.Errorf("workbench: restore %s plans index row %x twice", p.OpID, p.index[i].key)
		}
	}
	return nil
}

// share is how many of total units the cursor c of n members covers:
// floor(c·total/n), so that shares of consecutive cursors tile [0, total).
func share(c, total, n uint64) uint64 {
	if n == 0 {
		return 0
	}
	hi, lo := bits.Mul64(c, total)
	q, _ := bits.Div64(hi, lo, n)
	return q
}

// firstOfRevision reports whether position j of the revision order is
// the first member of its revision: the one whose command places the
// destination commit's reference on it.
func (p *RestorePlan) firstOfRevision(j uint64) bool {
	return j == 0 || p.members[p.byRevision[j-1]].entry.Revision != p.members[p.byRevision[j]].entry.Revision
}

// copyOrdered places the key-ordered shares of cursor [from, to) (see
// the file comment) and returns the member chain at to. The rows that
// depend on nothing the command reads are encoded first, on every core
// (encodeShare); what reads the transaction (directories, the revisions'
// counts) and the puts follow in order.
func (p *RestorePlan) copyOrdered(s *core.Service, tx *head.Tx, from, to uint64, chain [32]byte) ([32]byte, error) {
	seq := tx.Sequence()
	n := uint64(len(p.members))
	enc, err := p.encodeShare(s, seq, from, to)
	if err != nil {
		return chain, err
	}
	// The revisions' rows are read first, side by side, before any put.
	rc := &publish.Refs{S: s, Tx: tx, Revs: make(map[nokv.RevisionID]*nokv.ArtifactRevision, to-from)}
	revs := make([]nokv.RevisionID, 0, to-from)
	refs := len(enc.refs)
	for j := from; j < to; j++ {
		if enc.refs[j-from].commitRef != nil {
			revs = append(revs, p.members[p.byRevision[j]].entry.Revision)
			refs++
		}
	}
	rc.Preload(revs)
	tx.Grow(nokv.FamilyPathCurrent, len(enc.paths))
	tx.Grow(nokv.FamilyRestoreMember, len(enc.paths))
	tx.Grow(nokv.FamilySecondaryIndex, len(enc.index))
	tx.Grow(nokv.FamilyRevisionRef, refs)
	for i := from; i < to; i++ {
		m := &p.members[i]
		r := &enc.paths[i-from]
		if err := tx.Put(nokv.FamilyPathCurrent, r.pathKey, r.pathValue); err != nil {
			return chain, err
		}
		if err := core.PlaceDirectories(tx, s.Root(), p.DstInc, m.path, seq); err != nil {
			return chain, err
		}
		if err := tx.Put(nokv.FamilyRestoreMember, r.memberKey, r.memberValue); err != nil {
			return chain, err
		}
		chain = MemberChain(chain, i, m.row)
	}
	total := uint64(len(p.index))
	for j, r := range p.index[share(from, total, n):share(to, total, n)] {
		if err := tx.Put(nokv.FamilySecondaryIndex, r.key, enc.index[j]); err != nil {
			return chain, err
		}
	}
	for j := from; j < to; j++ {
		rev := p.members[p.byRevision[j]].entry.Revision
		r := &enc.refs[j-from]
		epoch, err := rc.Add(rev)
		if err != nil {
			return chain, err
		}
		if err := core.PutRecord(tx, nokv.FamilyRevisionRef, r.pathRef, nokv.RevisionRef{ReferenceEpochAtAdd: epoch, CreatedVersion: seq}.Encode); err != nil {
			return chain, err
		}
		if r.commitRef == nil {
			continue
		}
		if epoch, err = rc.Add(rev); err != nil {
			return chain, err
		}
		if err := core.PutRecord(tx, nokv.FamilyRevisionRef, r.commitRef, nokv.RevisionRef{ReferenceEpochAtAdd: epoch, CreatedVersion: seq}.Encode); err != nil {
			return chain, err
		}
	}
	return chain, rc.Flush()
}

// shareRows is what copyOrdered encodes ahead for cursor [from, to).
type shareRows struct {
	paths []pathRows // by member of the path share
	index [][]byte   // the index rows' values, in the order of p.index
	refs  []refKeys  // by position of the revision share
}

type pathRows struct {
	pathKey, pathValue     []byte // PathCurrent
	memberKey, memberValue []byte // RestoreMember
}

type refKeys struct {
	pathRef   []byte // the member's Path reference
	commitRef []byte // the destination commit's, at a revision's first member; else nil
}

// encodeShare encodes the rows of cursor [from, to) that need no read:
// each member's PathCurrent (created and modified at seq) and
// RestoreMember rows, the share's index values and the keys of its
// references.
func (p *RestorePlan) encodeShare(s *core.Service, seq, from, to uint64) (*shareRows, error) {
	n := uint64(len(p.members))
	total := uint64(len(p.index))
	ilo, ihi := share(from, total, n), share(to, total, n)
	out := &shareRows{paths: make([]pathRows, to-from), index: make([][]byte, ihi-ilo), refs: make([]refKeys, to-from)}
	err := inParallel(int(to-from), func(lo, hi int) error {
		for k := lo; k < hi; k++ {
			i := from + uint64(k)
			m := &p.members[i]
			e := m.entry
			e.CreatedVersion, e.ModifiedVersion = seq, seq
			r := &out.paths[k]
			var err error
			if r.pathKey, err = (nokv.PathCurrentKey{Root: s.Root(), Incarnation: p.DstInc, Path: m.path}).Encode(); err != nil {
				return err
			}
			if r.pathValue, err = e.Encode(); err != nil {
				return err
			}
			if r.memberKey, err = (nokv.RestoreMemberKey{Root: s.Root(), Operation: p.OpID, Sequence: i}).Encode(); err != nil {
				return err
			}
			rm := nokv.RestoreMember{Path: m.path, Revision: m.entry.Revision, PathGeneration: m.entry.Generation, RowDigest: m.row}
			if r.memberValue, err = rm.Encode(); err != nil {
				return err
			}
			j := from + uint64(k)
			owner := &p.members[p.byRevision[j]]
			rev := owner.entry.Revision
			if out.refs[k].pathRef, err = nokv.PathRefKey(s.Root(), p.DstInc, owner.path, rev).Encode(); err != nil {
				return err
			}
			if p.firstOfRevision(j) {
				if out.refs[k].commitRef, err = nokv.CommitRefKey(s.Root(), p.commitID, rev).Encode(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = inParallel(len(out.index), func(lo, hi int) error {
		for k := lo; k < hi; k++ {
			e := &p.members[p.index[ilo+uint64(k)].member].entry
			v, err := nokv.SecondaryIndexEntry{PathGeneration: e.Generation, Revision: e.Revision}.Encode()
			if err != nil {
				return err
			}
			out.index[k] = v
		}
		return nil
	})
	return out, err
}

// orderedReads names what copyOrdered reads for cursor [from, to): the
// revisions of its share of the revision order and the directories of
// its members (the index rows and references it writes blind).
func (p *RestorePlan) orderedReads(s *core.Service, sn *head.Snapshot, from, to uint64) []head.ShardRef {
	// The command reads no reference, and the revisions of the revision
	// share, not of the path share.
	refs := p.readsOf(s, sn, p.members[from:to], false)
	for j := from; j < to; j++ {
		k, err := nokv.ArtifactRevisionKey{Root: s.Root(), Revision: p.members[p.byRevision[j]].entry.Revision}.Encode()
		if err != nil {
			continue
		}
		ref, err := sn.ShardOf(nokv.FamilyArtifactRevision, k)
		if err != nil {
			continue
		}
		ref.Prefix = k
		refs = append(refs, ref)
	}
	return refs
}

// replanRestore derives again the plan of the key-ordered restore op
// from its source (which the restore holds until its last command), for
// an abort: the members, their chain and the shares. The plan must be
// the one the copy commands followed: the same destination commit, the
// same member count, and the chain the operation sealed.
func replanRestore(ctx context.Context, s *core.Service, sn *head.Snapshot, p *RestorePlan, op nokv.RestoreOperation) (*RestorePlan, *core.Error) {
	read := core.SnapshotReader(ctx, sn)
	src := sn
	var c nokv.Commit
	switch p.Src.Kind {
	case nokv.RestoreSourceKindCommit:
		var ok bool
		var err error
		if c, ok, err = readCommit(s, read, p.Src.Commit); err != nil {
			return nil, core.FromError(err)
		} else if !ok {
			return nil, core.InvalidState(fmt.Sprintf("restore %s: its source commit %s is gone", p.OpID, p.Src.Commit))
		}
	default:
		ref, ok, err := s.SnapshotRef(read, p.SrcInc, p.Src.Snapshot)
		if err != nil {
			return nil, core.FromError(err)
		}
		if !ok {
			return nil, core.InvalidState(fmt.Sprintf("restore %s: its source snapshot %s is gone", p.OpID, p.Src.Snapshot))
		}
		if src, err = s.Store().At(ctx, digest.Hash(ref.HeldRoot)); err != nil {
			return nil, core.FromError(err)
		}
	}
	want := p.commitID
	p.keyOrdered = true
	if werr := planMembers(ctx, s, src, p, c); werr != nil {
		return nil, werr
	}
	// The operation's chain is the one at the cursor the copy commands
	// reached; cleaning lowers the cursor and leaves the chain, so a
	// resumed abort finds it at or past the cursor.
	var chain [32]byte
	sealed := op.MemberCursor == 0 && chain == op.MemberDigest
	for i := range uint64(len(p.members)) {
		chain = MemberChain(chain, i, p.members[i].row)
		if chain == op.MemberDigest && i+1 >= op.MemberCursor && (i+1 == op.MemberCursor || op.Phase == nokv.RestorePhaseCleaning) {
			sealed = true
			break
		}
	}
	if p.commitID != want || uint64(len(p.members)) != op.MemberCount || !sealed {
		return nil, core.InvalidState(fmt.Sprintf("restore %s: its source no longer plans the members it placed", p.OpID))
	}
	return p, nil
}

// cleanOrdered removes what the copy commands placed for cursor
// [lo, hi): the exact inverse of copyOrdered. A row it expects and does
// not find fails the command: a count lowered for a reference that is
// not there would free a body in use.
func (p *RestorePlan) cleanOrdered(s *core.Service, tx *head.Tx, rc *publish.Refs, lo, hi uint64) error {
	n := uint64(len(p.members))
	present := func(f shards.Family, k []byte, what string) error {
		_, ok, err := tx.Get(f, k)
		if err != nil {
			return err
		}
		if !ok {
			return core.Reject(core.InvalidState(fmt.Sprintf("restore %s has no %s to clean", p.OpID, what)))
		}
		return tx.Delete(f, k)
	}
	for i := lo; i < hi; i++ {
		m := &p.members[i]
		for _, k := range []interface {
			Family() shards.Family
			Encode() ([]byte, error)
		}{
			nokv.PathCurrentKey{Root: s.Root(), Incarnation: p.DstInc, Path: m.path},
			nokv.RestoreMemberKey{Root: s.Root(), Operation: p.OpID, Sequence: i},
		} {
			key, err := k.Encode()
			if err != nil {
				return err
			}
			if err := present(k.Family(), key, fmt.Sprintf("%v row of member %d", k.Family(), i)); err != nil {
				return err
			}
		}
	}
	total := uint64(len(p.index))
	for _, r := range p.index[share(lo, total, n):share(hi, total, n)] {
		if err := present(nokv.FamilySecondaryIndex, r.key, fmt.Sprintf("index row of member %d", r.member)); err != nil {
			return err
		}
	}
	for j := lo; j < hi; j++ {
		m := &p.members[p.byRevision[j]]
		rev := m.entry.Revision
		keys := []nokv.RevisionRefKey{nokv.PathRefKey(s.Root(), p.DstInc, m.path, rev)}
		if p.firstOfRevision(j) {
			keys = append(keys, nokv.CommitRefKey(s.Root(), p.commitID, rev))
		}
		for _, k := range keys {
			key, err := k.Encode()
			if err != nil {
				return err
			}
			if err := present(nokv.FamilyRevisionRef, key, "reference on revision "+rev.String()); err != nil {
				return err
			}
			if err := rc.Remove(rev); err != nil {
				return err
			}
		}
	}
	return nil
}

// sealTree makes the destination commit's member tree in the final
// command of a key-ordered restore: the source commit's tree with the
// two manifests put in, when the source is a commit with a tree (every
// other node is shared), else a tree built from every member. The
// commit's member digest is then the tree's, and it references every
// revision of its members itself: it has no parent to keep any.
func (f *restoreFinal) sealTree(tx *head.Tx) error {
	s, p := f.s, f.p
	var mt *nokv.MemberTree
	var root tree.Ref
	var err error
	if !p.srcTree.IsEmpty() {
		var changes []tree.Change
		for _, m := range f.members {
			if !slices.Equal(m.path, core.RunManifestComps) && !slices.Equal(m.path, restoreManifestComps) {
				continue
			}
			e, err := core.MemberTreeEntry(m.path, nokv.MemberOf(m.entry))
			if err != nil {
				return err
			}
			changes = append(changes, tree.Change{Key: e.Key, Value: e.Value})
		}
		mt, root, _, err = s.EditMemberTree(tx, p.srcTree, changes)
	} else {
		entries := make([]tree.Entry, 0, len(f.members))
		for _, m := range f.members {
			e, err := core.MemberTreeEntry(m.path, nokv.MemberOf(m.entry))
			if err != nil {
				return err
			}
			entries = append(entries, e)
		}
		mt, root, _, err = s.StageMemberTree(tx, tree.Ref{}, entries)
	}
	if err != nil {
		return err
	}
	if root.Count != uint64(len(f.members)) {
		return core.Reject(core.InvalidState(fmt.Sprintf("restore %s: the destination's tree holds %d members, not %d", p.OpID, root.Count, len(f.members))))
	}
	mt.References = uint64(len(f.revs))
	f.tree, f.memberDigest = mt, root.Digest
	return nil
}

// ParallelRange is the fewest items inParallel gives a range (a
// variable for tests, which lower it to run small restores on every
// core).
var ParallelRange = 4096

// inParallel runs f over [0, n) cut into one range per processor, at
// least ParallelRange items each, and returns the first error.
func inParallel(n int, f func(lo, hi int) error) error {
	return core.InParallel(n, ParallelRange, f)
}
