package core

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash"
	"strings"

	"github.com/cairnstore/cairn/bucket/wire"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// The digests and identities of a workbench commit. The run manifest's
// projection (canonical manifest, manifest digest, commit identity,
// envelope) is the reference facade's and must match it byte for byte;
// the projection-input and initialization digests are the seed's; the
// member, revision and parent digests and the operation id are cairn's
// (docs/workbench.md, "Commits"). testdata/history_vectors.py computes the
// same values independently.

// Domain separators.
const (
	commitIdentityTag  = "nokv.workbench.commit_identity.v1\x00"
	projectionInputTag = "nokv.workbench.run_manifest.projection_input.v1\x00"
	buildCommitInitTag = "nokv.build-commit.initialization.v5\x00"
	commitMembersTag   = "cairn.workbench.commit_members.v1\x00"
	commitRevisionsTag = "cairn.workbench.commit_revisions.v1\x00"
	commitParentsTag   = "cairn.workbench.commit_parents.v1\x00"
	buildCommitOpTag   = "cairn.workbench.build_commit.operation.v1\x00"
	commitRetireOpTag  = "cairn.workbench.commit_retire.operation.v1\x00"
)

// RunManifestSchema is the schema string of the run-manifest envelope.
const RunManifestSchema = "nokv.workbench.run_manifest.v1"

// RunManifestComps is metadata/run_manifest.json as a stored path.
var RunManifestComps = []string{"metadata", "run_manifest.json"}

// len64 writes u64be(len(b)) and b.
func len64(h interface{ Write([]byte) (int, error) }, b []byte) {
	h.Write(wire.NewWriter(nil).U64(uint64(len(b))).Bytes())
	h.Write(b)
}

// CommitIdentity is the facade's stable commit identity: SHA-256 of
// "nokv.workbench.commit_identity.v1\0" and the workbench id, content
// digest URI and manifest digest URI, each u64be-length-prefixed. It is
// also the commit's CommitId.
func CommitIdentity(workbenchID, contentDigestURI, manifestDigestURI string) nokv.CommitID {
	h := sha256.New()
	h.Write([]byte(commitIdentityTag))
	len64(h, []byte(workbenchID))
	len64(h, []byte(contentDigestURI))
	len64(h, []byte(manifestDigestURI))
	var id nokv.CommitID
	h.Sum(id[:0])
	return id
}

// ProjectionInputDigest is the seed's projection-input digest of a commit
// request: every caller-known input of the run manifest except the
// commit time.
func ProjectionInputDigest(workbenchID, workbenchPath, contentDigestURI string, canonicalManifest []byte, manifestDigestURI string, identity nokv.CommitID) [32]byte {
	h := sha256.New()
	h.Write([]byte(projectionInputTag))
	len64(h, []byte(workbenchID))
	len64(h, []byte(workbenchPath))
	len64(h, []byte(contentDigestURI))
	len64(h, canonicalManifest)
	len64(h, []byte(manifestDigestURI))
	h.Write(identity[:])
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// RunManifestEnvelope returns the canonical bytes of the 8-key
// nokv.workbench.run_manifest.v1 envelope. canonicalManifest must be
// canonical JSON already (the tool's input is).
func RunManifestEnvelope(workbenchID, workbenchPath, contentDigestURI string, canonicalManifest []byte, manifestDigestURI string, identity nokv.CommitID, committedAt uint64) ([]byte, error) {
	return MarshalResult(map[string]any{
		"commit_identity":           identity.String(),
		"committed_at_unix_seconds": committedAt,
		"content_digest_uri":        contentDigestURI,
		"manifest":                  json.RawMessage(canonicalManifest),
		"manifest_digest_uri":       manifestDigestURI,
		"schema":                    RunManifestSchema,
		"workbench_id":              workbenchID,
		"workbench_path":            workbenchPath,
	})
}

// BuildCommitInit is what the initialization digest binds.
type BuildCommitInit struct {
	ProjectionInput [32]byte
	Incarnation     nokv.IncarnationID
	ReadVersion     uint64 // the sequence of the snapshot the tree was read at
	Head            *nokv.CommitHeadRef
	ContentDigest   string
	ManifestDigest  string
	TreeRevision    nokv.RevisionID // the run manifest's revision
	Replace         bool
	RunManifestGen  *uint64 // the run manifest generation replaced, nil when absent
	CommittedAt     uint64
	Parents         []nokv.CommitID
}

// Digest is the seed's BuildCommit initialization digest, version 5:
//
//	SHA-256("nokv.build-commit.initialization.v5\0"
//	  || projection_input_digest                    32
//	  || source_workspace_incarnation_id            16
//	  || u64be(source_read_version)
//	  || u8(0) | u8(1) || head commit_id 32 || u64be(head_generation)
//	  || len64be(content_digest_uri)  || content_digest_uri
//	  || len64be(manifest_digest_uri) || manifest_digest_uri
//	  || tree (run manifest) revision id            16
//	  || u8(replace)
//	  || u8(0) | u8(1) || u64be(replaced run manifest generation)
//	  || u64be(committed_at_unix_seconds)
//	  || u8(0)                                      no producer
//	  || u8(0)                                      no lineage
//	  || u32be(parent_count) || parent commit ids   32 each, in order)
func (in BuildCommitInit) Digest() [32]byte {
	w := wire.NewWriter(nil)
	w.Raw([]byte(buildCommitInitTag)).Raw(in.ProjectionInput[:]).Raw(in.Incarnation[:]).U64(in.ReadVersion)
	if in.Head != nil {
		w.U8(1).Raw(in.Head.Commit[:]).U64(in.Head.Generation)
	} else {
		w.U8(0)
	}
	w.U64(uint64(len(in.ContentDigest))).Raw([]byte(in.ContentDigest))
	w.U64(uint64(len(in.ManifestDigest))).Raw([]byte(in.ManifestDigest))
	w.Raw(in.TreeRevision[:])
	w.U8(BoolByte(in.Replace))
	if in.RunManifestGen != nil {
		w.U8(1).U64(*in.RunManifestGen)
	} else {
		w.U8(0)
	}
	w.U64(in.CommittedAt).U8(0).U8(0)
	w.U32(uint32(len(in.Parents)))
	for _, p := range in.Parents {
		w.Raw(p[:])
	}
	return sha256.Sum256(w.Bytes())
}

func BoolByte(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// memberDigest is cairn's member closure digest of a commit; the tree
// digest is "sha256:" + its hex. Over the members in canonical path
// order (the order of their PathCurrent and CommitMember keys):
//
//	SHA-256("cairn.workbench.commit_members.v1\0" || u64be(member_count)
//	  || for each member:
//	       u32be(len) || path, its components joined by "/"
//	       || artifact_revision_id 16 || u64be(path_generation)
//	       || u64be(logical_size)
//	       || u32be(len) || body_digest_uri
//	       || u32be(len) || manifest_digest_uri
//	       || u32be(dependency_count) || u32be(dependency_depth)
//	       || u32be(len) || content_type
//	       || u8(0) | u8(1) || u32be(len) || producer
//	       || u8(0) | u8(1) || u32be(len) || manifest_id
//	       || u32be(len) || index projection (its record encoding))
type memberDigester struct {
	w     *wire.Writer
	count uint64
	// With the count known up front (NewMemberDigesterOf), members go
	// straight into h, and w holds one at a time.
	h    hash.Hash
	want uint64
}

func NewMemberDigester() *memberDigester { return &memberDigester{w: wire.NewWriter(nil)} }

// NewMemberDigesterOf returns a digester of exactly n members that hashes
// each as it is added, instead of holding them all until Sum.
func NewMemberDigesterOf(n uint64) *memberDigester {
	h := sha256.New()
	h.Write([]byte(commitMembersTag))
	h.Write(wire.NewWriter(nil).U64(n).Bytes())
	return &memberDigester{w: wire.NewWriter(nil), h: h, want: n}
}

func (d *memberDigester) Add(path []string, m nokv.CommitMember) error {
	proj, err := m.Index.Encode()
	if err != nil {
		return err
	}
	d.count++
	w := d.w
	w.Bytes32([]byte(strings.Join(path, "/")))
	w.Raw(m.Revision[:]).U64(m.PathGeneration).U64(m.LogicalSize)
	w.Bytes32([]byte(m.BodyDigestURI)).Bytes32([]byte(m.ManifestDigestURI))
	w.U32(m.DependencyCount).U32(m.DependencyDepth)
	w.Bytes32([]byte(m.ContentType))
	for _, opt := range []*string{m.Producer, m.ManifestID} {
		if opt == nil {
			w.U8(0)
		} else {
			w.U8(1).Bytes32([]byte(*opt))
		}
	}
	w.Bytes32(proj)
	if err := w.Err(); err != nil || d.h == nil {
		return err
	}
	d.h.Write(w.Bytes())
	d.w = wire.NewWriter(w.Bytes()[:0])
	return nil
}

func (d *memberDigester) Sum() [32]byte {
	if d.h != nil {
		if d.count != d.want {
			panic(fmt.Sprintf("workbench: member digest of %d members, %d added", d.want, d.count))
		}
		var out [32]byte
		d.h.Sum(out[:0])
		return out
	}
	h := sha256.New()
	h.Write([]byte(commitMembersTag))
	h.Write(wire.NewWriter(nil).U64(d.count).Bytes())
	h.Write(d.w.Bytes())
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// RevisionDigest seals a commit's unique revisions: SHA-256 of
// "cairn.workbench.commit_revisions.v1\0", u64be(count) and the ids in
// ascending byte order (revs must be sorted).
func RevisionDigest(revs []nokv.RevisionID) [32]byte {
	h := sha256.New()
	h.Write([]byte(commitRevisionsTag))
	h.Write(wire.NewWriter(nil).U64(uint64(len(revs))).Bytes())
	for _, r := range revs {
		h.Write(r[:])
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// ParentDigest seals a commit's parents: SHA-256 of
// "cairn.workbench.commit_parents.v1\0", u64be(count) and the parent
// commit ids in order.
func ParentDigest(parents []nokv.CommitID) [32]byte {
	h := sha256.New()
	h.Write([]byte(commitParentsTag))
	h.Write(wire.NewWriter(nil).U64(uint64(len(parents))).Bytes())
	for _, p := range parents {
		h.Write(p[:])
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// BuildCommitOperationID derives the BuildCommit operation id of a
// commit: the first 16 bytes of SHA-256 of
// "cairn.workbench.build_commit.operation.v1\0", the root id and the
// commit id. A retry of the same commit finds the same row.
func BuildCommitOperationID(root nokv.RootID, commit nokv.CommitID) nokv.OperationID {
	return derivedOperationID(buildCommitOpTag, root, commit)
}

// CommitRetireOperationID is the CommitRetire operation id of a commit,
// derived likewise with "cairn.workbench.commit_retire.operation.v1\0".
func CommitRetireOperationID(root nokv.RootID, commit nokv.CommitID) nokv.OperationID {
	return derivedOperationID(commitRetireOpTag, root, commit)
}

func derivedOperationID(tag string, root nokv.RootID, commit nokv.CommitID) nokv.OperationID {
	h := sha256.New()
	h.Write([]byte(tag))
	h.Write(root[:])
	h.Write(commit[:])
	var id nokv.OperationID
	copy(id[:], h.Sum(nil))
	return id
}
