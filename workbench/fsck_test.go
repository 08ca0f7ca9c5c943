package workbench_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/manifests"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/roots/walk"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// fsckStore builds a workbench with what fsck must understand: bodies in
// several blocks and inline, an append that reuses its base's blocks (a
// dependency), an edit that releases a revision (a GC candidate), a
// commit, a snapshot, and writes after both. It returns the bucket, the
// Service and the snapshot's id.
func fsckStore(t *testing.T) (bucket.Bucket, *workbench.Service, string) {
	t.Helper()
	return fsckStoreOn(t, mem.NewBucket())
}

func fsckStoreOn(t *testing.T, b bucket.Bucket) (bucket.Bucket, *workbench.Service, string) {
	t.Helper()
	s := newServiceOn(t, b, workbench.Options{BlockSize: 64, InlineMax: 16,
		// Folds early, and no shard object inline in its table: the
		// engine objects of every kind are in the bucket.
		Engine: head.Options{MaxDeltas: 1, InlineBytes: -1}})
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "data/a.txt", `"text":"`+strings.Repeat("alpha ", 30)+`"`))
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "tiny.txt", `"text":"tiny"`))
	mustCall(t, s, "workbench_append", appendInput("wb", "outputs", "data/a.txt", `"text":"`+strings.Repeat("beta ", 20)+`"`))
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "notes.txt", `"text":"`+strings.Repeat("note ", 20)+`"`))
	mustCall(t, s, "workbench_edit", editInput("wb", "outputs", "notes.txt", "note", "NOTE", `"replace_all":true`))
	mustCall(t, s, "workbench_commit", commitInput("wb", `{"task":"fsck"}`, digest01))
	_, snap := mint(t, s, "wb", map[string]any{"name": "before"})
	mustCall(t, s, "workbench_append", appendInput("wb", "outputs", "tiny.txt", `"text":" more"`))
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "data/deep/b.txt", `"text":"`+strings.Repeat("b", 100)+`"`))
	// Fold what is left, so that no fold lands while a test damages the
	// bucket under the head.
	if err := s.Store().Fold(context.Background()); err != nil {
		t.Fatal(err)
	}
	return b, s, snap
}

func runFsck(t *testing.T, b bucket.Bucket) *workbench.FsckReport {
	t.Helper()
	rep, err := workbench.Fsck(context.Background(), b, workbench.FsckOptions{AgentID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestFsckClean(t *testing.T) {
	b, s, _ := fsckStore(t)
	rep := runFsck(t, b)
	for _, f := range rep.Findings {
		t.Errorf("finding: %s", f)
	}
	if rep.Roots != 2 {
		t.Errorf("checked %d roots, want 2 (the head's and the snapshot's)", rep.Roots)
	}
	for _, f := range []string{"artifact_revision", "revision_ref", "commit", "commit_member", "snapshot_ref", "path_current", "path_directory"} {
		if rep.Records[f] == 0 {
			t.Errorf("no %s record checked: %v", f, rep.Records)
		}
	}
	blocks := listKeys(t, b, bodies.ArtifactsPrefix(s.Store().Layout()))
	if rep.Blocks != len(blocks) || rep.BlockBytes == 0 || rep.Objects <= rep.Blocks || rep.Bytes <= rep.BlockBytes {
		t.Errorf("verified %d objects of %d bytes, %d blocks of %d bytes; the bucket holds %d blocks", rep.Objects, rep.Bytes, rep.Blocks, rep.BlockBytes, len(blocks))
	}
	if rep.Bodies != 0 {
		t.Errorf("%d bodies read without FsckOptions.Bodies", rep.Bodies)
	}

	// Reading every body whole finds nothing more.
	rep, err := workbench.Fsck(context.Background(), b, workbench.FsckOptions{AgentID: "test", Bodies: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		t.Errorf("finding with bodies: %s", f)
	}
	// Member-tree nodes are blocks too, but no body's.
	trees, _, err := bucket.ListAll(context.Background(), b, bucket.ListOptions{Prefix: bodies.TreePrefix(s.Store().Layout(), s.Root())})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range trees {
		rep.BlockBytes -= o.Size
	}
	if rep.Bodies == 0 || rep.BodyBytes <= rep.BlockBytes {
		t.Errorf("read %d bodies of %d bytes; blocks hold %d bytes", rep.Bodies, rep.BodyBytes, rep.BlockBytes)
	}
}

func TestFsckEmpty(t *testing.T) {
	rep := runFsck(t, mem.NewBucket())
	if !rep.Empty || !rep.Clean() || rep.Roots != 0 {
		t.Fatalf("empty bucket: %+v", rep)
	}
}

// wantFinding fails unless rep holds a finding of family (the schema
// name, "" for the engine layer) whose text contains every part.
func wantFinding(t *testing.T, rep *workbench.FsckReport, family string, parts ...string) {
	t.Helper()
	for _, f := range rep.Findings {
		if f.Family != family {
			continue
		}
		s := f.String()
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(s, p)
		}
		if ok {
			return
		}
	}
	t.Errorf("no %q finding with %q among %d:", family, parts, len(rep.Findings))
	for _, f := range rep.Findings {
		t.Logf("  %s", f)
	}
}

// liveBlocks returns the blocks of the revisions the head references, in
// key order.
func liveBlocks(t *testing.T, s *workbench.Service) []string {
	t.Helper()
	ctx := context.Background()
	sn, err := s.Store().Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := workbench.PinBlockRefs(ctx, s.Store(), sn.RootHash())
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	err = walk.Walk(ctx, s.Store().Bucket(), s.Store().Layout(), sn.RootHash(), refs, walk.Options{}, func(o walk.Object) error {
		if o.Kind == walk.KindBlock {
			blocks = append(blocks, o.Key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(blocks)
	return blocks
}

// TestFsckMissingBlock: a block a referenced revision reads is missing.
// (A block only the rows of a replaced, unreferenced revision name may be
// collected: TestFsckIgnoresUnreferencedRevisions.)
func TestFsckMissingBlock(t *testing.T) {
	b, s, _ := fsckStore(t)
	blocks := liveBlocks(t, s)
	if len(blocks) == 0 {
		t.Fatal("no block objects")
	}
	victim := blocks[0]
	if err := b.Delete(context.Background(), victim, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	rep := runFsck(t, b)
	wantFinding(t, rep, "artifact_manifest", "block "+victim, "object does not exist")
	for _, f := range rep.Findings {
		if f.Layer != "block" {
			t.Errorf("a finding other than the missing block's: %s", f)
		}
	}

	// Reading bodies whole also names the revisions that need the block.
	rep, err := workbench.Fsck(context.Background(), b, workbench.FsckOptions{AgentID: "test", Bodies: true})
	if err != nil {
		t.Fatal(err)
	}
	wantFinding(t, rep, "artifact_revision", "body of revision", victim)
}

// TestFsckIgnoresUnreferencedRevisions: the blocks of revisions that no
// checked root references (a replaced file's, which a collection may
// delete while a pinned or held root still holds their rows) may be
// missing: fsck, with bodies, and a pin's verify say nothing of them.
func TestFsckIgnoresUnreferencedRevisions(t *testing.T) {
	b, s, _ := fsckStore(t)
	ctx := context.Background()
	live := liveBlocks(t, s)
	var gone int
	for _, key := range listKeys(t, b, bodies.ArtifactsPrefix(s.Store().Layout())) {
		if !slices.Contains(live, key) {
			if err := b.Delete(ctx, key, bucket.Unconditional); err != nil {
				t.Fatal(err)
			}
			gone++
		}
	}
	if gone == 0 {
		t.Fatal("no block of an unreferenced revision to delete")
	}
	rep, err := workbench.Fsck(ctx, b, workbench.FsckOptions{AgentID: "test", Bodies: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		t.Errorf("finding: %s", f)
	}
	p, err := gcsweep.PinHead(ctx, s.Store(), "after", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	refs, err := workbench.PinBlockRefs(ctx, s.Store(), p.RootHash)
	if err != nil {
		t.Fatal(err)
	}
	vr, err := gcsweep.VerifyPin(ctx, b, s.Store().Layout(), p, refs, gcsweep.VerifyOptions{})
	if err != nil || len(vr.Problems) != 0 {
		t.Fatalf("verify: %v, problems %v", err, vr.Problems)
	}
	// Every block a row names is still demanded by the unfiltered refs.
	vr, err = gcsweep.VerifyPin(ctx, b, s.Store().Layout(), p, workbench.BlockRefs, gcsweep.VerifyOptions{})
	if err != nil || len(vr.Problems) != gone {
		t.Fatalf("verify with every row: %v, %d problems, want %d", err, len(vr.Problems), gone)
	}
}

func TestFsckCorruptShardObject(t *testing.T) {
	b, s, _ := fsckStore(t)
	// A shard object the head's root reaches.
	ctx := context.Background()
	sn, err := s.Store().Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var objs []string
	err = walk.Walk(ctx, b, s.Store().Layout(), sn.RootHash(), nil, walk.Options{}, func(o walk.Object) error {
		if o.Kind == walk.KindShard || o.Kind == walk.KindPage {
			objs = append(objs, o.Key)
		}
		return nil
	})
	if err != nil || len(objs) == 0 {
		t.Fatalf("no shard object reached: %v", err)
	}
	slices.Sort(objs)
	victim := objs[len(objs)/2]
	body, _, err := b.Get(ctx, victim)
	if err != nil {
		t.Fatal(err)
	}
	body[len(body)/2] ^= 0xff
	if _, err := b.Put(ctx, victim, body, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	rep := runFsck(t, b)
	// The object's name is its hash: the engine layer names it.
	name := victim[strings.LastIndexByte(victim, '/')+1:]
	wantFinding(t, rep, "", "engine", name)
}

// rawCommand runs apply as one engine command on the Service's root, as a
// bug in a writer would.
func rawCommand(t *testing.T, s *workbench.Service, apply func(tx *head.Tx) error) {
	t.Helper()
	_, err := s.Store().Do(context.Background(), head.Command{
		Namespace: s.Root(),
		Digest:    head.Digest([]byte("test.fsck.corrupt")),
		Apply:     func(tx *head.Tx) ([]byte, error) { return nil, apply(tx) },
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rows returns the records of family f at the head.
func rows(t *testing.T, s *workbench.Service, f shards.Family) []shards.Record {
	t.Helper()
	ctx := context.Background()
	sn, err := s.Store().Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := sn.Scan(ctx, f, nokv.RootPrefix(s.Root()), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestFsckRevisionRefDeleted(t *testing.T) {
	b, s, _ := fsckStore(t)
	var victim nokv.RevisionRefKey
	var key []byte
	for _, r := range rows(t, s, nokv.FamilyRevisionRef) {
		k, err := nokv.ParseRevisionRefKey(r.Key)
		if err != nil {
			t.Fatal(err)
		}
		if k.Kind == nokv.ReferenceKindPath {
			victim, key = k, r.Key
			break
		}
	}
	if key == nil {
		t.Fatal("no Path reference")
	}
	rawCommand(t, s, func(tx *head.Tx) error { return tx.Delete(nokv.FamilyRevisionRef, key) })
	rep := runFsck(t, b)
	wantFinding(t, rep, "artifact_revision", "revision "+victim.Revision.String(), "(the RevisionRef rows naming it)")
	wantFinding(t, rep, "revision_ref", "a Path reference on revision "+victim.Revision.String(), "found none")
}

func TestFsckCommitMemberDigestAltered(t *testing.T) {
	b, s, _ := fsckStore(t)
	recs := rows(t, s, nokv.FamilyCommit)
	if len(recs) != 1 {
		t.Fatalf("%d commits", len(recs))
	}
	k, err := nokv.ParseCommitKey(recs[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := nokv.DecodeCommit(recs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	c.MemberDigest[0] ^= 1
	if c.TreeDigests {
		// A commit of tree digests seals its tree's: alter both.
		mt := *c.MemberTree
		mt.Digest = c.MemberDigest
		c.MemberTree = &mt
	}
	v, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	rawCommand(t, s, func(tx *head.Tx) error { return tx.Put(nokv.FamilyCommit, recs[0].Key, v) })
	rep := runFsck(t, b)
	wantFinding(t, rep, "commit", "commit "+k.Commit.String(), "member seal", c.TreeDigestURI())
}

func TestFsckPathAtMissingRevision(t *testing.T) {
	b, s, _ := fsckStore(t)
	var key []byte
	var e nokv.PathEntry
	for _, r := range rows(t, s, nokv.FamilyPathCurrent) {
		k, err := nokv.ParsePathCurrentKey(r.Key)
		if err != nil {
			t.Fatal(err)
		}
		if workbench.LogicalPath(k.Path) == "outputs/tiny.txt" {
			if e, err = nokv.DecodePathEntry(r.Value); err != nil {
				t.Fatal(err)
			}
			key = r.Key
		}
	}
	if key == nil {
		t.Fatal("no outputs/tiny.txt")
	}
	e.Revision = nokv.NewRevisionID(time.Now())
	v, err := e.Encode()
	if err != nil {
		t.Fatal(err)
	}
	rawCommand(t, s, func(tx *head.Tx) error { return tx.Put(nokv.FamilyPathCurrent, key, v) })
	rep := runFsck(t, b)
	wantFinding(t, rep, "path_current", "path wb:outputs/tiny.txt", "expected ArtifactRevision "+e.Revision.String(), "found none")

	// MaxFindings keeps the first and says more were left out.
	few, err := workbench.Fsck(context.Background(), b, workbench.FsckOptions{AgentID: "test", MaxFindings: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) <= 2 || len(few.Findings) != 2 || !few.Truncated || rep.Truncated {
		t.Errorf("%d findings (truncated %v); with MaxFindings 2: %d (truncated %v)", len(rep.Findings), rep.Truncated, len(few.Findings), few.Truncated)
	}
}

func TestFsckSnapshotHoldReleased(t *testing.T) {
	b, s, snap := fsckStore(t)
	rawCommand(t, s, func(tx *head.Tx) error {
		tx.Release("snapshot/" + snap)
		return nil
	})
	rep := runFsck(t, b)
	wantFinding(t, rep, "snapshot_ref", "snapshot "+snap, "an engine hold snapshot/"+snap, "found none")
	if rep.Roots != 1 {
		t.Errorf("checked %d roots, want 1: the released root is no longer held", rep.Roots)
	}
}

// putPin writes a pin of root under name, in the pin format
// (cairn.pin.v1), as `cairn pin create` does.
func putPin(t *testing.T, b bucket.Bucket, s *workbench.Service, name string, root digest.Hash) {
	t.Helper()
	layout := s.Store().Layout()
	key, err := layout.Pin(name)
	if err != nil {
		t.Fatal(err)
	}
	body, err := manifests.Canonical(map[string]any{
		"format": "cairn.pin.v1", "shard": layout.ID().String(), "sequence": 1,
		"root": root.String(), "created_unix_ms": 1, "note": "",
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(context.Background(), key, body, bucket.IfAbsent()); err != nil {
		t.Fatal(err)
	}
}

func TestFsckPinnedRoots(t *testing.T) {
	b, s, _ := fsckStore(t)
	ctx := context.Background()
	sn, err := s.Store().Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := sn.RootHash()
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "later.txt", `"text":"`+strings.Repeat("later ", 30)+`"`))
	putPin(t, b, s, "old", old)
	rep := runFsck(t, b)
	for _, f := range rep.Findings {
		t.Errorf("finding: %s", f)
	}
	if rep.Pins != 1 || rep.Roots != 3 {
		t.Errorf("%d pins, %d roots checked; want 1 and 3 (the head's, the pinned one, the snapshot's)", rep.Pins, rep.Roots)
	}

	// A pin of a root that is not in the bucket is an engine finding.
	var gone digest.Hash
	gone[0] = 1
	putPin(t, b, s, "gone", gone)
	rep = runFsck(t, b)
	wantFinding(t, rep, "", "engine", "roots/"+gone.String(), "not exist")
	if rep.Pins != 2 || rep.Roots != 3 {
		t.Errorf("%d pins, %d roots checked; want 2 and 3", rep.Pins, rep.Roots)
	}
}

// record returns the first record of family f at the head whose key
// satisfies match.
func record(t *testing.T, s *workbench.Service, f shards.Family, match func(key, value []byte) bool) shards.Record {
	t.Helper()
	for _, r := range rows(t, s, f) {
		if match(r.Key, r.Value) {
			return r
		}
	}
	t.Fatalf("no record of family %d matches", f)
	return shards.Record{}
}

// anyRecord matches every record.
func anyRecord(key, value []byte) bool { return true }

// More corruptions, each by one raw command in a fresh store, each with
// the finding that names it.
func TestFsckFindsCorruptRecords(t *testing.T) {
	for _, c := range []struct {
		name    string
		corrupt func(t *testing.T, s *workbench.Service) func(tx *head.Tx) error
		family  string
		parts   []string
	}{
		{"a current GC candidate for a referenced revision", func(t *testing.T, s *workbench.Service) func(tx *head.Tx) error {
			r := record(t, s, nokv.FamilyArtifactRevision, func(_, v []byte) bool {
				a, _ := nokv.DecodeArtifactRevision(v)
				return a.StrongReferenceCount > 0
			})
			k, _ := nokv.ParseArtifactRevisionKey(r.Key)
			a, _ := nokv.DecodeArtifactRevision(r.Value)
			key, _ := nokv.GcCandidateKey{Root: s.Root(), Revision: k.Revision, ReferenceEpoch: a.ReferenceEpoch}.Encode()
			v, _ := nokv.GcCandidate{LastZeroRefVersion: 1, Claim: nokv.GcClaimStateCandidate}.Encode()
			return func(tx *head.Tx) error { return tx.Put(nokv.FamilyGcCandidate, key, v) }
		}, "gc_candidate", []string{"a current candidate only for a revision without references"}},
		{"a GC candidate deleted", func(t *testing.T, s *workbench.Service) func(tx *head.Tx) error {
			r := record(t, s, nokv.FamilyGcCandidate, anyRecord)
			return func(tx *head.Tx) error { return tx.Delete(nokv.FamilyGcCandidate, r.Key) }
		}, "gc_candidate", []string{"expected a GcCandidate at epoch", "found none"}},
		{"a manifest row deleted", func(t *testing.T, s *workbench.Service) func(tx *head.Tx) error {
			r := record(t, s, nokv.FamilyArtifactManifest, func(k, _ []byte) bool {
				mk, _ := nokv.ParseArtifactManifestKey(k)
				return mk.ObjectIndex == 1
			})
			return func(tx *head.Tx) error { return tx.Delete(nokv.FamilyArtifactManifest, r.Key) }
		}, "artifact_revision", []string{"(its manifest rows)"}},
		{"an inline body altered", func(t *testing.T, s *workbench.Service) func(tx *head.Tx) error {
			r := record(t, s, nokv.FamilyArtifactManifest, func(_, v []byte) bool {
				e, _ := nokv.DecodeArtifactManifestEntry(v)
				return len(e.Inline) > 0
			})
			e, _ := nokv.DecodeArtifactManifestEntry(r.Value)
			e.Inline[0] ^= 1
			v, _ := e.Encode()
			return func(tx *head.Tx) error { return tx.Put(nokv.FamilyArtifactManifest, r.Key, v) }
		}, "artifact_revision", []string{"(its manifest rows)"}},
		{"a Commit reference deleted", func(t *testing.T, s *workbench.Service) func(tx *head.Tx) error {
			r := record(t, s, nokv.FamilyRevisionRef, func(k, _ []byte) bool {
				rk, _ := nokv.ParseRevisionRefKey(k)
				return rk.Kind == nokv.ReferenceKindCommit
			})
			return func(tx *head.Tx) error { return tx.Delete(nokv.FamilyRevisionRef, r.Key) }
		}, "commit", []string{map[bool]string{false: "Commit references on exactly its members'",
			true: "which its parent's members do not hold"}[os.Getenv("CAIRN_TEST_VALUE_FORMAT") != "2"]}},
		{"a dependency reference deleted", func(t *testing.T, s *workbench.Service) func(tx *head.Tx) error {
			r := record(t, s, nokv.FamilyRevisionRef, func(k, _ []byte) bool {
				rk, _ := nokv.ParseRevisionRefKey(k)
				return rk.Kind == nokv.ReferenceKindRevisionDependency
			})
			return func(tx *head.Tx) error { return tx.Delete(nokv.FamilyRevisionRef, r.Key) }
		}, "revision_ref", []string{"dependency references on", "(owners of reused rows)"}},
		{"a directory row deleted", func(t *testing.T, s *workbench.Service) func(tx *head.Tx) error {
			r := record(t, s, nokv.FamilyPathDirectory, anyRecord)
			return func(tx *head.Tx) error { return tx.Delete(nokv.FamilyPathDirectory, r.Key) }
		}, "path_directory", []string{"a PathDirectory row for an ancestor of"}},
		{"an index row deleted", func(t *testing.T, s *workbench.Service) func(tx *head.Tx) error {
			r := record(t, s, nokv.FamilySecondaryIndex, anyRecord)
			return func(tx *head.Tx) error { return tx.Delete(nokv.FamilySecondaryIndex, r.Key) }
		}, "secondary_index", []string{"an index row of the path", "found none"}},
		{"the commit head moved to a missing commit", func(t *testing.T, s *workbench.Service) func(tx *head.Tx) error {
			r := record(t, s, nokv.FamilyWorkbenchCommitHead, anyRecord)
			h, _ := nokv.DecodeWorkbenchCommitHead(r.Value)
			h.Commit[0] ^= 1
			v, _ := h.Encode()
			return func(tx *head.Tx) error { return tx.Put(nokv.FamilyWorkbenchCommitHead, r.Key, v) }
		}, "workbench_commit_head", []string{"expected Commit", "found none"}},
		{"a snapshot's HistoryHold deleted", func(t *testing.T, s *workbench.Service) func(tx *head.Tx) error {
			r := record(t, s, nokv.FamilyHistoryHold, anyRecord)
			return func(tx *head.Tx) error { return tx.Delete(nokv.FamilyHistoryHold, r.Key) }
		}, "history_hold", []string{"an Active HistoryHold (the snapshot is Active)", "found none"}},
		{"an alias whose projection disagrees with its snapshot", func(t *testing.T, s *workbench.Service) func(tx *head.Tx) error {
			r := record(t, s, nokv.FamilySnapshotAlias, anyRecord)
			a, _ := nokv.DecodeSnapshotAlias(r.Value)
			a.State = nokv.SnapshotStateRetired
			v, _ := a.Encode()
			return func(tx *head.Tx) error { return tx.Put(nokv.FamilySnapshotAlias, r.Key, v) }
		}, "snapshot_alias", []string{"alias before", ", Active", "found Retired"}},
		{"a workbench's incarnation claim deleted", func(t *testing.T, s *workbench.Service) func(tx *head.Tx) error {
			r := record(t, s, nokv.FamilyWorkspaceIncarnationClaim, anyRecord)
			return func(tx *head.Tx) error { return tx.Delete(nokv.FamilyWorkspaceIncarnationClaim, r.Key) }
		}, "workspace_current", []string{"workbench wb", "found none"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, s, _ := fsckStore(t)
			rawCommand(t, s, c.corrupt(t, s))
			wantFinding(t, runFsck(t, b), c.family, c.parts...)
		})
	}
}

// A sweep deletes only what no root reaches: fsck finds the store as
// clean after it as before, though the sweep deleted old roots, deltas
// and ledgers.
func TestFsckCleanAfterSweep(t *testing.T) {
	clock := newStoreClock()
	b, s, _ := fsckStoreOn(t, mem.NewBucketAt(clock.Now))
	ctx := context.Background()
	sn, err := s.Store().Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := sn.RootHash()
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "later.txt", `"text":"`+strings.Repeat("later ", 30)+`"`))
	putPin(t, b, s, "old", old)
	workbench.FlushCleanupForTest(s)
	// The store's clock a day on, and a sweep that touches the head:
	// everything unreachable is older than the horizon.
	clock.Advance(24 * time.Hour)
	opts := workbench.SweepOptions()
	opts.Touch = true
	rep, err := gcsweep.Sweep(ctx, b, s.Store().Layout(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Deleted.Objects == 0 {
		t.Fatalf("the sweep deleted nothing: %+v", rep)
	}
	after := runFsck(t, b)
	for _, f := range after.Findings {
		t.Errorf("finding after the sweep: %s", f)
	}
	if after.Pins != 1 || after.Roots != 3 {
		t.Errorf("%d pins, %d roots checked after the sweep", after.Pins, after.Roots)
	}
}

// A head whose root does not open still gets the engine layer: the
// damage is a finding, not an error that hides it.
func TestFsckHeadRootDamaged(t *testing.T) {
	b, s, _ := fsckStore(t)
	ctx := context.Background()
	sn, err := s.Store().Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	key := s.Store().Layout().Root(sn.RootHash())
	body, _, err := b.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	body[len(body)/2] ^= 0xff
	if _, err := b.Put(ctx, key, body, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	rep := runFsck(t, b)
	wantFinding(t, rep, "", "engine head", "expected a root that opens")
	wantFinding(t, rep, "", "engine", sn.RootHash().String(), "integrity")
	if rep.Head != sn.RootHash().String() || rep.Roots != 0 {
		t.Errorf("head %s, %d roots checked; want %s and none", rep.Head, rep.Roots, sn.RootHash())
	}
}

// Collecting a replaced revision deletes its blocks and its manifest
// rows; a delta the head still lists may keep those rows under the one
// that deleted them. fsck reads the records as the head merges them, so
// it finds the store clean before a fold as after, while a row of a
// live revision that names a missing block stays a finding.
func TestFsckCleanAfterCollection(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucketAt(collectClock.Now)
	s := newServiceOn(t, b, workbench.Options{BlockSize: 64, InlineMax: 16, Engine: head.Options{MaxDeltas: 8}})
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "a.txt", `"text":"`+strings.Repeat("a", 300)+`"`))
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "b.txt", `"text":"`+strings.Repeat("b", 300)+`"`))
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "a.txt", `"text":"`+strings.Repeat("A", 200)+`"`, `"replace":true`))
	rep, err := s.CollectRevisions(ctx, workbench.CollectOptions{Kept: sweepPast(t, b, s, true).Kept})
	if err != nil || rep.Collected != 1 || rep.BlocksDeleted == 0 {
		t.Fatalf("collection: %+v, %v", rep, err)
	}
	after := runFsck(t, b)
	for _, f := range after.Findings {
		t.Errorf("finding after collection: %s", f)
	}
	if r := after.Records["artifact_revision"]; r != 3 {
		t.Errorf("%d revisions checked, want 3 (one Deleted)", r)
	}

	// A block of the live b.txt removed: found.
	var victim string
	for _, r := range rows(t, s, nokv.FamilyArtifactManifest) {
		e, err := nokv.DecodeArtifactManifestEntry(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		if e.ObjectKey != "" && victim == "" {
			victim = e.ObjectKey
		}
	}
	if victim == "" {
		t.Fatal("no live block")
	}
	if err := b.Delete(ctx, victim, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	wantFinding(t, runFsck(t, b), "artifact_manifest", "block "+victim, "object does not exist")
}

// A revision quarantined by an ambiguous delete keeps its rows, whose
// blocks may be gone: not a finding, as long as it stays out of use.
func TestFsckCleanWithAQuarantinedRevision(t *testing.T) {
	ctx := context.Background()
	inner := mem.NewBucketAt(collectClock.Now)
	fb := fault.New(inner)
	s := newServiceOn(t, fb, workbench.Options{BlockSize: 64, InlineMax: 16})
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "a.txt", `"text":"`+strings.Repeat("a", 300)+`"`))
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "a.txt", `"text":"small"`, `"replace":true`))
	fb.Inject(fault.Rule{Op: fault.OpDelete, Prefix: bodies.ArtifactsPrefix(s.Store().Layout()), Count: 1, Fault: fault.LoseResponse()})
	rep, err := s.CollectRevisions(ctx, workbench.CollectOptions{Kept: sweepPast(t, inner, s, true).Kept})
	if err != nil || rep.Quarantined != 1 {
		t.Fatalf("collection: %+v, %v", rep, err)
	}
	for _, f := range runFsck(t, inner).Findings {
		t.Errorf("finding: %s", f)
	}
}
