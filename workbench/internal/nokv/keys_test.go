package nokv_test

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// ---------------------------------------------------------------------------
// Keys

type keyCase struct {
	name string
	key  interface {
		Encode() ([]byte, error)
		Family() shards.Family
	}
	golden func(t testing.TB) []byte
	parse  func([]byte) (any, error)
	// shardKey is the part of the key that must select its shard.
	shardKey func(t testing.TB) []byte
}

func keyCases() []keyCase {
	root := rep("11", 16)
	return []keyCase{
		{"WorkspaceCurrent", nokv.WorkspaceCurrentKey{Root: tRoot, WorkbenchID: "wb-1"},
			func(t testing.TB) []byte { return hx(t, root, lp("wb-1")) },
			func(b []byte) (any, error) { return nokv.ParseWorkspaceCurrentKey(b) }, nil},
		{"WorkspaceIncarnationClaim", nokv.WorkspaceIncarnationClaimKey{Root: tRoot, Incarnation: tInc},
			func(t testing.TB) []byte { return hx(t, root, rep("22", 16)) },
			func(b []byte) (any, error) { return nokv.ParseWorkspaceIncarnationClaimKey(b) }, nil},
		{"PathCurrent", nokv.PathCurrentKey{Root: tRoot, Incarnation: tInc, Path: tPath},
			func(t testing.TB) []byte { return hx(t, root, rep("22", 16), orderedPath, "01") },
			func(b []byte) (any, error) { return nokv.ParsePathCurrentKey(b) },
			func(t testing.TB) []byte { return hx(t, root, "70767571767574 00") }},
		{"PathDirectory", nokv.PathDirectoryKey{Root: tRoot, Incarnation: tInc, Path: tPath},
			func(t testing.TB) []byte { return hx(t, root, rep("22", 16), orderedPath, "01") },
			func(b []byte) (any, error) { return nokv.ParsePathDirectoryKey(b) },
			func(t testing.TB) []byte { return hx(t, root, "70767571767574 00") }},
		{"ArtifactRevision", nokv.ArtifactRevisionKey{Root: tRoot, Revision: tRev},
			func(t testing.TB) []byte { return hx(t, root, rep("33", 16)) },
			func(b []byte) (any, error) { return nokv.ParseArtifactRevisionKey(b) }, nil},
		{"ArtifactManifest", nokv.ArtifactManifestKey{Root: tRoot, Revision: tRev, ObjectIndex: 2},
			func(t testing.TB) []byte { return hx(t, root, rep("33", 16), "0000000000000002") },
			func(b []byte) (any, error) { return nokv.ParseArtifactManifestKey(b) },
			func(t testing.TB) []byte { return hx(t, root, rep("33", 16)) }},
		{"RevisionRef/Path", nokv.PathRefKey(tRoot, tInc, tPath, tRev),
			func(t testing.TB) []byte {
				return hx(t, root, "01", rep("22", 16), "0000000d", orderedPath, rep("33", 16))
			},
			func(b []byte) (any, error) { return nokv.ParseRevisionRefKey(b) },
			func(t testing.TB) []byte { return hx(t, root, "01", rep("22", 16), "0000000d", orderedPath) }},
		{"RevisionRef/Commit", nokv.CommitRefKey(tRoot, tCommit, tRev),
			func(t testing.TB) []byte { return hx(t, root, "02", rep("55", 32), rep("33", 16)) },
			func(b []byte) (any, error) { return nokv.ParseRevisionRefKey(b) },
			func(t testing.TB) []byte { return hx(t, root, "02", rep("55", 32)) }},
		{"RevisionRef/RevisionDependency", nokv.DependencyRefKey(tRoot, tChild, tRev),
			func(t testing.TB) []byte { return hx(t, root, "03", rep("66", 16), rep("33", 16)) },
			func(b []byte) (any, error) { return nokv.ParseRevisionRefKey(b) },
			func(t testing.TB) []byte { return hx(t, root, "03", rep("66", 16)) }},
		{"GcCandidate", nokv.GcCandidateKey{Root: tRoot, Revision: tRev, ReferenceEpoch: 4},
			func(t testing.TB) []byte { return hx(t, root, rep("33", 16), "0000000000000004") },
			func(b []byte) (any, error) { return nokv.ParseGcCandidateKey(b) }, nil},
		{"ChangeEvent", nokv.ChangeEventKey{Root: tRoot, CommitVersion: 300, Sequence: 2},
			func(t testing.TB) []byte { return hx(t, root, "000000000000012c", "00000002") },
			func(b []byte) (any, error) { return nokv.ParseChangeEventKey(b) },
			func(t testing.TB) []byte { return hx(t, root, "0000000000000001") }},
		{"Operation", nokv.OperationKey{Root: tRoot, Kind: nokv.OperationKindPublish, ID: tOp},
			func(t testing.TB) []byte { return hx(t, root, "01", rep("44", 16)) },
			func(b []byte) (any, error) { return nokv.ParseOperationKey(b) }, nil},
		{"StagedObject", nokv.StagedObjectKey{Root: tRoot, Operation: tOp, Sequence: 1},
			func(t testing.TB) []byte { return hx(t, root, rep("44", 16), "0000000000000001") },
			func(b []byte) (any, error) { return nokv.ParseStagedObjectKey(b) },
			func(t testing.TB) []byte { return hx(t, root, rep("44", 16)) }},
		{"SecondaryIndex", nokv.SecondaryIndexKey{Root: tRoot, IndexID: "content_type",
			Value: nokv.StringScalar("text/plain"), Incarnation: tInc, Path: tPath},
			func(t testing.TB) []byte {
				return hx(t, root, lp("content_type"), "08", ascii("text/plain"), "0000", rep("22", 16), orderedPath, "01")
			},
			func(b []byte) (any, error) { return nokv.ParseSecondaryIndexKey(b) },
			func(t testing.TB) []byte { return hx(t, root, lp("content_type")) }},
	}
}

func TestKeyGoldenRoundTripAndShard(t *testing.T) {
	for _, c := range keyCases() {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.key.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if want := c.golden(t); !bytes.Equal(got, want) {
				t.Fatalf("key\n got %x\nwant %x", got, want)
			}
			if _, err := nokv.Families().ShardOf(c.key.Family(), got); err != nil {
				t.Fatalf("ShardOf(%v): %v", c.key.Family(), err)
			}
			sk, err := nokv.Families().ShardKey(c.key.Family(), got)
			if err != nil {
				t.Fatal(err)
			}
			want := got
			if c.shardKey != nil {
				want = c.shardKey(t)
			}
			if !bytes.Equal(sk, want) {
				t.Fatalf("shard key %x, want %x", sk, want)
			}
			parsed, err := c.parse(got)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if !reflect.DeepEqual(parsed, c.key) {
				t.Fatalf("parse = %#v, want %#v", parsed, c.key)
			}
			for n := 0; n < len(got); n++ {
				if _, err := c.parse(got[:n]); !errors.Is(err, nokv.ErrBadRecord) {
					t.Fatalf("parse of %d-byte prefix: %v", n, err)
				}
			}
			if _, err := c.parse(append(bytes.Clone(got), 0x01)); !errors.Is(err, nokv.ErrBadRecord) {
				t.Fatalf("parse with a trailing byte: %v", err)
			}
		})
	}
}

func TestKeyRejections(t *testing.T) {
	root := rep("11", 16)
	parseErr := []struct {
		name  string
		b     []byte
		parse func([]byte) error
		enum  bool
	}{
		{"ref kind 0", hx(t, root, "00", rep("66", 16), rep("33", 16)),
			func(b []byte) error { _, err := nokv.ParseRevisionRefKey(b); return err }, true},
		{"ref kind 4", hx(t, root, "04", rep("66", 16), rep("33", 16)),
			func(b []byte) error { _, err := nokv.ParseRevisionRefKey(b); return err }, true},
		{"operation kind 6", hx(t, root, "06", rep("44", 16)),
			func(b []byte) error { _, err := nokv.ParseOperationKey(b); return err }, true},
		{"operation kind 0", hx(t, root, "00", rep("44", 16)),
			func(b []byte) error { _, err := nokv.ParseOperationKey(b); return err }, true},
		{"workbench id bad", hx(t, root, lp("_x")),
			func(b []byte) error { _, err := nokv.ParseWorkspaceCurrentKey(b); return err }, false},
		{"path dot", hx(t, root, rep("22", 16), "2f", "01"),
			func(b []byte) error { _, err := nokv.ParsePathCurrentKey(b); return err }, false},
		{"path backslash", hx(t, root, rep("22", 16), "5d", "01"),
			func(b []byte) error { _, err := nokv.ParsePathCurrentKey(b); return err }, false},
		{"path slash", hx(t, root, rep("22", 16), "62 30 63", "01"),
			func(b []byte) error { _, err := nokv.ParsePathCurrentKey(b); return err }, false},
		{"path not terminated", hx(t, root, rep("22", 16), "62"),
			func(b []byte) error { _, err := nokv.ParsePathCurrentKey(b); return err }, false},
		{"index value unterminated", hx(t, root, lp("f"), "08 61 00"),
			func(b []byte) error { _, err := nokv.ParseSecondaryIndexKey(b); return err }, false},
		{"index unknown tag", hx(t, root, lp("f"), "09", rep("22", 16), "62 01"),
			func(b []byte) error { _, err := nokv.ParseSecondaryIndexKey(b); return err }, true},
		{"index empty id", hx(t, root, lp(""), "01", rep("22", 16), "62 01"),
			func(b []byte) error { _, err := nokv.ParseSecondaryIndexKey(b); return err }, false},
	}
	for _, c := range parseErr {
		err := c.parse(c.b)
		if !errors.Is(err, nokv.ErrBadRecord) {
			t.Errorf("%s: %v, want ErrBadRecord", c.name, err)
		}
		if c.enum != errors.Is(err, nokv.ErrUnknownEnum) {
			t.Errorf("%s: %v, ErrUnknownEnum %t", c.name, err, c.enum)
		}
	}
	encErr := []struct {
		name string
		key  interface{ Encode() ([]byte, error) }
	}{
		{"workbench id empty", nokv.WorkspaceCurrentKey{Root: tRoot}},
		{"workbench id dot", nokv.WorkspaceCurrentKey{Root: tRoot, WorkbenchID: "a.b"}},
		{"path empty", nokv.PathCurrentKey{Root: tRoot, Incarnation: tInc}},
		{"path dot-dot", nokv.PathCurrentKey{Root: tRoot, Incarnation: tInc, Path: []string{".."}}},
		{"path slash", nokv.PathCurrentKey{Root: tRoot, Incarnation: tInc, Path: []string{"a/b"}}},
		{"path too deep", nokv.PathCurrentKey{Root: tRoot, Incarnation: tInc, Path: slices.Repeat([]string{"a"}, 65)}},
		{"path too long", nokv.PathCurrentKey{Root: tRoot, Incarnation: tInc, Path: []string{strings.Repeat("a", 4097)}}},
		{"ref unknown kind", nokv.RevisionRefKey{Root: tRoot, Kind: 9, Revision: tRev}},
		{"ref stray owner", nokv.RevisionRefKey{Root: tRoot, Kind: nokv.ReferenceKindCommit, Commit: tCommit, Child: tChild, Revision: tRev}},
		{"ref path stray commit", nokv.RevisionRefKey{Root: tRoot, Kind: nokv.ReferenceKindPath, Incarnation: tInc, Path: tPath, Commit: tCommit}},
		{"ref path without path", nokv.RevisionRefKey{Root: tRoot, Kind: nokv.ReferenceKindPath, Incarnation: tInc}},
		{"operation kind 0", nokv.OperationKey{Root: tRoot}},
		{"index id empty", nokv.SecondaryIndexKey{Root: tRoot, Value: nokv.NullScalar(), Incarnation: tInc, Path: tPath}},
		{"index id long", nokv.SecondaryIndexKey{Root: tRoot, IndexID: strings.Repeat("i", 129), Value: nokv.NullScalar(), Incarnation: tInc, Path: tPath}},
		{"index no kind", nokv.SecondaryIndexKey{Root: tRoot, IndexID: "i", Incarnation: tInc, Path: tPath}},
		{"index no path", nokv.SecondaryIndexKey{Root: tRoot, IndexID: "i", Value: nokv.NullScalar(), Incarnation: tInc}},
	}
	for _, c := range encErr {
		if _, err := c.key.Encode(); !errors.Is(err, nokv.ErrBadRecord) && !errors.Is(err, shards.ErrInvalidPath) {
			t.Errorf("%s: encode %v, want an error", c.name, err)
		}
	}
}

func TestScanPrefixes(t *testing.T) {
	// A directory prefix matches its descendants, not the sibling "outputsx"
	// nor the exact row "outputs".
	pre, err := nokv.PathCurrentPrefix(tRoot, tInc, []string{"outputs"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path []string
		in   bool
	}{
		{[]string{"outputs", "a.txt"}, true},
		{[]string{"outputs", "d", "b"}, true},
		{[]string{"outputs"}, false},
		{[]string{"outputsx", "a"}, false},
	} {
		k, err := nokv.PathCurrentKey{Root: tRoot, Incarnation: tInc, Path: c.path}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.HasPrefix(k, pre); got != c.in {
			t.Errorf("%v under outputs/: %t, want %t", c.path, got, c.in)
		}
	}
	// The direct children of a directory share the shard of the
	// directory's shard key, which leaves out the incarnation.
	k, _ := nokv.PathCurrentKey{Root: tRoot, Incarnation: tInc, Path: tPath}.Encode()
	want, _ := nokv.Families().ShardOf(nokv.FamilyPathCurrent, k)
	sk, err := nokv.PathCurrentShardKey(tRoot, tPath[:len(tPath)-1])
	if err != nil {
		t.Fatal(err)
	}
	if got := shards.HashShardKey(nokv.FamilyPathCurrent, sk); got != want {
		t.Errorf("direct child in shard %d, its directory's shard key hashes to %d", want, got)
	}
	whole, err := nokv.PathCurrentPrefix(tRoot, tInc, nil)
	if err != nil || !bytes.Equal(whole, hx(t, rep("11", 16), rep("22", 16))) {
		t.Errorf("whole-workspace prefix = %x, %v", whole, err)
	}
	if _, err := nokv.PathCurrentPrefix(tRoot, tInc, []string{"."}); !errors.Is(err, nokv.ErrBadRecord) {
		t.Errorf("prefix of '.': %v", err)
	}

	owner, err := nokv.PathRefKey(tRoot, tInc, tPath, tRev).OwnerPrefix()
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := nokv.Families().PrefixShard(nokv.FamilyRevisionRef, owner); !ok {
		t.Error("owner prefix does not fix one revision_ref shard")
	} else {
		k, _ := nokv.PathRefKey(tRoot, tInc, tPath, tChild).Encode()
		if want, _ := nokv.Families().ShardOf(nokv.FamilyRevisionRef, k); got != want {
			t.Errorf("owner prefix shard %d, key shard %d", got, want)
		}
	}

	for _, c := range []struct {
		f      shards.Family
		prefix []byte
		key    func() ([]byte, error)
	}{
		{nokv.FamilyArtifactManifest, nokv.ArtifactManifestPrefix(tRoot, tRev), nokv.ArtifactManifestKey{Root: tRoot, Revision: tRev, ObjectIndex: 9}.Encode},
		{nokv.FamilyStagedObject, nokv.StagedObjectPrefix(tRoot, tOp), nokv.StagedObjectKey{Root: tRoot, Operation: tOp, Sequence: 9}.Encode},
	} {
		k, err := c.key()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(k, c.prefix) {
			t.Errorf("%v: key %x lacks prefix %x", c.f, k, c.prefix)
		}
		got, ok := nokv.Families().PrefixShard(c.f, c.prefix)
		want, _ := nokv.Families().ShardOf(c.f, k)
		if !ok || got != want {
			t.Errorf("%v: prefix shard %d %t, key shard %d", c.f, got, ok, want)
		}
	}

	ip, err := nokv.SecondaryIndexPrefix(tRoot, "content_type")
	if err != nil {
		t.Fatal(err)
	}
	vp, err := nokv.SecondaryIndexValuePrefix(tRoot, "content_type", nokv.StringScalar("text/plain"))
	if err != nil {
		t.Fatal(err)
	}
	k, err = nokv.SecondaryIndexKey{Root: tRoot, IndexID: "content_type", Value: nokv.StringScalar("text/plain"), Incarnation: tInc, Path: tPath}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := nokv.SecondaryIndexKey{Root: tRoot, IndexID: "content_type", Value: nokv.StringScalar("text/plain2"), Incarnation: tInc, Path: tPath}.Encode()
	if !bytes.HasPrefix(k, vp) || !bytes.HasPrefix(vp, ip) || bytes.HasPrefix(other, vp) || !bytes.HasPrefix(other, ip) {
		t.Errorf("index prefixes: key %x value prefix %x index prefix %x", k, vp, ip)
	}
	if !bytes.Equal(nokv.RootPrefix(tRoot), tRoot[:]) {
		t.Error("RootPrefix is not the root id")
	}
}

// ---------------------------------------------------------------------------
// Ids

func TestIDs(t *testing.T) {
	r := nokv.RootID(fill16(0xab))
	if got, want := r.String(), strings.Repeat("ab", 16); got != want {
		t.Fatalf("String() = %q", got)
	}
	if p, err := nokv.ParseRootID(r.String()); err != nil || p != r {
		t.Fatalf("ParseRootID = %v, %v", p, err)
	}
	c := nokv.CommitID(fill32(0x0f))
	if p, err := nokv.ParseCommitID(c.String()); err != nil || p != c || len(c.String()) != 64 {
		t.Fatalf("ParseCommitID(%q) = %v, %v", c, p, err)
	}
	bad := []string{"", strings.Repeat("AB", 16), strings.Repeat("ab", 15), strings.Repeat("ab", 17), strings.Repeat("zz", 16),
		"0x" + strings.Repeat("ab", 15), strings.Repeat("ab", 8) + "-" + strings.Repeat("ab", 7) + "a"}
	for _, s := range bad {
		if _, err := nokv.ParseRootID(s); !errors.Is(err, nokv.ErrBadID) {
			t.Errorf("ParseRootID(%q): %v", s, err)
		}
		if _, err := nokv.ParseIncarnationID(s); !errors.Is(err, nokv.ErrBadID) {
			t.Errorf("ParseIncarnationID(%q): %v", s, err)
		}
		if _, err := nokv.ParseRevisionID(s); !errors.Is(err, nokv.ErrBadID) {
			t.Errorf("ParseRevisionID(%q): %v", s, err)
		}
		if _, err := nokv.ParseOperationID(s); !errors.Is(err, nokv.ErrBadID) {
			t.Errorf("ParseOperationID(%q): %v", s, err)
		}
	}
	if _, err := nokv.ParseCommitID(strings.Repeat("ab", 16)); !errors.Is(err, nokv.ErrBadID) {
		t.Errorf("ParseCommitID of 32 digits: %v", err)
	}
	seen := map[[16]byte]bool{}
	for range 64 {
		for _, id := range [][16]byte{[16]byte(nokv.NewRootID()), [16]byte(nokv.NewIncarnationID()),
			[16]byte(nokv.NewRevisionID(time.Now())), [16]byte(nokv.NewOperationID(time.Now()))} {
			if seen[id] || id == [16]byte{} {
				t.Fatalf("random id %x repeated or zero", id)
			}
			seen[id] = true
		}
	}
	var inc nokv.IncarnationID
	if err := inc.UnmarshalText([]byte(strings.Repeat("0a", 16))); err != nil || inc != nokv.IncarnationID(fill16(0x0a)) {
		t.Fatalf("UnmarshalText = %v, %v", inc, err)
	}
	if txt, _ := inc.MarshalText(); string(txt) != strings.Repeat("0a", 16) {
		t.Fatalf("MarshalText = %q", txt)
	}
	if !(nokv.OperationID{}).IsZero() || tOp.IsZero() {
		t.Error("IsZero")
	}
}

func TestSnapshotID(t *testing.T) {
	for _, c := range []struct {
		s  string
		v  nokv.SnapshotID
		ok bool
	}{
		{"0", 0, true}, {"1", 1, true}, {"18446744073709551615", math.MaxUint64, true},
		{"18446744073709551616", 0, false}, {"01", 0, false}, {"-1", 0, false}, {"+1", 0, false},
		{"", 0, false}, {"1 ", 0, false}, {"1e3", 0, false},
	} {
		v, err := nokv.ParseSnapshotID(c.s)
		if c.ok != (err == nil) || v != c.v {
			t.Errorf("ParseSnapshotID(%q) = %d, %v", c.s, v, err)
		}
		if c.ok && v.String() != c.s {
			t.Errorf("String(%d) = %q", v, v.String())
		}
		if !c.ok && !errors.Is(err, nokv.ErrBadID) {
			t.Errorf("ParseSnapshotID(%q): %v, want ErrBadID", c.s, err)
		}
	}
	k, err := nokv.ChangeEventKey{Root: tRoot, CommitVersion: 1}.Encode()
	if err != nil || len(k) != 28 {
		t.Errorf("change event key %x, %v", k, err)
	}
}

// BenchmarkSecondaryIndexKey encodes the index keys a file's row has: a
// size, a body digest and a content type, under a short path.
func BenchmarkSecondaryIndexKey(b *testing.B) {
	var root nokv.RootID
	var inc nokv.IncarnationID
	path := []string{"outputs", "d12", "f12345.txt"}
	values := []struct {
		id string
		v  nokv.IndexScalar
	}{
		{"artifact.logical_size", nokv.UnsignedScalar(2048)},
		{"artifact.body_digest_uri", nokv.StringScalar("sha256:" + strings.Repeat("ab", 32))},
		{"artifact.content_type", nokv.StringScalar("text/plain; charset=utf-8")},
	}
	b.ReportAllocs()
	for range b.N {
		for _, x := range values {
			if _, err := (nokv.SecondaryIndexKey{Root: root, IndexID: x.id, Value: x.v, Incarnation: inc, Path: path}).Encode(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
