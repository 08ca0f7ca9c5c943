package nokv

import (
	"fmt"

	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/wire"
	"github.com/cairnstore/cairn/shards"
)

// Value format versions of the commit records. They live beside the
// records rather than in codec.go's table so that the history records can
// grow without touching the shared table.
const (
	WorkbenchCommitHeadVersion   = 1
	CommitVersion                = 2 // the seed's immutable commit records are version 2
	CommitTreeVersion            = 3 // version 2 and the member tree (cairn's)
	CommitTreeDigestVersion      = 4 // version 3, its digests the tree's (cairn's)
	CommitMemberVersion          = 2
	CommitConsumerVersion        = 1
	BuildCommitOperationVersion  = 5 // the seed's BuildCommitOperation v5
	CommitRetireOperationVersion = 1
)

// WorkbenchCommitHeadKey is root_id | workspace_incarnation_id: one head
// per workbench incarnation, so a reclaimed name never inherits a head.
type WorkbenchCommitHeadKey struct {
	Root        RootID
	Incarnation IncarnationID
}

const recCommitHeadKey = "workbench_commit_head key"

// Family returns FamilyWorkbenchCommitHead.
func (WorkbenchCommitHeadKey) Family() shards.Family { return FamilyWorkbenchCommitHead }

// Encode returns the key's bytes.
func (k WorkbenchCommitHeadKey) Encode() ([]byte, error) {
	return shards.NewKey().ID16(k.Root).ID16(k.Incarnation).Build()
}

// ParseWorkbenchCommitHeadKey parses a WorkbenchCommitHead key.
func ParseWorkbenchCommitHeadKey(b []byte) (WorkbenchCommitHeadKey, error) {
	r := shards.NewKeyReader(b)
	k := WorkbenchCommitHeadKey{Root: r.ID16(), Incarnation: r.ID16()}
	if err := r.End(); err != nil {
		return WorkbenchCommitHeadKey{}, keyError("decode", recCommitHeadKey, r.Offset(), err)
	}
	return k, nil
}

// WorkbenchCommitHead is the value of a WorkbenchCommitHead row (version
// 1): the commit the workbench's head names and the head's generation.
//
//	commit_id [32] | head_generation u64
//
// HeadGeneration starts at 1 with the first commit and grows by one each
// time the head moves; it is the generation workbench_commit reports.
type WorkbenchCommitHead struct {
	Commit         CommitID
	HeadGeneration uint64
}

const recCommitHead = "workbench_commit_head value"

// Encode returns the value's bytes.
func (v WorkbenchCommitHead) Encode() ([]byte, error) {
	w := newValueWriter(recCommitHead, WorkbenchCommitHeadVersion)
	if v.Commit.IsZero() {
		w.fail("zero commit id", nil)
	}
	if v.HeadGeneration == 0 {
		w.fail("zero head generation", nil)
	}
	w.id32(v.Commit)
	w.u64(v.HeadGeneration)
	return w.finish()
}

// DecodeWorkbenchCommitHead decodes a WorkbenchCommitHead value.
func DecodeWorkbenchCommitHead(b []byte) (WorkbenchCommitHead, error) {
	r := newValueReader(recCommitHead, b, WorkbenchCommitHeadVersion)
	v := WorkbenchCommitHead{Commit: r.id32()}
	if r.err == nil && v.Commit.IsZero() {
		r.failAt(1, "zero commit id", nil)
	}
	off := r.offset()
	v.HeadGeneration = r.u64()
	if r.err == nil && v.HeadGeneration == 0 {
		r.failAt(off, "zero head generation", nil)
	}
	if err := r.end(); err != nil {
		return WorkbenchCommitHead{}, err
	}
	return v, nil
}

// CommitKey is root_id | commit_id.
type CommitKey struct {
	Root   RootID
	Commit CommitID
}

const recCommitKey = "commit key"

// Family returns FamilyCommit.
func (CommitKey) Family() shards.Family { return FamilyCommit }

// Encode returns the key's bytes.
func (k CommitKey) Encode() ([]byte, error) {
	return shards.NewKey().ID16(k.Root).ID32(k.Commit).Build()
}

// ParseCommitKey parses a Commit key.
func ParseCommitKey(b []byte) (CommitKey, error) {
	r := shards.NewKeyReader(b)
	k := CommitKey{Root: r.ID16(), Commit: r.ID32()}
	if err := r.End(); err != nil {
		return CommitKey{}, keyError("decode", recCommitKey, r.Offset(), err)
	}
	return k, nil
}

// Commit is the value of a Commit row (version 2), the sealed closure of
// one workbench commit:
//
//	source_incarnation [16] | workbench_id str | content_digest_uri str |
//	manifest_digest_uri str | tree_manifest_revision [16] |
//	member_count u64 | member_digest [32] |
//	unique_revision_count u64 | revision_digest [32] |
//	parent_count u32 | parents (parent_count × [32]) | parent_digest [32] |
//	producer? str | consumer_count u64 | consumer_epoch u64 |
//	last_zero_consumer_version u64 | state u8 | created_version u64
//
// WorkbenchID, ContentDigestURI and ManifestDigestURI are the facade
// identity inputs: the commit id is their commit identity. The tree
// digest is not stored apart: it is "sha256:" + hex(MemberDigest)
// (TreeDigestURI). TreeManifestRevision is the revision of the run
// manifest the commit published. The retirement cursor lives in the
// CommitRetire operation row.
type Commit struct {
	SourceIncarnation       IncarnationID
	WorkbenchID             string
	ContentDigestURI        string
	ManifestDigestURI       string
	TreeManifestRevision    RevisionID
	MemberCount             uint64
	MemberDigest            [32]byte
	UniqueRevisionCount     uint64
	RevisionDigest          [32]byte
	Parents                 []CommitID
	ParentDigest            [32]byte
	Producer                *string
	ConsumerCount           uint64
	ConsumerEpoch           uint64
	LastZeroConsumerVersion uint64
	State                   CommitState
	CreatedVersion          uint64
	// MemberTree, when set (version 3), names the tree that holds the
	// commit's members in place of CommitMember rows.
	MemberTree *MemberTree
	// TreeDigests (version 4, with a MemberTree) defines the commit's
	// digests by its tree, so that a commit computes them from what
	// changed: MemberDigest is the tree's content digest, and
	// UniqueRevisionCount and RevisionDigest cover the revisions of the
	// commit's own Commit RevisionRefs (MemberTree.References of them).
	// Without it they cover every member and every unique revision.
	TreeDigests bool
}

// MemberTree names a commit's member tree (package
// workbench/internal/tree): its root node's object key, size and content
// digest. The tree maps each member's path, in the key encoding of
// CommitMember rows after root and commit, to its CommitMember value; it
// holds MemberCount entries.
//
// References counts the commit's own Commit RevisionRefs: a commit with
// a member tree references only the revisions its members hold that its
// parent's members may not (docs/workbench.md, "Member trees"); the rest
// its parent, which outlives it, keeps.
type MemberTree struct {
	Key        string
	Size       uint64
	Digest     [32]byte
	References uint64
}

// TreeDigestURI is the commit's tree digest: "sha256:" and the lowercase
// hex of the member digest.
func (v Commit) TreeDigestURI() string { return digest.Hash(v.MemberDigest).URI() }

const recCommit = "commit value"

// maxCommitParents bounds a commit's parent list; a workbench commit has
// at most one.
const maxCommitParents = 64

func (v Commit) reason() string {
	if len(v.Parents) > maxCommitParents {
		return fmt.Sprintf("%d parents, at most %d", len(v.Parents), maxCommitParents)
	}
	return firstReason(workbenchIDReason(v.WorkbenchID),
		digestURIReason("content digest uri", v.ContentDigestURI),
		digestURIReason("manifest digest uri", v.ManifestDigestURI))
}

// Encode returns the value's bytes: version 4 with a member tree and
// its digests, 3 with a member tree, else 2.
func (v Commit) Encode() ([]byte, error) {
	version := uint8(CommitVersion)
	switch {
	case v.MemberTree != nil && v.TreeDigests:
		version = CommitTreeDigestVersion
	case v.MemberTree != nil:
		version = CommitTreeVersion
	}
	w := newValueWriter(recCommit, version)
	w.check(v.reason())
	if v.TreeDigests && v.MemberTree == nil {
		w.fail("tree digests without a member tree", nil)
	}
	w.id16(v.SourceIncarnation)
	w.str("workbench id", v.WorkbenchID)
	w.str("content digest uri", v.ContentDigestURI)
	w.str("manifest digest uri", v.ManifestDigestURI)
	w.id16(v.TreeManifestRevision)
	w.u64(v.MemberCount)
	w.id32(v.MemberDigest)
	w.u64(v.UniqueRevisionCount)
	w.id32(v.RevisionDigest)
	w.u32(uint32(len(v.Parents)))
	for _, p := range v.Parents {
		w.id32(p)
	}
	w.id32(v.ParentDigest)
	w.optStr("producer", v.Producer)
	w.u64(v.ConsumerCount)
	w.u64(v.ConsumerEpoch)
	w.u64(v.LastZeroConsumerVersion)
	w.enum("state", &commitStateDef, uint8(v.State))
	w.u64(v.CreatedVersion)
	if t := v.MemberTree; t != nil {
		if t.Key == "" || t.Size == 0 || v.MemberCount == 0 || t.References > v.UniqueRevisionCount {
			w.fail("a member tree without a key, a size or members, or with more references than revisions", nil)
		}
		if v.TreeDigests {
			w.check(v.treeDigestReason())
		}
		w.str("member tree key", t.Key)
		w.u64(t.Size)
		w.id32(t.Digest)
		w.u64(t.References)
	}
	return w.finish()
}

// treeDigestReason returns why a commit of version 4 is inconsistent, or
// "": its member digest is its tree's, and it references exactly its
// unique revisions.
func (v Commit) treeDigestReason() string {
	if t := v.MemberTree; t.Digest != v.MemberDigest || t.References != v.UniqueRevisionCount {
		return "a commit of tree digests whose member digest or revision count is not its tree's"
	}
	return ""
}

// DecodeCommit decodes a Commit value of version 2, 3 or 4.
func DecodeCommit(b []byte) (Commit, error) {
	version := uint8(CommitVersion)
	if len(b) > 0 && (b[0] == CommitTreeVersion || b[0] == CommitTreeDigestVersion) {
		version = b[0]
	}
	r := newValueReader(recCommit, b, version)
	var v Commit
	v.SourceIncarnation = r.id16()
	off := r.offset()
	v.WorkbenchID = r.str("workbench id")
	v.ContentDigestURI = r.str("content digest uri")
	v.ManifestDigestURI = r.str("manifest digest uri")
	v.TreeManifestRevision = r.id16()
	v.MemberCount = r.u64()
	v.MemberDigest = r.id32()
	v.UniqueRevisionCount = r.u64()
	v.RevisionDigest = r.id32()
	poff := r.offset()
	n := r.u32()
	if r.err == nil && n > maxCommitParents {
		r.failAt(poff, fmt.Sprintf("%d parents, at most %d", n, maxCommitParents), nil)
	}
	for i := uint32(0); i < n && r.err == nil; i++ {
		v.Parents = append(v.Parents, r.id32())
	}
	v.ParentDigest = r.id32()
	v.Producer = r.optStr("producer")
	v.ConsumerCount = r.u64()
	v.ConsumerEpoch = r.u64()
	v.LastZeroConsumerVersion = r.u64()
	v.State = CommitState(r.enum("state", &commitStateDef))
	v.CreatedVersion = r.u64()
	if r.err == nil {
		r.check(off, v.reason())
	}
	if version >= CommitTreeVersion {
		toff := r.offset()
		t := &MemberTree{Key: r.str("member tree key")}
		t.Size = r.u64()
		t.Digest = r.id32()
		t.References = r.u64()
		if r.err == nil && (t.Key == "" || t.Size == 0 || v.MemberCount == 0 || t.References > v.UniqueRevisionCount) {
			r.failAt(toff, "a member tree without a key, a size or members, or with more references than revisions", nil)
		}
		v.MemberTree = t
		if version == CommitTreeDigestVersion {
			v.TreeDigests = true
			r.check(toff, v.treeDigestReason())
		}
	}
	if err := r.end(); err != nil {
		return Commit{}, err
	}
	return v, nil
}

// CommitMemberKey is root_id | commit_id | the exact-row encoding of the
// member's path. A commit's members share one shard key (root and
// commit), so one prefix scan reads them in canonical path order.
type CommitMemberKey struct {
	Root   RootID
	Commit CommitID
	Path   []string
}

const recCommitMemberKey = "commit_member key"

// Family returns FamilyCommitMember.
func (CommitMemberKey) Family() shards.Family { return FamilyCommitMember }

// Encode returns the key's bytes.
func (k CommitMemberKey) Encode() ([]byte, error) {
	if reason := pathReason(k.Path); reason != "" {
		return nil, keyFail("encode", recCommitMemberKey, 0, reason)
	}
	return shards.NewKey().ID16(k.Root).ID32(k.Commit).Path(k.Path).Build()
}

// ParseCommitMemberKey parses a CommitMember key.
func ParseCommitMemberKey(b []byte) (CommitMemberKey, error) {
	r := shards.NewKeyReader(b)
	k := CommitMemberKey{Root: r.ID16(), Commit: r.ID32()}
	k.Path = r.Path()
	if err := r.End(); err != nil {
		return CommitMemberKey{}, keyError("decode", recCommitMemberKey, r.Offset(), err)
	}
	if reason := pathReason(k.Path); reason != "" {
		return CommitMemberKey{}, keyFail("decode", recCommitMemberKey, idLen+commitIDLen, reason)
	}
	return k, nil
}

// CommitMemberPrefix returns the scan prefix of every member of commit.
func CommitMemberPrefix(root RootID, commit CommitID) []byte {
	b, _ := shards.NewKey().ID16(root).ID32(commit).Build()
	return b
}

// CommitMember is the value of a CommitMember row (version 2): the path's
// entry as the commit froze it.
//
//	artifact_revision_id [16] | path_generation u64 | body_digest_uri str |
//	manifest_digest_uri str | logical_size u64 | dependency_count u32 |
//	dependency_depth u32 | content_type str | producer? str |
//	manifest_id? str | index projection
type CommitMember struct {
	Revision          RevisionID
	PathGeneration    uint64
	BodyDigestURI     string
	ManifestDigestURI string
	LogicalSize       uint64
	DependencyCount   uint32
	DependencyDepth   uint32
	ContentType       string
	Producer          *string
	ManifestID        *string
	Index             IndexProjection
}

// MemberOf returns the commit member that freezes entry e.
func MemberOf(e PathEntry) CommitMember {
	return CommitMember{
		Revision: e.Revision, PathGeneration: e.Generation,
		BodyDigestURI: e.BodyDigestURI, ManifestDigestURI: e.ManifestDigestURI,
		LogicalSize: e.LogicalSize, DependencyCount: e.DependencyCount, DependencyDepth: e.DependencyDepth,
		ContentType: e.ContentType, Producer: e.Producer, ManifestID: e.ManifestID, Index: e.Index,
	}
}

const recCommitMember = "commit_member value"

// Encode returns the value's bytes.
func (v CommitMember) Encode() ([]byte, error) {
	w := newValueWriter(recCommitMember, CommitMemberVersion)
	w.check(bodyReason(v.BodyDigestURI, v.ManifestDigestURI, v.ContentType))
	w.id16(v.Revision)
	w.u64(v.PathGeneration)
	w.str("body digest uri", v.BodyDigestURI)
	w.str("manifest digest uri", v.ManifestDigestURI)
	w.u64(v.LogicalSize)
	w.u32(v.DependencyCount)
	w.u32(v.DependencyDepth)
	w.str("content type", v.ContentType)
	w.optStr("producer", v.Producer)
	w.optStr("manifest id", v.ManifestID)
	w.indexProjection(v.Index)
	return w.finish()
}

// DecodeCommitMember decodes a CommitMember value.
func DecodeCommitMember(b []byte) (CommitMember, error) {
	r := newValueReader(recCommitMember, b, CommitMemberVersion)
	var v CommitMember
	v.Revision = r.id16()
	v.PathGeneration = r.u64()
	off := r.offset()
	v.BodyDigestURI = r.str("body digest uri")
	v.ManifestDigestURI = r.str("manifest digest uri")
	v.LogicalSize = r.u64()
	v.DependencyCount = r.u32()
	v.DependencyDepth = r.u32()
	v.ContentType = r.str("content type")
	if r.err == nil {
		r.check(off, bodyReason(v.BodyDigestURI, v.ManifestDigestURI, v.ContentType))
	}
	v.Producer = r.optStr("producer")
	v.ManifestID = r.optStr("manifest id")
	v.Index = r.indexProjection()
	if err := r.end(); err != nil {
		return CommitMember{}, err
	}
	return v, nil
}

// CommitConsumerKey is root_id | commit_id | u8(consumer_kind) |
// consumer_owner_id, the owner discriminated by the kind:
//
//	WorkbenchHead: workspace_incarnation_id
//	Tag:           workspace_incarnation_id | u16(len) | tag_name
//	Lease:         operation_id
//	ChildCommit:   child_commit_id
//
// Only the owner fields of Kind may be set.
type CommitConsumerKey struct {
	Root   RootID
	Commit CommitID
	Kind   CommitConsumerKind
	// WorkbenchHead and Tag owner.
	Incarnation IncarnationID
	// Tag owner.
	Tag string
	// Lease owner.
	Operation OperationID
	// ChildCommit owner.
	Child CommitID
}

const recCommitConsumerKey = "commit_consumer key"

// Family returns FamilyCommitConsumer.
func (CommitConsumerKey) Family() shards.Family { return FamilyCommitConsumer }

// Encode returns the key's bytes.
func (k CommitConsumerKey) Encode() ([]byte, error) {
	b := shards.NewKey().ID16(k.Root).ID32(k.Commit).U8(uint8(k.Kind))
	var stray bool
	switch k.Kind {
	case CommitConsumerKindWorkbenchHead:
		b.ID16(k.Incarnation)
		stray = k.Tag != "" || !k.Operation.IsZero() || !k.Child.IsZero()
	case CommitConsumerKindTag:
		if k.Tag == "" || len(k.Tag) > maxTagNameBytes {
			return nil, keyFail("encode", recCommitConsumerKey, 0, fmt.Sprintf("tag name of %d bytes", len(k.Tag)))
		}
		b.ID16(k.Incarnation).Name(k.Tag)
		stray = !k.Operation.IsZero() || !k.Child.IsZero()
	case CommitConsumerKindLease:
		b.ID16(k.Operation)
		stray = !k.Incarnation.IsZero() || k.Tag != "" || !k.Child.IsZero()
	case CommitConsumerKindChildCommit:
		b.ID32(k.Child)
		stray = !k.Incarnation.IsZero() || k.Tag != "" || !k.Operation.IsZero()
	default:
		return nil, &RecordError{Op: "encode", Record: recCommitConsumerKey, Reason: fmt.Sprintf("consumer kind %d", k.Kind), Err: ErrUnknownEnum}
	}
	if stray {
		return nil, keyFail("encode", recCommitConsumerKey, 0, fmt.Sprintf("owner fields set that kind %v does not use", k.Kind))
	}
	return b.Build()
}

// ParseCommitConsumerKey parses a CommitConsumer key.
func ParseCommitConsumerKey(b []byte) (CommitConsumerKey, error) {
	r := shards.NewKeyReader(b)
	k := CommitConsumerKey{Root: r.ID16(), Commit: r.ID32()}
	kind := r.U8()
	if r.Err() == nil && !commitConsumerKindDef.valid(kind) {
		return CommitConsumerKey{}, &RecordError{Op: "decode", Record: recCommitConsumerKey, Offset: idLen + commitIDLen,
			Reason: fmt.Sprintf("consumer kind %d", kind), Err: ErrUnknownEnum}
	}
	k.Kind = CommitConsumerKind(kind)
	switch k.Kind {
	case CommitConsumerKindWorkbenchHead:
		k.Incarnation = r.ID16()
	case CommitConsumerKindTag:
		k.Incarnation = r.ID16()
		k.Tag = string(r.Name())
	case CommitConsumerKindLease:
		k.Operation = r.ID16()
	case CommitConsumerKindChildCommit:
		k.Child = r.ID32()
	}
	if err := r.End(); err != nil {
		return CommitConsumerKey{}, keyError("decode", recCommitConsumerKey, r.Offset(), err)
	}
	return k, nil
}

// CommitConsumerPrefix returns the scan prefix of every consumer of commit.
func CommitConsumerPrefix(root RootID, commit CommitID) []byte {
	b, _ := shards.NewKey().ID16(root).ID32(commit).Build()
	return b
}

// CommitConsumer is the value of a CommitConsumer row (version 1):
// consumer_epoch_at_add u64 | created_version u64.
type CommitConsumer struct {
	ConsumerEpochAtAdd uint64
	CreatedVersion     uint64
}

const recCommitConsumer = "commit_consumer value"

// Encode returns the value's bytes.
func (v CommitConsumer) Encode() ([]byte, error) {
	w := newValueWriter(recCommitConsumer, CommitConsumerVersion)
	w.u64(v.ConsumerEpochAtAdd)
	w.u64(v.CreatedVersion)
	return w.finish()
}

// DecodeCommitConsumer decodes a CommitConsumer value.
func DecodeCommitConsumer(b []byte) (CommitConsumer, error) {
	r := newValueReader(recCommitConsumer, b, CommitConsumerVersion)
	v := CommitConsumer{ConsumerEpochAtAdd: r.u64(), CreatedVersion: r.u64()}
	if err := r.end(); err != nil {
		return CommitConsumer{}, err
	}
	return v, nil
}

// maxTagNameBytes is the seed's bound on a tag name.
const maxTagNameBytes = 128

// CommitHeadRef is a commit head as an operation froze it.
type CommitHeadRef struct {
	Commit     CommitID
	Generation uint64
}

// ManifestBinding is the immutable binding of the run manifest a commit
// published: its revision and the revision's body fields.
type ManifestBinding struct {
	Revision          RevisionID
	LogicalSize       uint64
	BodyDigestURI     string
	ManifestDigestURI string
	ContentType       string
}

// BuildCommitResult is a BuildCommit operation's terminal result.
type BuildCommitResult struct {
	HeadGeneration    uint64
	PathGeneration    uint64 // of metadata/run_manifest.json
	WorkspaceRevision uint64
	CommitVersion     uint64
}

// BuildCommitOperation is the value of an Operation row of kind
// BuildCommit (version 5, the seed's): the exact request, what the build
// froze, and the terminal result, so that an exact retry is answered from
// this row alone, whatever the head and the path hold by then.
//
//	phase u8 | projection_input_digest [32] | initialization_digest [32] |
//	commit_id [32] | workbench_id str | content_digest_uri str |
//	manifest_digest_uri str | replace u8 | incarnation [16] |
//	source_read_version u64 | expected_head? (commit [32] | generation u64) |
//	committed_at_unix_seconds u64 |
//	run_manifest_expected_generation? u64 |
//	binding (revision [16] | logical_size u64 | body_digest_uri str |
//	         manifest_digest_uri str | content_type str) |
//	parent_count u32 | parents (× [32]) | member_count u64 | member_digest [32] |
//	result? (head_generation u64 | path_generation u64 |
//	         workspace_revision u64 | commit_version u64) |
//	failure? (code str | message str)
//
// ExpectedHead is the head the build replaced (absent for a first
// commit); RunManifestGeneration is the run manifest's generation the
// build replaced (absent when the path held nothing): the run-manifest
// publication condition.
type BuildCommitOperation struct {
	Phase                 BuildCommitPhase
	ProjectionInputDigest [32]byte
	InitializationDigest  [32]byte
	Commit                CommitID
	WorkbenchID           string
	ContentDigestURI      string
	ManifestDigestURI     string
	Replace               bool
	Incarnation           IncarnationID
	SourceReadVersion     uint64
	ExpectedHead          *CommitHeadRef
	CommittedAtUnix       uint64
	RunManifestGeneration *uint64
	Binding               ManifestBinding
	Parents               []CommitID
	MemberCount           uint64
	MemberDigest          [32]byte
	Result                *BuildCommitResult
	Failure               *OperationFailure
}

const recBuildCommitOperation = "operation value (build commit)"

func (v BuildCommitOperation) reason() string {
	switch {
	case v.Result != nil && v.Failure != nil:
		return "both a result and a failure"
	case len(v.Parents) > maxCommitParents:
		return fmt.Sprintf("%d parents, at most %d", len(v.Parents), maxCommitParents)
	}
	return firstReason(workbenchIDReason(v.WorkbenchID),
		digestURIReason("content digest uri", v.ContentDigestURI),
		digestURIReason("manifest digest uri", v.ManifestDigestURI),
		bodyReason(v.Binding.BodyDigestURI, v.Binding.ManifestDigestURI, v.Binding.ContentType))
}

// Encode returns the value's bytes.
func (v BuildCommitOperation) Encode() ([]byte, error) {
	w := newValueWriter(recBuildCommitOperation, BuildCommitOperationVersion)
	w.check(v.reason())
	w.enum("phase", &buildCommitPhaseDef, uint8(v.Phase))
	w.id32(v.ProjectionInputDigest)
	w.id32(v.InitializationDigest)
	w.id32(v.Commit)
	w.str("workbench id", v.WorkbenchID)
	w.str("content digest uri", v.ContentDigestURI)
	w.str("manifest digest uri", v.ManifestDigestURI)
	w.present(v.Replace)
	w.id16(v.Incarnation)
	w.u64(v.SourceReadVersion)
	w.present(v.ExpectedHead != nil)
	if h := v.ExpectedHead; h != nil {
		w.id32(h.Commit)
		w.u64(h.Generation)
	}
	w.u64(v.CommittedAtUnix)
	w.present(v.RunManifestGeneration != nil)
	if g := v.RunManifestGeneration; g != nil {
		w.u64(*g)
	}
	b := v.Binding
	w.id16(b.Revision)
	w.u64(b.LogicalSize)
	w.str("binding body digest uri", b.BodyDigestURI)
	w.str("binding manifest digest uri", b.ManifestDigestURI)
	w.str("binding content type", b.ContentType)
	w.u32(uint32(len(v.Parents)))
	for _, p := range v.Parents {
		w.id32(p)
	}
	w.u64(v.MemberCount)
	w.id32(v.MemberDigest)
	w.present(v.Result != nil)
	if res := v.Result; res != nil {
		w.u64(res.HeadGeneration)
		w.u64(res.PathGeneration)
		w.u64(res.WorkspaceRevision)
		w.u64(res.CommitVersion)
	}
	w.present(v.Failure != nil)
	if f := v.Failure; f != nil {
		w.str("failure code", f.Code)
		w.str("failure message", f.Message)
	}
	return w.finish()
}

// DecodeBuildCommitOperation decodes the value of an Operation row of kind
// BuildCommit.
func DecodeBuildCommitOperation(b []byte) (BuildCommitOperation, error) {
	r := newValueReader(recBuildCommitOperation, b, BuildCommitOperationVersion)
	var v BuildCommitOperation
	v.Phase = BuildCommitPhase(r.enum("phase", &buildCommitPhaseDef))
	v.ProjectionInputDigest = r.id32()
	v.InitializationDigest = r.id32()
	v.Commit = r.id32()
	off := r.offset()
	v.WorkbenchID = r.str("workbench id")
	v.ContentDigestURI = r.str("content digest uri")
	v.ManifestDigestURI = r.str("manifest digest uri")
	v.Replace = r.present()
	v.Incarnation = r.id16()
	v.SourceReadVersion = r.u64()
	if r.present() {
		v.ExpectedHead = &CommitHeadRef{Commit: r.id32(), Generation: r.u64()}
	}
	v.CommittedAtUnix = r.u64()
	if r.present() {
		g := r.u64()
		v.RunManifestGeneration = &g
	}
	v.Binding.Revision = r.id16()
	v.Binding.LogicalSize = r.u64()
	v.Binding.BodyDigestURI = r.str("binding body digest uri")
	v.Binding.ManifestDigestURI = r.str("binding manifest digest uri")
	v.Binding.ContentType = r.str("binding content type")
	poff := r.offset()
	n := r.u32()
	if r.err == nil && n > maxCommitParents {
		r.failAt(poff, fmt.Sprintf("%d parents, at most %d", n, maxCommitParents), nil)
	}
	for i := uint32(0); i < n && r.err == nil; i++ {
		v.Parents = append(v.Parents, r.id32())
	}
	v.MemberCount = r.u64()
	v.MemberDigest = r.id32()
	if r.present() {
		v.Result = &BuildCommitResult{HeadGeneration: r.u64(), PathGeneration: r.u64(), WorkspaceRevision: r.u64(), CommitVersion: r.u64()}
	}
	if r.present() {
		v.Failure = &OperationFailure{Code: r.str("failure code"), Message: r.str("failure message")}
	}
	if r.err == nil {
		r.check(off, v.reason())
	}
	if err := r.end(); err != nil {
		return BuildCommitOperation{}, err
	}
	return v, nil
}

// CommitRetireOperation is the value of an Operation row of kind
// CommitRetire (version 1): the retirement of one commit and its typed
// cursor.
//
//	phase u8 | commit_id [32] | claimed_epoch u64 | members_released u64 |
//	revisions_released u64 | parents_released u64 | completed_version u64
//
// ClaimedEpoch is the consumer epoch the Sealed -> Retiring claim
// predicated. The three counters are the cursor: how many CommitMember
// rows, Commit RevisionRefs and parent consumers the batches released so
// far, in that order; CompletedVersion is the commit version that
// published Retired (0 before).
type CommitRetireOperation struct {
	Phase             CommitRetirePhase
	Commit            CommitID
	ClaimedEpoch      uint64
	MembersReleased   uint64
	RevisionsReleased uint64
	ParentsReleased   uint64
	CompletedVersion  uint64
}

const recCommitRetireOperation = "operation value (commit retire)"

// Encode returns the value's bytes.
func (v CommitRetireOperation) Encode() ([]byte, error) {
	w := newValueWriter(recCommitRetireOperation, CommitRetireOperationVersion)
	w.enum("phase", &commitRetirePhaseDef, uint8(v.Phase))
	w.id32(v.Commit)
	w.u64(v.ClaimedEpoch)
	w.u64(v.MembersReleased)
	w.u64(v.RevisionsReleased)
	w.u64(v.ParentsReleased)
	w.u64(v.CompletedVersion)
	return w.finish()
}

// DecodeCommitRetireOperation decodes the value of an Operation row of
// kind CommitRetire.
func DecodeCommitRetireOperation(b []byte) (CommitRetireOperation, error) {
	r := newValueReader(recCommitRetireOperation, b, CommitRetireOperationVersion)
	var v CommitRetireOperation
	v.Phase = CommitRetirePhase(r.enum("phase", &commitRetirePhaseDef))
	v.Commit = r.id32()
	v.ClaimedEpoch = r.u64()
	v.MembersReleased = r.u64()
	v.RevisionsReleased = r.u64()
	v.ParentsReleased = r.u64()
	v.CompletedVersion = r.u64()
	if err := r.end(); err != nil {
		return CommitRetireOperation{}, err
	}
	return v, nil
}

// Encode returns the projection's record encoding, as a PathEntry or
// CommitMember value carries it (u16 count, then each id and scalar). The
// commit member digest covers it.
func (p IndexProjection) Encode() ([]byte, error) {
	w := wire.NewWriter(nil)
	if err := p.writeTo(w); err != nil {
		return nil, err
	}
	return w.Bytes(), w.Err()
}
