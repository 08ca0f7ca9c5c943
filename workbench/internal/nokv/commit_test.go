package nokv_test

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// TestWorkbenchCommitHeadCodec pins the head's key and value bytes and
// checks that they round-trip and that broken values are refused.
func TestWorkbenchCommitHeadCodec(t *testing.T) {
	key := nokv.WorkbenchCommitHeadKey{Root: tRoot, Incarnation: tInc}
	kb, err := key.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if want := hx(t, rep("11", 16), rep("22", 16)); !bytes.Equal(kb, want) {
		t.Fatalf("key = %x, want %x", kb, want)
	}
	if _, err := nokv.Families().ShardKey(nokv.FamilyWorkbenchCommitHead, kb); err != nil {
		t.Fatalf("schema refuses the key: %v", err)
	}
	back, err := nokv.ParseWorkbenchCommitHeadKey(kb)
	if err != nil || back != key {
		t.Fatalf("parse key = %+v, %v", back, err)
	}
	if _, err := nokv.ParseWorkbenchCommitHeadKey(kb[:31]); !errors.Is(err, nokv.ErrBadRecord) {
		t.Fatalf("short key: %v", err)
	}

	v := nokv.WorkbenchCommitHead{Commit: tCommit, HeadGeneration: 3}
	vb, err := v.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := hx(t, "01", rep("55", 32), "0000000000000003")
	if !bytes.Equal(vb, want) {
		t.Fatalf("value = %x, want %x", vb, want)
	}
	got, err := nokv.DecodeWorkbenchCommitHead(vb)
	if err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("decode = %+v, %v", got, err)
	}
	for name, b := range map[string][]byte{
		"truncated":       vb[:len(vb)-1],
		"trailing":        append(bytes.Clone(vb), 0),
		"version":         append([]byte{2}, vb[1:]...),
		"zero commit":     hx(t, "01", rep("00", 32), "0000000000000003"),
		"zero generation": hx(t, "01", rep("55", 32), "0000000000000000"),
	} {
		if _, err := nokv.DecodeWorkbenchCommitHead(b); !errors.Is(err, nokv.ErrBadRecord) {
			t.Errorf("%s: decode err = %v", name, err)
		}
	}
	if _, err := (nokv.WorkbenchCommitHead{Commit: tCommit}).Encode(); !errors.Is(err, nokv.ErrBadRecord) {
		t.Errorf("zero generation encoded: %v", err)
	}
}

// TestCommitRecordsRoundTrip encodes each commit record, checks that the
// schema accepts its key, decodes it back, and refuses every truncation.
func TestCommitRecordsRoundTrip(t *testing.T) {
	commit := nokv.Commit{
		SourceIncarnation: tInc, WorkbenchID: "wb-1", ContentDigestURI: digestAB, ManifestDigestURI: digestCD,
		TreeManifestRevision: tRev, MemberCount: 3, MemberDigest: fill32(0x01), UniqueRevisionCount: 2,
		RevisionDigest: fill32(0x02), Parents: []nokv.CommitID{nokv.CommitID(fill32(0x03))}, ParentDigest: fill32(0x04),
		Producer: ptr("p"), ConsumerCount: 1, ConsumerEpoch: 2, LastZeroConsumerVersion: 0,
		State: nokv.CommitStateSealed, CreatedVersion: 9,
	}
	member := nokv.CommitMember{
		Revision: tRev, PathGeneration: 4, BodyDigestURI: digestAB, ManifestDigestURI: digestCD,
		LogicalSize: 10, ContentType: "text/plain", Index: nokv.IndexProjection{{ID: "k", Value: nokv.UnsignedScalar(1)}},
	}
	build := nokv.BuildCommitOperation{
		Phase: nokv.BuildCommitPhaseComplete, ProjectionInputDigest: fill32(0x05), InitializationDigest: fill32(0x06),
		Commit: tCommit, WorkbenchID: "wb-1", ContentDigestURI: digestAB, ManifestDigestURI: digestCD, Replace: true,
		Incarnation: tInc, SourceReadVersion: 7, ExpectedHead: &nokv.CommitHeadRef{Commit: nokv.CommitID(fill32(0x03)), Generation: 2},
		CommittedAtUnix: 1700000000, RunManifestGeneration: ptr(uint64(2)),
		Binding:     nokv.ManifestBinding{Revision: tRev, LogicalSize: 470, BodyDigestURI: digestEF, ManifestDigestURI: digestCD, ContentType: "application/json"},
		Parents:     []nokv.CommitID{nokv.CommitID(fill32(0x03))},
		MemberCount: 3, MemberDigest: fill32(0x01),
		Result: &nokv.BuildCommitResult{HeadGeneration: 3, PathGeneration: 3, WorkspaceRevision: 8, CommitVersion: 9},
	}
	retire := nokv.CommitRetireOperation{Phase: nokv.CommitRetirePhaseReleasing, Commit: tCommit, ClaimedEpoch: 4, MembersReleased: 3, RevisionsReleased: 1}
	consumer := nokv.CommitConsumer{ConsumerEpochAtAdd: 2, CreatedVersion: 9}
	withTree := commit
	withTree.MemberTree = &nokv.MemberTree{Key: "artifacts/x/trees/" + rep("ab", 32), Size: 300, Digest: fill32(0x07), References: 1}
	treeDigests := commit
	treeDigests.MemberDigest = fill32(0x07)
	treeDigests.MemberTree = &nokv.MemberTree{Key: "artifacts/x/trees/" + rep("ab", 32), Size: 300, Digest: fill32(0x07), References: commit.UniqueRevisionCount}
	treeDigests.TreeDigests = true

	values := []struct {
		name string
		v    any
		enc  func() ([]byte, error)
		dec  func([]byte) (any, error)
	}{
		{"Commit", commit, commit.Encode, func(b []byte) (any, error) { return nokv.DecodeCommit(b) }},
		{"Commit with a member tree", withTree, withTree.Encode, func(b []byte) (any, error) { return nokv.DecodeCommit(b) }},
		{"Commit of tree digests", treeDigests, treeDigests.Encode, func(b []byte) (any, error) { return nokv.DecodeCommit(b) }},
		{"CommitMember", member, member.Encode, func(b []byte) (any, error) { return nokv.DecodeCommitMember(b) }},
		{"BuildCommitOperation", build, build.Encode, func(b []byte) (any, error) { return nokv.DecodeBuildCommitOperation(b) }},
		{"CommitRetireOperation", retire, retire.Encode, func(b []byte) (any, error) { return nokv.DecodeCommitRetireOperation(b) }},
		{"CommitConsumer", consumer, consumer.Encode, func(b []byte) (any, error) { return nokv.DecodeCommitConsumer(b) }},
	}
	for _, c := range values {
		b, err := c.enc()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := c.dec(b)
		if err != nil || !reflect.DeepEqual(got, c.v) {
			t.Fatalf("%s: decode = %+v, %v", c.name, got, err)
		}
		for n := range len(b) {
			if _, err := c.dec(b[:n]); !errors.Is(err, nokv.ErrBadRecord) {
				t.Fatalf("%s: truncation to %d bytes decoded: %v", c.name, n, err)
			}
		}
	}
	if commit.TreeDigestURI() != "sha256:"+rep("01", 32) {
		t.Fatalf("tree digest %s", commit.TreeDigestURI())
	}
	if b, _ := commit.Encode(); b[0] != nokv.CommitVersion {
		t.Fatalf("a commit without a tree is version %d", b[0])
	}
	if b, _ := withTree.Encode(); b[0] != nokv.CommitTreeVersion {
		t.Fatalf("a commit with a tree is version %d", b[0])
	}
	if b, _ := treeDigests.Encode(); b[0] != nokv.CommitTreeDigestVersion {
		t.Fatalf("a commit of tree digests is version %d", b[0])
	}
	// Version 4 holds its digests to its tree: a member digest or a
	// reference count of its own is refused both ways.
	for _, bad := range []func(c *nokv.Commit){
		func(c *nokv.Commit) { c.MemberDigest = fill32(0x01) },
		func(c *nokv.Commit) { c.UniqueRevisionCount++ },
		func(c *nokv.Commit) { c.MemberTree = nil },
	} {
		c := treeDigests
		mt := *c.MemberTree
		c.MemberTree = &mt
		bad(&c)
		if _, err := c.Encode(); !errors.Is(err, nokv.ErrBadRecord) {
			t.Fatalf("an inconsistent commit of tree digests encoded: %v", err)
		}
	}
	{
		b, _ := treeDigests.Encode()
		b = slices.Clone(b)
		// The member digest sits after the version, incarnation, three
		// strings, the revision and the count; flip its first byte.
		b[1+16+(4+len(commit.WorkbenchID))+(4+len(commit.ContentDigestURI))+(4+len(commit.ManifestDigestURI))+16+8] ^= 1
		if _, err := nokv.DecodeCommit(b); !errors.Is(err, nokv.ErrBadRecord) || !strings.Contains(err.Error(), "not its tree's") {
			t.Fatalf("a commit of tree digests whose member digest is not its tree's decoded: %v", err)
		}
	}
	for _, bad := range []nokv.MemberTree{{Size: 1}, {Key: "k"}, {Key: "k", Size: 1, References: 3}} {
		c := commit
		c.MemberTree = &bad
		if _, err := c.Encode(); !errors.Is(err, nokv.ErrBadRecord) {
			t.Fatalf("member tree %+v encoded: %v", bad, err)
		}
	}
	both := build
	both.Failure = &nokv.OperationFailure{Code: "X", Message: "y"}
	if _, err := both.Encode(); !errors.Is(err, nokv.ErrBadRecord) {
		t.Fatalf("result and failure encoded: %v", err)
	}

	type keyCase struct {
		name  string
		fam   uint8
		enc   func() ([]byte, error)
		parse func([]byte) (any, error)
		want  any
	}
	var keys []keyCase
	ck := nokv.CommitKey{Root: tRoot, Commit: tCommit}
	mk := nokv.CommitMemberKey{Root: tRoot, Commit: tCommit, Path: tPath}
	heads := nokv.CommitConsumerKey{Root: tRoot, Commit: tCommit, Kind: nokv.CommitConsumerKindWorkbenchHead, Incarnation: tInc}
	tag := nokv.CommitConsumerKey{Root: tRoot, Commit: tCommit, Kind: nokv.CommitConsumerKindTag, Incarnation: tInc, Tag: "v1"}
	lease := nokv.CommitConsumerKey{Root: tRoot, Commit: tCommit, Kind: nokv.CommitConsumerKindLease, Operation: tOp}
	child := nokv.CommitConsumerKey{Root: tRoot, Commit: tCommit, Kind: nokv.CommitConsumerKindChildCommit, Child: nokv.CommitID(fill32(0x09))}
	keys = append(keys,
		keyCase{"Commit", uint8(nokv.FamilyCommit), ck.Encode, func(b []byte) (any, error) { return nokv.ParseCommitKey(b) }, ck},
		keyCase{"CommitMember", uint8(nokv.FamilyCommitMember), mk.Encode, func(b []byte) (any, error) { return nokv.ParseCommitMemberKey(b) }, mk},
	)
	for _, k := range []nokv.CommitConsumerKey{heads, tag, lease, child} {
		keys = append(keys, keyCase{"CommitConsumer/" + k.Kind.String(), uint8(nokv.FamilyCommitConsumer), k.Encode, func(b []byte) (any, error) { return nokv.ParseCommitConsumerKey(b) }, k})
	}
	for _, k := range keys {
		b, err := k.enc()
		if err != nil {
			t.Fatalf("%s key: %v", k.name, err)
		}
		fam, _ := nokv.Families().ParseFamily(k.fam)
		if _, err := nokv.Families().ShardKey(fam, b); err != nil {
			t.Fatalf("%s key refused by the schema: %v", k.name, err)
		}
		got, err := k.parse(b)
		if err != nil || !reflect.DeepEqual(got, k.want) {
			t.Fatalf("%s key parse = %+v, %v", k.name, got, err)
		}
		if _, err := k.parse(b[:len(b)-1]); err == nil {
			t.Fatalf("%s key: truncation parsed", k.name)
		}
	}
	if _, err := (nokv.CommitConsumerKey{Root: tRoot, Commit: tCommit, Kind: nokv.CommitConsumerKindLease, Incarnation: tInc}).Encode(); !errors.Is(err, nokv.ErrBadRecord) {
		t.Fatalf("stray owner field encoded: %v", err)
	}
	if !bytes.HasPrefix(must(t, mk.Encode), nokv.CommitMemberPrefix(tRoot, tCommit)) || !bytes.HasPrefix(must(t, child.Encode), nokv.CommitConsumerPrefix(tRoot, tCommit)) {
		t.Fatal("prefixes do not cover their keys")
	}
}

func must(t *testing.T, f func() ([]byte, error)) []byte {
	t.Helper()
	b, err := f()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCommitRecordGoldenBytes pins the layouts docs/workbench.md gives
// for the commit keys and the consumer value.
func TestCommitRecordGoldenBytes(t *testing.T) {
	for name, c := range map[string]struct {
		enc  func() ([]byte, error)
		want []byte
	}{
		"commit key": {nokv.CommitKey{Root: tRoot, Commit: tCommit}.Encode, hx(t, rep("11", 16), rep("55", 32))},
		"member key": {nokv.CommitMemberKey{Root: tRoot, Commit: tCommit, Path: tPath}.Encode,
			hx(t, rep("11", 16), rep("55", 32), ascii("pvuqvut"), "00", ascii("b/uyu"), "01")},
		"head consumer key": {nokv.CommitConsumerKey{Root: tRoot, Commit: tCommit, Kind: nokv.CommitConsumerKindWorkbenchHead, Incarnation: tInc}.Encode,
			hx(t, rep("11", 16), rep("55", 32), "01", rep("22", 16))},
		"tag consumer key": {nokv.CommitConsumerKey{Root: tRoot, Commit: tCommit, Kind: nokv.CommitConsumerKindTag, Incarnation: tInc, Tag: "v1"}.Encode,
			hx(t, rep("11", 16), rep("55", 32), "02", rep("22", 16), "0002", ascii("v1"))},
		"child consumer key": {nokv.CommitConsumerKey{Root: tRoot, Commit: tCommit, Kind: nokv.CommitConsumerKindChildCommit, Child: nokv.CommitID(fill32(0x09))}.Encode,
			hx(t, rep("11", 16), rep("55", 32), "04", rep("09", 32))},
		"consumer value": {nokv.CommitConsumer{ConsumerEpochAtAdd: 2, CreatedVersion: 9}.Encode,
			hx(t, "01", "0000000000000002", "0000000000000009")},
		"retire operation": {nokv.CommitRetireOperation{Phase: nokv.CommitRetirePhaseComplete, Commit: tCommit, ClaimedEpoch: 4, MembersReleased: 3, RevisionsReleased: 2, ParentsReleased: 1, CompletedVersion: 9}.Encode,
			hx(t, "01", "03", rep("55", 32), "0000000000000004", "0000000000000003", "0000000000000002", "0000000000000001", "0000000000000009")},
	} {
		got, err := c.enc()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, c.want) {
			t.Errorf("%s = %x, want %x", name, got, c.want)
		}
	}
}
