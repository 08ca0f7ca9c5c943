package workbench

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/files"
	"github.com/cairnstore/cairn/workbench/internal/publish"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Test helpers for the write tools' black-box tests: they read the records
// a publication wrote, through a pinned snapshot.

// PathStateForTest is what a path holds: its entry, its revision and the
// revision's manifest rows.
type PathStateForTest struct {
	Entry    nokv.PathEntry
	Revision nokv.ArtifactRevision
	Rows     []nokv.ArtifactManifestEntry
}

// PathForTest returns the state of the stored path (e.g. "outputs/a.txt")
// of workbench id, and whether the path holds an artifact.
func PathForTest(tb testing.TB, s *Service, id, path string) (PathStateForTest, bool) {
	tb.Helper()
	ctx := context.Background()
	v, werr := s.OpenView(ctx, id, nil)
	if werr != nil {
		if werr.Code == core.CodeNotFound {
			return PathStateForTest{}, false
		}
		tb.Fatal(werr)
	}
	e, ok, werr := v.Entry(ctx, strings.Split(path, "/"))
	if werr != nil {
		tb.Fatal(werr)
	}
	if !ok {
		return PathStateForTest{}, false
	}
	rev, ok := RevisionForTest(tb, s, e.Revision)
	if !ok {
		tb.Fatalf("%s: revision %s does not exist", path, e.Revision)
	}
	rows, werr := s.Manifest(ctx, func(f shards.Family, prefix, after []byte) ([]shards.Record, error) {
		return v.Sn.Scan(ctx, f, prefix, after, 0)
	}, e.Revision)
	if werr != nil {
		tb.Fatal(werr)
	}
	return PathStateForTest{Entry: e, Revision: rev, Rows: rows}, true
}

// RevisionForTest reads an ArtifactRevision row.
func RevisionForTest(tb testing.TB, s *Service, rev nokv.RevisionID) (nokv.ArtifactRevision, bool) {
	tb.Helper()
	key, err := nokv.ArtifactRevisionKey{Root: s.Root(), Revision: rev}.Encode()
	if err != nil {
		tb.Fatal(err)
	}
	recs := ScanForTest(tb, s, nokv.FamilyArtifactRevision, key)
	if len(recs) == 0 {
		return nokv.ArtifactRevision{}, false
	}
	a, err := nokv.DecodeArtifactRevision(recs[0].Value)
	if err != nil {
		tb.Fatal(err)
	}
	return a, true
}

// ScanForTest returns every record of family f of the Service's root
// whose key begins with prefix (the whole root when prefix is nil).
func ScanForTest(tb testing.TB, s *Service, f shards.Family, prefix []byte) []shards.Record {
	tb.Helper()
	ctx := context.Background()
	sn, err := s.Store().Pin(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	if prefix == nil {
		prefix = nokv.RootPrefix(s.Root())
	}
	recs, err := sn.Scan(ctx, f, prefix, nil, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return recs
}

// BodyForTest reads a path's whole body through the read path.
func BodyForTest(tb testing.TB, s *Service, id, path string) []byte {
	tb.Helper()
	ctx := context.Background()
	v, werr := s.OpenView(ctx, id, nil)
	if werr != nil {
		tb.Fatal(werr)
	}
	e, ok, werr := v.Entry(ctx, strings.Split(path, "/"))
	if werr != nil || !ok {
		tb.Fatalf("%s: %v %v", path, ok, werr)
	}
	b, werr := v.Body(ctx, e)
	if werr != nil {
		tb.Fatal(werr)
	}
	return b
}

// FlushCleanupForTest sends the Service's queued ledger deletes now and
// waits for them (cleanup.go).
func FlushCleanupForTest(s *Service) { s.Cleanup.Flush() }

// ForgetBodiesForTest drops every remembered body digest state, so that
// the next append streams its base.
func ForgetBodiesForTest() {
	publish.BodyStates.Lock()
	defer publish.BodyStates.Unlock()
	publish.BodyStates.M = map[[32]byte]publish.BodyState{}
	publish.BodyStates.Order = nil
}

// CheckReferencesForTest checks the strong reference accounting of every
// revision of the root: its count equals the RevisionRef rows naming it, a
// revision without references has a GcCandidate keyed by its epoch and a
// last-zero version, and a revision's RevisionDependency refs are exactly
// the distinct physical owners of its manifest rows other than itself,
// matching its dependency count.
func CheckReferencesForTest(tb testing.TB, s *Service) {
	tb.Helper()
	defer FsckCleanForTest(tb, s)
	counts := map[nokv.RevisionID]uint64{}
	deps := map[nokv.RevisionID][]nokv.RevisionID{}
	for _, r := range ScanForTest(tb, s, nokv.FamilyRevisionRef, nil) {
		k, err := nokv.ParseRevisionRefKey(r.Key)
		if err != nil {
			tb.Fatal(err)
		}
		counts[k.Revision]++
		if k.Kind == nokv.ReferenceKindRevisionDependency {
			deps[k.Child] = append(deps[k.Child], k.Revision)
		}
	}
	candidates := map[nokv.GcCandidateKey]bool{}
	for _, r := range ScanForTest(tb, s, nokv.FamilyGcCandidate, nil) {
		k, err := nokv.ParseGcCandidateKey(r.Key)
		if err != nil {
			tb.Fatal(err)
		}
		candidates[k] = true
	}
	ctx := context.Background()
	sn, err := s.Store().Pin(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	for _, r := range ScanForTest(tb, s, nokv.FamilyArtifactRevision, nil) {
		k, err := nokv.ParseArtifactRevisionKey(r.Key)
		if err != nil {
			tb.Fatal(err)
		}
		a, err := nokv.DecodeArtifactRevision(r.Value)
		if err != nil {
			tb.Fatal(err)
		}
		if a.StrongReferenceCount != counts[k.Revision] {
			tb.Errorf("revision %s: strong_reference_count %d, %d RevisionRef rows", k.Revision, a.StrongReferenceCount, counts[k.Revision])
		}
		if a.StrongReferenceCount == 0 {
			if !candidates[nokv.GcCandidateKey{Root: s.Root(), Revision: k.Revision, ReferenceEpoch: a.ReferenceEpoch}] || a.LastZeroRefVersion == 0 {
				tb.Errorf("revision %s: no references but no GcCandidate at epoch %d (last zero %d)", k.Revision, a.ReferenceEpoch, a.LastZeroRefVersion)
			}
		}
		rows, werr := s.Manifest(ctx, func(f shards.Family, prefix, after []byte) ([]shards.Record, error) {
			return sn.Scan(ctx, f, prefix, after, 0)
		}, k.Revision)
		if werr != nil {
			tb.Fatal(werr)
		}
		if a.State == nokv.RevisionStateDeleted {
			// Collected, or retired by the command that released it:
			// its rows are gone.
			if len(rows) != 0 {
				tb.Errorf("revision %s: Deleted with %d manifest rows", k.Revision, len(rows))
			}
			continue
		}
		var owners []nokv.RevisionID
		for _, row := range rows {
			if row.PhysicalOwner != k.Revision {
				owners = append(owners, row.PhysicalOwner)
			}
		}
		owners = core.SortRevisions(owners)
		got := core.SortRevisions(deps[k.Revision])
		if !slices.Equal(owners, got) || int(a.DependencyCount) != len(owners) {
			tb.Errorf("revision %s: dependency refs %v, dependency_count %d, row owners %v", k.Revision, got, a.DependencyCount, owners)
		}
		if a.DependencyDigest != publish.DependencyDigest(owners) {
			tb.Errorf("revision %s: dependency digest does not seal its owners", k.Revision)
		}
		if uint64(len(rows)) != a.BlockCount {
			tb.Errorf("revision %s: block_count %d, %d rows", k.Revision, a.BlockCount, len(rows))
		}
		md, err := publish.ManifestDigestURI(rows)
		if err != nil || md != a.ManifestDigestURI {
			tb.Errorf("revision %s: manifest digest %s, rows give %s (%v)", k.Revision, a.ManifestDigestURI, md, err)
		}
	}
}

// openInternal opens a Service for agent "test" over b with the engine's
// strict check after every commit.
func openInternal(tb testing.TB, b bucket.Bucket, opts core.Options) *Service {
	tb.Helper()
	opts.AgentID = "test"
	opts.Engine.Check = true
	s, err := Open(context.Background(), b, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// readRange reads body bytes [off, off+n) through the manifest rows alone,
// fetching only the blocks the range touches.
func readRange(ctx context.Context, b bucket.Bucket, rows []nokv.ArtifactManifestEntry, off, n uint64) ([]byte, error) {
	var out []byte
	end := off + n
	for _, r := range rows {
		lo, hi := max(off, r.LogicalOffset), min(end, r.LogicalOffset+r.Length)
		if lo >= hi {
			continue
		}
		obj, _, err := b.Get(ctx, r.ObjectKey)
		if err != nil {
			return nil, err
		}
		if core.DigestURI(obj[r.ObjectOffset:r.ObjectOffset+r.Length]) != r.DigestURI {
			return nil, fmt.Errorf("block %s: digest mismatch", r.ObjectKey)
		}
		start := r.ObjectOffset + lo - r.LogicalOffset
		out = append(out, obj[start:start+hi-lo]...)
	}
	return out, nil
}

// TestPublishLargeBodyInBlocks publishes a 64 MiB body in 1 MiB blocks
// and reads it back by ranges through the manifest rows.
func TestPublishLargeBodyInBlocks(t *testing.T) {
	const size = 64 << 20
	ctx := context.Background()
	b := mem.NewBucket()
	s := openInternal(t, b, core.Options{MaxBytes: 80 << 20, BlockSize: 1 << 20})
	// Distinct blocks, cheaply: windows of a 2 MiB random buffer at
	// different offsets.
	src := make([]byte, 2<<20)
	rand.NewChaCha8([32]byte{7}).Read(src)
	body := make([]byte, size)
	for i := 0; i < size>>20; i++ {
		off := (i * 16411) % (1 << 20)
		copy(body[i<<20:(i+1)<<20], src[off:])
	}

	path := []string{"outputs", "big.bin"}
	res, werr := files.PutFile(ctx, s.Service, "wb", path, body, core.BinaryContentType, false)
	if werr != nil {
		t.Fatal(werr)
	}
	if got, want := res.SizeBytes, uint64(size); got != want {
		t.Fatalf("size_bytes %v, want %v", got, want)
	}
	if got, want := res.DigestURI, core.DigestURI(body); got != want {
		t.Fatalf("digest_uri %v, want %v", got, want)
	}

	st, ok := PathForTest(t, s, "wb", "outputs/big.bin")
	if !ok {
		t.Fatal("published path is missing")
	}
	if got, want := len(st.Rows), size>>20; got != want {
		t.Fatalf("%d manifest rows, want %d", got, want)
	}
	for i, r := range st.Rows {
		if r.PhysicalOwner != st.Entry.Revision || r.PhysicalObjectIndex != uint64(i) || r.Length != 1<<20 ||
			r.LogicalOffset != uint64(i)<<20 || r.ObjectKey != bodies.BlockKey(s.Store().Layout(), s.Root(), st.Entry.Revision, uint64(i)) {
			t.Fatalf("row %d: %+v", i, r)
		}
	}
	if st.Revision.BlockCount != uint64(len(st.Rows)) || st.Revision.LogicalSize != size || st.Revision.StrongReferenceCount != 1 {
		t.Fatalf("revision %+v", st.Revision)
	}

	// Ranges: random ones and those at block edges.
	r := rand.New(rand.NewPCG(1, 2))
	type rng struct{ off, n uint64 }
	ranges := []rng{{0, 1}, {1<<20 - 3, 6}, {size - 5, 5}, {5 << 20, 1 << 20}, {3<<20 - 1, 2<<20 + 2}}
	for range 40 {
		off := r.Uint64N(size)
		ranges = append(ranges, rng{off, 1 + r.Uint64N(min(size-off, 3<<20))})
	}
	for _, x := range ranges {
		got, err := readRange(ctx, b, st.Rows, x.off, x.n)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, body[x.off:x.off+x.n]) {
			t.Fatalf("range [%d, +%d) differs", x.off, x.n)
		}
	}
	if got := BodyForTest(t, s, "wb", "outputs/big.bin"); !bytes.Equal(got, body) {
		t.Fatal("whole body differs")
	}

	// Once the background cleanup ran, the ledger is gone; the
	// StagedObject rows own the blocks.
	s.Cleanup.Flush()
	page, err := b.List(ctx, bucket.ListOptions{Prefix: bodies.StagingPrefix(s.Store().Layout())})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Objects) != 0 {
		t.Fatalf("staging ledgers left after publication: %v", page.Objects)
	}
	staged := ScanForTest(t, s, nokv.FamilyStagedObject, nil)
	if len(staged) != len(st.Rows) {
		t.Fatalf("%d StagedObject rows, want %d", len(staged), len(st.Rows))
	}
	for i, rec := range staged {
		so, err := nokv.DecodeStagedObject(rec.Value)
		if err != nil {
			t.Fatal(err)
		}
		if so.ObjectKey != st.Rows[i].ObjectKey || so.Provider != nokv.StagedProviderStateUploaded || so.Cleanup != nokv.StagedCleanupStateOwned ||
			so.ExpectedLength != st.Rows[i].Length || so.ExpectedDigestURI != st.Rows[i].DigestURI {
			t.Fatalf("staged object %d: %+v", i, so)
		}
	}
	ops := ScanForTest(t, s, nokv.FamilyOperation, nil)
	if len(ops) != 1 {
		t.Fatalf("%d operations, want 1", len(ops))
	}
	op, err := nokv.DecodePublishOperation(ops[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	if op.Phase != nokv.PublishPhasePublished || op.Revision != st.Entry.Revision || op.ObjectCount != uint64(len(st.Rows)) ||
		op.Result == nil || op.Result.Generation != 1 || op.ExpectedGeneration != nil {
		t.Fatalf("operation %+v", op)
	}
	CheckReferencesForTest(t, s)
}

// TestAppendDependenciesStayBounded appends 70 times: every revision reuses
// its base's rows until its dependency graph would grow deeper than eight
// revisions; that append rematerializes the whole body in blocks of the
// new revision. The body stays exact and the references consistent.
func TestAppendDependenciesStayBounded(t *testing.T) {
	for _, forget := range []bool{false, true} {
		t.Run(fmt.Sprintf("forget=%t", forget), func(t *testing.T) {
			ctx := context.Background()
			s := openInternal(t, mem.NewBucket(), core.Options{BlockSize: 16})
			path := []string{"logs", "run.log"}
			var want []byte
			remats := 0
			for i := range 70 {
				if forget {
					ForgetBodiesForTest()
				}
				delta := fmt.Appendf(nil, "line %02d\n", i)
				want = append(want, delta...)
				res, werr := files.AppendFile(ctx, s.Service, "wb", path, delta, core.TextContentType, false)
				if werr != nil {
					t.Fatalf("append %d: %v", i, werr)
				}
				if got := res.SizeBytes; got != uint64(len(want)) {
					t.Fatalf("append %d: size_bytes %v, want %d", i, got, len(want))
				}
				if got := res.Generation; got != uint64(i+1) {
					t.Fatalf("append %d: generation %v", i, got)
				}
				st, _ := PathForTest(t, s, "wb", "logs/run.log")
				e := st.Entry
				if e.DependencyDepth > publish.MaxDependencyDepth || e.DependencyCount > publish.MaxDependencyOwners {
					t.Fatalf("append %d: dependency depth %d, count %d", i, e.DependencyDepth, e.DependencyCount)
				}
				if e.BodyDigestURI != core.DigestURI(want) {
					t.Fatalf("append %d: body digest differs", i)
				}
				if i > 0 && e.DependencyCount == 0 {
					remats++
					// Rematerialized: every row is the new revision's own,
					// cut at the block size.
					for j, r := range st.Rows {
						if r.PhysicalOwner != e.Revision || (j < len(st.Rows)-1 && r.Length != 16) {
							t.Fatalf("append %d: rematerialized row %d: %+v", i, j, r)
						}
					}
				} else if i > 0 {
					last := st.Rows[len(st.Rows)-1]
					if last.Append == nil || last.Append.BaseGeneration != uint64(i) || last.Append.DeltaLength != uint64(len(delta)) ||
						last.Append.DeltaDigestURI != core.DigestURI(delta) || last.PhysicalOwner != e.Revision {
						t.Fatalf("append %d: delta row %+v", i, last)
					}
				}
			}
			if remats < 7 {
				t.Fatalf("%d rematerializations in 70 appends, want at least 7", remats)
			}
			if got := BodyForTest(t, s, "wb", "logs/run.log"); !bytes.Equal(got, want) {
				t.Fatalf("body %q, want %q", got, want)
			}
			CheckReferencesForTest(t, s)
		})
	}
}

// TestAppendChecksItsBase: an append that has to stream its base refuses a
// base block whose bytes changed.
func TestAppendChecksItsBase(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	s := openInternal(t, b, core.Options{InlineMax: -1}) // the base in a block
	path := []string{"outputs", "a.txt"}
	if _, werr := files.PutFile(ctx, s.Service, "wb", path, []byte("hello"), core.TextContentType, false); werr != nil {
		t.Fatal(werr)
	}
	st, _ := PathForTest(t, s, "wb", "outputs/a.txt")
	if _, err := b.Put(ctx, st.Rows[0].ObjectKey, []byte("HELLO"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	ForgetBodiesForTest()
	_, werr := files.AppendFile(ctx, s.Service, "wb", path, []byte("!"), core.TextContentType, false)
	if werr == nil || werr.Code != core.CodeInvalidState {
		t.Fatalf("append onto a damaged base: %v, want InvalidState", werr)
	}
	if got, _ := PathForTest(t, s, "wb", "outputs/a.txt"); got.Entry.Generation != 1 {
		t.Fatalf("generation %d after a refused append", got.Entry.Generation)
	}
}

// TestStagingLedgerRoundTrip: the ledger is canonical and decodes strictly.
func TestStagingLedgerRoundTrip(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	s := openInternal(t, b, core.Options{BlockSize: 2})
	st := publish.PlanStaging(s.Service, "workbench_put_file", "wb", []string{"outputs", "x"}, []byte("abcde"))
	if err := s.Bodies.WriteLedger(ctx, publish.Objects(s.Service, st)); err != nil {
		t.Fatal(err)
	}
	raw, _, err := b.Get(ctx, bodies.StagingKey(s.Store().Layout(), st.Op))
	if err != nil {
		t.Fatal(err)
	}
	l, err := bodies.DecodeStagingLedger(raw)
	if err != nil {
		t.Fatal(err)
	}
	if l.Operation != st.Op.String() || l.Revision != st.Rev.String() || l.Root != s.Root().String() ||
		l.Path != "outputs/x" || len(l.Objects) != 3 || l.Objects[2].Length != 1 || l.Objects[0].Digest != core.DigestURI([]byte("ab")) {
		t.Fatalf("ledger %+v", l)
	}
	// Writing it again is harmless; a different ledger under the key is not.
	if err := s.Bodies.WriteLedger(ctx, publish.Objects(s.Service, st)); err != nil {
		t.Fatalf("rewrite of the same ledger: %v", err)
	}
	st.Origin.Path = "outputs/y"
	if err := s.Bodies.WriteLedger(ctx, publish.Objects(s.Service, st)); err == nil {
		t.Fatal("a different ledger replaced the first")
	}
	if _, err := bodies.DecodeStagingLedger(append(raw[:len(raw)-1:len(raw)-1], ' ', '}')); err == nil {
		t.Fatal("non-canonical ledger decoded")
	}
}

var _ = head.Options{}
